package scripted_test

import (
	"context"
	"fmt"
	"regexp"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
)

// A tool-loop test scripts the model's turns: first a tool call, then the
// final answer.
func ExampleSequence() {
	model := llm.New(scripted.New(scripted.Sequence(
		scripted.CallTool("add", `{"a":2,"b":3}`),
		scripted.Reply("2 + 3 = 5"),
	)))
	ctx := context.Background()
	req := &llm.Request{Messages: []llm.Message{llm.UserMessage("what is 2+3?")}}

	resp, _ := model.Generate(ctx, req)
	call := resp.Message.ToolCalls[0]
	fmt.Println(resp.FinishReason, call.Name, call.Arguments)

	req.Messages = append(req.Messages, resp.Message, llm.ToolResultMessage(call.ID, call.Name, "5", false))
	resp, _ = model.Generate(ctx, req)
	fmt.Println(resp.FinishReason, resp.Text())
	// Output:
	// tool_calls add {"a":2,"b":3}
	// stop 2 + 3 = 5
}

// Rules are tried in order; the first that matches answers.
func ExampleNew() {
	m := scripted.New(
		scripted.WhenUserSays(regexp.MustCompile(`(?i)\bhello\b`), scripted.Reply("Hi! How can I help?")),
		scripted.CallToolWhen(regexp.MustCompile(`(?i)weather`), "get_weather", `{"city":"Oslo"}`),
		scripted.SummarizeToolResults(),
		scripted.Echo(),
	)
	for _, q := range []string{"Hello there", "What's the weather?", "anything else"} {
		resp, _ := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage(q)}})
		if len(resp.Message.ToolCalls) > 0 {
			fmt.Println("call", resp.Message.ToolCalls[0].Name)
			continue
		}
		fmt.Println(resp.Text())
	}
	// Output:
	// Hi! How can I help?
	// call get_weather
	// anything else
}

// The demo model streams word-sized chunks, like a real model.
func ExampleModel_Stream() {
	m := scripted.New(scripted.Reply("Streams arrive in pieces."))
	for c, err := range m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if c.Type == llm.ChunkText {
			fmt.Printf("[%s]", c.Text)
		}
	}
	fmt.Println()
	// Output:
	// [Streams][ arrive][ in][ pieces.]
}

// Texts that share words have similar vectors.
func ExampleVector() {
	a := scripted.Vector("How do I reset my password?", 0)
	b := scripted.Vector("Resetting a forgotten password", 0)
	c := scripted.Vector("Opening hours of the museum", 0)
	fmt.Printf("related %.2f, unrelated %.2f\n", cosine(a, b), cosine(a, c))
	// Output:
	// related 0.41, unrelated 0.00
}
