package platform

import (
	"io"
	"testing"
)

// TestNosniff: every answer — JSON, an error, an SSE stream, the console,
// the health and metrics endpoints — carries X-Content-Type-Options:
// nosniff, so that no browser reads a tenant's text as HTML.
func TestNosniff(t *testing.T) {
	e := newEnv(t, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "echo"})
	for _, c := range []struct {
		name, key, method, path string
		body                    any
	}{
		{"json", e.admin, "GET", "/v1/agents", nil},
		{"error", "", "GET", "/v1/agents", nil},
		{"not found", e.admin, "GET", "/v1/nothing", nil},
		{"sse", e.admin, "POST", "/v1/agents/" + a.ID + "/chat", map[string]any{"query": "hi", "stream": true}},
		{"console", "", "GET", "/", nil},
		{"healthz", "", "GET", "/healthz", nil},
		{"metrics", "", "GET", "/metrics", nil},
	} {
		resp := e.do(c.key, c.method, c.path, c.body, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s (%s %s, %d): X-Content-Type-Options = %q", c.name, c.method, c.path, resp.StatusCode, got)
		}
	}
}
