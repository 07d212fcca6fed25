package platform

import (
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/api"
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
