package mcptool_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/mcptool"
)

// TestHTTPListChanged: when the server adds or removes a tool, it sends
// notifications/tools/list_changed and the client lists its tools again on
// its own, telling WithToolsChanged.
func TestHTTPListChanged(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	changed := make(chan []string, 8)
	s, err := mcptool.New(mcptool.Config{Name: "lc", Transport: mcptool.HTTP, URL: hs.URL}, mcptool.WithHTTPClient(hs.Client()),
		mcptool.WithToolsChanged(func(ts []tool.Tool) { changed <- toolNames(ts) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(s.Tools()); !slices.Equal(got, []string{"lc_echo"}) {
		t.Fatalf("tools = %v", got)
	}
	wait := func(want []string) {
		t.Helper()
		for deadline := time.After(30 * time.Second); ; {
			select {
			case got := <-changed:
				if slices.Equal(got, want) {
					if now := toolNames(s.Tools()); !slices.Equal(now, want) {
						t.Fatalf("told %v, Tools() = %v", got, now)
					}
					return
				}
			case <-deadline:
				t.Fatalf("the tools did not become %v (now %v)", want, toolNames(s.Tools()))
			}
		}
	}

	mcp.AddTool(srv, &mcp.Tool{Name: "shout", Description: "Upper-cases the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
		})
	wait([]string{"lc_echo", "lc_shout"})
	if got := callText(t, find(t, s, "lc_shout"), `{"text":"hi"}`); got != "HI" {
		t.Errorf("shout = %q", got)
	}
	srv.RemoveTools("echo")
	wait([]string{"lc_shout"})
}
