package mcptool_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/tool/mcptool"
)

// TestEverythingServer runs the MCP reference server
// @modelcontextprotocol/server-everything (pinned in
// testdata/everything/package.json; install with `npm ci` there) over
// stdio. It is skipped when the package is not installed, unless
// WEFT_TEST_NODE=1 (as in CI), which makes a missing install a failure.
func TestEverythingServer(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs("testdata/everything")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	node, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(script); err != nil || nodeErr != nil {
		if os.Getenv("WEFT_TEST_NODE") == "1" {
			t.Fatalf("WEFT_TEST_NODE=1 but the server is not runnable (run `npm ci` in %s): %v %v", dir, err, nodeErr)
		}
		t.Skipf("server-everything not installed (run `npm ci --no-audit --no-fund` in %s, or set WEFT_TEST_NODE=1 to require it)", dir)
	}
	s, err := mcptool.New(mcptool.Config{Name: "everything", Transport: mcptool.Stdio, Command: node, Args: []string{script, "stdio"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	names := toolNames(s.Tools())
	t.Logf("tools: %v", names)
	echo := find(t, s, "everything_echo")
	if got := callText(t, echo, `{"message":"hi from weft"}`); got != "Echo: hi from weft" {
		t.Errorf("echo = %q", got)
	}
	// The sum tool was called "add" in older releases.
	for _, n := range []string{"everything_get-sum", "everything_add"} {
		for _, x := range s.Tools() {
			if x.Spec().Name == n {
				if got := callText(t, x, `{"a":2,"b":3}`); !strings.Contains(got, "5") {
					t.Errorf("%s = %q", n, got)
				}
			}
		}
	}
	for _, x := range s.Tools() {
		if x.Spec().Name == "everything_get-tiny-image" {
			if got := callText(t, x, `{}`); !strings.Contains(got, "[image: image/png,") {
				t.Errorf("tiny image = %q", got)
			}
		}
	}
	// The server validates arguments with its schema.
	if _, err := echo.Call(context.Background(), []byte(`{"message":42}`)); err == nil {
		t.Error("echo accepted a number")
	}
}
