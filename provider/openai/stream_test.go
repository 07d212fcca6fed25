package openai

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/llm"
)

// sseBody frames payloads as SSE events.
func sseBody(payloads ...string) string {
	var b strings.Builder
	for _, p := range payloads {
		b.WriteString("data: ")
		b.WriteString(p)
		b.WriteString("\n\n")
	}
	return b.String()
}

func collectChunks(t *testing.T, c *Client) ([]llm.Chunk, error) {
	t.Helper()
	var out []llm.Chunk
	for ch, err := range c.Stream(context.Background(), hi) {
		if err != nil {
			return out, err
		}
		out = append(out, ch)
	}
	return out, nil
}

func TestStreamChunks(t *testing.T) {
	t.Parallel()
	body := sseBody(
		`{"id":"c1","model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
		`{"id":"c1","model":"m1","choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}`,
		`{"id":"c1","model":"m1","choices":[{"index":0,"delta":{"content":"Hi"}}]}`,
		`{"id":"c1","model":"m1","choices":[{"index":1,"delta":{"content":"other choice"}}]}`,
		`{"id":"c1","model":"m1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"mul","arguments":""}}]}}]}`,
		`{"id":"c1","model":"m1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"","arguments":"{\"a\""}}]}}]}`,
		`{"id":"c1","model":"m1","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"add","arguments":"{}"}}]}}]}`,
		`{"id":"c1","model":"m1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":2}"}}]}}]}`,
		`{"id":"c1","model":"m1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"c1","model":"m1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		`{"id":"c1","model":"m1","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30,"completion_tokens_details":{"reasoning_tokens":5}}}`,
		`[DONE]`,
	)
	c := newTestClient(t, serve(t, &recorder{ctype: "text/event-stream", answer: ": keep-alive\n\n" + body}))
	got, err := collectChunks(t, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Chunk{
		{Type: llm.ChunkMeta, ResponseID: "c1", Model: "m1"},
		llm.ReasoningChunk("hmm"),
		llm.TextChunk("Hi"),
		llm.ToolCallStartChunk(1, "call_b", "mul"),
		llm.ToolCallDeltaChunk(1, `{"a"`),
		llm.ToolCallStartChunk(0, "", "add"),
		llm.ToolCallDeltaChunk(0, "{}"),
		llm.ToolCallDeltaChunk(1, ":2}"),
		llm.UsageChunk(llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}),
		llm.UsageChunk(llm.Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30, ReasoningTokens: 5}),
		llm.ToolCallStartChunk(0, "call_0", "add"), // the id the server never sent
		llm.FinishChunk(llm.FinishToolCalls),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("chunks:\n got %v\nwant %v", got, want)
	}
	var acc llm.Accumulator
	for _, ch := range got {
		acc.Add(ch)
	}
	r := acc.Response()
	if len(r.Message.ToolCalls) != 2 || r.Message.ToolCalls[0] != (llm.ToolCall{ID: "call_0", Name: "add", Arguments: "{}"}) ||
		r.Message.ToolCalls[1] != (llm.ToolCall{ID: "call_b", Name: "mul", Arguments: `{"a":2}`}) {
		t.Errorf("accumulated tool calls = %+v", r.Message.ToolCalls)
	}
}

func TestStreamEndings(t *testing.T) {
	t.Parallel()
	text := `{"choices":[{"index":0,"delta":{"content":"partial"}}]}`
	tests := []struct {
		name   string
		ctype  string
		body   string
		finish llm.FinishReason // when the stream succeeds
		kind   error            // when it fails
		msg    string
		code   string
	}{
		{name: "eof without finish", body: sseBody(text), kind: llm.ErrStreamBroken, msg: "without a finish reason"},
		{name: "eof after finish without done", body: sseBody(text, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`), finish: llm.FinishStop},
		{name: "done without finish, text", body: sseBody(text, "[DONE]"), finish: llm.FinishStop},
		{name: "done without finish, tool call", body: sseBody(`{"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"name":"f","arguments":"{}"}}]}}]}`, "[DONE]"), finish: llm.FinishToolCalls},
		{name: "finish length", body: sseBody(text, `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, "[DONE]"), finish: llm.FinishLength},
		{name: "refusal", body: sseBody(`{"choices":[{"index":0,"delta":{"refusal":"no"}}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]"), finish: llm.FinishContentFilter},
		{name: "error after 200", body: sseBody(text, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`),
			kind: llm.ErrUnavailable, msg: "server had an error", code: "server_error"},
		{name: "error after 200, unrecognised", body: sseBody(text, `{"error":{"message":"something odd"}}`), kind: llm.ErrStreamBroken, msg: "something odd"},
		{name: "error after 200, context length", body: sseBody(text, `{"error":{"message":"too long","code":"context_length_exceeded"}}`), kind: llm.ErrContextTooLong, code: "context_length_exceeded"},
		{name: "error after 200, rate limit", body: sseBody(`{"error":{"message":"Rate limit exceeded","code":"rate_limit_exceeded"}}`), kind: llm.ErrRateLimited, code: "rate_limit_exceeded"},
		{name: "error after 200, openrouter numeric", body: sseBody(text, `{"id":"x","error":{"code":502,"message":"Provider returned error"},"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}`),
			kind: llm.ErrUnavailable, code: "502"},
		{name: "error after 200, openrouter server_error code", body: sseBody(text, `{"error":{"code":"server_error","message":"upstream died"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`),
			kind: llm.ErrUnavailable, code: "server_error", msg: "upstream died"},
		{name: "error after finish", body: sseBody(text, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `{"error":"boom"}`), kind: llm.ErrStreamBroken, msg: "boom"},
		{name: "vllm object error", body: sseBody(text, `{"object":"error","message":"This model's maximum context length is 8192 tokens","type":"BadRequestError","code":400}`),
			kind: llm.ErrContextTooLong, code: "400"},
		{name: "malformed frame", body: sseBody(text, `{"choices":[{"delta":`+strings.Repeat("x", 1000)), kind: llm.ErrStreamBroken, msg: "malformed chunk"},
		{name: "json lines as application/json", ctype: "application/json",
			body: text + "\n" + `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n", finish: llm.FinishStop},
		{name: "whole completion to a stream request", ctype: "application/json", body: okCompletion, finish: llm.FinishStop},
		{name: "error json to a stream request", ctype: "application/json; charset=utf-8",
			body: "{\n  \"error\": {\"message\": \"model overloaded\", \"type\": \"overloaded_error\"}\n}", kind: llm.ErrUnavailable, msg: "overloaded", code: "overloaded_error"},
		{name: "vllm error json to a stream request", ctype: "application/json",
			body: `{"object":"error","message":"rate limited","type":"rate_limit_error","code":429}`, kind: llm.ErrRateLimited, code: "429"},
		{name: "crlf framing", body: strings.ReplaceAll(sseBody(text, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]"), "\n", "\r\n"), finish: llm.FinishStop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ct := tt.ctype
			if ct == "" {
				ct = "text/event-stream"
			}
			c := newTestClient(t, serve(t, &recorder{ctype: ct, answer: tt.body}))
			resp, err := llm.Collect(c.Stream(context.Background(), hi))
			if tt.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
				if resp.FinishReason != tt.finish {
					t.Errorf("finish = %q, want %q", resp.FinishReason, tt.finish)
				}
				return
			}
			var e *llm.Error
			if !errors.As(err, &e) || !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want kind %v", err, tt.kind)
			}
			if !strings.Contains(e.Message, tt.msg) || e.Code != tt.code || e.Provider != "openai" {
				t.Errorf("error = %+v, want message with %q, code %q", e, tt.msg, tt.code)
			}
			if len(e.Error()) > 600 {
				t.Errorf("error message of %d bytes quotes too much", len(e.Error()))
			}
			if tt.kind == llm.ErrStreamBroken && !e.Retryable() {
				t.Error("a broken stream must be retryable")
			}
		})
	}
}

func TestStreamLineTooLong(t *testing.T) {
	t.Parallel()
	body := sseBody(`{"choices":[{"index":0,"delta":{"content":"`+strings.Repeat("a", 4096)+`"}}]}`, "[DONE]")
	c := newTestClient(t, serve(t, &recorder{ctype: "text/event-stream", answer: body}), WithMaxResponseSize(1024))
	_, err := llm.Collect(c.Stream(context.Background(), hi))
	if !errors.Is(err, llm.ErrStreamBroken) || !strings.Contains(err.Error(), "exceeds 1024 bytes") {
		t.Fatalf("err = %v, want a stream-broken error naming the limit", err)
	}
	// The same bound applies to whole bodies.
	c = newTestClient(t, serve(t, &recorder{answer: `{"choices":[{"message":{"content":"` + strings.Repeat("a", 4096) + `"}}]}`}), WithMaxResponseSize(1024))
	if _, err := c.Generate(context.Background(), hi); err == nil || !strings.Contains(err.Error(), "exceeds 1024 bytes") {
		t.Fatalf("Generate err = %v, want the size limit named", err)
	}
}

// blockingServer sends one chunk, then waits until the client goes away,
// and reports that on gone.
func blockingServer(t *testing.T, after string) (url string, gone <-chan struct{}) {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, sseBody(`{"id":"c","choices":[{"index":0,"delta":{"content":"first"}}]}`)+after)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(done)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, done
}

func TestStreamBreakClosesBody(t *testing.T) {
	t.Parallel()
	url, gone := blockingServer(t, "")
	c := newTestClient(t, url)
	for ch, err := range c.Stream(context.Background(), hi) {
		if err != nil {
			t.Fatal(err)
		}
		if ch.Type == llm.ChunkText {
			break
		}
	}
	<-gone // the server saw the client leave; a leak would hang here
}

func TestStreamCancel(t *testing.T) {
	t.Parallel()
	url, gone := blockingServer(t, "")
	c := newTestClient(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var err error
	for ch, e := range c.Stream(ctx, hi) {
		if ch.Type == llm.ChunkText {
			cancel()
		}
		if e != nil {
			err = e
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %T, want *llm.Error", err)
	}
	<-gone
}

func TestStreamDoneWithOpenConnection(t *testing.T) {
	t.Parallel()
	// The server sends [DONE] but keeps the connection open: the stream
	// must end at [DONE], not wait for EOF.
	url, gone := blockingServer(t, sseBody(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]"))
	c := newTestClient(t, url)
	resp, err := llm.Collect(c.Stream(context.Background(), hi))
	if err != nil || resp.Text() != "first" || resp.FinishReason != llm.FinishStop {
		t.Fatalf("resp %q %q, err %v", resp.Text(), resp.FinishReason, err)
	}
	<-gone
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := newTestClient(t, "http://"+addr+"/v1")
	_, gerr := c.Generate(context.Background(), hi)
	_, serr := llm.Collect(c.Stream(context.Background(), hi))
	for _, err := range []error{gerr, serr} {
		if !errors.Is(err, llm.ErrUnavailable) || !llm.IsRetryable(err) {
			t.Errorf("err = %v, want retryable ErrUnavailable", err)
		}
	}
}

func TestHTMLAnswer(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, serve(t, &recorder{ctype: "text/html; charset=utf-8", answer: "<!doctype html><title>Welcome</title>"}))
	_, gerr := c.Generate(context.Background(), hi)
	_, serr := llm.Collect(c.Stream(context.Background(), hi))
	for _, err := range []error{gerr, serr} {
		if !errors.Is(err, llm.ErrBadRequest) || !strings.Contains(err.Error(), "check the base URL") || !strings.Contains(err.Error(), "Welcome") {
			t.Errorf("err = %v, want a bad-request error about the base URL", err)
		}
	}
}

func TestBaseURLQueryKept(t *testing.T) {
	t.Parallel()
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.String())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/openai/deployments/d1/embeddings":
			fmt.Fprint(w, `{"data":[{"embedding":[1]}]}`)
		default:
			fmt.Fprint(w, okCompletion)
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL+"/openai/deployments/d1?api-version=2024-10-21", WithHeader("api-key", "k"))
	if _, err := c.Generate(context.Background(), hi); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"/openai/deployments/d1/chat/completions?api-version=2024-10-21", "/openai/deployments/d1/embeddings?api-version=2024-10-21"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("request URLs = %v, want %v", got, want)
	}
}

func TestGenerateErrorAfter200(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		kind error
	}{
		{`{"error":{"message":"maximum context length exceeded"}}`, llm.ErrContextTooLong},
		{`{"object":"error","message":"boom","type":"InternalServerError","code":500}`, llm.ErrUnavailable},
		{`{"error":{"message":"odd"}}`, llm.ErrUnavailable},
		{`{"id":"x","choices":[]}`, llm.ErrUnavailable},
		{`<html>hello</html>`, llm.ErrUnavailable},
	}
	for _, tt := range tests {
		c := newTestClient(t, serve(t, &recorder{answer: tt.body}))
		_, err := c.Generate(context.Background(), hi)
		if !errors.Is(err, tt.kind) {
			t.Errorf("%s: err = %v, want %v", tt.body, err, tt.kind)
		}
	}
}

func TestGenerateCanceled(t *testing.T) {
	t.Parallel()
	url, _ := blockingServer(t, "")
	c := newTestClient(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Generate(ctx, hi)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 0)
	defer cancel()
	_, err = c.Generate(ctx, hi)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, llm.ErrTimeout) {
		t.Fatalf("err = %v, want DeadlineExceeded and ErrTimeout", err)
	}
}
