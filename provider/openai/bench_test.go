package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
)

type benchFixture struct {
	name string
	body []byte
}

func loadBenchFixtures(b *testing.B) []benchFixture {
	dir := fixtureDir()
	files, _ := filepath.Glob(filepath.Join(dir, "*.sse"))
	txt, _ := filepath.Glob(filepath.Join(dir, "*.chunks.txt"))
	files = append(files, txt...)
	if len(files) == 0 {
		b.Skipf("no stream fixtures at %s", dir)
	}
	sort.Strings(files)
	var out []benchFixture
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		name := filepath.Base(f)
		name = name[:strings.IndexByte(name, '.')]
		out = append(out, benchFixture{name: name, body: body})
	}
	return out
}

// parseAll runs the stream parser over body and returns the chunk count.
func parseAll(b *testing.B, c *Client, r *bytes.Reader) int {
	p := &streamParser{c: c, ctx: context.Background(), status: 200, events: newEvents(r, c.maxResponse)}
	n := 0
	for {
		chunks, err := p.next()
		n += len(chunks)
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamParse measures the stream parser alone (SSE framing, JSON
// decoding, chunk mapping) on each recorded stream: throughput in MB/s and
// heap allocations per emitted chunk.
func BenchmarkStreamParse(b *testing.B) {
	fixtures := loadBenchFixtures(b)
	var all []byte
	for _, f := range fixtures {
		all = append(all, f.body...)
		all = append(all, "\n\n"...)
	}
	c, err := New(WithModel("m"), WithBaseURL("http://localhost:1/v1"))
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, body []byte) {
		r := bytes.NewReader(body)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mallocs := ms.Mallocs
		chunks := 0
		for b.Loop() {
			r.Reset(body)
			chunks += parseAll(b, c, r)
		}
		runtime.ReadMemStats(&ms)
		if chunks > 0 {
			b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(chunks), "allocs/chunk")
			b.ReportMetric(float64(chunks)/float64(b.N), "chunks/op")
		}
	}
	for _, f := range fixtures {
		b.Run(f.name, func(b *testing.B) { run(b, f.body) })
	}
	// Each fixture ends its stream; concatenated, the parser reads only the
	// first. So "all" runs them one after another in one op.
	b.Run("all", func(b *testing.B) {
		b.SetBytes(int64(len(all)))
		b.ReportAllocs()
		readers := make([]*bytes.Reader, len(fixtures))
		for i := range fixtures {
			readers[i] = bytes.NewReader(fixtures[i].body)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mallocs := ms.Mallocs
		chunks := 0
		for b.Loop() {
			for i, r := range readers {
				r.Reset(fixtures[i].body)
				chunks += parseAll(b, c, r)
			}
		}
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(chunks), "allocs/chunk")
	})
}

// BenchmarkStreamClient runs one recorded stream through the whole client:
// request encoding, a loopback HTTP round trip, parsing and accumulation.
func BenchmarkStreamClient(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(fixtureDir(), "fantasy__zai-glm-4-7-flash__thinking-streaming.body.sse"))
	if err != nil {
		b.Skip(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	}))
	defer srv.Close()
	c, err := New(WithModel("m"), WithBaseURL(srv.URL))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llm.Collect(c.Stream(context.Background(), hi)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeResponse measures decoding a non-streamed completion with
// a tool call and usage.
func BenchmarkDecodeResponse(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-abc123","object":"chat.completion","created":1741569952,"model":"gpt-4o-mini-2024-07-18",
"choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20) + `",
"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}],"refusal":null,"annotations":[]},
"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,
"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0}},
"service_tier":"default","system_fingerprint":"fp_1"}`)
	c, err := New(WithModel("m"), WithBaseURL("http://localhost:1/v1"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var w chatResponse
		if err := c.decodeJSON(&http200, body, &w); err != nil {
			b.Fatal(err)
		}
		if _, err := c.toResponse(&w, 200); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChunkDecode compares json.Unmarshal with the long-lived
// json.Decoder of chunkDecoder on every JSON event of the recorded streams,
// both into one reused chatResponse: the justification for chunkDecoder.
func BenchmarkChunkDecode(b *testing.B) {
	var events [][]byte
	size := 0
	for _, f := range loadBenchFixtures(b) {
		r := newEvents(bytes.NewReader(f.body), DefaultMaxResponseSize)
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if d := bytes.TrimSpace([]byte(ev.Data)); len(d) > 0 && d[0] == '{' {
				events = append(events, d)
				size += len(d)
			}
		}
	}
	b.Run("unmarshal", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		var w chatResponse
		for b.Loop() {
			for _, d := range events {
				w.reset()
				if err := json.Unmarshal(d, &w); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		var w chatResponse
		var dec chunkDecoder
		for b.Loop() {
			for _, d := range events {
				w.reset()
				if err := dec.decode(d, &w); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
