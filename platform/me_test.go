package platform

import (
	"net/http"
	"strings"
	"testing"
)

func TestMe(t *testing.T) {
	e := newEnv(t, nil)
	var me meResponse
	if resp := e.do(e.admin, "GET", "/v1/me", nil, &me); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/me: %d", resp.StatusCode)
	}
	id, _, _ := parseKey(e.admin)
	if me.Tenant != "default" || me.TenantID != e.tenant() || me.KeyID != id || !me.Admin || me.KeyName != "admin" {
		t.Fatalf("admin /v1/me = %+v", me)
	}
	if me.DefaultModel == "" || len(me.Providers) == 0 {
		t.Fatalf("no default model or providers: %+v", me)
	}

	var k keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "ci", "tenant": "globex"}, &k)
	me = meResponse{}
	e.do(k.Key, "GET", "/v1/me", nil, &me)
	if me.Tenant != "globex" || me.Admin || me.KeyID != k.ID || me.KeyName != "ci" {
		t.Fatalf("tenant key /v1/me = %+v", me)
	}
	if resp := e.do("", "GET", "/v1/me", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a key: %d", resp.StatusCode)
	}
	if strings.Contains(body(e.do(k.Key, "GET", "/v1/me", nil, nil)), k.Key) {
		t.Fatal("/v1/me shows the key's secret")
	}
}

// TestConsoleMounted checks that the console answers at "/" while unknown
// paths, other methods and the API keep their JSON answers: the console
// serves static assets only, and /v1 stays behind authentication.
func TestConsoleMounted(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.do("", "GET", "/", nil, nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("GET / without the CSP: %q", csp)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/nope"}, {"GET", "/v1/nope"}, {"POST", "/"}, {"GET", "/assets/0/app.js"},
	} {
		resp := e.do("", c.method, c.path, nil, nil)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(body(resp), `"not_found"`) {
			t.Errorf("%s %s: %d, want the API's JSON 404", c.method, c.path, resp.StatusCode)
		}
	}
	if resp := e.do("", "GET", "/v1/agents", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /v1/agents without a key: %d", resp.StatusCode)
	}
}
