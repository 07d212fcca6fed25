package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llmtest"
)

// result is what one in-process run of the CLI produced.
type result struct {
	code           int
	stdout, stderr string
	flushes        int
}

// flushBuffer is a stdout that counts flushes, like a buffered terminal writer.
type flushBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	flushes int
	onWrite func()
}

func (b *flushBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.onWrite != nil {
		b.onWrite()
	}
	return b.buf.Write(p)
}

func (b *flushBuffer) Flush() error {
	b.mu.Lock()
	b.flushes++
	b.mu.Unlock()
	return nil
}

// runCLI executes the command line in-process with the given environment
// variables (nothing else of the real environment is visible) and stdin.
func runCLI(t *testing.T, ctx context.Context, vars map[string]string, stdin string, args ...string) result {
	t.Helper()
	return runWith(ctx, &flushBuffer{}, vars, stdin, args...)
}

func runWith(ctx context.Context, out *flushBuffer, vars map[string]string, stdin string, args ...string) result {
	var stderr bytes.Buffer
	e := &env{
		stdin:  strings.NewReader(stdin),
		stdout: out,
		stderr: &stderr,
		getenv: func(k string) string { return vars[k] },
	}
	code := run(ctx, args, e)
	return result{code: code, stdout: out.buf.String(), stderr: stderr.String(), flushes: out.flushes}
}

func openaiEnv(srv *llmtest.Server) map[string]string {
	return map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL()}
}

func TestAskStreamsAnswer(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "The sky is blue because of Rayleigh scattering.", Chunks: 7})
	defer srv.Close()
	r := runCLI(t, t.Context(), openaiEnv(srv), "", "ask", "--model", "openai/gpt-test", "why", "is", "the", "sky", "blue?")
	if r.code != 0 || r.stdout != "The sky is blue because of Rayleigh scattering.\n" || r.stderr != "" {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r.flushes < 7 {
		t.Errorf("%d flushes for 7 chunks: output is not flushed per chunk", r.flushes)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !reqs[0].Stream || reqs[0].Model != "gpt-test" || reqs[0].LastUserText() != "why is the sky blue?" {
		t.Errorf("requests = %+v", reqs)
	}
}

func TestAskRequestOptions(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Reply("ok"))
	defer srv.Close()
	r := runCLI(t, t.Context(), openaiEnv(srv), "prompt from stdin\n", "ask", "-m", "openai/gpt-test", "--system", "Be terse.", "--temperature", "0", "--max-tokens", "50")
	if r.code != 0 {
		t.Fatalf("code %d stderr %q", r.code, r.stderr)
	}
	req := srv.Requests()[0]
	var body struct {
		Temperature *float64 `json:"temperature"`
		MaxTokens   int      `json:"max_tokens"`
		MaxCompl    int      `json:"max_completion_tokens"`
	}
	if err := req.Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Text() != "Be terse." || req.LastUserText() != "prompt from stdin" {
		t.Errorf("messages = %+v", req.Messages)
	}
	if body.Temperature == nil || *body.Temperature != 0 || body.MaxTokens+body.MaxCompl != 50 {
		t.Errorf("temperature %v max tokens %d/%d", body.Temperature, body.MaxTokens, body.MaxCompl)
	}

	// Without --temperature none is sent.
	runCLI(t, t.Context(), openaiEnv(srv), "", "ask", "-m", "openai/gpt-test", "hi")
	body.Temperature = nil
	srv.Requests()[1].Decode(&body)
	if body.Temperature != nil {
		t.Errorf("temperature %v sent without the flag", *body.Temperature)
	}
}

func TestAskWaitsOutRetryAfter(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.RateLimited(20*time.Millisecond), llmtest.Reply("after the wait"))
	defer srv.Close()
	r := runCLI(t, t.Context(), openaiEnv(srv), "", "ask", "-v", "-m", "openai/gpt-test", "hi")
	if r.code != 0 || r.stdout != "after the wait\n" {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	if !strings.Contains(r.stderr, "rate limited") || !strings.Contains(r.stderr, "retrying in 20ms") {
		t.Errorf("stderr does not report the retry: %q", r.stderr)
	}
}

func TestAskVerbose(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "hello", Model: "gpt-test-2026-01-01"})
	defer srv.Close()
	r := runCLI(t, t.Context(), openaiEnv(srv), "", "ask", "--verbose", "-m", "openai/gpt-test", "hi")
	if r.code != 0 {
		t.Fatalf("code %d stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"model: openai/gpt-test (gpt-test-2026-01-01)", "tokens: ", "completion", "latency: first token"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q lacks %q", r.stderr, want)
		}
	}
}

func TestAskFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		turns     []llmtest.Turn
		vars      func(srv *llmtest.Server) map[string]string
		args      []string
		code      int
		stdout    string
		stderrHas []string
		wantReqs  int
	}{
		{
			name:      "error after HTTP 200 is not retried once text was shown",
			turns:     []llmtest.Turn{llmtest.StreamError("partial answer that breaks", 2, "The server had an error processing your request.")},
			vars:      openaiEnv,
			args:      []string{"ask", "-m", "openai/gpt-test", "hi"},
			code:      1,
			stdout:    "partial answer\n",
			stderrHas: []string{"weft: openai: ", "The server had an error", "the answer above is incomplete"},
			wantReqs:  1,
		},
		{
			name:      "unauthorized",
			turns:     []llmtest.Turn{llmtest.Unauthorized()},
			vars:      openaiEnv,
			args:      []string{"ask", "-m", "openai/gpt-test", "hi"},
			code:      1,
			stderrHas: []string{"weft: openai: authentication failed (HTTP 401)", "Incorrect API key", "check OPENAI_API_KEY"},
			wantReqs:  1,
		},
		{
			name:      "bad request",
			turns:     []llmtest.Turn{llmtest.HTTPError(400, "invalid_request_error", "Invalid value for 'temperature'")},
			vars:      openaiEnv,
			args:      []string{"ask", "-m", "openai/gpt-test", "hi"},
			code:      1,
			stderrHas: []string{"bad request (HTTP 400)", "Invalid value for 'temperature'"},
			wantReqs:  1,
		},
		{
			name: "server not reachable",
			vars: func(*llmtest.Server) map[string]string {
				return map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
			},
			args:      []string{"ask", "-m", "openai/gpt-test", "hi"},
			code:      1,
			stderrHas: []string{"provider unavailable", "is OPENAI_BASE_URL=http://127.0.0.1:1/v1 right, and the server up?"},
		},
		{
			name:      "missing key",
			vars:      func(*llmtest.Server) map[string]string { return nil },
			args:      []string{"ask", "--model", "openai/gpt-4o-mini", "hi"},
			code:      1,
			stderrHas: []string{"OPENAI_API_KEY is not set"},
		},
		{
			name:      "unknown provider",
			vars:      openaiEnv,
			args:      []string{"ask", "--model", "nosuch/model", "hi"},
			code:      2,
			stderrHas: []string{`unknown provider "nosuch"`, "openai", "scripted", "weft models"},
		},
		{
			name:      "unknown scripted model",
			vars:      openaiEnv,
			args:      []string{"ask", "--model", "scripted/nope", "hi"},
			code:      1,
			stderrHas: []string{`unknown scripted model "nope"`},
		},
		{
			name:      "no prompt",
			vars:      openaiEnv,
			args:      []string{"ask", "-m", "openai/gpt-test"},
			code:      2,
			stderrHas: []string{"no prompt"},
		},
		{
			name:      "bad flag",
			vars:      openaiEnv,
			args:      []string{"ask", "--temperature", "warm", "hi"},
			code:      2,
			stderrHas: []string{"invalid argument", "weft ask --help"},
		},
		{
			name:      "unknown command",
			vars:      openaiEnv,
			args:      []string{"frobnicate"},
			code:      2,
			stderrHas: []string{"unknown command"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(tt.turns...)
			defer srv.Close()
			r := runCLI(t, t.Context(), tt.vars(srv), "", tt.args...)
			if r.code != tt.code || r.stdout != tt.stdout {
				t.Errorf("code %d stdout %q, want %d %q (stderr %q)", r.code, r.stdout, tt.code, tt.stdout, r.stderr)
			}
			if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "weft: ") {
				t.Errorf("stderr is not one weft: line: %q", r.stderr)
			}
			for _, want := range tt.stderrHas {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr %q lacks %q", r.stderr, want)
				}
			}
			if n := len(srv.Requests()); n != tt.wantReqs {
				t.Errorf("%d requests, want %d", n, tt.wantReqs)
			}
		})
	}
}

func TestDefaultModel(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Reply("from openai"), llmtest.Reply("from WEFT_MODEL"), llmtest.Reply("from WEFT_DEFAULT_MODEL"))
	defer srv.Close()

	// Nothing configured: the demo model, with a note saying what to set.
	r := runCLI(t, t.Context(), nil, "", "ask", "hello")
	if r.code != 0 || !strings.Contains(r.stdout, "offline demo model") || !strings.Contains(r.stderr, "OPENAI_API_KEY") || !strings.Contains(r.stderr, "scripted/demo") {
		t.Errorf("unconfigured: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	// OPENAI_API_KEY set: openai's default model, no note.
	r = runCLI(t, t.Context(), openaiEnv(srv), "", "ask", "hello")
	if r.code != 0 || r.stdout != "from openai\n" || r.stderr != "" {
		t.Errorf("openai: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if got := srv.Requests()[0].Model; got != "gpt-4o-mini" {
		t.Errorf("default openai model %q", got)
	}

	// WEFT_DEFAULT_MODEL wins; the deprecated WEFT_MODEL still works, with
	// a warning, and WEFT_DEFAULT_MODEL wins over it.
	vars := openaiEnv(srv)
	vars["WEFT_MODEL"] = "openai/custom-model"
	r = runCLI(t, t.Context(), vars, "", "ask", "hello")
	if r.code != 0 || r.stdout != "from WEFT_MODEL\n" || srv.Requests()[1].Model != "custom-model" || !strings.Contains(r.stderr, "WEFT_MODEL is deprecated: set WEFT_DEFAULT_MODEL") {
		t.Errorf("WEFT_MODEL: code %d stdout %q stderr %q model %q", r.code, r.stdout, r.stderr, srv.Requests()[1].Model)
	}
	vars["WEFT_DEFAULT_MODEL"] = "openai/preferred-model"
	r = runCLI(t, t.Context(), vars, "", "ask", "hello")
	if r.code != 0 || r.stdout != "from WEFT_DEFAULT_MODEL\n" || srv.Requests()[2].Model != "preferred-model" || r.stderr != "" {
		t.Errorf("WEFT_DEFAULT_MODEL: code %d stdout %q stderr %q model %q", r.code, r.stdout, r.stderr, srv.Requests()[2].Model)
	}

	// Anthropic comes next when OpenAI is not configured.
	if spec, note := defaultModel(func(k string) string {
		return map[string]string{"ANTHROPIC_API_KEY": "k"}[k]
	}); spec != "anthropic" || note != "" {
		t.Errorf("anthropic only: %q %q", spec, note)
	}
}

func TestAskInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The user presses Ctrl-C as the first words appear.
	out := &flushBuffer{onWrite: cancel}
	r := runWith(ctx, out, nil, "", "ask", "--model", "scripted/echo", "one two three four")
	if r.code != 130 || r.stderr != "weft: interrupted\n" || strings.Contains(r.stdout, "four") {
		t.Errorf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestModels(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"OPENAI_API_KEY": "sk-x"}
	r := runCLI(t, t.Context(), vars, "", "models")
	if r.code != 0 {
		t.Fatalf("code %d stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	find := func(name string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, name+" ") {
				return l
			}
		}
		return ""
	}
	if l := find("openai"); !strings.Contains(l, "yes") || !strings.Contains(l, "OPENAI_API_KEY set") || !strings.Contains(l, "OPENAI_BASE_URL") {
		t.Errorf("openai row %q", l)
	}
	if l := find("anthropic"); !strings.Contains(l, " no ") || !strings.Contains(l, "ANTHROPIC_API_KEY not set") {
		t.Errorf("anthropic row %q", l)
	}
	if l := find("scripted"); !strings.Contains(l, "yes") {
		t.Errorf("scripted row %q", l)
	}
	if !strings.Contains(r.stdout, "Default model: openai") {
		t.Errorf("no default model line: %q", r.stdout)
	}

	r = runCLI(t, t.Context(), vars, "", "models", "--json")
	var infos []providerInfo
	if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil {
		t.Fatalf("--json output: %v\n%s", err, r.stdout)
	}
	byName := map[string]providerInfo{}
	for _, p := range infos {
		byName[p.Name] = p
	}
	for _, name := range []string{"openai", "anthropic", "ollama", "scripted"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("%s missing from --json", name)
		}
	}
	if p := byName["openai"]; !p.Configured || p.DefaultModel != "gpt-4o-mini" || p.Env[0] != "OPENAI_API_KEY" {
		t.Errorf("openai = %+v", p)
	}
	if p := byName["anthropic"]; p.Configured || p.Detail == "" {
		t.Errorf("anthropic = %+v", p)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := runCLI(t, t.Context(), nil, "", "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "weft ") || !strings.Contains(r.stdout, runtime.Version()) {
		t.Errorf("code %d stdout %q", r.code, r.stdout)
	}
}

// TestBinary builds the real binary and runs it as a subprocess.
func TestBinary(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build the binary with")
	}
	bin := filepath.Join(t.TempDir(), "weft")
	build := exec.CommandContext(t.Context(), gobin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(t.Context(), bin, "ask", "--model", "scripted/echo", "hello")
	cmd.Env = append(os.Environ(), "WEFT_MODEL=", "WEFT_DEFAULT_MODEL=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("weft ask: %v (stderr %q)", err, stderr.String())
	}
	if stdout.String() != "hello\n" || stderr.Len() != 0 {
		t.Errorf("stdout %q stderr %q", stdout.String(), stderr.String())
	}

	cmd = exec.CommandContext(t.Context(), bin, "ask", "--model", "nosuch/x", "hello")
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("unknown provider: err %v, want exit code 2", err)
	}

	// Ctrl-C while the answer streams: a clean exit with code 130.
	srv := llmtest.NewServer(llmtest.Turn{Text: "never arrives", ChunkDelay: time.Hour})
	defer srv.Close()
	cmd = exec.CommandContext(t.Context(), bin, "ask", "--model", "openai/gpt-test", "hello")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL(), "WEFT_MODEL=", "WEFT_DEFAULT_MODEL=")
	stderr.Reset()
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for len(srv.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond) // waiting for the request to arrive, not timing it
	}
	cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || stderr.String() != "weft: interrupted\n" {
		t.Errorf("after Ctrl-C: err %v, stderr %q; want exit code 130 and one line", err, stderr.String())
	}
}
