package platform

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// onEachStore runs f on a server over SQLite and, when
// WEFT_TEST_POSTGRES_URL is set, on one over PostgreSQL (in a schema of its
// own), both configured by opts.
func onEachStore(t *testing.T, f func(t *testing.T, e *testEnv), opts ...envOption) {
	t.Run("sqlite", func(t *testing.T) { f(t, newEnv(t, nil, opts...)) })
	t.Run("postgres", func(t *testing.T) {
		e := newEnv(t, nil, opts...) // for its helpers and configuration; its server is replaced
		pg := openTestPostgres(t)
		admin, err := Bootstrap(context.Background(), pg, "")
		if err != nil {
			t.Fatal(err)
		}
		cfg := e.srv.cfg
		cfg.Meta = pg
		srv, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		e.srv, e.admin = srv, admin
		e.http.Config.Handler = srv
		f(t, e)
	})
}

// endpoint is an HTTP tool's server that counts its calls and answers its
// own name.
func endpoint(t *testing.T, name string) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"from":"` + name + `"}`))
	}))
	t.Cleanup(s.Close)
	return s, &hits
}

func httpTool(name, url string) map[string]any {
	return map[string]any{"name": name, "description": "Where the weather comes from", "kind": "http",
		"http": map[string]any{"method": "GET", "url": url}, "parameters": map[string]any{"type": "object"}}
}

// PUT /v1/tools/{id} changes a tool in place: the id stays, so the agents
// that whitelist it keep it and run the new definition at once.
func TestToolUpdate(t *testing.T) {
	models := map[string]*scripted.Model{}
	onEachStore(t, func(t *testing.T, e *testEnv) {
		e.srv.guard = testGuard(t, "127.0.0.1")
		one, hitsOne := endpoint(t, "one")
		two, hitsTwo := endpoint(t, "two")
		models["caller"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("weather", `{}`))

		var tl toolDef
		if resp := e.do(e.admin, "POST", "/v1/tools", httpTool("weather", one.URL), &tl); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %d %s", resp.StatusCode, body(resp))
		}
		a := e.createAgent(e.admin, map[string]any{"name": "forecaster", "model": "scripted/caller", "tool_ids": []string{tl.ID}})
		var ans api.ChatAnswer
		e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "weather?"}, &ans)
		if len(ans.ToolCalls) != 1 || !strings.Contains(ans.ToolCalls[0].Result, `"one"`) || hitsOne.Load() != 1 {
			t.Fatalf("before the update: %+v", ans.ToolCalls)
		}

		var got toolDef
		upd := httpTool("weather", two.URL)
		upd["description"] = "The other weather service"
		if resp := e.do(e.admin, "PUT", "/v1/tools/"+tl.ID, upd, &got); resp.StatusCode != http.StatusOK {
			t.Fatalf("update: %d %s", resp.StatusCode, body(resp))
		}
		if got.ID != tl.ID || got.HTTP.URL != two.URL || got.Description != "The other weather service" || !got.CreatedAt.Equal(tl.CreatedAt.Truncate(time.Microsecond)) {
			t.Fatalf("updated = %+v; want id %s, url %s", got, tl.ID, two.URL)
		}
		// The agent keeps the tool and runs the new definition.
		e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "weather?"}, &ans)
		if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || !strings.Contains(ans.ToolCalls[0].Result, `"two"`) || hitsTwo.Load() != 1 || hitsOne.Load() != 1 {
			t.Fatalf("after the update: %+v (hits %d, %d)", ans.ToolCalls, hitsOne.Load(), hitsTwo.Load())
		}
		// A rename keeps the id, and the agent's whitelist with it.
		if resp := e.do(e.admin, "PUT", "/v1/tools/"+tl.ID, httpTool("forecast", two.URL), &got); resp.StatusCode != http.StatusOK || got.Name != "forecast" || got.ID != tl.ID {
			t.Fatalf("rename: %d %+v", resp.StatusCode, got)
		}
		var ag meta.Agent
		e.do(e.admin, "GET", "/v1/agents/"+a.ID, nil, &ag)
		if !slices.Equal(ag.ToolIDs, []string{tl.ID}) {
			t.Fatalf("agent tool_ids = %v", ag.ToolIDs)
		}
		var inv invocation
		e.do(e.admin, "POST", "/v1/tools/"+tl.ID+"/invoke", map[string]any{}, &inv)
		if !inv.OK || inv.Tool != "forecast" || !strings.Contains(inv.Result, `"two"`) {
			t.Fatalf("invoke after rename = %+v", inv)
		}

		// Validation as on create, and the kind cannot change.
		eb := e.wantError(e.do(e.admin, "PUT", "/v1/tools/"+tl.ID, map[string]any{"name": "forecast", "kind": "sql", "sql": map[string]any{"driver": "sqlite", "dsn_env": "X", "query": "SELECT 1"}}, nil), http.StatusBadRequest, CodeInvalidRequest)
		if !strings.Contains(eb.Error.Message, `field "kind"`) {
			t.Fatalf("kind change: %q does not name the field", eb.Error.Message)
		}
		e.wantError(e.do(e.admin, "PUT", "/v1/tools/"+tl.ID, httpTool("bad name!", two.URL), nil), http.StatusBadRequest, CodeInvalidRequest)
		noKind := httpTool("forecast", two.URL)
		delete(noKind, "kind")
		if eb := e.wantError(e.do(e.admin, "PUT", "/v1/tools/"+tl.ID, noKind, nil), http.StatusBadRequest, CodeInvalidRequest); !strings.Contains(eb.Error.Message, `field "kind" is required`) {
			t.Fatalf("no kind: %q", eb.Error.Message)
		}
		e.wantError(e.do(e.admin, "PUT", "/v1/tools/"+tl.ID, map[string]any{"name": "forecast", "kind": "http"}, nil), http.StatusBadRequest, CodeInvalidRequest)
		e.wantError(e.do(e.admin, "PUT", "/v1/tools/"+tl.ID, httpTool("forecast", "ftp://x"), nil), http.StatusBadRequest, CodeInvalidRequest)
		var other toolDef
		e.do(e.admin, "POST", "/v1/tools", httpTool("other", one.URL), &other)
		e.wantError(e.do(e.admin, "PUT", "/v1/tools/"+tl.ID, httpTool("other", two.URL), nil), http.StatusConflict, CodeConflict)
		e.wantError(e.do(e.admin, "PUT", "/v1/tools/tool_nope", httpTool("x", two.URL), nil), http.StatusNotFound, CodeNotFound)

		// A tenant key may not name the server's environment, nor update a
		// tool into a SQL one; another tenant does not see the tool at all.
		var member keyResponse
		e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "member"}, &member)
		env := httpTool("forecast", two.URL)
		env["http"].(map[string]any)["headers"] = map[string]string{"Authorization": "Bearer ${HOME}"}
		e.wantError(e.do(member.Key, "PUT", "/v1/tools/"+tl.ID, env, nil), http.StatusBadRequest, CodeInvalidRequest)
		var sqlTool toolDef
		sqlDef := map[string]any{"name": "count", "kind": "sql", "sql": map[string]any{"driver": "sqlite", "dsn_env": "SHOP_DSN", "query": "SELECT 1"}}
		if resp := e.do(e.admin, "POST", "/v1/tools", sqlDef, &sqlTool); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create sql tool: %d %s", resp.StatusCode, body(resp))
		}
		e.wantError(e.do(member.Key, "PUT", "/v1/tools/"+sqlTool.ID, sqlDef, nil), http.StatusForbidden, CodeForbidden)
		var byMember toolDef
		if resp := e.do(member.Key, "PUT", "/v1/tools/"+tl.ID, httpTool("forecast", one.URL), &byMember); resp.StatusCode != http.StatusOK || byMember.RegisteredByAdmin {
			t.Fatalf("tenant key update: %d %+v", resp.StatusCode, byMember)
		}
		var globex keyResponse
		e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "other", "tenant": "globex"}, &globex)
		e.wantError(e.do(globex.Key, "PUT", "/v1/tools/"+tl.ID, httpTool("mine", two.URL), nil), http.StatusNotFound, CodeNotFound)
		e.do(e.admin, "GET", "/v1/tools/"+tl.ID, nil, &got)
		if got.Name != "forecast" || got.HTTP.URL != one.URL {
			t.Fatalf("after refused updates: %+v", got)
		}
	}, multiModel(models), func(c *Config) {
		dsn := filepath.Join(t.TempDir(), "shop.db")
		c.Getenv = func(k string) string { return map[string]string{"SHOP_DSN": dsn}[k] }
	})
}

// PUT on an MCP server's record: a changed connection is listed again,
// and tools offered under the same name keep their ids; a rename renames
// its tools (new records); a name clash is a 409 that changes nothing.
func TestToolUpdateMCP(t *testing.T) {
	// The fixtures outlive the servers, whose connections to them close first.
	fx, fx2 := newMCPFixture(t), newMCPFixture(t)
	onEachStore(t, func(t *testing.T, e *testEnv) {
		e.srv.guard = testGuard(t, "127.0.0.1")
		fx.reset()
		fx2.reset()
		mcpDef := func(name, url string) map[string]any {
			return map[string]any{"name": name, "kind": "mcp", "mcp": map[string]any{"transport": "http", "url": url}}
		}
		var server toolDef
		if resp := e.do(e.admin, "POST", "/v1/tools", mcpDef("box", fx.http.URL), &server); resp.StatusCode != http.StatusCreated {
			t.Fatalf("register: %d %s", resp.StatusCode, body(resp))
		}
		kids := func() map[string]string {
			var all []toolDef
			e.do(e.admin, "GET", "/v1/tools", nil, &all)
			out := map[string]string{}
			for _, d := range all {
				if d.ParentID == server.ID {
					out[d.Name] = d.ID
				}
			}
			return out
		}
		before := kids()
		if len(before) != 3 || before["box_shout"] == "" {
			t.Fatalf("children = %v", before)
		}
		e.do(e.admin, "POST", "/v1/tools/"+before["box_shout"]+"/invoke", map[string]any{"arguments": map[string]any{"text": "hi"}}, nil)
		if len(fx.called()) != 1 {
			t.Fatalf("first server called %v", fx.called())
		}

		// Another server with the same tools: listed again, ids kept, and
		// calls go to the new server.
		var got toolDef
		if resp := e.do(e.admin, "PUT", "/v1/tools/"+server.ID, mcpDef("box", fx2.http.URL), &got); resp.StatusCode != http.StatusOK || got.ID != server.ID || got.MCP.URL != fx2.http.URL {
			t.Fatalf("update: %d %s", resp.StatusCode, body(resp))
		}
		if after := kids(); !maps.Equal(before, after) {
			t.Fatalf("children %v became %v", before, after)
		}
		var inv invocation
		e.do(e.admin, "POST", "/v1/tools/"+before["box_shout"]+"/invoke", map[string]any{"arguments": map[string]any{"text": "hi"}}, &inv)
		if !inv.OK || len(fx2.called()) != 1 || len(fx.called()) != 1 {
			t.Fatalf("after the update: %+v; calls %v then %v", inv, fx.called(), fx2.called())
		}

		// A clash with another tool's name is a 409 and changes nothing.
		var taken toolDef
		e.do(e.admin, "POST", "/v1/tools", httpTool("crate_shout", "https://example.com"), &taken)
		e.wantError(e.do(e.admin, "PUT", "/v1/tools/"+server.ID, mcpDef("crate", fx2.http.URL), nil), http.StatusConflict, CodeConflict)
		if after := kids(); !maps.Equal(before, after) {
			t.Fatalf("a refused update changed the children %v to %v", before, after)
		}
		// A rename renames its tools.
		e.do(e.admin, "DELETE", "/v1/tools/"+taken.ID, nil, nil)
		if resp := e.do(e.admin, "PUT", "/v1/tools/"+server.ID, mcpDef("crate", fx2.http.URL), &got); resp.StatusCode != http.StatusOK || got.Name != "crate" {
			t.Fatalf("rename: %d %s", resp.StatusCode, body(resp))
		}
		renamed := kids()
		if len(renamed) != 3 || renamed["crate_shout"] == "" || renamed["box_shout"] != "" {
			t.Fatalf("children after the rename = %v", renamed)
		}
		// Its tools cannot be updated themselves, and an unreachable
		// server is refused before anything changes.
		e.wantError(e.do(e.admin, "PUT", "/v1/tools/"+renamed["crate_shout"], mcpDef("x", fx2.http.URL), nil), http.StatusBadRequest, CodeInvalidRequest)
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		e.wantError(e.do(e.admin, "PUT", "/v1/tools/"+server.ID, mcpDef("crate", dead.URL), nil), http.StatusBadRequest, CodeInvalidRequest)
		if after := kids(); !maps.Equal(renamed, after) {
			t.Fatalf("a refused update changed the children %v to %v", renamed, after)
		}
	})
}

// reset forgets the calls made so far.
func (f *mcpFixture) reset() {
	f.mu.Lock()
	f.calls = nil
	f.mu.Unlock()
}

// A tool updated through one replica runs its new definition on the
// other, which had built the old one: the bus drops it there.
func TestToolUpdateReplicas(t *testing.T) {
	a, b := replicas(t)
	a.srv.guard, b.srv.guard = testGuard(t, "127.0.0.1"), testGuard(t, "127.0.0.1")
	one, _ := endpoint(t, "one")
	two, _ := endpoint(t, "two")
	var tl toolDef
	a.do(a.admin, "POST", "/v1/tools", httpTool("weather", one.URL), &tl)
	var inv invocation
	b.do(b.admin, "POST", "/v1/tools/"+tl.ID+"/invoke", map[string]any{}, &inv) // built in b
	if !strings.Contains(inv.Result, `"one"`) {
		t.Fatalf("b before = %+v", inv)
	}
	a.do(a.admin, "PUT", "/v1/tools/"+tl.ID, httpTool("weather", two.URL), nil)
	key := a.tenant() + "\x00" + tl.ID
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.srv.tools.mu.Lock()
		_, built := b.srv.tools.built[key]
		b.srv.tools.mu.Unlock()
		if !built {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("replica b still holds the tool built from the old definition")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.do(b.admin, "POST", "/v1/tools/"+tl.ID+"/invoke", map[string]any{}, &inv)
	if !strings.Contains(inv.Result, `"two"`) {
		t.Fatalf("b after = %+v", inv)
	}
}
