package llmtest_test

import (
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/provider/openai"
)

// ExampleConformance shows a provider's test running the suite: open
// starts a fake that serves the turns on the provider's wire (here the
// OpenAI wire of llmtest.Server) and points the driver at it. A driver of
// another wire serves the turns from its own fake handler.
func ExampleConformance() {
	var t *testing.T // in a TestConformance(t *testing.T)
	llmtest.Conformance(t, func(t *testing.T, turns ...llmtest.Turn) llm.ChatModel {
		srv := llmtest.NewServer(turns...)
		t.Cleanup(srv.Close)
		m, err := openai.New(openai.WithModel("gpt-4o-mini"), openai.WithBaseURL(srv.URL()))
		if err != nil {
			t.Fatal(err)
		}
		return m
	})
}
