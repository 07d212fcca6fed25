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
		`{"name":"t2","kind":"http","http":{"method":"GET","url":"https://example.com/x"}}`, `{"name":"t","kind":"sql"}`,
		`{"name":"kb2","chunk_size":4}`, `{"inputs":{"text":"hi"}}`, `{"inputs":{"text":3}}`,
	} {
		f.Add(seed)
	}
	e := newEnv(f, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "fuzz"})
	var kb kbView
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "kb"}, &kb)
	var tl struct{ ID string }
	e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "t", "kind": "http", "http": map[string]any{"method": "GET", "url": "https://example.com/t"}}, &tl)
	if tl.ID == "" {
		f.Fatal("no tool to update")
	}
	wf := e.saveWorkflow(echoWorkflow("echo"))
	routes := []string{
		"POST /v1/agents", "PUT /v1/agents/" + a.ID, "POST /v1/agents/" + a.ID + "/chat",
		"POST /v1/chat/completions", "POST /v1/api-keys", "POST /v1/tools", "PUT /v1/tools/" + tl.ID, "POST /v1/chat/cancel",
		"POST /v1/knowledge-bases", "PUT /v1/knowledge-bases/" + kb.ID, "POST /v1/knowledge-bases/" + kb.ID + "/search",
		"POST /v1/workflows/" + wf + "/runs",
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
