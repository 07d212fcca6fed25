package platform

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/openai"
	"github.com/weftlabs/weft/provider/scripted"
)

// leakKey is the provider key of TestErrorsHideProviderKey, as the server
// finds it in its environment (OPENAI_API_KEY).
const leakKey = "sk-proj-Leak/Key+0123456789"

// noKey fails when text shows leakKey in any form, or shows no sign that
// something was removed.
func noKey(t *testing.T, what, text string) {
	t.Helper()
	for _, form := range []string{"Leak/Key", url.QueryEscape("Leak/Key"), `Leak\/Key`} {
		if strings.Contains(text, form) {
			t.Errorf("%s shows the provider key: %s", what, text)
			return
		}
	}
	if !strings.Contains(text, "[redacted]") {
		t.Errorf("%s: no [redacted] in %s", what, text)
	}
}

// TestErrorsHideProviderKey: an upstream whose 400 quotes the request's
// Authorization header (or a driver that passes the key on in its error)
// puts the provider's key in no answer and no log line: the native chat,
// blocking and streamed; /v1/chat/completions, blocking and streamed; an
// MCP tools/call; an A2A message/send; a workflow run's llm node; and the
// server log. Agent "upstream" talks to an echoing server through the
// OpenAI driver (which removes its own key first); agent "leaky" to a
// driver that keeps the key in its error as it is, URL-encoded and in an
// Authorization header, so that the server's redactor alone removes it.
func TestErrorsHideProviderKey(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"type": "invalid_request_error",
			"message": fmt.Sprintf("unsupported header Authorization: %s (key %s)", auth, strings.TrimPrefix(auth, "Bearer "))}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(b)
	}))
	defer upstream.Close()
	leaky := scripted.New(scripted.Fail(&llm.Error{Kind: llm.ErrBadRequest, Provider: "leaky", StatusCode: 400,
		Message: fmt.Sprintf("upstream said: key %s, encoded %s, header Authorization: Bearer %s", leakKey, url.QueryEscape(leakKey), leakKey)}))
	var logs syncBuffer
	e := newEnv(t, nil, withLog(&logs), func(c *Config) {
		c.Getenv = func(k string) string {
			if k == "OPENAI_API_KEY" {
				return leakKey
			}
			return ""
		}
		c.OpenModel = func(spec string) (*llm.Model, error) {
			if spec == "scripted/leaky" {
				return llm.New(leaky, llm.WithName(spec), llm.WithRetries(0)), nil
			}
			d, err := openai.New(openai.WithBaseURL(upstream.URL), openai.WithAPIKey(leakKey), openai.WithModel("gpt-test"), openai.WithHTTPClient(upstream.Client()))
			if err != nil {
				return nil, err
			}
			return llm.New(d, llm.WithName(spec), llm.WithRetries(0)), nil
		}
	})
	for name, model := range map[string]string{"upstream": "openai/gpt-test", "leaky": "scripted/leaky"} {
		t.Run(name, func(t *testing.T) {
			a := e.createAgent(e.admin, map[string]any{"name": name, "model": model})
			read := func(resp *http.Response) string {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return string(b)
			}
			resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hi"}, nil)
			if resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("chat: %d", resp.StatusCode)
			}
			noKey(t, "blocking chat", read(resp))
			noKey(t, "SSE error frame", read(e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hi", "stream": true}, nil)))
			msgs := []map[string]any{{"role": "user", "content": "hi"}}
			noKey(t, "chat completion", read(e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": name, "messages": msgs}, nil)))
			noKey(t, "streamed chat completion", read(e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": name, "messages": msgs, "stream": true}, nil)))
			res, err := e.mcpClient(e.admin).cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"query": "hi"}})
			if err != nil || !res.IsError {
				t.Fatalf("MCP tools/call: %+v, %v", res, err)
			}
			noKey(t, "MCP tools/call", textOf(res))
			noKey(t, "A2A message/send", read(e.do(e.admin, "POST", "/a2a/agents/"+a.ID, call("message/send", map[string]any{"message": map[string]any{
				"kind": "message", "messageId": "m1", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": "hi"}}}}), nil)))
			e.saveWorkflow(map[string]any{"name": "wf-" + name, "nodes": []any{
				map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"q": map[string]any{"type": "string"}}},
				map[string]any{"id": "think", "kind": "llm", "model": model, "prompt": "{{ inputs.q }}"},
				map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"a": "{{ nodes.think.outputs.text }}"}},
			}})
			noKey(t, "workflow run", read(e.do(e.admin, "POST", "/v1/workflows/wf-"+name+"/runs", map[string]any{"inputs": map[string]any{"q": "hi"}}, nil)))
		})
	}
	noKey(t, "server log", logs.String())
}
