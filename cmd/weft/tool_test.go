package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/meta"
)

// newPlatformEnv is newTestPlatform with the server's environment given.
func newPlatformEnv(t *testing.T, serverEnv map[string]string) *testPlatform {
	t.Helper()
	ctx := context.Background()
	store, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := platform.Bootstrap(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := platform.New(platform.Config{Meta: store, Sessions: memory.NewInMemory(), RateLimit: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(k string) string { return serverEnv[k] }})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); store.Close() })
	return &testPlatform{url: hs.URL, key: key, c: client.New(hs.URL, key)}
}

type textArg struct {
	Text string `json:"text"`
}

// newMCPServer serves an MCP server with an "echo" tool over streamable
// HTTP on loopback.
func newMCPServer(t *testing.T) (*mcp.Server, string) {
	t.Helper()
	// No tools/list_changed notifications: the platform would apply them in
	// the background, racing the manual refresh that the tests check (the
	// platform's own tests cover list_changed).
	s := mcp.NewServer(&mcp.Implementation{Name: "cli-test", Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textArg) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	// The platform keeps an MCP session open (its standalone SSE stream
	// listens for tools/list_changed) until the platform closes, which is
	// after this cleanup: drop the connections, or Close waits for them.
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return s, hs.URL
}

func TestToolAddHTTP(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	r := runCLI(t, t.Context(), p.vars(), "", "tool", "add-http", "weather", "--url", "https://weather.example.com/now",
		"--description", "Current weather.", "--param", "city:string:the city's name", "--param", "days?:integer",
		"--header", "Authorization=Bearer ${secret:WEATHER_KEY}", "--timeout-ms", "2500")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "tool weather created (tool") {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	got, err := p.c.FindTool(t.Context(), "weather")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(got.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || schema.Properties["city"].Type != "string" || schema.Properties["city"].Description != "the city's name" ||
		schema.Properties["days"].Type != "integer" || !slices.Equal(schema.Required, []string{"city"}) {
		t.Fatalf("schema %s", got.Parameters)
	}
	if got.HTTP.Method != "GET" || got.HTTP.TimeoutMS != 2500 || got.HTTP.Headers["Authorization"] != "Bearer ${secret:WEATHER_KEY}" || got.Description != "Current weather." {
		t.Fatalf("stored %+v %+v", got, got.HTTP)
	}

	// --parameters, another method, --json.
	r = runCLI(t, t.Context(), p.vars(), "", "tool", "add-http", "notify", "--url", "https://hooks.example.com/n", "--method", "post",
		"--parameters", `{"type":"object","properties":{"msg":{"type":"string"}}}`, "--json")
	var created []client.Tool
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &created) != nil || len(created) != 1 || created[0].HTTP.Method != "POST" {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"add-http", "x"}, exitUsage, "--url"},
		{[]string{"add-http", "x", "--url", "https://e.com", "--param", "city"}, exitUsage, "name:type"},
		{[]string{"add-http", "x", "--url", "https://e.com", "--param", "city:text"}, exitUsage, "integer"},
		{[]string{"add-http", "x", "--url", "https://e.com", "--param", "a:string", "--param", "a:number"}, exitUsage, "twice"},
		{[]string{"add-http", "x", "--url", "https://e.com", "--param", "a:string", "--parameters", "{}"}, exitUsage, "not both"},
		{[]string{"add-http", "x", "--url", "https://e.com", "--parameters", "[1]"}, exitUsage, "JSON Schema object"},
		{[]string{"add-http", "x", "--url", "https://e.com", "--header", "novalue"}, exitUsage, "KEY=VALUE"},
		{[]string{"add-http", "weather", "--url", "https://e.com"}, exitFailure, `tool "weather": a tool named "weather" already exists`},
		{[]string{"add-http", "x", "--url", "ftp://e.com"}, exitFailure, `tool "x"`},
		{[]string{"add-http", "bad name", "--url", "https://e.com"}, exitFailure, "name"},
	} {
		r := runCLI(t, t.Context(), p.vars(), "", append([]string{"tool"}, tc.args...)...)
		if r.code != tc.code || !strings.HasPrefix(r.stderr, "weft: ") || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: code %d stderr %q, want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	// --url is the tool's on add-http: --server names the weft server.
	vars := map[string]string{"WEFT_API_KEY": p.key, "WEFT_URL": "http://127.0.0.1:1"}
	r = runCLI(t, t.Context(), vars, "", "tool", "add-http", "via-server", "--url", "https://e.com", "--server", p.url)
	if r.code != 0 {
		t.Fatalf("--server: code %d stderr %q", r.code, r.stderr)
	}
}

func TestToolMCPListShowRefreshRm(t *testing.T) {
	t.Parallel()
	// The MCP server is on loopback, which the SSRF guard refuses unless allowed.
	p := newPlatformEnv(t, map[string]string{"WEFT_HTTP_TOOLS_ALLOW": "127.0.0.1"})
	srv, url := newMCPServer(t)
	r := runCLI(t, t.Context(), p.vars(), "", "tool", "add-mcp", "files", "--url", url)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "MCP server files registered (tool") || !strings.Contains(r.stdout, "with 1 tool\n") ||
		!strings.Contains(r.stdout, "files_echo") || !strings.Contains(r.stdout, "MCP server files") {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"add-mcp", "x"}, "either --command"},
		{[]string{"add-mcp", "x", "--command", "srv", "--url", url}, "either --command"},
		{[]string{"add-mcp", "x", "--url", url, "--arg", "a"}, "apply to --command"},
		{[]string{"add-mcp", "x", "--command", "srv", "--header", "A=b"}, "applies to --url"},
		{[]string{"add-mcp", "x", "--command", "srv", "--env", "PATH"}, "KEY=VALUE"},
	} {
		r := runCLI(t, t.Context(), p.vars(), "", append([]string{"tool"}, tc.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: code %d stderr %q", tc.args, r.code, r.stderr)
		}
	}
	r = runCLI(t, t.Context(), p.vars(), "", "tool", "add-mcp", "ghost", "--command", filepath.Join(t.TempDir(), "no-such-server"))
	if r.code != exitFailure || !strings.Contains(r.stderr, `tool "ghost": field "mcp": the server could not be reached`) {
		t.Fatalf("unreachable server: code %d stderr %q", r.code, r.stderr)
	}

	r = runCLI(t, t.Context(), p.vars(), "", "tool", "list")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "NAME") || !strings.Contains(r.stdout, url) || !strings.Contains(r.stdout, "mcp_tool") {
		t.Fatalf("list: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "tool", "show", "files_echo")
	if r.code != 0 || !strings.Contains(r.stdout, "target:       MCP server files") || !strings.Contains(r.stdout, `"text"`) {
		t.Fatalf("show: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	mcp.AddTool(srv, &mcp.Tool{Name: "upper", Description: "Upper-cases the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textArg) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
		})
	r = runCLI(t, t.Context(), p.vars(), "", "tool", "refresh", "files")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "MCP server files refreshed: 2 tools; 1 new (files_upper)\n") {
		t.Fatalf("refresh: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	srv.RemoveTools("echo")
	r = runCLI(t, t.Context(), p.vars(), "", "tool", "refresh", "files")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "MCP server files refreshed: 1 tool; 1 removed (files_echo)\n") {
		t.Fatalf("refresh: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "tool", "refresh", "files_upper")
	if r.code != exitFailure || !strings.Contains(r.stderr, "is not an MCP server") {
		t.Fatalf("refresh of a non-server: code %d stderr %q", r.code, r.stderr)
	}

	r = runCLI(t, t.Context(), p.vars(), "", "tool", "rm", "files")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "MCP server files removed (tool") {
		t.Fatalf("rm: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "tool", "list", "--json")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("list --json after rm: code %d stdout %q", r.code, r.stdout)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "tool", "list")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "no tools") {
		t.Fatalf("empty list: %q", r.stdout)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "tool", "rm", "files")
	if r.code != exitFailure || !strings.Contains(r.stderr, `no tool named or with id "files"`) {
		t.Fatalf("rm twice: code %d stderr %q", r.code, r.stderr)
	}
}

func TestToolAddSQL(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE products (name TEXT, price REAL)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	p := newPlatformEnv(t, map[string]string{"SHOP_DSN": path})
	r := runCLI(t, t.Context(), p.vars(), "", "tool", "add-sql", "price_of", "--driver", "sqlite", "--dsn-env", "SHOP_DSN",
		"--query", "SELECT price FROM products WHERE name = ?", "--bind", "name", "--description", "Price of a product")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "tool price_of created") {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	got, err := p.c.FindTool(t.Context(), "price_of")
	if err != nil || got.SQL == nil || got.SQL.DSNEnv != "SHOP_DSN" || !slices.Equal(got.SQL.Bind, []string{"name"}) || strings.Contains(string(got.Parameters), path) {
		t.Fatalf("stored %+v, %v", got, err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--driver", "mysql", "--dsn-env", "SHOP_DSN", "--query", "SELECT 1"}, exitUsage, "postgres or sqlite"},
		{[]string{"--driver", "sqlite", "--query", "SELECT 1"}, exitUsage, "--dsn-env"},
		{[]string{"--driver", "sqlite", "--dsn-env", "SHOP_DSN"}, exitUsage, "--query"},
		{[]string{"--driver", "sqlite", "--dsn-env", "SHOP_DSN", "--query", "DELETE FROM products"}, exitFailure, "sql.query"},
		{[]string{"--driver", "sqlite", "--dsn-env", "NOT_SET", "--query", "SELECT 1"}, exitFailure, "NOT_SET"},
	} {
		r := runCLI(t, t.Context(), p.vars(), "", append([]string{"tool", "add-sql", "q"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: code %d stderr %q", tc.args, r.code, r.stderr)
		}
	}
}

// FuzzParamSchema checks that any --param values give either a usage error
// or a JSON Schema object that requires exactly the non-optional names.
func FuzzParamSchema(f *testing.F) {
	for _, s := range []string{"city:string:the city's name", "days?:integer", "a:b:c:d", ":string", "x", "ü?:boolean:", "a:string\na:number"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		params := strings.Split(in, "\n")
		raw, err := paramSchema(params)
		if err != nil {
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("%q: not a usage error: %v", in, err)
			}
			return
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil || schema.Type != "object" || len(schema.Properties) != len(params) {
			t.Fatalf("%q: schema %s, %v", in, raw, err)
		}
		for _, p := range params {
			name, _, _ := strings.Cut(p, ":")
			optional := strings.HasSuffix(name, "?")
			name = strings.TrimSuffix(name, "?")
			if _, ok := schema.Properties[name]; !ok || slices.Contains(schema.Required, name) == optional {
				t.Fatalf("%q: %q in schema %s", in, name, raw)
			}
		}
	})
}

func TestToolTry(t *testing.T) {
	t.Parallel()
	p := newPlatformEnv(t, map[string]string{"WEFT_HTTP_TOOLS_ALLOW": "127.0.0.1"})
	_, url := newMCPServer(t)
	if r := runCLI(t, t.Context(), p.vars(), "", "tool", "add-mcp", "files", "--url", url); r.code != 0 {
		t.Fatalf("add-mcp: code %d stderr %q", r.code, r.stderr)
	}
	r := runCLI(t, t.Context(), p.vars(), "", "tool", "try", "files_echo", `{"text":"hello there"}`)
	if r.code != 0 || r.stdout != "hello there\n" {
		t.Fatalf("try: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "tool", "invoke", "files_echo", `{"text":"x"}`, "--json")
	var got client.ToolInvocation
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || !got.OK || got.Result != "x" || got.Tool != "files_echo" {
		t.Fatalf("--json: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	// A tool that fails: the error a model would see, exit 1.
	if r := runCLI(t, t.Context(), p.vars(), "", "tool", "add-http", "down", "--url", "http://127.0.0.1:1/x"); r.code != 0 {
		t.Fatalf("add-http: code %d stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "tool", "try", "down")
	if r.code != exitFailure || !strings.HasPrefix(r.stderr, `weft: tool "down" failed: `) || r.stdout != "" {
		t.Fatalf("failing tool: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"try", "files_echo", "[1]"}, exitUsage, "JSON object"},
		{[]string{"try", "files_echo", "{"}, exitUsage, "JSON object"},
		{[]string{"try", "nope"}, exitFailure, "nope"},
		{[]string{"try", "files", "{}"}, exitFailure, "MCP server"},
	} {
		r := runCLI(t, t.Context(), p.vars(), "", append([]string{"tool"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: code %d stderr %q, want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}
