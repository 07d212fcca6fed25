package platform

import (
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestInvokeTool: POST /v1/tools/{id}/invoke runs a tool as a turn would —
// the tenant's secret resolved for the call and redacted from the answer,
// the arguments checked against the tool's parameters, the outbound guard
// in force — and answers what a model would see.
func TestInvokeTool(t *testing.T) {
	target := newEchoTarget(t)
	e := secretsEnv(t, nil)
	a, b := e.tenantKey("acme"), e.tenantKey("globex")
	e.do(a, "PUT", "/v1/secrets", map[string]any{"name": "tok", "value": tenantSecret}, nil)
	var tl toolDef
	if resp := e.do(a, "POST", "/v1/tools", map[string]any{"name": "echo", "kind": "http",
		"http":       map[string]any{"method": "GET", "url": target.URL, "headers": map[string]string{"Authorization": "Bearer ${secret:tok}"}},
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
	}, &tl); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create tool = %d %s", resp.StatusCode, body(resp))
	}
	path := "/v1/tools/" + tl.ID + "/invoke"

	var got invocation
	if resp := e.do(a, "POST", path, map[string]any{"arguments": map[string]any{"city": "Paris"}}, &got); resp.StatusCode != http.StatusOK {
		t.Fatalf("invoke = %d %s", resp.StatusCode, body(resp))
	}
	if !got.OK || got.Tool != "echo" || !strings.Contains(got.Result, "Bearer [redacted]") || strings.Contains(got.Result, tenantSecret) {
		t.Fatalf("invocation = %+v", got)
	}
	if target.requests() != 1 || target.seen[0].Get("Authorization") != "Bearer "+tenantSecret {
		t.Fatalf("the target did not get the secret: %v", target.seen)
	}

	// Arguments the tool refuses (a required one missing) never reach the target: the error is the
	// one a model would get, in a 200.
	got = invocation{}
	e.do(a, "POST", path, map[string]any{}, &got)
	if got.OK || !strings.Contains(got.Error, "city") || target.requests() != 1 {
		t.Fatalf("missing required argument: %+v, %d requests", got, target.requests())
	}

	// Request errors.
	e.wantError(e.do(a, "POST", path, map[string]any{"arguments": []int{1}}, nil), http.StatusBadRequest, CodeInvalidRequest)
	e.wantError(e.do(a, "POST", path, map[string]any{"arguments": "city=Paris"}, nil), http.StatusBadRequest, CodeInvalidRequest)
	e.wantError(e.do(a, "POST", "/v1/tools/tool_nope/invoke", map[string]any{}, nil), http.StatusNotFound, CodeNotFound)
	// Another tenant cannot run it.
	e.wantError(e.do(b, "POST", path, map[string]any{"arguments": map[string]any{"city": "Paris"}}, nil), http.StatusNotFound, CodeNotFound)
	if target.requests() != 1 {
		t.Fatalf("%d requests reached the target, want 1", target.requests())
	}

	// The outbound guard applies: without the allow list, loopback is
	// refused.
	e.srv.guard = testGuard(t)
	var guarded toolDef
	e.do(a, "POST", "/v1/tools", map[string]any{"name": "internal", "kind": "http", "http": map[string]any{"method": "GET", "url": target.URL}}, &guarded)
	got = invocation{}
	e.do(a, "POST", "/v1/tools/"+guarded.ID+"/invoke", map[string]any{"arguments": map[string]any{}}, &got)
	if got.OK || got.Error == "" || target.requests() != 1 {
		t.Fatalf("loopback call not refused: %+v, %d requests", got, target.requests())
	}
}

// TestInvokeMCPTool: an MCP server's tool runs through its connection; the
// server's own record is not a tool and answers 400.
func TestInvokeMCPTool(t *testing.T) {
	fx := newMCPFixture(t)
	spans := tracetest.NewSpanRecorder()
	e := newEnv(t, nil, func(c *Config) { c.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)) })
	e.srv.guard = testGuard(t, "127.0.0.1")
	var server toolDef
	if resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "box", "kind": "mcp", "mcp": map[string]any{"transport": "http", "url": fx.http.URL}}, &server); resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", resp.StatusCode, body(resp))
	}
	var list []toolDef
	e.do(e.admin, "GET", "/v1/tools", nil, &list)
	shout := ""
	for _, d := range list {
		if d.Name == "box_shout" {
			shout = d.ID
		}
	}
	var got invocation
	if resp := e.do(e.admin, "POST", "/v1/tools/"+shout+"/invoke", map[string]any{"arguments": map[string]any{"text": "hi"}}, &got); resp.StatusCode != http.StatusOK {
		t.Fatalf("invoke = %d %s", resp.StatusCode, body(resp))
	}
	if !got.OK || got.Result != "SHOUTED: HI" || got.Tool != "box_shout" {
		t.Fatalf("invocation = %+v", got)
	}
	e.wantError(e.do(e.admin, "POST", "/v1/tools/"+server.ID+"/invoke", map[string]any{}, nil), http.StatusBadRequest, CodeInvalidRequest)

	// The call has the span a turn's tool call has, under the request's.
	var call sdktrace.ReadOnlySpan
	requests := map[[8]byte]bool{} // span ids of the invoke requests
	for _, sp := range spans.Ended() {
		switch sp.Name() {
		case "execute_tool box_shout":
			call = sp
		case "POST /v1/tools/{id}/invoke":
			requests[sp.SpanContext().SpanID()] = true
		}
	}
	if call == nil || !requests[call.Parent().SpanID()] {
		t.Fatalf("no execute_tool span under an invoke request's span (call %v)", call)
	}
}
