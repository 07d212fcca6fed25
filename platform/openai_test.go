package platform

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/provider/scripted"
)

func TestOpenAICompatible(t *testing.T) {
	e := newEnv(t, nil)
	e.createAgent(e.admin, map[string]any{"name": "echo"})
	tiny := e.createAgent(e.admin, map[string]any{"name": "tiny", "context_window_tokens": 256, "reserve_tokens": 128})

	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	e.do(e.admin, "GET", "/v1/models", nil, &models)
	if len(models.Data) != 2 || models.Data[0].ID != "echo" {
		t.Fatalf("models = %+v", models)
	}
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage api.Usage `json:"usage"`
	}
	resp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "echo",
		"messages": []map[string]any{{"role": "system", "content": "ignored"}, {"role": "user", "content": "ping"}}}, &out)
	sess := resp.Header.Get("X-Weft-Session")
	if len(out.Choices) != 1 || out.Choices[0].Message.Content != "ping" || sess == "" {
		t.Fatalf("completion = %+v, session %q", out, sess)
	}
	// The same session continues when the header is sent back.
	resp = e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "agent:" + tiny.ID, "messages": []map[string]any{{"role": "user", "content": "x"}}}, nil)
	if resp.Header.Get("X-Weft-Session") == sess {
		t.Fatal("another agent reused the session")
	}
	resp = e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "echo", "stream": true, "messages": []map[string]any{{"role": "user", "content": "pong"}}}, nil, "X-Weft-Session", sess)
	b := body(resp)
	if resp.Header.Get("X-Weft-Session") != sess || !strings.Contains(b, `"content":"pong"`) || !strings.HasSuffix(b, "data: [DONE]\n\n") {
		t.Fatalf("stream: session %q, body %s", resp.Header.Get("X-Weft-Session"), b)
	}
	// A turn that fails before any text is an HTTP error, not a stream.
	resp = e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "tiny", "stream": true, "messages": []map[string]any{{"role": "user", "content": strings.Repeat("word ", 400)}}}, nil)
	if b := body(resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, `"code":"context_length_exceeded"`) || !strings.Contains(b, `"param":"messages"`) {
		t.Fatalf("too long: %d %s", resp.StatusCode, b)
	}
	resp = e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "nosuch", "messages": []map[string]any{{"role": "user", "content": "x"}}}, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown model: %d", resp.StatusCode)
	}
}

// TestOpenAIFidelity checks that the request's messages are the
// conversation without X-Weft-Session, that sampling parameters and
// response_format reach the model, and that bad input is a 400 in OpenAI's
// error shape naming the field.
func TestOpenAIFidelity(t *testing.T) {
	e := newEnv(t, scripted.New(scripted.Echo()))
	e.createAgent(e.admin, map[string]any{"name": "echo", "system_prompt": "Agent rules."})
	msgs := []map[string]any{
		{"role": "system", "content": "Client rules."},
		{"role": "user", "content": "My name is Ada."},
		{"role": "assistant", "content": "Hello Ada."},
		{"role": "user", "content": [](map[string]any){{"type": "text", "text": "What is my name?"}}},
	}
	var out api.ChatCompletion
	resp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "echo", "messages": msgs,
		"temperature": 0.25, "top_p": 0.5, "max_completion_tokens": 77, "max_tokens": 5, "stop": "END", "seed": 7, "user": "ada",
		"response_format":  map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": map[string]any{"type": "object"}}},
		"presence_penalty": 0.1}, &out)
	if resp.StatusCode != http.StatusOK || len(out.Choices) != 1 || out.Choices[0].FinishReason != "stop" {
		t.Fatalf("completion: %d %+v", resp.StatusCode, out)
	}
	reqs := e.model.Requests()
	got := reqs[len(reqs)-1]
	m := got.Messages
	if len(m) != 4 || m[0].Role != llm.RoleSystem || m[0].Text() != "Agent rules.\n\nClient rules." ||
		m[1].Text() != "My name is Ada." || m[2].Role != llm.RoleAssistant || m[3].Text() != "What is my name?" || m[3].Name != "ada" {
		t.Fatalf("the model saw %+v", m)
	}
	if got.Temperature == nil || *got.Temperature != 0.25 || got.TopP == nil || *got.TopP != 0.5 || got.MaxTokens != 77 ||
		len(got.Stop) != 1 || got.Stop[0] != "END" || got.Seed == nil || *got.Seed != 7 {
		t.Fatalf("parameters: %+v", got)
	}
	if got.ResponseFormat == nil || got.ResponseFormat.Type != llm.FormatJSONSchema || got.ResponseFormat.Name != "answer" {
		t.Fatalf("response format: %+v", got.ResponseFormat)
	}

	// A second stateless call with the whole conversation does not see the
	// first call's stored session.
	e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "echo", "messages": msgs[3:]}, nil)
	reqs = e.model.Requests()
	if m := reqs[len(reqs)-1].Messages; len(m) != 2 {
		t.Fatalf("a stateless call saw %d messages: %+v", len(m), m)
	}

	bad := []struct {
		name, param string
		body        map[string]any
	}{
		{"no messages", "messages", map[string]any{"model": "echo", "messages": []any{}}},
		{"n", "n", map[string]any{"model": "echo", "n": 2, "messages": msgs}},
		{"last from assistant", "messages[0].role", map[string]any{"model": "echo", "messages": []map[string]any{{"role": "assistant", "content": "hi"}}}},
		{"unknown call id", "messages[1].tool_call_id", map[string]any{"model": "echo", "messages": []map[string]any{
			{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}},
			{"role": "tool", "tool_call_id": "c2", "content": "x"}, {"role": "user", "content": "and?"}}}},
		{"image to a text model", "messages[0].content[1]", map[string]any{"model": "echo", "messages": []map[string]any{
			{"role": "user", "content": []map[string]any{{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": map[string]any{"url": "https://example.com/a.png"}}}}}}},
		{"bad tool name", "tools[0].function.name", map[string]any{"model": "echo", "messages": msgs, "tools": []map[string]any{{"type": "function", "function": map[string]any{"name": "a b"}}}}},
		{"two tools named alike", "tools[1].function.name", map[string]any{"model": "echo", "messages": msgs, "tools": []map[string]any{
			{"type": "function", "function": map[string]any{"name": "f"}}, {"type": "function", "function": map[string]any{"name": "f"}}}}},
		{"forced tool", "tool_choice", map[string]any{"model": "echo", "messages": msgs, "tool_choice": "required"}},
		{"tool result after a user message", "messages[1]", map[string]any{"model": "echo", "messages": []map[string]any{
			{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c1", "content": "x"}}}},
		{"result of an unknown call", "messages[1].tool_call_id", map[string]any{"model": "echo", "messages": []map[string]any{
			{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}},
			{"role": "tool", "tool_call_id": "c9", "content": "x"}}}},
		{"logprobs", "logprobs", map[string]any{"model": "echo", "messages": msgs, "logprobs": true}},
		{"bad format", "response_format.type", map[string]any{"model": "echo", "messages": msgs, "response_format": map[string]any{"type": "xml"}}},
		{"unknown model", "model", map[string]any{"model": "nosuch", "messages": msgs}},
	}
	for _, tc := range bad {
		var eb api.OpenAIError
		resp := e.do(e.admin, "POST", "/v1/chat/completions", tc.body, &eb)
		if resp.StatusCode/100 != 4 || eb.Error.Param == nil || *eb.Error.Param != tc.param || eb.Error.Type != "invalid_request_error" {
			t.Errorf("%s: %d %+v", tc.name, resp.StatusCode, eb)
		}
	}
}

// openAIError reads an error body as OpenAI's clients do, and fails unless
// it has OpenAI's four fields (param null or a string).
func openAIError(t *testing.T, what string, resp *http.Response) (status int, typ, code string, param *string) {
	t.Helper()
	var eb struct {
		Error map[string]any `json:"error"`
	}
	raw := body(resp)
	if err := json.Unmarshal([]byte(raw), &eb); err != nil {
		t.Fatalf("%s: %d %s: %v", what, resp.StatusCode, raw, err)
	}
	for _, f := range []string{"message", "type", "param", "code"} {
		if _, ok := eb.Error[f]; !ok {
			t.Errorf("%s: no %q in %s", what, f, raw)
		}
	}
	typ, _ = eb.Error["type"].(string)
	code, _ = eb.Error["code"].(string)
	if p, ok := eb.Error["param"].(string); ok {
		param = &p
	} else if eb.Error["param"] != nil {
		t.Errorf("%s: param %v is neither null nor a string", what, eb.Error["param"])
	}
	return resp.StatusCode, typ, code, param
}

// TestOpenAIErrorShape: every error of the OpenAI-compatible routes is in
// OpenAI's shape with OpenAI's type and, where OpenAI has one, its code —
// those raised before the handler too (authentication, the rate limit, an
// unknown method) — while the other routes keep the API's shape; a JSON
// type error names its field in param.
func TestOpenAIErrorShape(t *testing.T) {
	e := newEnv(t, nil)
	e.createAgent(e.admin, map[string]any{"name": "echo"})
	msgs := []map[string]any{{"role": "user", "content": "hi"}}
	chat := map[string]any{"model": "echo", "messages": msgs}
	cases := []struct {
		name, key, method, path string
		body                    any
		status                  int
		typ, code, param        string // param "" for null
	}{
		{"no key", "", "POST", "/v1/chat/completions", chat, 401, "invalid_request_error", "invalid_api_key", ""},
		{"bad key", "wk_key_nope_secret", "POST", "/v1/chat/completions", chat, 401, "invalid_request_error", "invalid_api_key", ""},
		{"bad key, models", "not-a-key", "GET", "/v1/models", nil, 401, "invalid_request_error", "invalid_api_key", ""},
		{"unknown method", e.admin, "GET", "/v1/chat/completions", nil, 404, "invalid_request_error", CodeNotFound, ""},
		{"unknown model", e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "nosuch", "messages": msgs}, 404, "invalid_request_error", "model_not_found", "model"},
		{"temperature", e.admin, "POST", "/v1/chat/completions", `{"model":"echo","temperature":"hot","messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", CodeInvalidRequest, "temperature"},
		{"max_tokens", e.admin, "POST", "/v1/chat/completions", `{"model":"echo","max_tokens":"many","messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", CodeInvalidRequest, "max_tokens"},
		{"messages", e.admin, "POST", "/v1/chat/completions", `{"model":"echo","messages":"hi"}`, 400, "invalid_request_error", CodeInvalidRequest, "messages"},
		{"body limit", e.admin, "POST", "/v1/chat/completions", `{"model":"echo","user":"` + strings.Repeat("x", MaxBodyBytes) + `"}`, 413, "invalid_request_error", CodePayloadTooLarge, ""},
	}
	for _, c := range cases {
		status, typ, code, param := openAIError(t, c.name, e.do(c.key, c.method, c.path, c.body, nil))
		if status != c.status || typ != c.typ || code != c.code || (param == nil) != (c.param == "") || (param != nil && *param != c.param) {
			t.Errorf("%s: %d %s %s %v, want %d %s %s %q", c.name, status, typ, code, param, c.status, c.typ, c.code, c.param)
		}
	}
	// Another route keeps the API's shape, and names a bad field too.
	for _, resp := range []*http.Response{e.do("", "GET", "/v1/agents", nil, nil), e.do(e.admin, "POST", "/v1/agents", `{"name": 5}`, nil)} {
		b := body(resp)
		if strings.Contains(b, `"type"`) || (resp.StatusCode == 400) != strings.Contains(b, `"param":"name"`) {
			t.Errorf("native route: %d %s", resp.StatusCode, b)
		}
	}

	// The rate limit, before the handler: OpenAI's requests /
	// rate_limit_exceeded with Retry-After on an OpenAI route, the API's
	// rate_limited on another.
	rl := newEnv(t, nil, func(c *Config) { c.RateLimit, c.RateBurst = 0.001, 1 })
	if resp := rl.do(rl.admin, "GET", "/v1/models", nil, nil); resp.StatusCode != 200 {
		t.Fatalf("first request: %d", resp.StatusCode)
	}
	resp := rl.do(rl.admin, "GET", "/v1/models", nil, nil)
	if status, typ, code, param := openAIError(t, "rate limit", resp); status != 429 || typ != "requests" || code != "rate_limit_exceeded" || param != nil || resp.Header.Get("Retry-After") == "" {
		t.Errorf("rate limited: %d %s %s %v, Retry-After %q", status, typ, code, param, resp.Header.Get("Retry-After"))
	}
	rl.wantError(rl.do(rl.admin, "GET", "/v1/agents", nil, nil), http.StatusTooManyRequests, CodeRateLimited)
}

// TestOpenAIErrorBody: the API's errors in OpenAI's words.
func TestOpenAIErrorBody(t *testing.T) {
	quota := errorf(http.StatusTooManyRequests, CodeBudgetExceeded, "spent")
	for _, c := range []struct {
		e         *apiError
		typ, code string
	}{
		{errorf(http.StatusForbidden, CodeForbidden, "no"), "invalid_request_error", CodeForbidden},
		{errorf(http.StatusConflict, CodeAgentDisabled, "off"), "invalid_request_error", CodeAgentDisabled},
		{errorf(http.StatusNotFound, CodeNotFound, "session"), "invalid_request_error", CodeNotFound},
		{quota, "insufficient_quota", "insufficient_quota"},
		{errorf(http.StatusTooManyRequests, CodeRateLimited, "busy"), "requests", "rate_limit_exceeded"},
		{errorf(http.StatusInternalServerError, CodeInternal, "oops"), "server_error", CodeInternal},
		{errorf(http.StatusBadGateway, CodeModelError, "upstream"), "server_error", CodeModelError},
		{errorf(http.StatusServiceUnavailable, CodeUnavailable, "down"), "server_error", CodeUnavailable},
	} {
		got := openAIErrorBody(c.e).Error
		if got.Type != c.typ || got.Code != c.code || got.Param != nil || got.Message != c.e.Message {
			t.Errorf("%s: %+v, want %s %s", c.e.Code, got, c.typ, c.code)
		}
	}
}

// TestOpenAIHistoryWindowed: a conversation larger than the agent's window
// is cut by the sliding window, never sent over budget.
func TestOpenAIHistoryWindowed(t *testing.T) {
	e := newEnv(t, scripted.New(scripted.Echo()))
	e.createAgent(e.admin, map[string]any{"name": "small", "context_window_tokens": 600, "reserve_tokens": 100})
	var msgs []map[string]any
	for i := range 40 {
		msgs = append(msgs, map[string]any{"role": "user", "content": strings.Repeat("word ", 20)},
			map[string]any{"role": "assistant", "content": "ok " + strconv.Itoa(i)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "last"})
	resp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "small", "messages": msgs}, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body(resp))
	}
	m := e.model.Requests()[0].Messages
	if len(m) >= len(msgs) || len(m) < 3 || m[len(m)-1].Text() != "last" || m[len(m)-2].Text() != "ok 39" {
		t.Fatalf("the model saw %d messages, ending %+v", len(m), m[len(m)-2:])
	}
}

// clientToolModel calls the client's get_time tool when the user asks, and
// answers with the tool's result once it is back.
func clientToolModel() *scripted.Model {
	return scripted.New(scripted.Rule{Respond: func(req *llm.Request) (*llm.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleTool {
			return &llm.Response{Message: llm.AssistantMessage("It is " + last.Text() + ".")}, nil
		}
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "get_time", Arguments: `{"tz":"UTC"}`}}},
			FinishReason: llm.FinishToolCalls}, nil
	}})
}

// TestOpenAIClientTools: a call of a tool the client declared ends the
// answer with tool_calls; the client's tool message continues the turn,
// sent with the whole conversation or alone in the stored session.
func TestOpenAIClientTools(t *testing.T) {
	e := newEnv(t, clientToolModel())
	e.createAgent(e.admin, map[string]any{"name": "clock"})
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "get_time", "description": "The time.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}}}}}
	ask := map[string]any{"role": "user", "content": "What time is it?"}

	var out api.ChatCompletion
	resp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "clock", "messages": []any{ask}, "tools": tools}, &out)
	sess := resp.Header.Get("X-Weft-Session")
	if resp.StatusCode != http.StatusOK || out.Choices[0].FinishReason != "tool_calls" || out.Choices[0].Message.Content != nil {
		t.Fatalf("tool call answer: %d %+v", resp.StatusCode, out)
	}
	calls := out.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].ID != "call_1" || calls[0].Type != "function" || calls[0].Function.Name != "get_time" || calls[0].Function.Arguments != `{"tz":"UTC"}` {
		t.Fatalf("tool_calls = %+v", calls)
	}
	offered := e.model.Requests()[0].Tools
	if len(offered) != 1 || offered[0].Name != "get_time" || !strings.Contains(string(offered[0].Parameters), `"tz"`) {
		t.Fatalf("the model was offered %+v", offered)
	}

	// Stateless: the conversation with the call and its result.
	assistant := map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{
		{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_time", "arguments": `{"tz":"UTC"}`}}}}
	result := map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "12:00"}
	out = api.ChatCompletion{}
	e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "clock", "messages": []any{ask, assistant, result}, "tools": tools}, &out)
	if out.Choices[0].FinishReason != "stop" || out.Choices[0].Message.Content == nil || *out.Choices[0].Message.Content != "It is 12:00." {
		t.Fatalf("continued answer: %+v", out)
	}
	sent := e.model.Requests()[1].Messages
	if len(sent) != 3 || len(sent[1].ToolCalls) != 1 || sent[2].Role != llm.RoleTool || sent[2].ToolCallID != "call_1" {
		t.Fatalf("the continuation sent %+v", sent)
	}

	// Stateful: only the result, in the first call's session.
	out = api.ChatCompletion{}
	resp = e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "clock", "messages": []any{result}, "tools": tools}, &out, "X-Weft-Session", sess)
	if resp.StatusCode != http.StatusOK || *out.Choices[0].Message.Content != "It is 12:00." {
		t.Fatalf("stateful continuation: %d %+v", resp.StatusCode, out)
	}
	var stored []api.Message
	e.do(e.admin, "GET", "/v1/sessions/"+sess+"/messages", nil, &stored)
	var roles []string
	for _, m := range stored {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,tool,assistant" || stored[1].ToolCalls[0].Name != "get_time" || stored[2].Content != "12:00" {
		t.Fatalf("stored session: %+v", stored)
	}
	// The call has its result now: another one is a 400.
	var eb api.OpenAIError
	resp = e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "clock", "messages": []any{result}, "tools": tools}, &eb, "X-Weft-Session", sess)
	if resp.StatusCode != http.StatusBadRequest || eb.Error.Param == nil || *eb.Error.Param != "tool_call_id" {
		t.Fatalf("a result for an answered call: %d %+v", resp.StatusCode, eb)
	}

	// Streamed: the call as the model streams it (the scripted model in
	// three fragments), then finish_reason tool_calls.
	resp = e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "clock", "stream": true, "messages": []any{ask}, "tools": tools}, nil)
	b := body(resp)
	if got := streamedToolCalls(t, b); len(got) != 4 || got[0] != `0 call_1 function get_time ""` || got[1] != `0    "{\"tz"` ||
		!strings.Contains(b, `"finish_reason":"tool_calls"`) || !strings.HasSuffix(b, "data: [DONE]\n\n") {
		t.Fatalf("stream: %q\n%s", got, b)
	}
}

// streamedToolCalls lists the tool_calls deltas of an OpenAI stream, one
// "index id type name arguments" line each (arguments quoted), and checks
// that each call's arguments put together are {"tz":"UTC"}.
func streamedToolCalls(t *testing.T, stream string) []string {
	t.Helper()
	var out []string
	args := map[int]string{}
	for line := range strings.Lines(stream) {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c api.ChatCompletionChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil {
					t.Fatalf("a tool call delta without an index: %s", data)
				}
				out = append(out, fmt.Sprintf("%d %s %s %s %q", *tc.Index, tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments))
				args[*tc.Index] += tc.Function.Arguments
			}
		}
	}
	for i, a := range args {
		if a != `{"tz":"UTC"}` {
			t.Errorf("call %d: arguments %q", i, a)
		}
	}
	return out
}

// heldCallModel streams a call of the client's get_time in two fragments
// and holds the second until release.
type heldCallModel struct{ release chan struct{} }

func (m *heldCallModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return llm.Collect(m.Stream(ctx, req))
}

func (m *heldCallModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		if !yield(llm.ToolCallStartChunk(0, "call_h", "get_time"), nil) || !yield(llm.ToolCallDeltaChunk(0, `{"tz":`), nil) {
			return
		}
		select {
		case <-m.release:
		case <-ctx.Done():
			yield(llm.Chunk{}, ctx.Err())
			return
		}
		if yield(llm.ToolCallDeltaChunk(0, `"UTC"}`), nil) {
			yield(llm.FinishChunk(llm.FinishToolCalls), nil)
		}
	}
}

// TestOpenAIClientToolCallStreams: the call of a client tool reaches the
// client as the model streams it — its index, id, type and name first, then
// each fragment of its arguments while the model is still producing the
// next — and calls of the agent's own tools in the same response do not.
func TestOpenAIClientToolCallStreams(t *testing.T) {
	held := &heldCallModel{release: make(chan struct{})}
	e := newEnv(t, nil, func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) {
			return llm.New(held, llm.WithName(spec), llm.WithRetries(0)), nil
		}
	})
	e.createAgent(e.admin, map[string]any{"name": "clock"})
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "get_time", "parameters": map[string]any{"type": "object"}}}}
	reqBody, _ := json.Marshal(map[string]any{"model": "clock", "stream": true, "tools": tools,
		"messages": []any{map[string]any{"role": "user", "content": "time?"}}})
	req, _ := http.NewRequest("POST", e.http.URL+"/v1/chat/completions", bytes.NewReader(reqBody))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %s", resp.Status)
	}
	// Read up to the first fragment while the model holds the second.
	r := bufio.NewReader(resp.Body)
	var read strings.Builder
	for !strings.Contains(read.String(), `"arguments":"{\"tz\":"`) {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before the held model was released: %v\n%s", err, read.String())
		}
		read.WriteString(line)
	}
	close(held.release)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	b := read.String() + string(rest)
	if got := streamedToolCalls(t, b); len(got) != 3 || got[0] != `0 call_h function get_time ""` || got[1] != `0    "{\"tz\":"` || got[2] != `0    "\"UTC\"}"` ||
		!strings.Contains(b, `"finish_reason":"tool_calls"`) || !strings.HasSuffix(b, "data: [DONE]\n\n") {
		t.Fatalf("stream: %q\n%s", got, b)
	}

	// The agent's own tool (here a delegate) called in the same response,
	// first: its call runs server-side and is not in the stream, and the
	// client's call is the stream's call 0.
	mixed := scripted.New(scripted.Rule{Respond: func(req *llm.Request) (*llm.Response, error) {
		if len(req.Tools) == 0 || req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
			return &llm.Response{Message: llm.AssistantMessage("noon")}, nil
		}
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "call_d", Name: req.Tools[0].Name, Arguments: `{"query":"the time, please"}`},
			{ID: "call_c", Name: "get_time", Arguments: `{"tz":"UTC"}`},
		}}, FinishReason: llm.FinishToolCalls}, nil
	}})
	e2 := newEnv(t, mixed)
	helper := e2.createAgent(e2.admin, map[string]any{"name": "helper"})
	e2.createAgent(e2.admin, map[string]any{"name": "boss", "delegate_agent_ids": []string{helper.ID}})
	b = body(e2.do(e2.admin, "POST", "/v1/chat/completions", map[string]any{"model": "boss", "stream": true, "tools": tools,
		"messages": []any{map[string]any{"role": "user", "content": "time?"}}}, nil))
	if got := streamedToolCalls(t, b); len(got) != 4 || got[0] != `0 call_c function get_time ""` || strings.Contains(b, "call_d") {
		t.Fatalf("stream: %q\n%s", got, b)
	}
}

// TestOpenAIClientToolClash: a client tool named like one of the agent's
// tools is a 400 naming tools.
func TestOpenAIClientToolClash(t *testing.T) {
	e := newEnv(t, clientToolModel())
	helper := e.createAgent(e.admin, map[string]any{"name": "helper"})
	e.createAgent(e.admin, map[string]any{"name": "boss", "delegate_agent_ids": []string{helper.ID}})
	var eb api.OpenAIError
	resp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "boss", "messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"tools": []map[string]any{{"type": "function", "function": map[string]any{"name": delegateToolName(helper.ID)}}}}, &eb)
	if resp.StatusCode != http.StatusBadRequest || eb.Error.Param == nil || *eb.Error.Param != "tools" {
		t.Fatalf("clash: %d %+v", resp.StatusCode, eb)
	}
}
