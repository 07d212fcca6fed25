package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
)

var hi = &llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}}

func TestGenerateResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer string
		want   llm.Response
	}{
		{
			name: "text and usage",
			answer: `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini-2024","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`,
			want: llm.Response{ID: "chatcmpl-1", Model: "gpt-4o-mini-2024", FinishReason: llm.FinishStop,
				Message: llm.AssistantMessage("Hello"),
				Usage:   llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CachedTokens: 4, ReasoningTokens: 2}},
		},
		{
			name:   "reasoning_content and deepseek cache hits",
			answer: `{"choices":[{"message":{"content":"4","reasoning_content":"2+2"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"prompt_cache_hit_tokens":2}}`,
			want: llm.Response{FinishReason: llm.FinishStop, Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("4")}, Reasoning: "2+2"},
				Usage: llm.Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4, CachedTokens: 2}},
		},
		{
			name:   "reasoning (openrouter)",
			answer: `{"choices":[{"message":{"content":"4","reasoning":"think"},"finish_reason":"stop"}]}`,
			want:   llm.Response{FinishReason: llm.FinishStop, Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("4")}, Reasoning: "think"}},
		},
		{
			name: "tool calls, one without id",
			answer: `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"add","arguments":"{\"a\":1}"}},
				{"type":"function","function":{"name":"mul","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			want: llm.Response{FinishReason: llm.FinishToolCalls, Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: "call_a", Name: "add", Arguments: `{"a":1}`}, {ID: "call_1", Name: "mul", Arguments: "{}"}}}},
		},
		{
			name:   "tool calls with finish stop (old vLLM)",
			answer: `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}]}`,
			want: llm.Response{FinishReason: llm.FinishToolCalls, Message: llm.Message{Role: llm.RoleAssistant,
				ToolCalls: []llm.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}}},
		},
		{
			name:   "legacy function_call",
			answer: `{"choices":[{"message":{"function_call":{"name":"f","arguments":"{\"x\":1}"}},"finish_reason":"function_call"}]}`,
			want: llm.Response{FinishReason: llm.FinishToolCalls, Message: llm.Message{Role: llm.RoleAssistant,
				ToolCalls: []llm.ToolCall{{ID: "call_0", Name: "f", Arguments: `{"x":1}`}}}},
		},
		{
			name:   "refusal",
			answer: `{"choices":[{"message":{"content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`,
			want:   llm.Response{FinishReason: llm.FinishContentFilter, Message: llm.AssistantMessage("I can't help with that.")},
		},
		{
			name:   "content as parts",
			answer: `{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"image","url":"x"},{"type":"text","text":"b"}]},"finish_reason":"length"}]}`,
			want:   llm.Response{FinishReason: llm.FinishLength, Message: llm.AssistantMessage("ab")},
		},
		{
			name:   "escaped text",
			answer: `{"choices":[{"message":{"content":"line\n\"q\" \u00e9"},"finish_reason":"content_filter"}]}`,
			want:   llm.Response{FinishReason: llm.FinishContentFilter, Message: llm.AssistantMessage("line\n\"q\" é")},
		},
		{
			name:   "unknown finish reason and missing usage total",
			answer: `{"choices":[{"message":{"content":"x"},"finish_reason":"recitation"}],"usage":{"prompt_tokens":2,"completion_tokens":3}}`,
			want:   llm.Response{FinishReason: llm.FinishOther, Message: llm.AssistantMessage("x"), Usage: llm.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5}},
		},
		{
			name:   "second choice ignored",
			answer: `{"choices":[{"index":1,"message":{"content":"second"},"finish_reason":"stop"},{"index":0,"message":{"content":"first"},"finish_reason":"stop"}]}`,
			want:   llm.Response{FinishReason: llm.FinishStop, Message: llm.AssistantMessage("first")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestClient(t, serve(t, &recorder{answer: tt.answer}))
			got, err := c.Generate(context.Background(), hi)
			if err != nil {
				t.Fatal(err)
			}
			assertResponse(t, got, &tt.want)
		})
	}
}

func assertResponse(t *testing.T, got, want *llm.Response) {
	t.Helper()
	if got.ID != want.ID || got.Model != want.Model || got.FinishReason != want.FinishReason || got.Usage != want.Usage {
		t.Errorf("response = id %q model %q finish %q usage %+v, want id %q model %q finish %q usage %+v",
			got.ID, got.Model, got.FinishReason, got.Usage, want.ID, want.Model, want.FinishReason, want.Usage)
	}
	if got.Text() != want.Text() || got.Message.Reasoning != want.Message.Reasoning || got.Message.Role != llm.RoleAssistant {
		t.Errorf("message = %q (reasoning %q, role %q), want %q (reasoning %q)", got.Text(), got.Message.Reasoning, got.Message.Role, want.Text(), want.Message.Reasoning)
	}
	if len(got.Message.ToolCalls) != len(want.Message.ToolCalls) {
		t.Fatalf("tool calls = %+v, want %+v", got.Message.ToolCalls, want.Message.ToolCalls)
	}
	for i := range want.Message.ToolCalls {
		if got.Message.ToolCalls[i] != want.Message.ToolCalls[i] {
			t.Errorf("tool call %d = %+v, want %+v", i, got.Message.ToolCalls[i], want.Message.ToolCalls[i])
		}
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		status     int
		body       string
		ctype      string
		header     http.Header
		kind       error
		code       string
		msg        string
		retryAfter time.Duration
	}{
		{name: "unauthorized", status: 401, body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`,
			kind: llm.ErrAuthentication, code: "invalid_api_key", msg: "Incorrect API key"},
		{name: "rate limited with retry-after", status: 429, body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`,
			header: http.Header{"Retry-After": {"7"}}, kind: llm.ErrRateLimited, code: "rate_limit_exceeded", retryAfter: 7 * time.Second},
		{name: "retry-after-ms", status: 429, body: `{"error":{"message":"slow down"}}`,
			header: http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"9"}}, kind: llm.ErrRateLimited, retryAfter: 1500 * time.Millisecond},
		{name: "quota is not a rate limit", status: 429, body: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`,
			kind: llm.ErrAuthentication, code: "insufficient_quota"},
		{name: "context length by code", status: 400, body: `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			kind: llm.ErrContextTooLong, code: "context_length_exceeded"},
		{name: "context length by message (vLLM)", status: 400, body: `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens","type":"BadRequestError","param":null,"code":400}`,
			kind: llm.ErrContextTooLong, code: "400", msg: "maximum context length"},
		{name: "content filter (Azure)", status: 400, body: `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","code":"content_filter","status":400}}`,
			kind: llm.ErrContentFiltered, code: "content_filter"},
		{name: "bad request", status: 400, body: `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","param":"temperature","code":null}}`,
			kind: llm.ErrBadRequest, code: "invalid_request_error", msg: "temperature"},
		{name: "error as string", status: 404, body: `{"error":"model 'nope' not found"}`, kind: llm.ErrBadRequest, msg: "model 'nope' not found"},
		{name: "fastapi detail", status: 422, body: `{"detail":"Field required"}`, kind: llm.ErrBadRequest, msg: "Field required"},
		{name: "server error html", status: 502, ctype: "text/html", body: "<html><body>" + strings.Repeat("Bad Gateway ", 100) + "</body></html>",
			kind: llm.ErrUnavailable, msg: "non-JSON error body: \"<html><body>Bad Gateway"},
		{name: "empty 503", status: 503, kind: llm.ErrUnavailable, msg: "Service Unavailable"},
		{name: "empty 404", status: 404, kind: llm.ErrBadRequest, msg: "check the base URL"},
		{name: "timeout", status: 504, body: `{"error":{"message":"upstream timeout"}}`, kind: llm.ErrTimeout},
		{name: "payload too large", status: 413, body: `{"error":{"message":"request too large"}}`, kind: llm.ErrContextTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestClient(t, serve(t, &recorder{status: tt.status, answer: tt.body, ctype: tt.ctype, header: tt.header}))
			_, gerr := c.Generate(context.Background(), hi)
			var serr error
			for _, err := range c.Stream(context.Background(), hi) {
				serr = err
			}
			for _, err := range []error{gerr, serr} {
				var e *llm.Error
				if !errors.As(err, &e) {
					t.Fatalf("err = %v (%T), want *llm.Error", err, err)
				}
				if !errors.Is(err, tt.kind) {
					t.Errorf("kind = %v, want %v (err %v)", e.Kind, tt.kind, err)
				}
				if e.StatusCode != tt.status || e.Provider != "openai" {
					t.Errorf("status %d provider %q", e.StatusCode, e.Provider)
				}
				if e.Code != tt.code {
					t.Errorf("code = %q, want %q", e.Code, tt.code)
				}
				if !strings.Contains(e.Message, tt.msg) {
					t.Errorf("message = %q, want it to contain %q", e.Message, tt.msg)
				}
				if len(e.Message) > 400 {
					t.Errorf("message of %d bytes is not truncated", len(e.Message))
				}
				if e.RetryAfter != tt.retryAfter {
					t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.retryAfter)
				}
			}
		})
	}
}
