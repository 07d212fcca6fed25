package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/platform/client"
)

func TestServeFlagErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--log-format", "xml"}, "--log-format"},
		{[]string{"serve", "--log-level", "loud"}, "--log-level"},
		{[]string{"serve", "--model", "nosuch/model"}, "unknown provider"},
		{[]string{"serve", "extra"}, "unknown command"},
	}
	for _, tt := range tests {
		r := runCLI(t, t.Context(), nil, "", tt.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: code %d stderr %q", tt.args, r.code, r.stderr)
		}
	}
	r := runCLI(t, t.Context(), nil, "", "serve", "--addr", "256.0.0.1:1", "--data", t.TempDir())
	if r.code != exitFailure || !strings.HasPrefix(r.stderr[strings.LastIndex(strings.TrimSpace(r.stderr), "\n")+1:], "weft: serve: ") {
		t.Errorf("bad address: code %d stderr %q", r.code, r.stderr)
	}
}

// TestServeRunsUntilCancelled runs weft serve in the process on a free
// port with JSON logs, uses it, and stops it the way SIGINT does.
func TestServeRunsUntilCancelled(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: pw,
		getenv: func(k string) string { return map[string]string{"WEFT_ADMIN_KEY": "an-admin-key-of-my-own"}[k] }}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--log-format", "json", "--log-level", "debug"}, e)
		pw.Close()
	}()

	// Read the JSON log until the server says where it listens.
	sc := bufio.NewScanner(pr)
	var addr string
	var logs []map[string]any
	for addr == "" && sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		logs = append(logs, rec)
		if rec["msg"] == "weft serve listening" {
			addr, _ = rec["addr"].(string)
		}
	}
	if addr == "" {
		t.Fatalf("no listening line in %v", logs)
	}
	go io.Copy(io.Discard, pr)

	c := client.New("http://"+addr, "an-admin-key-of-my-own")
	if err := c.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	a, err := c.CreateAgent(t.Context(), client.Agent{Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := c.Chat(t.Context(), a.ID, client.ChatRequest{Query: "ping"})
	if err != nil || ans.Answer != demoSays+"ping" {
		t.Fatalf("chat = %+v, %v", ans, err)
	}
	// WEFT_ADMIN_KEY was given: no key is generated or written.
	if _, err := os.Stat(filepath.Join(data, "admin.key")); !os.IsNotExist(err) {
		t.Fatalf("admin.key written although WEFT_ADMIN_KEY is set: %v", err)
	}
	for _, rec := range logs {
		if strings.Contains(toJSON(rec), "an-admin-key-of-my-own") {
			t.Fatalf("the admin key was logged: %v", rec)
		}
	}

	cancel()
	select {
	case c := <-code:
		if c != exitOK {
			t.Fatalf("exit code %d after a graceful stop", c)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop within 15 s of its context ending")
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatal("still serving after the stop")
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A malformed --redis or --postgres URL is reported without its password
// (the --redis error printed it).
func TestServeMasksPasswords(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--redis", "redis://:s3cret-pw@cache:notaport/0"},
		{"--postgres", "postgres://weft:s3cret-pw@db:notaport/weft"},
	} {
		r := runCLI(t, t.Context(), nil, "", append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, args...)...)
		if r.code != exitFailure || strings.Contains(r.stderr, "s3cret-pw") || !strings.Contains(r.stderr, "xxxxx") {
			t.Errorf("%v: code %d stderr %q", args, r.code, r.stderr)
		}
	}
}
