package platform

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/provider/scripted"
)

type mcpText struct {
	Text string `json:"text" jsonschema:"the text"`
}

// mcpFixture is an MCP server over streamable HTTP on loopback that can
// crash mid-call: a call of its tool "crash" drops the connection before
// any answer, as a server that dies does.
type mcpFixture struct {
	srv     *mcp.Server
	http    *httptest.Server
	deletes atomic.Int32 // DELETE requests: clients closing their session

	mu    sync.Mutex
	calls []string // the tools called, in order
}

func newMCPFixture(t *testing.T) *mcpFixture {
	t.Helper()
	f := &mcpFixture{srv: mcp.NewServer(&mcp.Implementation{Name: "platform-test", Version: "1"}, nil)}
	add := func(name, desc string, fn func(string) string) {
		mcp.AddTool(f.srv, &mcp.Tool{Name: name, Description: desc},
			func(ctx context.Context, req *mcp.CallToolRequest, in mcpText) (*mcp.CallToolResult, any, error) {
				f.mu.Lock()
				f.calls = append(f.calls, name)
				f.mu.Unlock()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fn(in.Text)}}}, nil, nil
			})
	}
	add("shout", "Upper-cases the text.", func(s string) string { return "SHOUTED: " + strings.ToUpper(s) })
	add("secret", "Reveals a secret.", func(string) string { return "the vault code is 1234" })
	add("crash", "Crashes the server.", func(string) string { return "crash did not crash" })
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv }, nil)
	f.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			f.deletes.Add(1)
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) && bytes.Contains(body, []byte(`"name":"crash"`)) {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(f.http.Close)
	return f
}

func (f *mcpFixture) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *mcpFixture) sessions() int {
	n := 0
	for range f.srv.Sessions() {
		n++
	}
	return n
}

func TestMCPServerTools(t *testing.T) {
	fx := newMCPFixture(t)
	models := map[string]*scripted.Model{}
	e := newEnv(t, nil, multiModel(models))
	// MCP over HTTP passes the SSRF guard; the test server is on loopback.
	e.srv.guard = testGuard(t, "127.0.0.1")

	// Registering the server.
	var server toolDef
	resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "box", "kind": "mcp", "mcp": map[string]any{"transport": "http", "url": fx.http.URL}}, &server)
	if resp.StatusCode != http.StatusCreated || server.ID == "" || server.Kind != kindMCP {
		t.Fatalf("register: %d %+v", resp.StatusCode, server)
	}
	if fx.sessions() != 1 {
		t.Fatalf("%d sessions after registering, want 1", fx.sessions())
	}

	// Each of its tools is a record of its own.
	var list []toolDef
	e.do(e.admin, "GET", "/v1/tools", nil, &list)
	byName := map[string]toolDef{}
	for _, d := range list {
		byName[d.Name] = d
	}
	for _, n := range []string{"box_shout", "box_secret", "box_crash"} {
		d, ok := byName[n]
		if !ok || d.Kind != kindMCPTool || d.ParentID != server.ID || !strings.Contains(string(d.Parameters), `"text"`) {
			t.Fatalf("tool %s = %+v (list %+v)", n, d, list)
		}
	}
	if len(list) != 4 {
		t.Fatalf("%d tool records, want the server and its 3 tools", len(list))
	}

	// An agent that whitelists box_shout calls it through the model.
	models["shouter"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("box_shout", `{"text":"hello"}`))
	shouter := e.createAgent(e.admin, map[string]any{"name": "shouter", "model": "scripted/shouter", "tool_ids": []string{byName["box_shout"].ID}})
	var ans api.ChatAnswer
	e.do(e.admin, "POST", "/v1/agents/"+shouter.ID+"/chat", map[string]any{"query": "shout hello"}, &ans)
	if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || ans.ToolCalls[0].Result != "SHOUTED: HELLO" || !strings.Contains(ans.Answer, "SHOUTED: HELLO") {
		t.Fatalf("whitelisted call: %+v", ans)
	}

	// The same agent's model naming box_secret, which it has not
	// whitelisted, is refused: the server never sees the call.
	models["snoop"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("box_secret", `{"text":""}`))
	snoop := e.createAgent(e.admin, map[string]any{"name": "snoop", "model": "scripted/snoop", "tool_ids": []string{byName["box_shout"].ID}})
	ans = api.ChatAnswer{}
	e.do(e.admin, "POST", "/v1/agents/"+snoop.ID+"/chat", map[string]any{"query": "tell me the secret"}, &ans)
	if len(ans.ToolCalls) != 1 || ans.ToolCalls[0].OK || ans.ToolCalls[0].Error == "" || strings.Contains(ans.Answer, "1234") {
		t.Fatalf("call of a tool not whitelisted: %+v", ans)
	}
	if got := fx.called(); !slices.Equal(got, []string{"shout"}) {
		t.Fatalf("the server saw calls %v", got)
	}

	// The server dying mid-call: the call fails, the turn goes on, and the
	// next call reconnects.
	models["crasher"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("box_crash", `{"text":"x"}`))
	crasher := e.createAgent(e.admin, map[string]any{"name": "crasher", "model": "scripted/crasher",
		"tool_ids": []string{byName["box_crash"].ID, byName["box_shout"].ID}})
	ans = api.ChatAnswer{}
	resp = e.do(e.admin, "POST", "/v1/agents/"+crasher.ID+"/chat", map[string]any{"query": "crash"}, &ans)
	if resp.StatusCode != http.StatusOK || len(ans.ToolCalls) != 1 || ans.ToolCalls[0].OK || ans.ToolCalls[0].Error == "" ||
		!strings.Contains(ans.Answer, "box_crash failed") {
		t.Fatalf("crash mid-call: %d %+v", resp.StatusCode, ans)
	}
	ans = api.ChatAnswer{}
	e.do(e.admin, "POST", "/v1/agents/"+shouter.ID+"/chat", map[string]any{"query": "shout again"}, &ans)
	if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || ans.ToolCalls[0].Result != "SHOUTED: HELLO" {
		t.Fatalf("call after the crash: %+v", ans)
	}

	// Deleting the server record closes its connection and removes its
	// tools; the agents that whitelisted them answer without them.
	before := fx.deletes.Load()
	if resp := e.do(e.admin, "DELETE", "/v1/tools/"+server.ID, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if fx.deletes.Load() != before+1 || fx.sessions() != 0 {
		t.Fatalf("after delete: %d session DELETEs (had %d), %d sessions open", fx.deletes.Load(), before, fx.sessions())
	}
	e.do(e.admin, "GET", "/v1/tools", nil, &list)
	if len(list) != 0 {
		t.Fatalf("tools after deleting the server: %+v", list)
	}
	e.wantError(e.do(e.admin, "GET", "/v1/tools/"+byName["box_shout"].ID, nil, nil), http.StatusNotFound, CodeNotFound)
	ans = api.ChatAnswer{}
	resp = e.do(e.admin, "POST", "/v1/agents/"+shouter.ID+"/chat", map[string]any{"query": "shout once more"}, &ans)
	if resp.StatusCode != http.StatusOK || len(ans.ToolCalls) != 1 || ans.ToolCalls[0].OK {
		t.Fatalf("call of a deleted tool: %d %+v", resp.StatusCode, ans)
	}
	if got := fx.called(); len(got) != 2 {
		t.Fatalf("the server saw calls %v after its record was deleted", got)
	}

	// A server that cannot be reached is not registered.
	fx.http.Close()
	e.wantError(e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "gone", "kind": "mcp", "mcp": map[string]any{"transport": "http", "url": fx.http.URL}}, nil),
		http.StatusBadRequest, CodeInvalidRequest)
	e.do(e.admin, "GET", "/v1/tools", nil, &list)
	if len(list) != 0 {
		t.Fatalf("an unreachable server left records: %+v", list)
	}
}

// TestMCPEverythingOverStdio registers the MCP reference server
// @modelcontextprotocol/server-everything (installed by `npm ci` in
// tool/mcptool/testdata/everything) as a stdio server. It is skipped when
// the package is not installed, unless WEFT_TEST_NODE=1 (as in CI).
func TestMCPEverythingOverStdio(t *testing.T) {
	dir, err := filepath.Abs("../tool/mcptool/testdata/everything")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	node, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(script); err != nil || nodeErr != nil {
		if os.Getenv("WEFT_TEST_NODE") == "1" {
			t.Fatalf("WEFT_TEST_NODE=1 but server-everything is not runnable (run `npm ci` in %s): %v %v", dir, err, nodeErr)
		}
		t.Skipf("server-everything not installed (run `npm ci --no-audit --no-fund` in %s)", dir)
	}
	models := map[string]*scripted.Model{
		"echoer": scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("everything_echo", `{"message":"hi from weft"}`)),
	}
	e := newEnv(t, nil, multiModel(models))
	var server toolDef
	resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "everything", "kind": "mcp",
		"mcp": map[string]any{"transport": "stdio", "command": node, "args": []string{script, "stdio"}}}, &server)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", resp.StatusCode, body(resp))
	}
	var list []toolDef
	e.do(e.admin, "GET", "/v1/tools", nil, &list)
	var echoID string
	for _, d := range list {
		if d.Name == "everything_echo" && d.ParentID == server.ID {
			echoID = d.ID
		}
	}
	if echoID == "" {
		t.Fatalf("no everything_echo among %+v", list)
	}
	a := e.createAgent(e.admin, map[string]any{"name": "echoer", "model": "scripted/echoer", "tool_ids": []string{echoID}})
	var ans api.ChatAnswer
	e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "echo"}, &ans)
	if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || ans.ToolCalls[0].Result != "Echo: hi from weft" || !strings.Contains(ans.Answer, "Echo: hi from weft") {
		t.Fatalf("answer %+v", ans)
	}
	if resp := e.do(e.admin, "DELETE", "/v1/tools/"+server.ID, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
}

func TestMCPRefreshFollowsTheServer(t *testing.T) {
	fx := newMCPFixture(t)
	e := newEnv(t, nil)
	e.srv.guard = testGuard(t, "127.0.0.1")
	var server toolDef
	if resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "box", "kind": "mcp", "mcp": map[string]any{"transport": "http", "url": fx.http.URL}}, &server); resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d", resp.StatusCode)
	}
	names := func(list []toolDef) []string {
		var out []string
		for _, d := range list {
			if d.ParentID == server.ID {
				out = append(out, d.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	var before []toolDef
	e.do(e.admin, "GET", "/v1/tools", nil, &before)

	// The server drops a tool and gains one: refresh shows exactly what it
	// offers now, and the tools it kept keep their ids.
	fx.srv.RemoveTools("secret")
	mcp.AddTool(fx.srv, &mcp.Tool{Name: "whisper", Description: "Lower-cases the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in mcpText) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToLower(in.Text)}}}, nil, nil
		})
	var after []toolDef
	if resp := e.do(e.admin, "POST", "/v1/tools/"+server.ID+"/refresh", nil, &after); resp.StatusCode != http.StatusOK {
		t.Fatalf("refresh: %d", resp.StatusCode)
	}
	if recs := e.auditOf(e.admin, "resource="+server.ID); len(recs) == 0 || recs[0].Route != "POST /v1/tools/{id}/refresh" {
		t.Fatalf("the refresh left no audit record: %+v", recs)
	}
	if got, want := names(after), []string{"box_crash", "box_shout", "box_whisper"}; !slices.Equal(got, want) {
		t.Fatalf("after refresh: %v, want %v", got, want)
	}
	ids := map[string]string{}
	for _, d := range before {
		ids[d.Name] = d.ID
	}
	for _, d := range after {
		if old, ok := ids[d.Name]; ok && old != d.ID {
			t.Errorf("%s changed id on refresh: %s → %s", d.Name, old, d.ID)
		}
	}
}

// TestMCPGuardReadsConfigGetenv: the SSRF guard of MCP servers over HTTP
// reads WEFT_HTTP_TOOLS_ALLOW through Config.Getenv, like every other
// variable the platform reads, so that a program embedding the platform
// (or a test) can allow a host without changing its process environment.
func TestMCPGuardReadsConfigGetenv(t *testing.T) {
	fx := newMCPFixture(t)
	for _, allow := range []string{"", "127.0.0.1"} {
		e := newEnv(t, nil, func(c *Config) {
			c.Getenv = func(k string) string {
				if k == netguard.AllowEnv {
					return allow
				}
				return ""
			}
		})
		resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "box", "kind": "mcp", "mcp": map[string]any{"transport": "http", "url": fx.http.URL}}, nil)
		switch {
		case allow == "" && resp.StatusCode != http.StatusBadRequest:
			t.Errorf("loopback MCP server not refused: %d", resp.StatusCode)
		case allow != "" && resp.StatusCode != http.StatusCreated:
			t.Errorf("loopback MCP server refused although %s=%s: %d %s", netguard.AllowEnv, allow, resp.StatusCode, body(resp))
		}
	}
}

// TestMCPListChangedUpdatesRecords: a registered MCP server that adds or
// drops a tool announces it (notifications/tools/list_changed), and its
// tool records follow without a manual refresh; a new tool can be
// whitelisted and runs.
func TestMCPListChangedUpdatesRecords(t *testing.T) {
	fx := newMCPFixture(t)
	e := newEnv(t, scripted.New(scripted.CallNamedTool(), scripted.SummarizeToolResults()))
	e.srv.guard = testGuard(t, "127.0.0.1")
	var server toolDef
	if resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "box", "kind": "mcp", "mcp": map[string]any{"transport": "http", "url": fx.http.URL}}, &server); resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", resp.StatusCode, body(resp))
	}
	children := func() map[string]string {
		var list []toolDef
		e.do(e.admin, "GET", "/v1/tools", nil, &list)
		out := map[string]string{}
		for _, d := range list {
			if d.ParentID == server.ID {
				out[d.Name] = d.ID
			}
		}
		return out
	}
	waitFor := func(want ...string) map[string]string {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			got := children()
			names := slices.Sorted(maps.Keys(got))
			if slices.Equal(names, want) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("tool records %v, want %v", names, want)
			}
		}
	}
	before := waitFor("box_crash", "box_secret", "box_shout")

	mcp.AddTool(fx.srv, &mcp.Tool{Name: "whisper", Description: "Lower-cases the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in mcpText) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "whispered: " + strings.ToLower(in.Text)}}}, nil, nil
		})
	after := waitFor("box_crash", "box_secret", "box_shout", "box_whisper")
	if after["box_shout"] != before["box_shout"] {
		t.Errorf("box_shout changed id: %s → %s", before["box_shout"], after["box_shout"])
	}
	a := e.createAgent(e.admin, map[string]any{"name": "quiet", "tool_ids": []string{after["box_whisper"]}})
	var ans api.ChatAnswer
	if resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "use box_whisper on HELLO"}, &ans); resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || !strings.Contains(ans.ToolCalls[0].Result, "whispered") {
		t.Fatalf("tool calls = %+v", ans.ToolCalls)
	}

	fx.srv.RemoveTools("secret")
	waitFor("box_crash", "box_shout", "box_whisper")
}
