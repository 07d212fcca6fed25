package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/config"
)

func TestApplyDirectory(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	ctx := t.Context()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"kb.yaml":     "knowledge_bases: [{name: handbook}]\n",
		"tools.yaml":  "tools: [{name: weather, kind: http, http: {method: GET, url: 'https://api.example.com/w'}}]\n",
		"agent.yaml":  "name: support\nknowledge_base_ids: [handbook]\ntool_ids: [weather]\n", // a bare agent file
		"server.yaml": "models: {fast: openai/gpt-4o-mini}\nsecrets: {SHOP_KEY: '${SHOP_KEY}'}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	vars := p.vars()
	vars["SHOP_KEY"] = "shop-key-12345"
	r := runCLI(t, ctx, vars, "", "apply", "-f", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "4 created, 0 updated, 0 unchanged") || !strings.Contains(r.stderr, "weft serve --config") {
		t.Fatalf("apply: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	a, err := p.c.FindAgent(ctx, "support")
	if err != nil || len(a.ToolIDs) != 1 || len(a.KnowledgeBaseIDs) != 1 || a.ToolIDs[0] == "weather" {
		t.Fatalf("agent %+v %v", a, err)
	}
	r = runCLI(t, ctx, vars, "", "apply", "-f", dir, "--json")
	var rep config.Report
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep.Count(config.Unchanged) != 3 || rep.Count(config.Created) != 0 {
		t.Fatalf("apply again: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	// A changed tool is updated in place: the agent keeps its id (the
	// secret is set again, as every time).
	os.WriteFile(filepath.Join(dir, "tools.yaml"), []byte("tools: [{name: weather, kind: http, http: {method: GET, url: 'https://api.example.com/v2'}}]\n"), 0o600)
	r = runCLI(t, ctx, vars, "", "apply", "-f", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "0 created, 2 updated, 2 unchanged") || !strings.Contains(r.stdout, a.ToolIDs[0]+"  changed: http") {
		t.Fatalf("apply a changed tool: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if w, err := p.c.GetTool(ctx, a.ToolIDs[0]); err != nil || w.HTTP.URL != "https://api.example.com/v2" {
		t.Fatalf("tool after apply = %+v, %v", w, err)
	}
	// Errors: a misspelt field (before anything is sent), a server refusal.
	r = runCLI(t, ctx, vars, "", "apply", "-f", "-")
	if r.code != exitFailure {
		t.Fatalf("empty stdin: code %d stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, ctx, vars, "name: x\ntemprature: 1\n", "apply", "-f", "-")
	if r.code != exitFailure || !strings.Contains(r.stderr, "temprature") {
		t.Fatalf("misspelt field: code %d stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, ctx, vars, "agents: [{name: y, tool_ids: [nope]}]\n", "apply", "-f", "-")
	if r.code != exitFailure || !strings.Contains(r.stderr, "nope") {
		t.Fatalf("unknown reference: code %d stderr %q", r.code, r.stderr)
	}
	if r := runCLI(t, ctx, vars, "", "apply"); r.code != exitUsage {
		t.Fatalf("no -f: code %d", r.code)
	}
}

// weft serve --config applies the file's objects at start, with its model
// aliases and default model.
func TestServeConfig(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "weft.yaml")
	os.WriteFile(cfg, []byte(`
default_model: demo
models: {demo: scripted/echo}
knowledge_bases: [{name: handbook}]
agents:
  - name: support
    knowledge_base_ids: [handbook]
`), 0o600)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: pw,
		getenv: func(k string) string { return map[string]string{"WEFT_ADMIN_KEY": "an-admin-key-of-my-own"}[k] }}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--log-format", "json", "--config", cfg}, e)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var addr string
	var applied map[string]any
	for addr == "" && sc.Scan() {
		var rec map[string]any
		json.Unmarshal(sc.Bytes(), &rec)
		switch rec["msg"] {
		case "weft serve listening":
			addr, _ = rec["addr"].(string)
		case "config applied":
			applied = rec
		}
	}
	go io.Copy(io.Discard, pr)
	if addr == "" || applied == nil || applied["created"] != float64(2) {
		t.Fatalf("addr %q, config applied %v", addr, applied)
	}
	c := client.New("http://"+addr, "an-admin-key-of-my-own")
	a, err := c.FindAgent(t.Context(), "support")
	if err != nil {
		t.Fatal(err)
	}
	ans, err := c.Chat(t.Context(), a.ID, client.ChatRequest{Query: "echo me"})
	if err != nil || ans.Answer == "" || ans.Model != "scripted/echo" {
		t.Fatalf("chat: %+v %v", ans, err)
	}
	cancel()
	if got := <-code; got != exitOK {
		t.Fatalf("exit code %d", got)
	}

	// A bad file stops the server before it listens.
	os.WriteFile(cfg, []byte("agents: [{name: a, tool_ids: [missing]}]\n"), 0o600)
	r := runCLI(t, t.Context(), map[string]string{"WEFT_ADMIN_KEY": "an-admin-key-of-my-own"}, "", "serve", "--addr", "127.0.0.1:0", "--data", data, "--config", cfg)
	if r.code != exitFailure || !strings.Contains(r.stderr, "--config") || !strings.Contains(r.stderr, "missing") {
		t.Fatalf("bad config: code %d stderr %q", r.code, r.stderr)
	}
}
