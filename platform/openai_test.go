package platform

import (
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
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body(resp), "context_too_long") {
		t.Fatalf("too long: %d", resp.StatusCode)
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
		{"client tools", "tools", map[string]any{"model": "echo", "messages": msgs, "tools": []map[string]any{{"type": "function", "function": map[string]any{"name": "f"}}}}},
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
