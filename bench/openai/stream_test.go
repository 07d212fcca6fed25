// Package openai_test compares Weft's OpenAI-compatible stream client with
// the official openai-go SDK on the recorded streams of the shared fixture
// folder (WEFT_SSE_FIXTURES, else ../../../shared/fixtures/sse). Both run
// the whole client path against the same loopback server: request
// encoding, HTTP, SSE framing, chunk decoding and accumulation.
//
//	cd bench && go test -run x -bench Stream -benchmem ./openai/
package openai_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/weftlabs/weft/llm"
	weftopenai "github.com/weftlabs/weft/provider/openai"
)

func fixtureDir() string {
	if d := os.Getenv("WEFT_SSE_FIXTURES"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "fixtures", "sse")
}

// fixtures are the SSE-framed recordings (the SDK cannot read JSON lines).
func fixtures(b *testing.B) map[string][]byte {
	files, _ := filepath.Glob(filepath.Join(fixtureDir(), "*.body.sse"))
	if len(files) == 0 {
		b.Skip("no stream fixtures")
	}
	out := map[string][]byte{}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		name := filepath.Base(f)
		out[strings.Split(name, "__")[1]] = body
	}
	return out
}

func server(body []byte) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	}))
}

func BenchmarkStream(b *testing.B) {
	for name, body := range fixtures(b) {
		srv := server(body)
		b.Run(name+"/weft", func(b *testing.B) {
			c, err := weftopenai.New(weftopenai.WithModel("gpt-4o-mini"), weftopenai.WithAPIKey("k"), weftopenai.WithBaseURL(srv.URL))
			if err != nil {
				b.Fatal(err)
			}
			req := &llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				resp, err := llm.Collect(c.Stream(context.Background(), req))
				if err != nil || resp.FinishReason == "" {
					b.Fatal(resp, err)
				}
			}
		})
		b.Run(name+"/openai-go", func(b *testing.B) {
			c := oa.NewClient(option.WithAPIKey("k"), option.WithBaseURL(srv.URL+"/"), option.WithMaxRetries(0))
			params := oa.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("hi")}}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				s := c.Chat.Completions.NewStreaming(context.Background(), params)
				var acc oa.ChatCompletionAccumulator
				for s.Next() {
					acc.AddChunk(s.Current())
				}
				if err := s.Err(); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
		srv.Close()
	}
}
