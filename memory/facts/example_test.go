package facts_test

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
)

// Learn what a turn says about its user, then recall it in a later
// conversation within a token budget.
func Example() {
	// Scripted models stand in for a chat model and an embedding model.
	extraction := scripted.New(scripted.ReplyJSON(map[string]any{"operations": []map[string]string{
		{"op": "add", "id": "", "text": "Lives in Berlin."},
	}}))
	embed := rag.EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			out[i] = scripted.Vector(t, 256)
		}
		return out, nil
	})
	mem := facts.New(facts.NewInMemory(), embed, facts.WithExtractor(facts.NewExtractor(extraction)))
	ctx := context.Background()
	ada := facts.Scope{Tenant: "acme", User: "ada"}

	turn := []llm.Message{llm.UserMessage("I just moved to Berlin!"), llm.AssistantMessage("Welcome to Berlin!")}
	ch, err := mem.Learn(ctx, ada, turn, facts.Source{Kind: facts.SourceExtraction, Session: "monday"})
	if err != nil {
		panic(err)
	}
	fmt.Println("learned:", ch.Added[0].Text)

	r, err := mem.Recall(ctx, ada, "Where does the user live?", 100)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Text)
	// Output:
	// learned: Lives in Berlin.
	// <user_memory>
	// Remembered about the user from earlier conversations, most relevant first (it may be out of date):
	// - Lives in Berlin.
	// </user_memory>
}
