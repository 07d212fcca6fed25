package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llmtest"
)

// TestEvalRunExamples runs the example suites (a Weft suite over an agent
// with knowledge and tools, one over a workflow, an ADK evalset and a
// trpc-agent-go evalset) with `weft eval run`, offline from their
// cassettes, and checks the table, the JUnit, JSON and HTML reports, and a
// baseline comparison.
func TestEvalRunExamples(t *testing.T) {
	ex := filepath.Join("..", "..", "examples", "evals")
	dir := t.TempDir()
	junit, js, html := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	args := []string{"eval", "run", filepath.Join(ex, "support.yaml"), filepath.Join(ex, "triage.yaml"),
		filepath.Join(ex, "adk", "support.evalset.json"), filepath.Join(ex, "trpc", "orders.evalset.json"),
		"--config", filepath.Join(ex, "weft.yaml"), "--agent", "support", "--judge-model", "openai/gpt-4o-mini",
		"--junit", junit, "--json", js, "--html", html, "--progress=false"}
	res := runCLI(t, t.Context(), nil, "", args...)
	if res.code != 0 || !strings.HasSuffix(res.stdout, "\n33 passed, 0 failed\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &j); err != nil || j.Tests != 33 || j.Failures != 0 || len(j.Suites) != 4 {
		t.Fatalf("junit = %+v, %v", j, err)
	}
	if page, err := os.ReadFile(html); err != nil || !strings.Contains(string(page), "33 passed, 0 failed") || !strings.Contains(string(page), "order_status") {
		t.Fatalf("html report: %v", err)
	}
	res = runCLI(t, t.Context(), nil, "", append(args[:len(args)-7], "--baseline", js, "--progress=false")...)
	if res.code != 0 || !strings.Contains(res.stdout, ": no change") {
		t.Fatalf("baseline run: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	// A directory: its suites, not its weft.yaml.
	res = runCLI(t, t.Context(), nil, "", "eval", "run", ex, "--config", filepath.Join(ex, "weft.yaml"), "--progress=false")
	if res.code != 0 || !strings.HasSuffix(res.stdout, "\n28 passed, 0 failed\n") {
		t.Fatalf("directory run: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// TestEvalRunFailures pins the exit codes and messages: a failing case
// exits 1 naming it, a missing cassette is an error naming the case (and
// no provider is called), a bad suite names its file, line and field.
func TestEvalRunFailures(t *testing.T) {
	ex := filepath.Join("..", "..", "examples", "evals")
	dir := t.TempDir()
	suite := filepath.Join(dir, "s.yaml")
	os.WriteFile(suite, []byte(`name: s
agent: support
cases:
  - id: never-recorded
    user: Where is my order A1001?
`), 0o644)
	res := runCLI(t, t.Context(), nil, "", "eval", "run", suite, "--config", filepath.Join(ex, "weft.yaml"), "--progress=false")
	if res.code != 1 || !strings.Contains(res.stdout, "case s/never-recorded: no cassette at "+filepath.Join(dir, "testdata", "cassettes", "s", "never-recorded.json")) ||
		!strings.Contains(res.stderr, "weft: 1 of 1 cases failed") {
		t.Errorf("missing cassette: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	os.WriteFile(suite, []byte("name: s\nagent: support\ncases:\n  - id: x\n    user: hi\n    expect: {text: {contain: hi}}\n"), 0o644)
	res = runCLI(t, t.Context(), nil, "", "eval", "run", suite, "--config", filepath.Join(ex, "weft.yaml"))
	if res.code != 1 || !strings.Contains(res.stderr, suite+":6: cases[0].expect.text: additional properties 'contain' not allowed") {
		t.Errorf("bad suite: exit %d\n%s", res.code, res.stderr)
	}

	os.WriteFile(suite, []byte("name: s\nagent: helpdesk\ncases: [{id: x, user: hi}]\n"), 0o644)
	res = runCLI(t, t.Context(), nil, "", "eval", "run", suite, "--config", filepath.Join(ex, "weft.yaml"))
	if res.code != 1 || !strings.Contains(res.stderr, `s.yaml:2: agent: unknown agent "helpdesk" (the target has: support)`) {
		t.Errorf("unknown agent: exit %d\n%s", res.code, res.stderr)
	}

	res = runCLI(t, t.Context(), nil, "", "eval", "run", suite, "--server", "http://127.0.0.1:1")
	if res.code != 2 || !strings.Contains(res.stderr, "no API key for --server") {
		t.Errorf("--server without a key: exit %d\n%s", res.code, res.stderr)
	}
}

// TestEvalRecordReplay records a suite with --record against a stand-in
// provider, then replays it with the provider gone.
func TestEvalRecordReplay(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Reply("Bonjour !"), llmtest.Reply(`{"score": 1, "reason": "French"}`))
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "weft.yaml")
	os.WriteFile(cfg, []byte("default_model: openai/gpt-4o-mini\nagents:\n  - name: french\n    system_prompt: Answer in French.\n"), 0o644)
	suite := filepath.Join(dir, "french.yaml")
	os.WriteFile(suite, []byte(`name: french
agent: french
judge: {model: openai/gpt-4o-mini}
cases:
  - id: hello
    user: Hello
    expect:
      text: {contains: Bonjour}
      judge: {rubric: The answer is in French.}
`), 0o644)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "sk-test"}
	res := runCLI(t, t.Context(), env, "", "eval", "run", suite, "--config", cfg, "--record", "--progress=false")
	if res.code != 0 {
		t.Fatalf("record: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	srv.Close()
	if _, err := os.Stat(filepath.Join(dir, "testdata", "cassettes", "french", "hello.json")); err != nil {
		t.Fatal(err)
	}
	res = runCLI(t, t.Context(), nil, "", "eval", "run", suite, "--config", cfg, "--progress=false")
	if res.code != 0 || !strings.Contains(res.stdout, "1 passed, 0 failed") {
		t.Fatalf("replay: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
