package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/client"
)

const demoSays = "This is Weft's offline demo model, so it repeats what you said: "

func TestChatKeepsTheSessionAndStartsNewOnes(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	a, _ := p.c.CreateAgent(t.Context(), client.Agent{Name: "demo"})
	r := runCLI(t, t.Context(), p.vars(), "hello\n\n  how are you?  \n/new\nagain\n", "chat", "demo")
	if r.code != 0 {
		t.Fatalf("code %d stderr %q", r.code, r.stderr)
	}
	want := demoSays + "hello\n" + demoSays + "how are you?\n" + demoSays + "again\n"
	if r.stdout != want {
		t.Fatalf("stdout %q, want %q", r.stdout, want)
	}
	if r.flushes < 3 {
		t.Errorf("%d flushes: answers are not flushed as they stream", r.flushes)
	}
	sessions, _ := p.c.ListSessions(t.Context(), a.ID)
	if len(sessions) != 2 || strings.Count(r.stderr, "weft: session ses") != 2 || !strings.Contains(r.stderr, "new session") {
		t.Fatalf("%d sessions; stderr %q", len(sessions), r.stderr)
	}
	counts := []int{sessions[0].MessageCount, sessions[1].MessageCount}
	if !(counts[0] == 4 && counts[1] == 2 || counts[0] == 2 && counts[1] == 4) {
		t.Fatalf("message counts %v, want one session of 2 turns and one of 1", counts)
	}

	// --session resumes, by agent id too; /exit ends before the rest.
	long := sessions[0]
	if long.MessageCount != 4 {
		long = sessions[1]
	}
	r = runCLI(t, t.Context(), p.vars(), "more\n/exit\nignored\n", "chat", a.ID, "--session", long.ID)
	if r.code != 0 || r.stdout != demoSays+"more\n" || strings.Contains(r.stderr, "weft: session") {
		t.Fatalf("resume: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if msgs, _ := p.c.Messages(t.Context(), long.ID); len(msgs) != 6 {
		t.Fatalf("resumed session has %d messages", len(msgs))
	}
}

func TestChatErrors(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	p.c.CreateAgent(t.Context(), client.Agent{Name: "demo"})
	p.c.CreateAgent(t.Context(), client.Agent{Name: "off", Enabled: new(false)})
	other, _ := p.c.CreateAgent(t.Context(), client.Agent{Name: "other"})
	ans, _ := p.c.Chat(t.Context(), other.ID, client.ChatRequest{Query: "x"})
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"unknown agent", "hi\n", []string{"chat", "nobody"}, exitFailure, `no agent named or with id "nobody"`},
		{"unknown session", "hi\n", []string{"chat", "demo", "--session", "ses_nope"}, exitFailure, "not found"},
		{"session of another agent", "hi\n", []string{"chat", "demo", "--session", ans.SessionID}, exitUsage, "belongs to another agent"},
		{"disabled agent", "hi\n", []string{"chat", "off"}, exitFailure, "disabled"},
		{"no agent", "", []string{"chat"}, exitUsage, "accepts 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, t.Context(), p.vars(), tt.stdin, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "weft: ") != 1 {
				t.Fatalf("code %d stderr %q, want %d and %q", r.code, r.stderr, tt.code, tt.want)
			}
		})
	}
}

// Not parallel: it changes the working directory.
func TestChatUsesTheLocalAdminKey(t *testing.T) {
	p := newTestPlatform(t)
	p.c.CreateAgent(t.Context(), client.Agent{Name: "demo"})
	dir := t.TempDir()
	t.Chdir(dir)
	vars := map[string]string{"WEFT_URL": p.url}
	r := runCLI(t, t.Context(), vars, "hi\n", "chat", "demo")
	if r.code != exitUsage || !strings.Contains(r.stderr, "no API key") || !strings.Contains(r.stderr, "weft-data/admin.key") {
		t.Fatalf("without a key: code %d stderr %q", r.code, r.stderr)
	}
	os.Mkdir(filepath.Join(dir, "weft-data"), 0o700)
	if err := os.WriteFile(filepath.Join(dir, "weft-data", "admin.key"), []byte(p.key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, t.Context(), vars, "hi\n", "chat", "demo")
	if r.code != 0 || r.stdout != demoSays+"hi\n" || !strings.Contains(r.stderr, "using the admin key in ./weft-data/admin.key") {
		t.Fatalf("with admin.key: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestChatStreamBrokenOff(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/agents/agt_1":
			io.WriteString(w, `{"id":"agt_1","name":"a"}`)
		case "/v1/agents/agt_1/chat":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: chat.created\ndata: {\"type\":\"chat.created\",\"session_id\":\"ses_1\",\"message_id\":\"m\"}\n\n"+
				"event: message.delta\ndata: {\"type\":\"message.delta\",\"text\":\"Hel\"}\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	r := runCLI(t, t.Context(), map[string]string{"WEFT_URL": srv.URL, "WEFT_API_KEY": "k"}, "hi\n", "chat", "agt_1")
	if r.code != exitFailure || r.stdout != "Hel\n" || !strings.Contains(r.stderr, "broke off in the middle of the answer") {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}
