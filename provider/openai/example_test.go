package openai_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/openai"
)

// fakeServer stands in for an OpenAI-compatible server, so the examples
// run offline.
func fakeServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == "text/event-stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"id":"c1","model":"llama3","choices":[{"index":0,"delta":{"content":"Hello"}}]}`+"\n\n"+
				`data: {"choices":[{"index":0,"delta":{"content":", world"},"finish_reason":"stop"}]}`+"\n\n"+
				"data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","model":"llama3","choices":[{"index":0,"message":{"role":"assistant","content":"Hello, world"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
	}))
}

func ExampleNew() {
	srv := fakeServer() // e.g. a local vLLM or llama.cpp server at http://localhost:8000/v1
	defer srv.Close()

	driver, err := openai.New(
		openai.WithModel("llama3"),
		openai.WithBaseURL(srv.URL+"/v1"),
	)
	if err != nil {
		log.Fatal(err)
	}
	model := llm.New(driver) // adds retries, timeouts, fallbacks and hooks

	resp, err := model.Generate(context.Background(), &llm.Request{
		Messages: []llm.Message{llm.UserMessage("Say hello")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text(), resp.FinishReason, resp.Usage.TotalTokens)
	// Output: Hello, world stop 8
}

func ExampleClient_Stream() {
	srv := fakeServer()
	defer srv.Close()

	driver, err := openai.New(openai.WithModel("llama3"), openai.WithBaseURL(srv.URL+"/v1"))
	if err != nil {
		log.Fatal(err)
	}
	for chunk, err := range driver.Stream(context.Background(), &llm.Request{
		Messages: []llm.Message{llm.UserMessage("Say hello")},
	}) {
		if err != nil {
			log.Fatal(err)
		}
		switch chunk.Type {
		case llm.ChunkText:
			fmt.Printf("%q\n", chunk.Text)
		case llm.ChunkFinish:
			fmt.Println("finish:", chunk.FinishReason)
		}
	}
	// Output:
	// "Hello"
	// ", world"
	// finish: stop
}
