package client_test

import (
	"context"
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

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/meta"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// newMCPServer serves an MCP server with an "echo" tool over streamable
// HTTP on loopback and returns it with its URL.
func newMCPServer(t *testing.T) (*mcp.Server, string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "client-test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// newPlatformAllowingLoopback is newPlatform(t, nil) whose HTTP tools and
// MCP servers may reach loopback.
func newPlatformAllowingLoopback(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	store, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := platform.Bootstrap(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := platform.New(platform.Config{
		Meta: store, Sessions: memory.NewInMemory(), RateLimit: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: func(k string) string {
			if k == netguard.AllowEnv {
				return "127.0.0.1"
			}
			return ""
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); store.Close() })
	return hs.URL, admin
}

func names(tools []client.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

func TestTools(t *testing.T) {
	t.Parallel()
	// The MCP server is on loopback, which the SSRF guard refuses unless allowed.
	url, key := newPlatformAllowingLoopback(t)
	c := client.New(url, key)
	ctx := t.Context()

	weather, err := c.CreateTool(ctx, client.Tool{
		Name: "weather", Description: "Current weather of a city.", Kind: client.ToolHTTP,
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		HTTP:       &client.HTTPTool{Method: "GET", URL: "https://weather.example.com/now", Headers: map[string]string{"X-Key": "${secret:WEATHER_KEY}"}, TimeoutMS: 5000},
	})
	if err != nil {
		t.Fatal(err)
	}
	if weather.ID == "" || weather.CreatedAt.IsZero() || weather.HTTP == nil || weather.HTTP.URL != "https://weather.example.com/now" ||
		weather.HTTP.TimeoutMS != 5000 || weather.HTTP.Headers["X-Key"] != "${secret:WEATHER_KEY}" || !strings.Contains(string(weather.Parameters), "city") {
		t.Fatalf("created %+v", weather)
	}
	var ce *client.Error
	if _, err := c.CreateTool(ctx, client.Tool{Name: "weather", Kind: client.ToolHTTP, HTTP: &client.HTTPTool{Method: "GET", URL: "https://x.example.com"}}); !errors.As(err, &ce) || ce.Code != client.CodeConflict {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := c.CreateTool(ctx, client.Tool{Name: "bad", Kind: "ftp"}); !errors.As(err, &ce) || ce.Code != client.CodeInvalidRequest || !strings.Contains(ce.Message, "kind") {
		t.Fatalf("bad kind: %v", err)
	}

	// An update keeps the id; the kind cannot change.
	moved, err := c.UpdateTool(ctx, weather.ID, client.Tool{Name: "weather", Kind: client.ToolHTTP, HTTP: &client.HTTPTool{Method: "GET", URL: "https://weather.example.org/now"}})
	if err != nil || moved.ID != weather.ID || moved.HTTP.URL != "https://weather.example.org/now" || moved.Description != "" {
		t.Fatalf("update = %+v, %v", moved, err)
	}
	if _, err := c.UpdateTool(ctx, weather.ID, client.Tool{Name: "weather", Kind: client.ToolMCP, MCP: &client.MCPServer{Transport: "http", URL: "https://x.example.com"}}); !errors.As(err, &ce) || ce.Code != client.CodeInvalidRequest || !strings.Contains(ce.Message, "kind") {
		t.Fatalf("kind change: %v", err)
	}
	if _, err := c.UpdateTool(ctx, "tool_nope", moved); !client.IsNotFound(err) {
		t.Fatalf("update of no tool: %v", err)
	}

	// An MCP server: its tools become tools of their own.
	srv, mcpURL := newMCPServer(t)
	files, err := c.CreateTool(ctx, client.Tool{Name: "files", Kind: client.ToolMCP, MCP: &client.MCPServer{Transport: "http", URL: mcpURL}})
	if err != nil {
		t.Fatal(err)
	}
	if files.Kind != client.ToolMCP || files.MCP == nil || files.MCP.URL != mcpURL {
		t.Fatalf("mcp server %+v", files)
	}
	all, err := c.ListTools(ctx)
	if err != nil || !slices.Equal(names(all), []string{"files", "files_echo", "weather"}) {
		t.Fatalf("list = %v, %v", names(all), err)
	}
	echo, err := c.FindTool(ctx, "files_echo")
	if err != nil || echo.Kind != client.ToolMCPTool || echo.ParentID != files.ID || !strings.Contains(string(echo.Parameters), "text") {
		t.Fatalf("FindTool(files_echo) = %+v, %v", echo, err)
	}
	if got, err := c.FindTool(ctx, weather.ID); err != nil || got.Name != "weather" {
		t.Fatalf("FindTool(id) = %+v, %v", got, err)
	}
	if _, err := c.FindTool(ctx, "nothing"); !client.IsNotFound(err) {
		t.Fatalf("FindTool(nothing) = %v", err)
	}

	// The server gains a tool: refresh registers it.
	mcp.AddTool(srv, &mcp.Tool{Name: "upper", Description: "Upper-cases the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
		})
	all, err = c.RefreshTool(ctx, files.ID)
	if err != nil || !slices.Equal(names(all), []string{"files", "files_echo", "files_upper", "weather"}) {
		t.Fatalf("refresh = %v, %v", names(all), err)
	}
	if _, err := c.RefreshTool(ctx, weather.ID); !errors.As(err, &ce) || ce.Code != client.CodeInvalidRequest {
		t.Fatalf("refresh of an HTTP tool: %v", err)
	}

	// Deleting the server deletes its tools.
	if err := c.DeleteTool(ctx, files.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTool(ctx, echo.ID); !client.IsNotFound(err) {
		t.Fatalf("server's tool after delete: %v", err)
	}
	if err := c.DeleteTool(ctx, files.ID); !client.IsNotFound(err) {
		t.Fatalf("delete twice: %v", err)
	}
	all, err = c.ListTools(ctx)
	if err != nil || !slices.Equal(names(all), []string{"weather"}) {
		t.Fatalf("list after delete = %v, %v", names(all), err)
	}
	for _, f := range []func() error{
		func() error { _, err := c.GetTool(ctx, ""); return err },
		func() error { return c.DeleteTool(ctx, "") },
		func() error { _, err := c.UpdateTool(ctx, "", client.Tool{}); return err },
		func() error { _, err := c.RefreshTool(ctx, ""); return err },
		func() error { _, err := c.FindTool(ctx, ""); return err },
	} {
		if err := f(); err == nil || !strings.Contains(err.Error(), "empty") {
			t.Fatalf("empty id: %v", err)
		}
	}
}
