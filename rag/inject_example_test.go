package rag_test

import (
	"fmt"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/rag"
)

// Sources are appended to the user message, numbered and named, within a
// token budget.
func ExampleContentInjector() {
	sources := []rag.Source{
		{DocumentName: "handbook.pdf", Content: "Hold the power button for ten seconds.", Metadata: map[string]string{rag.MetaHeadings: "Troubleshooting > Reset", rag.MetaPage: "12"}},
		{DocumentName: "faq.md", Content: "A reset keeps your files."},
	}
	msg, used := rag.ContentInjector{MaxTokens: 500}.Inject(llm.UserMessage("How do I reset the X200?"), sources)
	fmt.Println(msg.Text())
	fmt.Println(len(used), "sources")
	// Output:
	// How do I reset the X200?
	//
	// Answer using the following information:
	// [1] handbook.pdf › Troubleshooting > Reset (page 12)
	// Hold the power button for ten seconds.
	//
	// [2] faq.md
	// A reset keeps your files.
	// 2 sources
}
