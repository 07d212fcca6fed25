package memory_test

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
)

// A window of two messages with a running summary: what slides out is
// folded by the summarizer's model after each turn, and the next turn
// sends the summary after the system prompt.
func ExampleWithSummary() {
	model := scripted.New(scripted.Reply("The user is Ada."))
	summarizer := memory.NewSummarizer(model, memory.SummaryThreshold(1))
	defer summarizer.Close()
	chat := memory.MessageWindow(2, memory.WithSummary(summarizer)).Chat("ada")
	ctx := context.Background()
	for _, q := range []string{"I am Ada.", "I live in Paris.", "Is it sunny?"} {
		h, _, err := chat.BeginMessages(ctx, nil, memory.Record{Message: llm.UserMessage(q), Tokens: 4})
		if err != nil {
			panic(err)
		}
		_ = h.End(ctx, memory.Record{Message: llm.AssistantMessage("Noted."), Tokens: 2})
		summarizer.Wait() // a server lets folds run on
	}
	h, msgs, _ := chat.BeginMessages(ctx, nil)
	defer h.End(ctx)
	for _, m := range msgs {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	fmt.Println("through", h.Summary().Through)
	// Output:
	// system: <conversation_summary>
	// A summary of the earlier part of this conversation, whose messages are no longer shown:
	// The user is Ada.
	// </conversation_summary>
	// user: Is it sunny?
	// assistant: Noted.
	// through 2
}
