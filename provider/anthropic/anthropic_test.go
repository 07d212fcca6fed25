package anthropic

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

// recorder is an httptest handler that records the last request and answers
// with a fixed status, headers and body.
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
	m, err := New(append([]Option{WithAPIKey("sk-ant-test"), WithBaseURL(srv.URL), WithHTTPClient(srv.Client())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func userReq(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.UserMessage(text)}}
}

// assertGolden compares got with testdata/name after indentation, and
// rewrites the file under -update.
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
			llm.SystemMessage("You are a weather assistant."),
			llm.UserParts(llm.TextPart("What city is this?"),
				llm.ImageDataPart("image/png", []byte{0x89, 'P', 'N', 'G'}),
				llm.ImageURLPart("https://example.com/skyline.jpg")),
			llm.UserParts(llm.ImageURLPart("data:image/webp;base64,UklGRg==")),
			llm.SystemMessage("Answer in Celsius."),
			{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("San Francisco. Checking the weather.")}, Reasoning: "not sent",
				ToolCalls: []llm.ToolCall{
					{ID: "toolu_1", Name: "get_weather", Arguments: `{"location": "San Francisco, CA"}`},
					{ID: "toolu_2", Name: "get_time", Arguments: ""},
				}},
			llm.ToolResultMessage("toolu_1", "get_weather", `{"temp_c": 18}`, false),
			llm.ToolResultMessage("toolu_2", "get_time", "clock unavailable", true),
			llm.UserMessage("And tomorrow?"),
		},
		Tools: []llm.ToolSpec{
			{Name: "get_weather", Description: "Current weather for a location.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`)},
			{Name: "get_time"},
		},
		ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"},
		ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "forecast",
			Schema: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"],"additionalProperties":false}`)},
		Temperature: llm.Ptr(0.3),
		TopP:        llm.Ptr(0.95),
		MaxTokens:   1024,
		Stop:        []string{"END"},
		Seed:        llm.Ptr[int64](1),
		Extra:       map[string]any{"metadata": map[string]any{"user_id": "u-42"}, "top_k": 20},
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
		{"minimal", "request_minimal.json", userReq("Hello"), false},
		{"required tool, thinking", "request_thinking.json", &llm.Request{
			Messages:   []llm.Message{llm.UserMessage("What is 27 * 453?")},
			Tools:      []llm.ToolSpec{{Name: "calc", Parameters: json.RawMessage(`{"type":"object"}`)}},
			ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired},
			MaxTokens:  16000,
			Extra:      map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 10000}},
		}, true},
		{"no tools, choice ignored", "request_choice_without_tools.json", &llm.Request{
			Messages:   []llm.Message{llm.UserMessage("Hi"), llm.AssistantMessage("Hello!"), llm.AssistantMessage("How can I help?"), llm.UserMessage("Tell a joke.")},
			ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone},
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			answer := fixture(t, "generate.json")
			if tt.stream {
				answer = fixture(t, "stream_text.sse")
			}
			rec := &recorder{answer: answer}
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
			if path != "/v1/messages" {
				t.Errorf("path = %q, want /v1/messages", path)
			}
			assertGolden(t, tt.golden, body)
		})
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	rec := &recorder{answer: fixture(t, "generate.json")}
	m := newModel(t, serve(t, rec), WithBeta("context-1m-2025-08-07"), WithHeader("X-Team", "weft"))
	if _, err := m.Generate(context.Background(), userReq("x")); err != nil {
		t.Fatal(err)
	}
	_, h, _ := rec.last()
	for k, want := range map[string]string{
		"X-Api-Key":         "sk-ant-test",
		"Anthropic-Version": "2023-06-01",
		"Anthropic-Beta":    "context-1m-2025-08-07",
		"Content-Type":      "application/json",
		"X-Team":            "weft",
		"Authorization":     "",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	m := newModel(t, serve(t, &recorder{answer: fixture(t, "generate.json")}))
	resp, err := m.Generate(context.Background(), userReq("Weather in SF?"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ID != "msg_01Aq9w938a90dw8q" || resp.Model != "claude-sonnet-4-5-20250929" {
		t.Errorf("id, model = %q, %q", resp.ID, resp.Model)
	}
	if resp.Text() != "I'll look that up." || resp.Message.Reasoning != "The user wants the weather; call the tool." {
		t.Errorf("text %q, reasoning %q", resp.Text(), resp.Message.Reasoning)
	}
	wantCall := llm.ToolCall{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: `{"location":"San Francisco, CA","unit":"celsius"}`}
	if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0] != wantCall {
		t.Errorf("tool calls = %+v, want %+v", resp.Message.ToolCalls, wantCall)
	}
	if resp.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish = %q", resp.FinishReason)
	}
	wantUsage := llm.Usage{PromptTokens: 3195, CompletionTokens: 503, TotalTokens: 3698, CachedTokens: 1000}
	if resp.Usage != wantUsage {
		t.Errorf("usage = %+v, want %+v", resp.Usage, wantUsage)
	}
}

func TestStreamFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture   string
		id, model string
		text      string
		reasoning string
		calls     []llm.ToolCall
		finish    llm.FinishReason
		usage     llm.Usage
		errKind   error
		errText   string
	}{
		{fixture: "stream_text.sse", id: "msg_01XFDUDYJgAACzvnptvVoYEL", model: "claude-sonnet-4-5-20250929",
			text: "Hello, world.", finish: llm.FinishStop,
			usage: llm.Usage{PromptTokens: 25, CompletionTokens: 15, TotalTokens: 40}},
		{fixture: "stream_tools.sse", id: "msg_014p7gG3wDgGV9EUtLvnow3U", model: "claude-haiku-4-5-20251001",
			text: "Let me check the weather.", finish: llm.FinishToolCalls,
			calls: []llm.ToolCall{
				{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Arguments: `{"location": "San Francisco, CA"}`},
				{ID: "toolu_02NoArgs", Name: "get_time", Arguments: `{}`},
			},
			usage: llm.Usage{PromptTokens: 2520, CompletionTokens: 89, TotalTokens: 2609, CachedTokens: 2048}},
		{fixture: "stream_thinking.sse", id: "msg_01...", model: "claude-opus-4-5",
			text: "27 * 453 = 12,231", reasoning: "27 * 453 = 27 * 400 + 27 * 53 = 10800 + 1431 = 12231", finish: llm.FinishLength,
			usage: llm.Usage{PromptTokens: 14, CompletionTokens: 120, TotalTokens: 134}},
		{fixture: "stream_server_tool.sse", id: "msg_01Search", model: "claude-sonnet-4-5", text: "Sunny, 21°C.", finish: llm.FinishStop,
			usage: llm.Usage{PromptTokens: 10682, CompletionTokens: 510, TotalTokens: 11192}},
		{fixture: "stream_refusal.sse", id: "msg_01Refusal", model: "claude-sonnet-4-5", finish: llm.FinishContentFilter,
			usage: llm.Usage{PromptTokens: 40, CompletionTokens: 3, TotalTokens: 43}},
		{fixture: "stream_overloaded.sse", id: "msg_01Overloaded", model: "claude-sonnet-4-5", text: "Once",
			errKind: llm.ErrUnavailable, errText: "[overloaded_error]: Overloaded"},
		{fixture: "stream_truncated.sse", id: "msg_01Truncated", model: "claude-sonnet-4-5", text: "Once upon",
			errKind: llm.ErrStreamBroken, errText: "before message_stop"},
		{fixture: "stream_malformed.sse", id: "msg_01Bad", model: "claude-sonnet-4-5",
			errKind: llm.ErrStreamBroken, errText: "malformed content_block_delta event"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			m := newModel(t, serve(t, &recorder{headers: map[string]string{"Content-Type": "text/event-stream"}, answer: fixture(t, tt.fixture)}))
			resp, err := llm.Collect(m.Stream(context.Background(), userReq("go")))
			if tt.errKind != nil {
				var le *llm.Error
				if !errors.As(err, &le) || !errors.Is(err, tt.errKind) || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want *llm.Error %v containing %q", err, tt.errKind, tt.errText)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if resp.ID != tt.id || resp.Model != tt.model {
				t.Errorf("id, model = %q, %q; want %q, %q", resp.ID, resp.Model, tt.id, tt.model)
			}
			if resp.Text() != tt.text {
				t.Errorf("text = %q, want %q", resp.Text(), tt.text)
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
		})
	}
}

// TestStreamChunkOrder checks the exact chunk sequence of a tool stream:
// tool call indexes count tool calls, not content blocks.
func TestStreamChunkOrder(t *testing.T) {
	t.Parallel()
	var got []llm.Chunk
	err := decodeStream(bytes.NewReader(fixture(t, "stream_tools.sse")), func(c llm.Chunk) bool {
		got = append(got, c)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Chunk{
		{Type: llm.ChunkMeta, ResponseID: "msg_014p7gG3wDgGV9EUtLvnow3U", Model: "claude-haiku-4-5-20251001"},
		llm.TextChunk("Let me check the weather."),
		llm.ToolCallStartChunk(0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather"),
		llm.ToolCallDeltaChunk(0, `{"location":`),
		llm.ToolCallDeltaChunk(0, ` "San Fra`),
		llm.ToolCallDeltaChunk(0, `ncisco, CA"}`),
		llm.ToolCallStartChunk(1, "toolu_02NoArgs", "get_time"),
		llm.ToolCallDeltaChunk(1, `{}`),
		llm.FinishChunk(llm.FinishToolCalls),
		llm.UsageChunk(llm.Usage{PromptTokens: 2520, CompletionTokens: 89, TotalTokens: 2609, CachedTokens: 2048}),
	}
	if len(got) != len(want) {
		t.Fatalf("got %d chunks %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("chunk %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	m, err := New(WithAPIKey("k"), WithBaseURL("http://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		req         *llm.Request
		want        string
		unsupported bool
	}{
		{"nil", nil, "nil request", false},
		{"invalid tool arguments", &llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "toolu_9", Name: "search", Arguments: `{"q": "unterminated`}}}}}, `tool call "toolu_9" (search)`, false},
		{"string tool arguments", &llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "t", Name: "search", Arguments: `"q"`}}}}}, "not a JSON object", false},
		{"json mode", &llm.Request{Messages: []llm.Message{llm.UserMessage("x")}, ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSON}}, "no schemaless JSON mode", true},
		{"bad schema", &llm.Request{Messages: []llm.Message{llm.UserMessage("x")},
			ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONSchema, Schema: json.RawMessage(`{"type":`)}}, "not valid JSON", false},
		{"image without type", &llm.Request{Messages: []llm.Message{llm.UserParts(llm.ImageDataPart("", []byte{1}))}}, "MIME type", false},
		{"ftp image", &llm.Request{Messages: []llm.Message{llm.UserParts(llm.ImageURLPart("ftp://x/y.png"))}}, "want an http(s) or data URL", false},
		{"tool result without id", &llm.Request{Messages: []llm.Message{{Role: llm.RoleTool, Parts: []llm.Part{llm.TextPart("r")}}}}, "without a tool call id", false},
		{"tool call without id", &llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{}`}}}}}, `tool call "search" has no id`, false},
		{"unknown role", &llm.Request{Messages: []llm.Message{{Role: "narrator"}}}, `unknown role "narrator"`, false},
		{"forced missing tool", &llm.Request{Messages: []llm.Message{llm.UserMessage("x")}, Tools: []llm.ToolSpec{{Name: "a"}},
			ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "b"}}, `names "b"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The base URL has nothing listening: a bad request must fail
			// before any connection.
			_, err := m.Generate(context.Background(), tt.req)
			if !errors.Is(err, llm.ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Generate err = %v, want ErrBadRequest containing %q", err, tt.want)
			}
			if errors.Is(err, llm.ErrUnsupported) != tt.unsupported {
				t.Errorf("errors.Is(err, ErrUnsupported) = %v, want %v", !tt.unsupported, tt.unsupported)
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
		code, text string
		retryAfter time.Duration
		retryable  bool
	}{
		{"overloaded", 529, map[string]string{"Retry-After": "2"}, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			llm.ErrUnavailable, "overloaded_error", "Overloaded", 2 * time.Second, true},
		{"rate limited", 429, map[string]string{"Retry-After": "17", "Anthropic-Ratelimit-Requests-Remaining": "0"},
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			llm.ErrRateLimited, "rate_limit_error", "per-minute rate limit", 17 * time.Second, true},
		{"prompt too long", 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215211 tokens > 200000 maximum"}}`,
			llm.ErrContextTooLong, "invalid_request_error", "prompt is too long", 0, false},
		{"request too large", 413, nil, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`,
			llm.ErrContextTooLong, "request_too_large", "maximum allowed", 0, false},
		{"bad key", 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			llm.ErrAuthentication, "authentication_error", "check ANTHROPIC_API_KEY", 0, false},
		{"model missing", 404, nil, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`,
			llm.ErrBadRequest, "not_found_error", "claude-nope", 0, false},
		{"gateway html", 502, nil, `<html><body>Bad gateway</body></html>`, llm.ErrUnavailable, "", "Bad gateway", 0, true},
		{"api error", 500, nil, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			llm.ErrUnavailable, "api_error", "Internal server error", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newModel(t, serve(t, &recorder{status: tt.status, headers: tt.headers, answer: []byte(tt.body)}))
			for _, stream := range []bool{false, true} {
				var err error
				if stream {
					_, err = llm.Collect(m.Stream(context.Background(), userReq("x")))
				} else {
					_, err = m.Generate(context.Background(), userReq("x"))
				}
				var le *llm.Error
				if !errors.As(err, &le) || !errors.Is(err, tt.kind) {
					t.Fatalf("stream=%v: err = %v, want kind %v", stream, err, tt.kind)
				}
				if le.StatusCode != tt.status || le.Code != tt.code || le.RetryAfter != tt.retryAfter ||
					le.Retryable() != tt.retryable || !strings.Contains(le.Error(), tt.text) {
					t.Errorf("stream=%v: err = %v (status %d, code %q, retry after %v, retryable %v)",
						stream, le, le.StatusCode, le.Code, le.RetryAfter, le.Retryable())
				}
			}
		})
	}
}

func TestEventErrorKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ, msg  string
		kind      error
		retryable bool
	}{
		{"overloaded_error", "Overloaded", llm.ErrUnavailable, true},
		{"api_error", "Internal", llm.ErrUnavailable, true},
		{"rate_limit_error", "slow down", llm.ErrRateLimited, true},
		{"invalid_request_error", "bad", llm.ErrBadRequest, false},
		{"invalid_request_error", "prompt is too long: 1 > 0", llm.ErrContextTooLong, false},
		{"permission_error", "no", llm.ErrAuthentication, false},
		{"timeout_error", "took too long", llm.ErrTimeout, true},
		{"brand_new_error", "?", llm.ErrStreamBroken, true},
	}
	for _, tt := range tests {
		e := eventError(wireError{Type: tt.typ, Message: tt.msg})
		if !errors.Is(e, tt.kind) || e.Retryable() != tt.retryable || e.Code != tt.typ {
			t.Errorf("%s: %v (retryable %v), want kind %v retryable %v", tt.typ, e, e.Retryable(), tt.kind, tt.retryable)
		}
	}
}

// TestStreamBreakClosesBody checks that a consumer that stops reading ends
// the HTTP request: the server sees its request context end.
func TestStreamBreakClosesBody(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{}}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"first\"}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	m := newModel(t, srv)
	for c, err := range m.Stream(context.Background(), userReq("x")) {
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
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"first\"}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	m := newModel(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var err error
	for c, e := range m.Stream(ctx, userReq("x")) {
		if e != nil {
			err = e
			break
		}
		if c.Type == llm.ChunkText {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	if _, err := New(); !errors.Is(err, llm.ErrAuthentication) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("New without key: %v", err)
	}
	if _, err := New(WithAPIKey("k"), WithBaseURL("api.anthropic.com")); err == nil {
		t.Error("New with a base URL without scheme succeeded")
	}
	for base, want := range map[string]string{
		"":                               "https://api.anthropic.com/v1/messages",
		"https://proxy.example.com/":     "https://proxy.example.com/v1/messages",
		"https://proxy.example.com/v1":   "https://proxy.example.com/v1/messages",
		"http://gw.local:8080/anthropic": "http://gw.local:8080/anthropic/v1/messages",
	} {
		m, err := New(WithAPIKey("k"), WithBaseURL(base))
		if err != nil || m.endpoint != want {
			t.Errorf("base %q: endpoint %q, %v; want %q", base, m.endpoint, err, want)
		}
	}
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model             string
		schema, reasoning bool
		window            int
	}{
		{"claude-sonnet-4-5", true, true, 200_000},
		{"claude-sonnet-4-5-20250929", true, true, 200_000},
		{"claude-opus-4-6", true, true, 200_000},
		{"claude-haiku-4-5@20251001", true, true, 200_000},
		{"anthropic.claude-opus-4-5-20251101-v1:0", true, true, 200_000},
		{"claude-opus-4-1-20250805", false, true, 200_000},
		{"claude-sonnet-4-20250514", false, true, 200_000},
		{"claude-3-7-sonnet-latest", false, true, 200_000},
		{"claude-3-5-haiku-20241022", false, false, 200_000},
		{"claude-3-opus-20240229", false, false, 200_000},
		{"my-proxy-model", false, false, 0},
	}
	for _, tt := range tests {
		m, err := New(WithAPIKey("k"), WithModel(tt.model))
		if err != nil {
			t.Fatal(err)
		}
		c := m.Capabilities()
		if !c.Tools || !c.Vision || !c.Streaming || c.JSONMode || c.JSONSchema != tt.schema || c.Reasoning != tt.reasoning || c.ContextWindow != tt.window {
			t.Errorf("%s: %+v, want schema %v reasoning %v window %d", tt.model, c, tt.schema, tt.reasoning, tt.window)
		}
		if m.Name() != "anthropic/"+tt.model {
			t.Errorf("Name = %q", m.Name())
		}
	}
}

// TestConformance runs the provider through the registry and llm.Model, the
// way users hold it.
func TestConformance(t *testing.T) {
	t.Parallel()
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if r.Header.Get("X-Api-Key") != "sk-env" {
			w.WriteHeader(401)
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(fixture(t, "stream_text.sse"))
			return
		}
		w.Write(fixture(t, "generate.json"))
	}))
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-env", "ANTHROPIC_BASE_URL": srv.URL}
	getenv := func(k string) string { return env[k] }
	m, err := provider.Open("anthropic/claude-sonnet-4-5", provider.WithGetenv(getenv), provider.WithModelOptions(llm.WithRetries(0)))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "anthropic/claude-sonnet-4-5" || !m.Capabilities().JSONSchema {
		t.Errorf("name %q, capabilities %+v", m.Name(), m.Capabilities())
	}
	ctx := context.Background()
	resp, err := m.Generate(ctx, userReq("hi"))
	if err != nil || resp.FinishReason != llm.FinishToolCalls {
		t.Fatalf("Generate = %+v, %v", resp, err)
	}
	resp, err = llm.Collect(m.Stream(ctx, userReq("hi")))
	if err != nil || resp.Text() != "Hello, world." || resp.FinishReason != llm.FinishStop {
		t.Fatalf("Stream = %+v, %v", resp, err)
	}

	if _, err := provider.Open("anthropic", provider.WithGetenv(func(string) string { return "" })); !errors.Is(err, llm.ErrAuthentication) ||
		!strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("Open without key: %v", err)
	}
	if st, _ := provider.StatusOf("anthropic", getenv); !st.Configured {
		t.Errorf("status with key = %+v", st)
	}
	if st, _ := provider.StatusOf("anthropic", func(string) string { return "" }); st.Configured || !strings.Contains(st.Detail, "ANTHROPIC_API_KEY") {
		t.Errorf("status without key = %+v", st)
	}
}

func TestGenerateOddAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		kind       error
		text       string
	}{
		{"html page", "<html>Welcome to nginx</html>", llm.ErrUnavailable, "is the base URL right"},
		{"error with 200", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, llm.ErrUnavailable, "[overloaded_error]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newModel(t, serve(t, &recorder{answer: []byte(tt.body)}))
			_, err := m.Generate(context.Background(), userReq("x"))
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("err = %v, want %v containing %q", err, tt.kind, tt.text)
			}
		})
	}
}

// TestModelRetriesOverloaded checks that llm.Model retries a 529 answer
// from this driver and then streams the answer.
func TestModelRetriesOverloaded(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		w.Write(fixture(t, "stream_text.sse"))
	}))
	var retries []error
	m := llm.New(newModel(t, srv), llm.WithBackoff(time.Millisecond, time.Millisecond),
		llm.WithHook(func(_ context.Context, e llm.Event) {
			if e.Kind == llm.EventRetry {
				retries = append(retries, e.Err)
			}
		}))
	resp, err := llm.Collect(m.Stream(context.Background(), userReq("hi")))
	if err != nil || resp.Text() != "Hello, world." {
		t.Fatalf("Stream = %+v, %v", resp, err)
	}
	if len(retries) != 1 || !errors.Is(retries[0], llm.ErrUnavailable) {
		t.Errorf("retries = %v, want one ErrUnavailable", retries)
	}
}
