package ollama_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/ollama"
)

// fakeOllama answers /api/chat the way a local Ollama server does: one JSON
// object, or NDJSON lines when the request asks to stream.
func fakeOllama() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream {
			fmt.Fprintln(w, `{"model":"llama3.2","message":{"role":"assistant","content":"Hello, world."},"done":true,"done_reason":"stop","prompt_eval_count":12,"eval_count":4}`)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprintln(w, `{"model":"llama3.2","message":{"role":"assistant","content":"Hello"},"done":false}`)
		fmt.Fprintln(w, `{"model":"llama3.2","message":{"role":"assistant","content":", world."},"done":false}`)
		fmt.Fprintln(w, `{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":12,"eval_count":4}`)
	}))
}

func Example() {
	srv := fakeOllama()
	defer srv.Close()

	driver, err := ollama.New(ollama.WithHost(srv.URL), ollama.WithModel("llama3.2"))
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
	srv := fakeOllama()
	defer srv.Close()

	model, _ := ollama.New(ollama.WithHost(srv.URL))
	resp, err := model.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("Say hello.")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Text(), resp.FinishReason, resp.Usage.TotalTokens)
	// Output: Hello, world. stop 16
}
