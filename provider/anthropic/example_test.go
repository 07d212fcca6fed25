package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/anthropic"
)

// fakeAnthropic answers the Messages API the way Anthropic does: a JSON
// message, or server-sent events when the request asks to stream.
func fakeAnthropic() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream {
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
				"content":[{"type":"text","text":"Bonjour."}],"stop_reason":"end_turn",
				"usage":{"input_tokens":12,"output_tokens":3}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"msg_2","model":"claude-sonnet-4-5","usage":{"input_tokens":12,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", world."}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}`,
			`{"type":"message_stop"}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", ev)
		}
	}))
}

func Example() {
	srv := fakeAnthropic()
	defer srv.Close()

	driver, err := anthropic.New(
		anthropic.WithAPIKey("sk-ant-example"),
		anthropic.WithBaseURL(srv.URL),
		anthropic.WithModel("claude-sonnet-4-5"),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	model := llm.New(driver)

	req := &llm.Request{Messages: []llm.Message{llm.UserMessage("Say hello.")}}
	for chunk, err := range model.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if chunk.Type == llm.ChunkText {
			fmt.Print(chunk.Text)
		}
	}
	fmt.Println()
	// Output: Hello, world.
}

func ExampleClient_Generate() {
	srv := fakeAnthropic()
	defer srv.Close()

	model, _ := anthropic.New(anthropic.WithAPIKey("sk-ant-example"), anthropic.WithBaseURL(srv.URL))
	resp, err := model.Generate(context.Background(), &llm.Request{
		Messages: []llm.Message{
			llm.SystemMessage("Translate into French."),
			llm.UserMessage("Hello."),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Text(), resp.FinishReason, resp.Usage.TotalTokens)
	// Output: Bonjour. stop 15
}
