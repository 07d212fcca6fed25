package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
)

var update = flag.Bool("update", false, "rewrite golden files")

// recorder is an httptest handler that records the last request body and
// answers with a fixed status, headers and body.
type recorder struct {
	mu     sync.Mutex
	path   string
	header http.Header
	body   []byte

	status  int
	headers map[string]string
	answer  []byte
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.path, r.header, r.body = req.URL.Path, req.Header.Clone(), b
	r.mu.Unlock()
	for k, v := range r.headers {
		w.Header().Set(k, v)
	}
	if r.status != 0 {
		w.WriteHeader(r.status)
	}
	w.Write(r.answer)
}

func (r *recorder) last() (string, http.Header, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.path, r.header, r.body
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func newModel(t *testing.T, srv *httptest.Server, opts ...Option) *Client {
	t.Helper()
	m, err := New(append([]Option{WithHost(srv.URL), WithHTTPClient(srv.Client())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// assertGolden compares got with testdata/name as JSON, byte for byte after
// indentation, and rewrites the file under -update.
func assertGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, got)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("request body differs from %s:\n got: %s\nwant: %s", path, buf.Bytes(), want)
	}
}

func richRequest() *llm.Request {
	return &llm.Request{
		Messages: []llm.Message{
			llm.SystemMessage("You are terse."),
			llm.UserParts(llm.TextPart("What is in this picture, and the weather there?"),
				llm.ImageDataPart("image/png", []byte{0x89, 'P', 'N', 'G'}),
				llm.ImageURLPart("data:image/jpeg;base64,/9j/4AAQ")),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_0", Name: "get_weather", Arguments: `{"city": "Paris"}`}}},
			llm.ToolResultMessage("call_0", "get_weather", `{"temp_c": 18}`, false),
			llm.AssistantMessage("It is a cat in Paris; 18°C."),
			llm.UserMessage("Thanks."),
		},
		Tools: []llm.ToolSpec{{
			Name: "get_weather", Description: "Current weather for a city.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		}},
		ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "answer",
			Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		Temperature: llm.Ptr(0.2),
		TopP:        llm.Ptr(0.9),
		MaxTokens:   256,
		Stop:        []string{"\n\n"},
		Seed:        llm.Ptr[int64](7),
		Extra:       map[string]any{"num_ctx": 8192, "keep_alive": "5m", "think": false, "options": map[string]any{"top_k": 40}},
	}
}

func TestGoldenRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		golden string
		req    *llm.Request
		stream bool
	}{
		{"rich", "request_rich.json", richRequest(), true},
		{"minimal", "request_minimal.json", &llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}}, false},
		{"json mode, no tools", "request_json_mode.json", &llm.Request{
			Messages:       []llm.Message{llm.UserMessage("list three colours as JSON")},
			Tools:          []llm.ToolSpec{{Name: "unused"}},
			ToolChoice:     llm.ToolChoice{Mode: llm.ToolChoiceNone},
			ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSON},
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{answer: fixture(t, "stream_text.ndjson")}
			m := newModel(t, serve(t, rec))
			var err error
			if tt.stream {
				_, err = llm.Collect(m.Stream(context.Background(), tt.req))
			} else {
				_, err = m.Generate(context.Background(), tt.req)
			}
			if err != nil {
				t.Fatal(err)
			}
			path, _, body := rec.last()
			if path != "/api/chat" {
				t.Errorf("path = %q, want /api/chat", path)
			}
			assertGolden(t, tt.golden, body)
		})
	}
}

func TestStreamFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture   string
		text      string
		reasoning string
		calls     []llm.ToolCall
		finish    llm.FinishReason
		usage     llm.Usage
		model     string
		errKind   error
		errText   string
	}{
		{fixture: "stream_text.ndjson", text: "The sky is blue.", finish: llm.FinishStop, model: "llama3.2",
			usage: llm.Usage{PromptTokens: 26, CompletionTokens: 6, TotalTokens: 32}},
		{fixture: "stream_tools.ndjson", finish: llm.FinishToolCalls, model: "qwen3:8b",
			calls: []llm.ToolCall{
				{ID: "call_0", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`},
				{ID: "call_abc", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
			},
			usage: llm.Usage{PromptTokens: 120, CompletionTokens: 31, TotalTokens: 151}},
		{fixture: "stream_thinking.ndjson", text: "42", reasoning: "The user wants a number.", finish: llm.FinishLength, model: "deepseek-r1:8b",
			usage: llm.Usage{PromptTokens: 10, CompletionTokens: 64, TotalTokens: 74}},
		{fixture: "stream_error.ndjson", text: "Once", model: "llama3.2", errKind: llm.ErrStreamBroken, errText: "unexpected EOF"},
		{fixture: "stream_truncated.ndjson", text: "Once upon a time", model: "llama3.2", errKind: llm.ErrStreamBroken, errText: "done"},
		{fixture: "stream_malformed.ndjson", text: "Once", model: "llama3.2", errKind: llm.ErrStreamBroken, errText: "malformed line"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			m := newModel(t, serve(t, &recorder{answer: fixture(t, tt.fixture)}))
			resp, err := llm.Collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("go")}}))
			if tt.errKind != nil {
				if !errors.Is(err, tt.errKind) || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want %v containing %q", err, tt.errKind, tt.errText)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := resp.Text(); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if resp.Message.Reasoning != tt.reasoning {
				t.Errorf("reasoning = %q, want %q", resp.Message.Reasoning, tt.reasoning)
			}
			if len(resp.Message.ToolCalls) != len(tt.calls) {
				t.Fatalf("tool calls = %+v, want %+v", resp.Message.ToolCalls, tt.calls)
			}
			for i := range tt.calls {
				if resp.Message.ToolCalls[i] != tt.calls[i] {
					t.Errorf("tool call %d = %+v, want %+v", i, resp.Message.ToolCalls[i], tt.calls[i])
				}
			}
			if resp.FinishReason != tt.finish {
				t.Errorf("finish = %q, want %q", resp.FinishReason, tt.finish)
			}
			if resp.Usage != tt.usage {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tt.usage)
			}
			if resp.Model != tt.model {
				t.Errorf("model = %q, want %q", resp.Model, tt.model)
			}
		})
	}
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	m := newModel(t, serve(t, &recorder{answer: fixture(t, "generate.json")}))
	resp, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("Translate: hello world")}})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{Model: "llama3.2", Message: llm.Message{Role: llm.RoleAssistant, Reasoning: "Translate.", Parts: []llm.Part{llm.TextPart("Bonjour le monde.")}},
		Usage: llm.Usage{PromptTokens: 14, CompletionTokens: 5, TotalTokens: 19}, FinishReason: llm.FinishStop}
	if resp.Text() != want.Message.Text() || resp.Message.Reasoning != want.Message.Reasoning || resp.Usage != want.Usage ||
		resp.FinishReason != want.FinishReason || resp.Model != want.Model {
		t.Errorf("response = %+v, want %+v", resp, want)
	}
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	m, err := New()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  *llm.Request
		want string
	}{
		{"nil", nil, "nil request"},
		{"invalid tool arguments", &llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "call_7", Name: "search", Arguments: `{"q": "unterminated`}}}}}, `tool call "call_7" (search)`},
		{"array tool arguments", &llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "c", Name: "search", Arguments: `[1]`}}}}}, "not a JSON object"},
		{"http image", &llm.Request{Messages: []llm.Message{llm.UserParts(llm.ImageURLPart("https://example.com/cat.png"))}}, "only inline images"},
		{"unknown role", &llm.Request{Messages: []llm.Message{{Role: "narrator"}}}, `unknown role "narrator"`},
		{"bad schema", &llm.Request{Messages: []llm.Message{llm.UserMessage("x")},
			ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONSchema, Schema: json.RawMessage(`{`)}}, "not valid JSON"},
		{"forced missing tool", &llm.Request{Messages: []llm.Message{llm.UserMessage("x")}, Tools: []llm.ToolSpec{{Name: "a"}},
			ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "b"}}, `names "b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// No server: a bad request must fail before any connection.
			_, err := m.Generate(context.Background(), tt.req)
			if !errors.Is(err, llm.ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Generate err = %v, want ErrBadRequest containing %q", err, tt.want)
			}
			_, err = llm.Collect(m.Stream(context.Background(), tt.req))
			if !errors.Is(err, llm.ErrBadRequest) {
				t.Errorf("Stream err = %v, want ErrBadRequest", err)
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		status     int
		headers    map[string]string
		body       string
		kind       error
		text       string
		retryAfter time.Duration
	}{
		{"model missing", 404, nil, `{"error":"model \"nope\" not found, try pulling it first"}`, llm.ErrBadRequest, "ollama pull llama3.2", 0},
		{"no tools", 400, nil, `{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}`, llm.ErrBadRequest, "does not support tools", 0},
		{"rate limited", 429, map[string]string{"Retry-After": "3"}, `{"error":"too many requests"}`, llm.ErrRateLimited, "too many requests", 3 * time.Second},
		{"unauthorized", 401, nil, `{"error":"unauthorized"}`, llm.ErrAuthentication, "unauthorized", 0},
		{"server error, text body", 500, nil, "llama runner process has terminated", llm.ErrUnavailable, "runner process", 0},
		{"overloaded", 503, nil, `{"error":"server busy, please try again.  maximum pending requests exceeded"}`, llm.ErrUnavailable, "server busy", 0},
		{"context", 400, nil, `{"error":"the input length exceeds the context length"}`, llm.ErrContextTooLong, "context length", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newModel(t, serve(t, &recorder{status: tt.status, headers: tt.headers, answer: []byte(tt.body)}))
			for _, op := range []string{"generate", "stream", "embed"} {
				var err error
				switch op {
				case "generate":
					_, err = m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("x")}})
				case "stream":
					_, err = llm.Collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("x")}}))
				case "embed":
					_, err = m.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{"x"}})
				}
				var le *llm.Error
				if !errors.As(err, &le) || !errors.Is(err, tt.kind) {
					t.Fatalf("%s: err = %v, want kind %v", op, err, tt.kind)
				}
				if le.StatusCode != tt.status || le.RetryAfter != tt.retryAfter || !strings.Contains(le.Error(), tt.text) {
					t.Errorf("%s: err = %v (status %d, retry after %v), want status %d, retry after %v, text %q",
						op, le, le.StatusCode, le.RetryAfter, tt.status, tt.retryAfter, tt.text)
				}
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	m, err := New(WithHost(url))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("x")}})
	if !errors.Is(err, llm.ErrUnavailable) || !strings.Contains(err.Error(), "ollama serve") {
		t.Errorf("err = %v, want ErrUnavailable telling to start ollama", err)
	}
}

// TestStreamBreakClosesBody checks that a consumer that stops reading ends
// the HTTP request: the server sees its request context end.
func TestStreamBreakClosesBody(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"model":"llama3.2","message":{"content":"first"},"done":false}` + "\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	m := newModel(t, srv)
	for c, err := range m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("x")}}) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Type == llm.ChunkText {
			break
		}
	}
	<-gone
}

func TestStreamCancelledContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"model":"llama3.2","message":{"content":"first"},"done":false}` + "\n"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer close(release)
	m := newModel(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []llm.Chunk
	var err error
	for c, e := range m.Stream(ctx, &llm.Request{Messages: []llm.Message{llm.UserMessage("x")}}) {
		if e != nil {
			err = e
			break
		}
		got = append(got, c)
		if c.Type == llm.ChunkText {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if len(got) != 2 {
		t.Errorf("chunks = %+v, want meta and text", got)
	}
}

func TestEmbed(t *testing.T) {
	t.Parallel()
	rec := &recorder{answer: []byte(`{"model":"nomic-embed-text","embeddings":[[0.1,0.2,0.3],[0.4,0.5,0.6]],"total_duration":14143917,"prompt_eval_count":8}`)}
	m := newModel(t, serve(t, rec), WithModel("nomic-embed-text"))
	resp, err := m.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{"why is the sky blue?", "why is grass green?"}, Dimensions: 3})
	if err != nil {
		t.Fatal(err)
	}
	path, _, body := rec.last()
	if path != "/api/embed" {
		t.Errorf("path = %q", path)
	}
	if got, want := string(body), `{"model":"nomic-embed-text","input":["why is the sky blue?","why is grass green?"],"dimensions":3}`; got != want {
		t.Errorf("body = %s, want %s", got, want)
	}
	if len(resp.Vectors) != 2 || resp.Vectors[1][2] != 0.6 || resp.Usage.PromptTokens != 8 || resp.Model != "nomic-embed-text" {
		t.Errorf("response = %+v", resp)
	}

	short := newModel(t, serve(t, &recorder{answer: []byte(`{"embeddings":[[1]]}`)}))
	if _, err := short.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{"a", "b"}}); !errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("mismatched count: err = %v, want ErrUnavailable", err)
	}
	if _, err := short.Embed(context.Background(), &llm.EmbedRequest{}); !errors.Is(err, llm.ErrBadRequest) {
		t.Errorf("no inputs: err = %v, want ErrBadRequest", err)
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	rec := &recorder{answer: fixture(t, "generate.json")}
	m := newModel(t, serve(t, rec), WithAPIKey("sk-test"), WithHeader("X-Team", "weft"))
	if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("x")}}); err != nil {
		t.Fatal(err)
	}
	_, h, _ := rec.last()
	if got := h.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	if got := h.Get("X-Team"); got != "weft" {
		t.Errorf("X-Team = %q", got)
	}
}

func TestParseHost(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want, err string }{
		{"", DefaultHost, ""},
		{"127.0.0.1:11434", "http://127.0.0.1:11434", ""},
		{"gpu-box", "http://gpu-box:11434", ""},
		{"gpu-box:8080", "http://gpu-box:8080", ""},
		{":9999", "http://127.0.0.1:9999", ""},
		{"0.0.0.0", "http://0.0.0.0:11434", ""},
		{"http://gpu-box", "http://gpu-box", ""},
		{"https://ollama.example.com/", "https://ollama.example.com", ""},
		{"https://proxy.example.com/ollama/", "https://proxy.example.com/ollama", ""},
		{"[::1]:11434", "http://[::1]:11434", ""},
		{"ftp://x", "", "scheme"},
		{"http://", "", "invalid host"},
	}
	for _, tt := range tests {
		got, err := ParseHost(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseHost(%q) err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseHost(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model             string
		vision, reasoning bool
	}{
		{"llama3.2", false, false},
		{"llama3.2-vision:11b", true, false},
		{"llava:13b", true, false},
		{"gemma3:4b", true, false},
		{"gemma3:1b", false, false},
		{"hf.co/unsloth/Qwen2.5-VL-7B-Instruct-GGUF", true, false},
		{"hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF", false, false},
		{"qwen2.5vl:7b", true, false},
		{"qwen3:8b", false, true},
		{"deepseek-r1:8b", false, true},
	}
	for _, tt := range tests {
		m, err := New(WithModel(tt.model))
		if err != nil {
			t.Fatal(err)
		}
		c := m.Capabilities()
		if !c.Tools || !c.JSONSchema || !c.JSONMode || !c.Streaming || c.Vision != tt.vision || c.Reasoning != tt.reasoning {
			t.Errorf("%s: capabilities = %+v, want vision %v reasoning %v", tt.model, c, tt.vision, tt.reasoning)
		}
		if m.Name() != "ollama/"+tt.model {
			t.Errorf("Name = %q", m.Name())
		}
	}
}

// TestConformance runs the provider through the registry and llm.Model, the
// way users hold it: Generate, Stream drained by llm.Collect, and Embed.
func TestConformance(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Stream {
			w.Write(fixture(t, "stream_text.ndjson"))
			return
		}
		w.Write(fixture(t, "generate.json"))
	})
	mux.HandleFunc("POST /api/embed", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"embeddings":[[1,0]]}`))
	})
	srv := serve(t, mux)
	env := map[string]string{"OLLAMA_HOST": strings.TrimPrefix(srv.URL, "http://")}
	m, err := provider.Open("ollama/llama3.2", provider.WithGetenv(func(k string) string { return env[k] }), provider.WithModelOptions(llm.WithRetries(0)))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "ollama/llama3.2" || !m.Capabilities().JSONSchema {
		t.Errorf("name %q, capabilities %+v", m.Name(), m.Capabilities())
	}
	ctx := context.Background()
	req := &llm.Request{Messages: []llm.Message{llm.UserMessage("hello")}}
	resp, err := m.Generate(ctx, req)
	if err != nil || resp.Text() != "Bonjour le monde." {
		t.Fatalf("Generate = %+v, %v", resp, err)
	}
	resp, err = llm.Collect(m.Stream(ctx, req))
	if err != nil || resp.Text() != "The sky is blue." || resp.FinishReason != llm.FinishStop {
		t.Fatalf("Stream = %+v, %v", resp, err)
	}
	er, err := m.Embed(ctx, &llm.EmbedRequest{Inputs: []string{"x"}})
	if err != nil || len(er.Vectors) != 1 {
		t.Fatalf("Embed = %+v, %v", er, err)
	}

	st, err := provider.StatusOf("ollama", func(k string) string { return env[k] })
	if err != nil || !st.Configured {
		t.Errorf("status with OLLAMA_HOST = %+v, %v", st, err)
	}
	st, _ = provider.StatusOf("ollama", func(string) string { return "" })
	if st.Configured || !strings.Contains(st.Detail, "OLLAMA_HOST") {
		t.Errorf("status without OLLAMA_HOST = %+v", st)
	}
	if _, err := provider.Open("ollama/x", provider.WithGetenv(func(string) string { return "ftp://nope" })); err == nil {
		t.Error("Open with a bad OLLAMA_HOST succeeded")
	}
}
