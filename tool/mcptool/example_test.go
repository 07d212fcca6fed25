package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/tool/mcptool"
)

func ExampleServer() {
	// An MCP server with one tool, served over streamable HTTP.
	srv := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	type greetIn struct {
		Name string `json:"name"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, req *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()

	// The test server is on loopback, which the outbound guard refuses
	// unless allowed.
	hc, err := netguard.NewClient(netguard.WithAllow("127.0.0.1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	greeter, err := mcptool.New(mcptool.Config{Name: "greeter", Transport: mcptool.HTTP, URL: hs.URL}, mcptool.WithHTTPClient(hc))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer greeter.Close()
	if err := greeter.Connect(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range greeter.Tools() {
		res, err := t.Call(context.Background(), json.RawMessage(`{"name":"Ada"}`))
		fmt.Println(t.Spec().Name, res.Content, err)
	}
	// Output: greeter_greet Hello, Ada! <nil>
}
