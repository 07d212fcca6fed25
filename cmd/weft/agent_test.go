package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/meta"
)

// testPlatform is a platform server in the process, over embedded stores,
// whose agents default to the offline demo model scripted/demo.
type testPlatform struct {
	url, key string
	c        *client.Client
}

func newTestPlatform(t *testing.T) *testPlatform {
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
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); store.Close() })
	return &testPlatform{url: hs.URL, key: key, c: client.New(hs.URL, key)}
}

// vars is the environment of a CLI run against p.
func (p *testPlatform) vars() map[string]string {
	return map[string]string{"WEFT_URL": p.url, "WEFT_API_KEY": p.key}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAgentApplyCreatesThenUpdates(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	file := writeFile(t, "support.yaml", `
name: support
system_prompt: |
  You answer questions about our product.
  Be brief.
temperature: 0.2
tool_ids: []
`)
	r := runCLI(t, t.Context(), p.vars(), "", "agent", "apply", "-f", file)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "agent support created (agt") {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	a, err := p.c.FindAgent(t.Context(), "support")
	if err != nil || a.SystemPrompt != "You answer questions about our product.\nBe brief.\n" || a.Temperature == nil || *a.Temperature != 0.2 {
		t.Fatalf("stored %+v, %v", a, err)
	}

	// JSON is accepted too; the second apply updates by name.
	file = writeFile(t, "support.json", `{"name": "support", "model": "scripted/demo", "enabled": false}`)
	r = runCLI(t, t.Context(), p.vars(), "", "agent", "apply", "-f", file, "--json")
	var out []client.Agent
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || len(out) != 1 || out[0].ID != a.ID {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	got, _ := p.c.GetAgent(t.Context(), a.ID)
	if got.Model != "scripted/demo" || got.IsEnabled() || got.SystemPrompt != a.SystemPrompt {
		t.Fatalf("after update %+v", got)
	}

	// Several agents in one YAML stream, from stdin.
	r = runCLI(t, t.Context(), p.vars(), "name: a1\n---\nname: a2\nmax_tool_rounds: 2\n", "agent", "apply", "-f", "-")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "agent a1 created (") || !strings.HasPrefix(lines[1], "agent a2 created (") {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if all, _ := p.c.ListAgents(t.Context()); len(all) != 3 {
		t.Fatalf("%d agents", len(all))
	}
}

func TestAgentApplyErrors(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	tests := []struct {
		name, file string
		code       int
		want       string
	}{
		{"misspelt field", "name: x\nsytem_prompt: hi\n", 1, `unknown field "sytem_prompt"`},
		{"wrong type", "name: x\ntemperature: hot\n", 1, "temperature"},
		{"no name", "model: scripted/demo\n", 1, `"name" is required`},
		{"not a mapping", "- name: x\n", 1, "want a mapping"},
		{"bad yaml", "name: [x\n", 1, "yaml"},
		{"empty", "", 1, "holds no agent"},
		{"rejected by the server", "name: x\ncontext_window_tokens: 10\n", 1, "context_window_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, t.Context(), p.vars(), "", "agent", "apply", "-f", writeFile(t, "a.yaml", tt.file))
			if r.code != tt.code || !strings.HasPrefix(r.stderr, "weft: ") || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("code %d stderr %q, want %d and %q", r.code, r.stderr, tt.code, tt.want)
			}
		})
	}
	if r := runCLI(t, t.Context(), p.vars(), "", "agent", "apply"); r.code != exitUsage || !strings.Contains(r.stderr, "-f FILE") {
		t.Fatalf("no -f: code %d stderr %q", r.code, r.stderr)
	}
	if r := runCLI(t, t.Context(), p.vars(), "", "agent", "apply", "-f", filepath.Join(t.TempDir(), "missing.yaml")); r.code != exitFailure || !strings.Contains(r.stderr, "no such file") {
		t.Fatalf("missing file: code %d stderr %q", r.code, r.stderr)
	}
}

func TestAgentListShowRm(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	for _, a := range []client.Agent{{Name: "alpha", Model: "scripted/demo", SystemPrompt: "line one\nline two"}, {Name: "beta-agent-with-a-long-name"}} {
		if _, err := p.c.CreateAgent(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, t.Context(), p.vars(), "", "agent", "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	// Aligned columns: ID starts at the same offset on every line.
	col := strings.Index(lines[0], "ID")
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l[col:], "agt") {
			t.Fatalf("columns not aligned:\n%s", r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "(server default)") || !strings.Contains(r.stdout, "scripted/demo") {
		t.Fatalf("models missing:\n%s", r.stdout)
	}

	r = runCLI(t, t.Context(), p.vars(), "", "agent", "list", "--json")
	var list []client.Agent
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list) != 2 {
		t.Fatalf("--json: code %d stdout %q", r.code, r.stdout)
	}

	r = runCLI(t, t.Context(), p.vars(), "", "agent", "show", "alpha")
	for _, want := range []string{"name:", "alpha", "context_window_tokens:", "4096", "system_prompt:\n  line one\n  line two\n"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("show lacks %q: code %d stdout %q stderr %q", want, r.code, r.stdout, r.stderr)
		}
	}
	r = runCLI(t, t.Context(), p.vars(), "", "agent", "show", list[0].ID, "--json")
	var one client.Agent
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &one) != nil || one.ID != list[0].ID {
		t.Fatalf("show --json by id: %q", r.stdout)
	}

	r = runCLI(t, t.Context(), p.vars(), "", "agent", "rm", "alpha")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "agent alpha removed") {
		t.Fatalf("rm: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "agent", "rm", "alpha")
	if r.code != exitFailure || r.stderr != "weft: no agent named or with id \"alpha\"\n" {
		t.Fatalf("rm twice: code %d stderr %q", r.code, r.stderr)
	}
}

func TestRemoteErrors(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	r := runCLI(t, t.Context(), map[string]string{"WEFT_URL": p.url, "WEFT_API_KEY": "wrong-key-0123456789"}, "", "agent", "list")
	if r.code != exitFailure || !strings.Contains(r.stderr, "invalid API key") || !strings.Contains(r.stderr, "WEFT_API_KEY") {
		t.Fatalf("bad key: code %d stderr %q", r.code, r.stderr)
	}
	// Nothing listens on a closed server's address.
	hs := httptest.NewServer(nil)
	hs.Close()
	r = runCLI(t, t.Context(), map[string]string{"WEFT_API_KEY": "k"}, "", "agent", "list", "--url", hs.URL)
	if r.code != exitFailure || !strings.Contains(r.stderr, "cannot reach a weft server at "+hs.URL) || !strings.Contains(r.stderr, "weft serve") {
		t.Fatalf("unreachable: code %d stderr %q", r.code, r.stderr)
	}
}

// FuzzReadAgentFile feeds arbitrary files to the agent file parser: it
// never panics, and what it accepts are named agents.
func FuzzReadAgentFile(f *testing.F) {
	for _, seed := range []string{
		"name: a\nsystem_prompt: hi\n", "name: a\n---\nname: b\n", `{"name": "a", "temperature": 0.5}`,
		"- a\n", "name: [", "&a [*a]", "name: a\nretrieval: {top_k: 3}\n", "~", "name: !!binary aGk=\n", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		e := &env{stdin: strings.NewReader(data), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
		agents, err := readAgentFile(e, "-")
		if err == nil && len(agents) == 0 {
			t.Fatal("no error and no agent")
		}
		for _, a := range agents {
			if strings.TrimSpace(a.Name) == "" {
				t.Fatalf("accepted an agent without a name: %+v", a)
			}
		}
	})
}
