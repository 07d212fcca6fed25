package rag_test

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
)

// A follow-up question is rewritten into one that retrieval can answer on
// its own.
func ExampleCompressQuery() {
	// A scripted model stands in for a real one.
	model := scripted.New(scripted.Reply("What is the price of the X200?"))
	compress, err := rag.CompressQuery(model)
	if err != nil {
		fmt.Println(err)
		return
	}
	queries, err := compress.Transform(context.Background(), rag.Query{
		Text: "what about its price?",
		History: []llm.Message{
			llm.UserMessage("Tell me about the X200."),
			llm.AssistantMessage("The X200 is our mid-range phone."),
		},
	})
	fmt.Println(queries, err)
	// Output:
	// [What is the price of the X200?] <nil>
}
