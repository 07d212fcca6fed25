package platform

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/platform/meta"
)

// wantRoles is the least role of every authenticated route, written out
// here apart from the route table so that a change to either shows.
var wantRoles = map[string]meta.Role{
	"POST /v1/api-keys":        owner,
	"GET /v1/api-keys":         owner,
	"PATCH /v1/api-keys/{id}":  owner,
	"DELETE /v1/api-keys/{id}": owner,
	"GET /v1/me":               endUser,
	"GET /v1/provider-models":  viewer,
	"GET /v1/audit":            admin,

	"POST /v1/agents":                           builder,
	"GET /v1/agents":                            viewer,
	"GET /v1/agents/{id}":                       viewer,
	"PUT /v1/agents/{id}":                       builder,
	"DELETE /v1/agents/{id}":                    builder,
	"GET /v1/agents/{id}/versions":              viewer,
	"GET /v1/agents/{id}/versions/{n}":          viewer,
	"GET /v1/agents/{id}/versions/{n}/diff":     viewer,
	"POST /v1/agents/{id}/versions/{n}/publish": builder,
	"POST /v1/agents/{id}/rollback":             builder,

	"GET /v1/sessions":                                     viewer,
	"GET /v1/sessions/{id}":                                viewer,
	"GET /v1/sessions/{id}/messages":                       viewer,
	"DELETE /v1/sessions/{id}":                             admin,
	"PUT /v1/sessions/{id}":                                builder,
	"GET /v1/sessions/{id}/feedback":                       viewer,
	"PUT /v1/sessions/{id}/messages/{message}/feedback":    endUser,
	"DELETE /v1/sessions/{id}/messages/{message}/feedback": endUser,
	"GET /v1/sessions/{id}/messages/{message}/trace":       viewer,
	"POST /v1/agents/{id}/chat":                            endUser,
	"POST /v1/chat/cancel":                                 endUser,
	"GET /v1/models":                                       endUser,
	"POST /v1/chat/completions":                            endUser,
	"GET /.well-known/agent-card.json":                     endUser,
	"GET /a2a/agents/{agent}/.well-known/agent-card.json":  endUser,
	"POST /a2a/agents/{agent}":                             endUser,
	"POST /mcp":                                            endUser,
	"GET /mcp":                                             endUser,
	"DELETE /mcp":                                          endUser,

	"GET /v1/usage":           viewer,
	"GET /v1/prices":          viewer,
	"GET /v1/budgets":         viewer,
	"PUT /v1/budgets":         owner,
	"DELETE /v1/budgets/{id}": owner,

	"GET /v1/secrets":           builder,
	"POST /v1/secrets":          admin,
	"PUT /v1/secrets":           admin,
	"PUT /v1/secrets/{name}":    admin,
	"DELETE /v1/secrets/{name}": admin,

	"POST /v1/knowledge-bases":                        builder,
	"GET /v1/knowledge-bases":                         viewer,
	"GET /v1/knowledge-bases/{id}":                    viewer,
	"PUT /v1/knowledge-bases/{id}":                    builder,
	"DELETE /v1/knowledge-bases/{id}":                 builder,
	"POST /v1/knowledge-bases/{id}/documents":         builder,
	"GET /v1/knowledge-bases/{id}/documents":          viewer,
	"GET /v1/knowledge-bases/{id}/documents/{doc}":    viewer,
	"DELETE /v1/knowledge-bases/{id}/documents/{doc}": builder,
	"POST /v1/knowledge-bases/{id}/search":            viewer,

	"POST /v1/tools":              builder,
	"GET /v1/tools":               viewer,
	"GET /v1/tools/{id}":          viewer,
	"PUT /v1/tools/{id}":          builder,
	"DELETE /v1/tools/{id}":       builder,
	"POST /v1/tools/{id}/refresh": builder,
	"POST /v1/tools/{id}/invoke":  builder,

	"GET /v1/workflows":                                                viewer,
	"POST /v1/workflows":                                               builder,
	"GET /v1/workflows/{id}":                                           viewer,
	"PUT /v1/workflows/{id}":                                           builder,
	"DELETE /v1/workflows/{id}":                                        builder,
	"POST /v1/workflows/{id}/runs":                                     builder,
	"GET /v1/workflows/{id}/runs":                                      viewer,
	"GET /v1/workflows/{id}/runs/{run}":                                viewer,
	"POST /v1/workflows/{id}/runs/{run}/cancel":                        builder,
	"GET /v1/workflow-node-kinds":                                      viewer,
	"GET /v1/workflows/{id}/runs/{run}/interrupts":                     viewer,
	"POST /v1/workflows/{id}/runs/{run}/interrupts/{interrupt}/resume": builder,
	"GET /v1/users/{user}/memories":                                    viewer,
	"PUT /v1/users/{user}/memories/{id}":                               admin,
	"DELETE /v1/users/{user}/memories/{id}":                            admin,
	"DELETE /v1/users/{user}":                                          admin,
	"GET /v1/retention":                                                viewer,
	"PUT /v1/retention":                                                admin,
	"GET /v1/interrupts":                                               viewer,
	"POST /v1/sessions/{id}/interrupts/{interrupt}/resume":             builder,
}

// roleKeys makes a key of each role in a new tenant, by its owner.
func (e *testEnv) roleKeys(tenant string) map[meta.Role]keyResponse {
	e.t.Helper()
	keys := map[meta.Role]keyResponse{}
	var own keyResponse
	if resp := e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "owner", "tenant": tenant, "role": "owner"}, &own); resp.StatusCode != http.StatusCreated || own.Role != owner {
		e.t.Fatalf("owner key: %d %+v", resp.StatusCode, own)
	}
	keys[owner] = own
	for _, r := range meta.Roles[1:] {
		var k keyResponse
		if resp := e.do(own.Key, "POST", "/v1/api-keys", map[string]any{"name": string(r), "role": string(r)}, &k); resp.StatusCode != http.StatusCreated || k.Role != r {
			e.t.Fatalf("%s key: %d %+v", r, resp.StatusCode, k)
		}
		keys[r] = k
	}
	return keys
}

var pathParam = regexp.MustCompile(`\{[a-z]+\}`)

// refusedForRole reports whether resp is the route table's refusal.
func refusedForRole(resp *http.Response) bool {
	return resp.StatusCode == http.StatusForbidden && strings.Contains(body(resp), "role or higher")
}

// TestRouteRoles: every route × every role, on SQLite and PostgreSQL: a
// role below the route's is refused before the handler runs, every other
// role reaches the handler. The route table and wantRoles must list the
// same routes.
func TestRouteRoles(t *testing.T) {
	onEachStore(t, func(t *testing.T, e *testEnv) {
		for pattern, a := range e.srv.access {
			if want, ok := wantRoles[pattern]; !ok {
				t.Errorf("route %s (needs %s) is missing from wantRoles", pattern, a.role)
			} else if a.role != want {
				t.Errorf("route %s needs %s, want %s", pattern, a.role, want)
			}
		}
		for pattern := range wantRoles {
			if _, ok := e.srv.access[pattern]; !ok {
				t.Errorf("route %s of wantRoles is not registered", pattern)
			}
		}
		keys := e.roleKeys("roles")
		for pattern, need := range wantRoles {
			method, path, _ := strings.Cut(pattern, " ")
			path = pathParam.ReplaceAllString(path, "nosuch")
			for _, r := range meta.Roles {
				resp := e.do(keys[r].Key, method, path, "{}", nil)
				refused := refusedForRole(resp)
				if want := !r.AtLeast(need); refused != want {
					t.Errorf("%s as %s: refused=%v, want %v (%d %s)", pattern, r, refused, want, resp.StatusCode, body(resp))
				}
			}
		}
	})
}

func TestRoleAtLeast(t *testing.T) {
	for i, r := range meta.Roles {
		for j, need := range meta.Roles {
			if got := r.AtLeast(need); got != (i <= j) {
				t.Errorf("%s.AtLeast(%s) = %v", r, need, got)
			}
		}
		if r.AtLeast("") || meta.Role("").AtLeast(r) || meta.Role("root").AtLeast(endUser) {
			t.Error("an unknown role is allowed")
		}
	}
	if _, err := meta.ParseRole("root"); err == nil {
		t.Error("ParseRole(root) = nil error")
	}
}

// A role change takes effect on the key's next request; the operator's key
// cannot be re-roled, an owner reaches no other tenant's keys, and a key
// of any other role manages none.
func TestKeyRoleChange(t *testing.T) {
	onEachStore(t, func(t *testing.T, e *testEnv) {
		keys := e.roleKeys("team")
		b := keys[builder]
		if resp := e.do(b.Key, "POST", "/v1/agents", map[string]any{"name": "one"}, nil); resp.StatusCode != http.StatusCreated {
			t.Fatalf("builder creates an agent: %d %s", resp.StatusCode, body(resp))
		}
		var k keyResponse
		if resp := e.do(keys[owner].Key, "PATCH", "/v1/api-keys/"+b.ID, map[string]any{"role": "viewer"}, &k); resp.StatusCode != 200 || k.Role != viewer {
			t.Fatalf("PATCH role: %d %+v", resp.StatusCode, k)
		}
		if resp := e.do(b.Key, "POST", "/v1/agents", map[string]any{"name": "two"}, nil); !refusedForRole(resp) {
			t.Fatalf("a viewer created an agent: %d %s", resp.StatusCode, body(resp))
		}
		var me meResponse
		e.do(b.Key, "GET", "/v1/me", nil, &me)
		if me.Role != viewer {
			t.Fatalf("me.role = %q", me.Role)
		}
		e.do(keys[owner].Key, "PATCH", "/v1/api-keys/"+b.ID, map[string]any{"role": "builder"}, nil)
		if resp := e.do(b.Key, "POST", "/v1/agents", map[string]any{"name": "two"}, nil); resp.StatusCode != http.StatusCreated {
			t.Fatalf("builder again: %d %s", resp.StatusCode, body(resp))
		}
		e.wantError(e.do(keys[owner].Key, "PATCH", "/v1/api-keys/"+b.ID, map[string]any{"role": "root"}, nil), 400, CodeInvalidRequest)

		// The operator's key: 409 to its own tenant's owner too.
		adminID, _, _ := parseKey(e.admin)
		other := e.roleKeys("other")
		e.wantError(e.do(e.admin, "PATCH", "/v1/api-keys/"+adminID, map[string]any{"role": "viewer"}, nil), 409, CodeConflict)
		// Another tenant's key is not found for an owner; its listing is
		// forbidden, and so is minting a key there.
		e.wantError(e.do(other[owner].Key, "PATCH", "/v1/api-keys/"+b.ID, map[string]any{"role": "owner"}, nil), 404, CodeNotFound)
		e.wantError(e.do(other[owner].Key, "DELETE", "/v1/api-keys/"+b.ID, nil, nil), 404, CodeNotFound)
		e.wantError(e.do(other[owner].Key, "GET", "/v1/api-keys?tenant=team", nil, nil), 403, CodeForbidden)
		e.wantError(e.do(other[owner].Key, "POST", "/v1/api-keys", map[string]any{"name": "x", "tenant": "team"}, nil), 403, CodeForbidden)
		var listed []keyResponse
		e.do(other[owner].Key, "GET", "/v1/api-keys", nil, &listed)
		if len(listed) != len(meta.Roles) {
			t.Fatalf("owner lists %d keys, want %d", len(listed), len(meta.Roles))
		}
		for _, l := range listed {
			if l.Name != string(l.Role) {
				t.Fatalf("listed %+v", l)
			}
		}
		// An owner revokes a key of its tenant: gone at the next request.
		if resp := e.do(other[owner].Key, "DELETE", "/v1/api-keys/"+other[viewer].ID, nil, nil); resp.StatusCode != 204 {
			t.Fatalf("revoke: %d %s", resp.StatusCode, body(resp))
		}
		e.wantError(e.do(other[viewer].Key, "GET", "/v1/agents", nil, nil), 401, CodeUnauthorized)
		// A key made without a role is an admin: what a non-admin key was.
		var plain keyResponse
		e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "plain", "tenant": "team"}, &plain)
		if plain.Role != admin {
			t.Fatalf("a key without a role is %q", plain.Role)
		}
		e.wantError(e.do(plain.Key, "POST", "/v1/api-keys", map[string]any{"name": "x"}, nil), 403, CodeForbidden)
	})
}

// Across replicas sharing Redis, a role change reaches the other replica's
// cache (an hour long) within the bus's delivery.
func TestKeyRoleChangeReplicas(t *testing.T) {
	a, b := replicas(t, func(c *Config) { c.CacheTTL = time.Hour })
	keys := a.roleKeys("team")
	k := keys[builder]
	if resp := b.do(k.Key, "POST", "/v1/agents", map[string]any{"name": "one"}, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("builder on b: %d", resp.StatusCode)
	}
	a.do(keys[owner].Key, "PATCH", "/v1/api-keys/"+k.ID, map[string]any{"role": "end_user"}, nil)
	deadline := time.Now().Add(10 * time.Second)
	for !refusedForRole(b.do(k.Key, "GET", "/v1/agents", nil, nil)) {
		if time.Now().After(deadline) {
			t.Fatal("replica b still serves the old role")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
