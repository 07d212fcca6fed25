package platform

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/provider/scripted"
)

func TestHTTPToolsAndWhitelist(t *testing.T) {
	var hits atomic.Int32
	weather := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"city":"` + r.URL.Query().Get("city") + `","temp_c":21}`))
	}))
	defer weather.Close()

	models := map[string]*scripted.Model{
		"caller": scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("weather", `{"city":"Paris"}`)),
	}
	e := newEnv(t, nil, multiModel(models))
	e.srv.guard = testGuard(t, "127.0.0.1")

	var tl toolDef
	resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{
		"name": "weather", "description": "Current weather of a city", "kind": "http",
		"http":       map[string]any{"method": "GET", "url": weather.URL + "/now", "timeout_ms": 2000},
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
	}, &tl)
	if resp.StatusCode != http.StatusCreated || tl.ID == "" {
		t.Fatalf("create tool: %d %s", resp.StatusCode, body(resp))
	}
	a := e.createAgent(e.admin, map[string]any{"name": "forecaster", "model": "scripted/caller", "tool_ids": []string{tl.ID}})
	var ans api.ChatAnswer
	e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "weather in Paris?"}, &ans)
	if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || !strings.Contains(ans.ToolCalls[0].Result, `"temp_c":21`) || !strings.Contains(ans.Answer, "Paris") {
		t.Fatalf("answer = %+v", ans)
	}
	if hits.Load() != 1 {
		t.Fatalf("tool endpoint hit %d times", hits.Load())
	}

	// An agent that has not whitelisted the tool cannot make it run.
	b := e.createAgent(e.admin, map[string]any{"name": "sneaky", "model": "scripted/caller"})
	resp = e.do(e.admin, "POST", "/v1/agents/"+b.ID+"/chat", map[string]any{"query": "weather?", "stream": true}, nil)
	frames, _ := readSSE(t, resp.Body)
	var result map[string]any
	for _, f := range frames {
		if f.Event == "tool.result" {
			result = f.Data
		}
	}
	if result == nil || result["ok"] != false || result["error"] == "" {
		t.Fatalf("tool.result = %v (frames %+v)", result, frames)
	}
	if hits.Load() != 1 {
		t.Fatalf("a tool that is not whitelisted ran")
	}

	// Without the allow list, loopback is refused by the SSRF guard.
	e.srv.guard = testGuard(t)
	var guarded toolDef
	e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "internal", "kind": "http", "http": map[string]any{"method": "GET", "url": weather.URL}}, &guarded)
	models["guarded"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("internal", `{}`))
	c := e.createAgent(e.admin, map[string]any{"name": "guarded", "model": "scripted/guarded", "tool_ids": []string{guarded.ID}})
	e.do(e.admin, "POST", "/v1/agents/"+c.ID+"/chat", map[string]any{"query": "go"}, &ans)
	if len(ans.ToolCalls) != 1 || ans.ToolCalls[0].OK || hits.Load() != 1 {
		t.Fatalf("loopback call not refused: %+v, hits %d", ans.ToolCalls, hits.Load())
	}

	// Registry errors and isolation.
	e.wantError(e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "bad name!", "kind": "http", "http": map[string]any{"url": weather.URL}}, nil), http.StatusBadRequest, CodeInvalidRequest)
	e.wantError(e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "x", "kind": "ftp"}, nil), http.StatusBadRequest, CodeInvalidRequest)
	e.wantError(e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "weather", "kind": "http", "http": map[string]any{"url": weather.URL}}, nil), http.StatusConflict, CodeConflict)
	e.wantError(e.do(e.admin, "POST", "/v1/agents", map[string]any{"name": "z", "tool_ids": []string{"tool_nope"}}, nil), http.StatusBadRequest, CodeInvalidRequest)
	var k keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "other", "tenant": "globex"}, &k)
	e.wantError(e.do(k.Key, "GET", "/v1/tools/"+tl.ID, nil, nil), http.StatusNotFound, CodeNotFound)
	var list []toolDef
	e.do(k.Key, "GET", "/v1/tools", nil, &list)
	if len(list) != 0 {
		t.Fatalf("another tenant sees %d tools", len(list))
	}
	if resp := e.do(e.admin, "DELETE", "/v1/tools/"+tl.ID, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete tool: %d", resp.StatusCode)
	}
}

func TestSQLTool(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE TABLE products (name TEXT, price REAL)`, `INSERT INTO products VALUES ('kettle', 25.5), ('toaster', 40)`} {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	models := map[string]*scripted.Model{
		"shop": scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("price_of", `{"name":"kettle' OR '1'='1"}`)),
	}
	e := newEnv(t, nil, multiModel(models), func(c *Config) {
		c.Getenv = func(k string) string {
			if k == "SHOP_DSN" {
				return path
			}
			return ""
		}
	})
	e.wantError(e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "wipe", "kind": "sql",
		"sql": map[string]any{"driver": "sqlite", "dsn_env": "SHOP_DSN", "query": "DELETE FROM products"}}, nil), http.StatusBadRequest, CodeInvalidRequest)
	var tl toolDef
	resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "price_of", "kind": "sql", "description": "Price of a product",
		"sql":        map[string]any{"driver": "sqlite", "dsn_env": "SHOP_DSN", "query": "SELECT name, price FROM products WHERE name = ?", "bind": []string{"name"}},
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}},
	}, &tl)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create sql tool: %d %s", resp.StatusCode, body(resp))
	}
	if strings.Contains(body(e.do(e.admin, "GET", "/v1/tools/"+tl.ID, nil, nil)), path) {
		t.Fatal("the DSN is stored or shown")
	}
	a := e.createAgent(e.admin, map[string]any{"name": "shop", "model": "scripted/shop", "tool_ids": []string{tl.ID}})
	var ans api.ChatAnswer
	e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "price?"}, &ans)
	// The injection attempt is bound as a value: no row matches.
	if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || strings.Contains(ans.ToolCalls[0].Result, "toaster") {
		t.Fatalf("tool calls = %+v", ans.ToolCalls)
	}
}

func TestToolRegistrationGuards(t *testing.T) {
	e := newEnv(t, nil)
	var k keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "member"}, &k)
	// Not an admin: no commands, no server-side databases.
	e.wantError(e.do(k.Key, "POST", "/v1/tools", map[string]any{"name": "sh", "kind": "mcp", "mcp": map[string]any{"transport": "stdio", "command": "/bin/sh"}}, nil), http.StatusForbidden, CodeForbidden)
	e.wantError(e.do(k.Key, "POST", "/v1/tools", map[string]any{"name": "q", "kind": "sql", "sql": map[string]any{"driver": "sqlite", "dsn_env": "HOME", "query": "SELECT 1"}}, nil), http.StatusForbidden, CodeForbidden)
	// MCP over HTTP is refused on loopback by the SSRF guard.
	loop := httptest.NewServer(http.NotFoundHandler())
	defer loop.Close()
	e.wantError(e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "m", "kind": "mcp", "mcp": map[string]any{"transport": "http", "url": loop.URL}}, nil), http.StatusBadRequest, CodeInvalidRequest)
}

// TestSQLToolAllowFunctionsPostgres: a volatile function is refused at the
// call unless the operator lists it in WEFT_SQL_ALLOW_FUNCTIONS.
func TestSQLToolAllowFunctionsPostgres(t *testing.T) {
	dsn := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if dsn == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL not set")
	}
	for _, allow := range []string{"", "random, now"} {
		t.Run("allow="+allow, func(t *testing.T) {
			models := map[string]*scripted.Model{"dice": scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("roll", `{}`))}
			e := newEnv(t, nil, multiModel(models), func(c *Config) {
				c.Getenv = func(k string) string {
					switch k {
					case "DICE_DSN":
						return dsn
					case "WEFT_SQL_ALLOW_FUNCTIONS":
						return allow
					}
					return ""
				}
			})
			var tl toolDef
			resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "roll", "kind": "sql", "description": "Roll a die",
				"sql":        map[string]any{"driver": "postgres", "dsn_env": "DICE_DSN", "query": "SELECT random() < 2 AS rolled"},
				"parameters": map[string]any{"type": "object", "properties": map[string]any{}},
			}, &tl)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("create sql tool: %d %s", resp.StatusCode, body(resp))
			}
			a := e.createAgent(e.admin, map[string]any{"name": "dice", "model": "scripted/dice", "tool_ids": []string{tl.ID}})
			var ans api.ChatAnswer
			e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "roll"}, &ans)
			if len(ans.ToolCalls) != 1 || ans.ToolCalls[0].OK != (allow != "") {
				t.Fatalf("allow %q: tool calls = %+v", allow, ans.ToolCalls)
			}
		})
	}
}
