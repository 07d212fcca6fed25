package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/mcptool"
	"github.com/weftlabs/weft/tool/secretref"
)

func toolNames(ts []tool.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Spec().Name)
	}
	slices.Sort(out)
	return out
}

func find(t *testing.T, s *mcptool.Server, name string) tool.Tool {
	t.Helper()
	for _, x := range s.Tools() {
		if x.Spec().Name == name {
			return x
		}
	}
	t.Fatalf("no tool %s in %v", name, toolNames(s.Tools()))
	return nil
}

func callText(t *testing.T, x tool.Tool, args string) string {
	t.Helper()
	res, err := x.Call(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): %v", x.Spec().Name, args, err)
	}
	return res.Content
}

// swapHandler serves the current handler; replacing it makes the server
// forget its sessions, as a restarted server does.
type swapHandler struct {
	h    atomic.Pointer[http.Handler]
	reqs atomic.Int64
	fail atomic.Bool
}

func (s *swapHandler) restart() {
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
	s.h.Store(&h)
}

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.reqs.Add(1)
	if s.fail.Load() {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	(*s.h.Load()).ServeHTTP(w, r)
}

func startHTTP(t *testing.T, opts ...mcptool.Option) (*mcptool.Server, *swapHandler) {
	t.Helper()
	h := &swapHandler{}
	h.restart()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s, err := mcptool.New(mcptool.Config{Name: "test", Transport: mcptool.HTTP, URL: srv.URL}, append([]mcptool.Option{mcptool.WithHTTPClient(srv.Client())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, h
}

func startStdio(t *testing.T) *mcptool.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcptool.New(mcptool.Config{Name: "local", Transport: mcptool.Stdio, Command: exe, Env: map[string]string{serverEnv: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHTTPTools(t *testing.T) {
	t.Parallel()
	s, _ := startHTTP(t)
	want := []string{"test_add", "test_block", "test_crash", "test_echo", "test_fail", "test_mixed", "test_pid", "test_weird_name_v2"}
	if got := toolNames(s.Tools()); !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	echo := find(t, s, "test_echo")
	if spec := echo.Spec(); spec.Description != "Echoes the text." || !strings.Contains(string(spec.Parameters), `"text"`) {
		t.Errorf("echo spec = %+v", spec)
	}
	if got := callText(t, echo, `{"text":"héllo"}`); got != "héllo" {
		t.Errorf("echo = %q", got)
	}
	if got := callText(t, find(t, s, "test_add"), `{"a":2,"b":40}`); got != `{"sum":42}` {
		t.Errorf("add = %q", got)
	}
	if got := callText(t, find(t, s, "test_mixed"), ``); got != "a chart:\n[image: image/png, 5 bytes]\n[resource link: file:///r.txt (r)]\nembedded" {
		t.Errorf("mixed = %q", got)
	}
	if got := callText(t, find(t, s, "test_weird_name_v2"), `{}`); got != "ok" {
		t.Errorf("weird = %q", got)
	}

	_, err := find(t, s, "test_fail").Call(context.Background(), nil)
	var ce *mcptool.CallError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "the disk is full") {
		t.Errorf("fail: %v", err)
	}
	// Arguments the server's schema rejects come back as an error too.
	if _, err := find(t, s, "test_add").Call(context.Background(), json.RawMessage(`{"a":"two","b":1}`)); err == nil {
		t.Error("add with a string argument succeeded")
	}
	if _, err := echo.Call(context.Background(), json.RawMessage(`[1]`)); err == nil {
		t.Error("array arguments accepted")
	}
}

func TestHTTPConcurrent(t *testing.T) {
	t.Parallel()
	s, _ := startHTTP(t)
	echo := find(t, s, "test_echo")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			want := strconv.Itoa(i)
			res, err := echo.Call(context.Background(), json.RawMessage(`{"text":"`+want+`"}`))
			if err != nil || res.Content != want {
				t.Errorf("call %d: %q, %v", i, res.Content, err)
			}
		})
	}
	wg.Wait()
}

func TestHTTPRestart(t *testing.T) {
	t.Parallel()
	s, h := startHTTP(t)
	echo := find(t, s, "test_echo")
	callText(t, echo, `{"text":"before"}`)

	// The server restarts and forgets the session: the call is not lost,
	// it is sent again on a new session.
	h.restart()
	if got := callText(t, echo, `{"text":"after restart"}`); got != "after restart" {
		t.Errorf("echo after restart = %q", got)
	}

	// The server answers errors: the call fails clearly, the next one
	// reconnects.
	h.fail.Store(true)
	if _, err := echo.Call(context.Background(), json.RawMessage(`{"text":"x"}`)); err == nil || !strings.Contains(err.Error(), "MCP server test") {
		t.Errorf("call to a failing server: %v", err)
	}
	h.fail.Store(false)
	h.restart()
	if got := callText(t, echo, `{"text":"back"}`); got != "back" {
		t.Errorf("echo when back = %q", got)
	}

	tools, err := s.Refresh(context.Background())
	if err != nil || len(tools) != 8 {
		t.Errorf("Refresh = %d tools, %v", len(tools), err)
	}
}

func TestHTTPHeaders(t *testing.T) {
	t.Parallel()
	var auth atomic.Value
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	values := map[secretref.Ref]string{{Name: "MCP_TOKEN", Env: true}: "t0k-value", {Name: "tok"}: "secret-t0k"}
	lookup := mcptool.WithLookup(func(_ context.Context, r secretref.Ref) (string, error) {
		if v, ok := values[r]; ok {
			return v, nil
		}
		return "", fmt.Errorf("%s is not set", r)
	})
	s, err := mcptool.New(mcptool.Config{Name: "h", Transport: mcptool.HTTP, URL: srv.URL,
		Headers: map[string]string{"Authorization": "Bearer ${MCP_TOKEN}", "X-Secret": "${secret:tok}"}}, lookup, mcptool.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := auth.Load(); got != "Bearer t0k-value" {
		t.Errorf("Authorization = %v", got)
	}
	// A tool that echoes a secret has it redacted from its result.
	echoed := false
	for _, tl := range s.Tools() {
		if tl.Spec().Name != "h_echo" {
			continue
		}
		echoed = true
		res, err := tl.Call(context.Background(), json.RawMessage(`{"text":"a secret-t0k and a t0k-value"}`))
		if err != nil || res.Content != "a [redacted] and a [redacted]" {
			t.Errorf("echo = %q, %v", res.Content, err)
		}
	}
	if !echoed {
		t.Fatal("no tool h_echo")
	}

	bad, _ := mcptool.New(mcptool.Config{Name: "h", Transport: mcptool.HTTP, URL: srv.URL,
		Headers: map[string]string{"Authorization": "Bearer ${secret:NOT_SET_ANYWHERE}"}}, lookup, mcptool.WithHTTPClient(srv.Client()))
	if err := bad.Connect(context.Background()); err == nil || !strings.Contains(err.Error(), "${secret:NOT_SET_ANYWHERE} is not set") {
		t.Errorf("Connect with a missing secret: %v", err)
	}
}

func TestStdioTools(t *testing.T) {
	t.Parallel()
	s := startStdio(t)
	echo := find(t, s, "local_echo")
	if got := callText(t, echo, `{"text":"over stdio"}`); got != "over stdio" {
		t.Errorf("echo = %q", got)
	}
	if _, err := find(t, s, "local_fail").Call(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "the disk is full") {
		t.Errorf("fail: %v", err)
	}

	// Cancelling a call leaves the session usable.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := find(t, s, "local_block").Call(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	pid := callText(t, find(t, s, "local_pid"), ``)

	// A crash mid-call is reported, with the server's last words; the
	// next call starts a new process.
	_, err := find(t, s, "local_crash").Call(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "restarted on the next call") {
		t.Fatalf("crash: %v", err)
	}
	if got := callText(t, echo, `{"text":"again"}`); got != "again" {
		t.Errorf("echo after crash = %q", got)
	}
	pid2 := callText(t, find(t, s, "local_pid"), ``)
	if pid2 == pid {
		t.Errorf("same process %s after a crash", pid)
	}
	// The new session outlives the call that started it.
	if pid3 := callText(t, find(t, s, "local_pid"), ``); pid3 != pid2 {
		t.Errorf("process changed from %s to %s between two calls", pid2, pid3)
	}
}

func TestStdioBadCommand(t *testing.T) {
	t.Parallel()
	s, err := mcptool.New(mcptool.Config{Name: "x", Transport: mcptool.Stdio, Command: "/nonexistent/mcp-server"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Connect(context.Background()); err == nil {
		t.Error("Connect to a missing command succeeded")
	}
	// A process that exits at once reports its stderr.
	s, _ = mcptool.New(mcptool.Config{Name: "x", Transport: mcptool.Stdio, Command: "sh", Args: []string{"-c", "echo 'no config file' >&2; exit 2"}})
	if err := s.Connect(context.Background()); err == nil || !strings.Contains(err.Error(), "no config file") {
		t.Errorf("Connect to a failing command: %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	for _, c := range []mcptool.Config{
		{Transport: mcptool.Stdio, Command: "x"},
		{Name: "a", Transport: "ws", URL: "ws://x"},
		{Name: "a", Transport: mcptool.Stdio},
		{Name: "a", Transport: mcptool.HTTP, URL: "localhost:8080"},
		{Name: "a", Transport: mcptool.HTTP, URL: "http://x", Headers: map[string]string{"X": "a\nb"}},
	} {
		if _, err := mcptool.New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}

// TestHTTPGuardedByDefault: without WithHTTPClient, the outbound guard
// refuses a loopback MCP server.
func TestHTTPGuardedByDefault(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil))
	t.Cleanup(srv.Close)
	s, err := mcptool.New(mcptool.Config{Name: "g", Transport: mcptool.HTTP, URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Connect to loopback through the guard: %v", err)
	}
}
