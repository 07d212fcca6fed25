package openai_test

import (
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/provider/openai"
)

// TestSuite runs the provider conformance suite against llmtest.Server,
// which speaks the OpenAI wire.
func TestSuite(t *testing.T) {
	llmtest.Conformance(t, func(t *testing.T, turns ...llmtest.Turn) llm.ChatModel {
		srv := llmtest.NewServer(turns...)
		t.Cleanup(srv.Close)
		m, err := openai.New(openai.WithModel("gpt-4o-mini"), openai.WithAPIKey("sk-test"), openai.WithBaseURL(srv.URL()))
		if err != nil {
			t.Fatal(err)
		}
		return m
	})
}
