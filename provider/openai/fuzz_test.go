package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/weftlabs/weft/llm"
)

func fuzzClient(t testing.TB) *Client {
	c, err := New(WithModel("m"), WithBaseURL("http://localhost:1/v1"), WithMaxResponseSize(4096))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func addFixtureSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir(), "*.sse"))
	txt, _ := filepath.Glob(filepath.Join(fixtureDir(), "*.chunks.txt"))
	for _, p := range append(files, txt...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// FuzzStreamParse feeds arbitrary bodies to the stream parser: it must not
// panic, must end, must keep its output within the input's size, and must
// fail only with *llm.Error.
func FuzzStreamParse(f *testing.F) {
	f.Add([]byte(sseBody(`{"choices":[{"delta":{"content":"a","tool_calls":[{"index":3,"id":"x","function":{"name":"f","arguments":"{"}}]},"finish_reason":"stop"}]}`, "[DONE]")))
	f.Add([]byte(`{"object":"error","message":"m","code":400}` + "\n"))
	f.Add([]byte("data: {\"error\":\"x\"}\r\r: c\r\n{\"choices\":[]}"))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"a"}],"function_call":{"name":"f"}}}],"usage":{"prompt_tokens":1}}`))
	addFixtureSeeds(f)
	c := fuzzClient(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		p := &streamParser{c: c, ctx: context.Background(), status: 200, events: newEvents(bytes.NewReader(body), c.maxResponse)}
		var acc llm.Accumulator
		produced := 0
		for i := 0; ; i++ {
			chunks, err := p.next()
			for _, ch := range chunks {
				acc.Add(ch)
				produced += len(ch.Text)
			}
			if err == io.EOF {
				if acc.FinishReason() == "" {
					t.Fatal("a stream that ended cleanly has no finish reason")
				}
				break
			}
			if err != nil {
				var e *llm.Error
				if !errors.As(err, &e) {
					t.Fatalf("error %v is %T, not *llm.Error", err, err)
				}
				break
			}
			if i > len(body) {
				t.Fatal("parser does not progress")
			}
		}
		if produced > len(body) {
			t.Fatalf("%d bytes of text from a %d-byte body", produced, len(body))
		}
	})
}

var http200 = http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}}

// FuzzDecodeResponse decodes arbitrary non-streamed bodies and error
// bodies: no panics, and failures are *llm.Error.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(okCompletion))
	f.Add([]byte(`{"choices":[{"message":{"content":[{"type":"text","text":"a"}],"tool_calls":[{"function":{"name":"f"}}],"refusal":"r"}}],"usage":{"prompt_tokens_details":{"cached_tokens":1}}}`))
	f.Add([]byte(`{"error":{"message":"m","type":"t","code":429}}`))
	f.Add([]byte(`{"object":"error","message":"maximum context length","code":"400"}`))
	f.Add([]byte(`{"error":"text","detail":"d"}`))
	c := fuzzClient(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var w chatResponse
		if err := c.decodeJSON(&http200, body, &w); err != nil {
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("decode error %T", err)
			}
			return
		}
		if err := c.payloadError(&w, llm.ErrUnavailable, 200); err != nil {
			return
		}
		if r, err := c.toResponse(&w, 200); err == nil && r.FinishReason == "" {
			t.Fatal("response without a finish reason")
		}
		msg, typ, code, ok := parseErrorBody(body)
		if !ok && (msg != "" || typ != "" || code != "") {
			t.Fatal("parseErrorBody returned fields without ok")
		}
	})
}

// FuzzChunkDecoder checks that the long-lived decoder of stream chunks
// agrees with json.Unmarshal, event after event.
func FuzzChunkDecoder(f *testing.F) {
	f.Add([]byte(`{"id":"a","choices":[{"delta":{"content":"x","tool_calls":[{"index":1}]}}]}`), []byte(`{"id":"a","choices":[{"delta":{}}]}`))
	f.Add([]byte(`{"a":1} {"b":2}`), []byte(`{}`))
	f.Add([]byte(`123`), []byte(`{"choices":[{"index":"x"}]}`))
	f.Add([]byte(`{"usage":{"prompt_tokens":1}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, d1, d2 []byte) {
		var dec chunkDecoder
		var got, want chatResponse
		for _, d := range [][]byte{bytes.TrimSpace(d1), bytes.TrimSpace(d2)} {
			if len(d) == 0 {
				return
			}
			got.reset()
			want.reset()
			werr := json.Unmarshal(d, &want)
			gerr := dec.decode(d, &got)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("decode(%q): Unmarshal err %v, decoder err %v", d, werr, gerr)
			}
			if werr != nil {
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decode(%q): got %+v, want %+v", d, got, want)
			}
		}
	})
}
