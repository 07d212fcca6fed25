package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/client"
)

func TestSessionListShow(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	ctx := t.Context()
	a, _ := p.c.CreateAgent(ctx, client.Agent{Name: "alpha"})
	b, _ := p.c.CreateAgent(ctx, client.Agent{Name: "beta"})
	ans, err := p.c.Chat(ctx, a.ID, client.ChatRequest{Query: "first"})
	if err != nil {
		t.Fatal(err)
	}
	p.c.Chat(ctx, a.ID, client.ChatRequest{Query: "second", SessionID: ans.SessionID})
	p.c.Chat(ctx, b.ID, client.ChatRequest{Query: "other"})

	r := runCLI(t, ctx, p.vars(), "", "session", "list")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 3 || !strings.Contains(r.stdout, "beta") {
		t.Fatalf("list: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, ctx, p.vars(), "", "session", "list", "--agent", "alpha", "--json")
	var ss []client.Session
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ss) != nil || len(ss) != 1 || ss[0].ID != ans.SessionID || ss[0].MessageCount != 4 {
		t.Fatalf("list --agent: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, ctx, p.vars(), "", "session", "list", "--agent", "gamma"); r.code != exitFailure || !strings.Contains(r.stderr, `"gamma"`) {
		t.Fatalf("unknown agent: code %d stderr %q", r.code, r.stderr)
	}

	r = runCLI(t, ctx, p.vars(), "", "session", "show", ans.SessionID)
	blocks := strings.Split(r.stdout, "\n\n")
	if r.code != 0 || len(blocks) != 4 || !strings.HasPrefix(blocks[0], "[user] ") || !strings.HasSuffix(blocks[0], "\n  first") ||
		!strings.HasPrefix(blocks[1], "[assistant] ") || !strings.Contains(blocks[3], "second") {
		t.Fatalf("show: code %d stdout %q", r.code, r.stdout)
	}
	r = runCLI(t, ctx, p.vars(), "", "session", "show", ans.SessionID, "--json")
	var msgs []client.Message
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &msgs) != nil || len(msgs) != 4 || msgs[2].Content != "second" {
		t.Fatalf("show --json: %q", r.stdout)
	}
	if r := runCLI(t, ctx, p.vars(), "", "session", "show", "ses_nope"); r.code != exitFailure || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("unknown session: code %d stderr %q", r.code, r.stderr)
	}
}
