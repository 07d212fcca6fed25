package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform/client"
)

const demoSays = "This is Weft's offline demo model, so it repeats what you said: "

// TestFirstRun is the README's run command on a fresh directory: weft
// serve with no environment at all starts on the embedded stores, is ready,
// writes a generated admin key to weft-data/admin.key (mode 0600) and logs
// it once, and the default agent model is the offline demo, which answers.
// (It listens on a free port instead of 8080, which may be taken here.)
func TestFirstRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, dir, nil, "--addr", "127.0.0.1:0")

	keyFile := filepath.Join(dir, "weft-data", "admin.key")
	st, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("admin.key has mode %v, want 0600", st.Mode().Perm())
	}
	b, _ := os.ReadFile(keyFile)
	key := strings.TrimSpace(string(b))
	if !strings.HasPrefix(key, "wk_") || strings.Count(p.log(), key) != 1 {
		t.Fatalf("admin key %q logged %d times, want once:\n%s", key, strings.Count(p.log(), key), p.log())
	}

	c := client.New(p.url(), key)
	if err := c.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	a, err := c.CreateAgent(t.Context(), client.Agent{Name: "first"})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := c.Chat(t.Context(), a.ID, client.ChatRequest{Query: "hello, weft"})
	if err != nil || ans.Answer != demoSays+"hello, weft" || ans.Model != "scripted/demo" {
		t.Fatalf("chat = %+v, %v", ans, err)
	}

	// The CLI, run where the server was started, finds the admin key itself.
	agentFile := filepath.Join(dir, "helper.yaml")
	os.WriteFile(agentFile, []byte("name: helper\nsystem_prompt: Be brief.\n"), 0o600)
	for _, run := range []struct {
		stdin      string
		args       []string
		wantStdout string
	}{
		{"", []string{"agent", "apply", "-f", agentFile}, "agent helper created"},
		{"hi there\n", []string{"chat", "helper"}, demoSays + "hi there\n"},
	} {
		cmd := exec.CommandContext(t.Context(), weftBinary(t), append(run.args, "--url", p.url())...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
		cmd.Stdin = strings.NewReader(run.stdin)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), run.wantStdout) || !strings.Contains(stderr.String(), "using the admin key in ./weft-data/admin.key") {
			t.Fatalf("weft %v: %v\nstdout %q\nstderr %q", run.args, err, out, stderr.String())
		}
	}

	// A restart keeps the key and does not print one again.
	if d := p.signal(syscall.SIGTERM, 10*time.Second); p.err != nil {
		t.Fatalf("exit after SIGTERM (%v): %v", d, p.err)
	}
	p2 := startServe(t, dir, nil, "--addr", "127.0.0.1:0")
	if strings.Contains(p2.log(), "admin_key") {
		t.Fatalf("a restart printed a key:\n%s", p2.log())
	}
	if _, err := client.New(p2.url(), key).GetAgent(t.Context(), a.ID); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

const adminKey = "e2e-admin-key-0123456789"

// streamUntil streams a turn and calls at after the n-th text delta. It
// returns the text received, the session, the last event and the error
// the stream ended with.
func streamUntil(t *testing.T, c *client.Client, agentID, session, query string, n int, at func()) (text, sid string, last client.Event, err error) {
	t.Helper()
	deltas := 0
	for ev, e := range c.ChatStream(t.Context(), agentID, client.ChatRequest{Query: query, SessionID: session}) {
		if e != nil {
			return text, sid, ev, e
		}
		last = ev
		switch ev.Type {
		case client.EventCreated:
			sid = ev.SessionID
		case client.EventMessageDelta:
			text += ev.Text
			if deltas++; deltas == n {
				at()
			}
		}
	}
	return text, sid, last, nil
}

// slowTurn streams 300 words, one every 50 ms: long enough to be cut.
func slowTurn() (llmtest.Turn, string) {
	text := strings.TrimSpace(strings.Repeat("lorem ipsum dolor ", 100))
	return llmtest.Turn{Text: text, ChunkDelay: 50 * time.Millisecond}, text
}

// TestGracefulShutdown sends SIGTERM to a weft serve process in the middle
// of a streamed answer: the client gets a terminal error event, the partial
// answer is saved (read back after a restart), and the process exits
// cleanly within 10 s.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	up := llmtest.NewServer(llmtest.Reply("first answer"))
	t.Cleanup(up.Close)
	vars := upstreamVars(up)
	vars["WEFT_ADMIN_KEY"] = adminKey
	dir := t.TempDir()
	p := startServe(t, dir, vars, "--addr", "127.0.0.1:0", "--log-format", "json")
	c := client.New(p.url(), adminKey)
	a, err := c.CreateAgent(t.Context(), client.Agent{Name: "slow", Model: "openai/gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Chat(t.Context(), a.ID, client.ChatRequest{Query: "warm up"})
	if err != nil {
		t.Fatal(err)
	}
	slow, full := slowTurn()
	up.Enqueue(slow)

	exitTime := make(chan time.Duration, 1)
	text, _, last, err := streamUntil(t, c, a.ID, first.SessionID, "tell me a long story", 3, func() {
		go func() { exitTime <- p.signal(syscall.SIGTERM, 10*time.Second) }()
	})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != client.CodeUnavailable || last.Type != client.EventError {
		t.Fatalf("stream ended with %v (last event %+v), want an error event with code unavailable", err, last)
	}
	if d := <-exitTime; p.err != nil {
		t.Fatalf("exit status after SIGTERM: %v (after %v)", p.err, d)
	}
	if strings.Contains(p.log(), adminKey) {
		t.Fatal("WEFT_ADMIN_KEY appears in the log")
	}

	p2 := startServe(t, dir, vars, "--addr", "127.0.0.1:0", "--log-format", "json")
	msgs, err := client.New(p2.url(), adminKey).Messages(t.Context(), first.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 4 || msgs[2].Role != "user" || msgs[2].Content != "tell me a long story" {
		t.Fatalf("after restart %d messages: %+v", len(msgs), msgs)
	}
	partial := msgs[3]
	if partial.Role != "assistant" || !partial.Partial || !strings.HasPrefix(partial.Content, text) || len(partial.Content) >= len(full) {
		t.Fatalf("saved answer %+v; the client got %q", partial, text)
	}
}
