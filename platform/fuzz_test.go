package platform

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestBodies feeds arbitrary bodies to every handler that decodes
// JSON: none may panic or answer 5xx, and every error has the API's shape.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{"query":"hi"}`, `{"query":"hi","stream":true}`, `{"name":"a","temperature":0.5}`,
		`{"model":"x","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"x","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
		`{"name":"t","kind":"http","http":{"url":"http://example.com/{x}"}}`,
		`{"query":"x","top_k":-1,"mode":"vector"}`, `[]`, `null`, `{"query":1e999}`, `{"name":"\u0000"}`, `{`, ``,
	} {
		f.Add(seed)
	}
	e := newEnv(f, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "fuzz"})
	var kb kbView
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "kb"}, &kb)
	routes := []string{
		"POST /v1/agents", "PUT /v1/agents/" + a.ID, "POST /v1/agents/" + a.ID + "/chat",
		"POST /v1/chat/completions", "POST /v1/api-keys", "POST /v1/tools", "POST /v1/chat/cancel",
		"POST /v1/knowledge-bases", "POST /v1/knowledge-bases/" + kb.ID + "/search",
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, route := range routes {
			method, path, _ := strings.Cut(route, " ")
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.admin)
			rec := httptest.NewRecorder()
			e.srv.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s with %q: %d %s", route, body, rec.Code, rec.Body.String())
			}
			if rec.Code >= 400 && !strings.Contains(rec.Body.String(), `"error"`) {
				t.Fatalf("%s with %q: error without the API's shape: %s", route, body, rec.Body.String())
			}
		}
	})
}
