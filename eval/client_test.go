package eval_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/weftlabs/weft/eval"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/meta"
)

// TestClientTarget runs a suite as subtests (eval.Test) against a server
// through its Go client: agents are found by name, sessions continue, and
// the catalog names what the server has.
func TestClientTarget(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := platform.Bootstrap(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := platform.New(platform.Config{Meta: store, Sessions: memory.NewInMemory(), RateLimit: -1,
		DefaultModel: "scripted/echo", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); store.Close() })
	c := client.New(hs.URL, admin)
	if _, err := c.CreateAgent(ctx, client.Agent{Name: "parrot", SystemPrompt: "Repeat."}); err != nil {
		t.Fatal(err)
	}
	target := eval.ClientTarget(c)
	s, err := eval.Parse([]byte(`
name: parrot
agent: parrot
cases:
  - id: repeats
    turns:
      - user: hello there
        expect: {text: {exact: hello there}}
      - user: again
        expect: {text: {exact: again}, tools: {calls: []}}
`), "parrot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eval.Test(t, target, s)

	cat, err := target.(eval.Cataloger).Catalog(ctx)
	if err != nil || len(cat.Agents) != 1 || cat.Agents[0] != "parrot" {
		t.Fatalf("catalog = %+v, %v", cat, err)
	}
	bad, _ := eval.Parse([]byte("name: x\nagent: parot\ncases: [{id: a, user: q}]\n"), "x.yaml")
	if _, err := eval.Run(ctx, target, bad); err == nil {
		t.Fatal("an unknown agent ran")
	}
	ans, err := target.Chat(ctx, "parrot", "", "one")
	if err != nil || ans.SessionID == "" || ans.Text != "one" {
		t.Fatalf("chat = %+v, %v", ans, err)
	}
}
