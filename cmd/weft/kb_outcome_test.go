package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/meta"
)

// newLoopbackPlatform is newTestPlatform with an outbound guard that lets
// the server fetch from the test's loopback servers.
func newLoopbackPlatform(t *testing.T) *testPlatform {
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
	getenv := func(k string) string {
		if k == netguard.AllowEnv {
			return "127.0.0.1"
		}
		return ""
	}
	srv, err := platform.New(platform.Config{Meta: store, Sessions: memory.NewInMemory(), RateLimit: -1, Getenv: getenv,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); store.Close() })
	return &testPlatform{url: hs.URL, key: key, c: client.New(hs.URL, key)}
}

// TestKBIngestOutcomes: ingesting a folder again reports each document as
// unchanged, replaced (with its old chunk count) or added; a URL is fetched
// by the server; kb docs shows the status and a failure's whole error.
func TestKBIngestOutcomes(t *testing.T) {
	t.Parallel()
	p := newLoopbackPlatform(t)
	if _, err := p.c.CreateKnowledgeBase(t.Context(), client.NewKnowledgeBase{Name: "kb", EmbeddingModel: new("")}); err != nil {
		t.Fatal(err)
	}
	root := writeTree(t, map[string]string{
		"a.md": "# A\n\nThe first document, about apples.",
		"b.md": "# B\n\nThe second document, about bananas.",
	})
	r := runCLI(t, t.Context(), p.vars(), "", "kb", "ingest", "kb", root, "--poll", "20ms", "--progress", "plain")
	if r.code != 0 || strings.Count(r.stdout, "added    ") != 2 {
		t.Fatalf("first ingest: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(root, "b.md"), []byte("# B\n\nBananas, revised."), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "c.md"), []byte("# C\n\nCherries."), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "ingest", "kb", root, "--poll", "20ms", "--progress", "plain")
	if r.code != 0 {
		t.Fatalf("second ingest: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"unchanged a.md: the same content is already ready\n", "replaced b.md (", "; 1 old chunk)\n", "added    c.md (", "ready    b.md: 1 chunk\n", "ready    c.md: 1 chunk\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("second ingest output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "ready    a.md") {
		t.Errorf("the unchanged document was indexed again:\n%s", r.stdout)
	}

	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><head><title>Dates</title></head><body><p>Dates grow on palms.</p></body></html>")
	}))
	defer site.Close()
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "ingest", "kb", site.URL+"/dates", "--poll", "20ms", "--progress", "plain")
	if r.code != 0 || !strings.Contains(r.stdout, "added    "+site.URL+"/dates (") || !strings.Contains(r.stdout, "ready    "+site.URL+"/dates: 1 chunk") {
		t.Fatalf("URL ingest: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	// A failed document: kb docs shows its status and its whole error.
	if err := os.WriteFile(filepath.Join(root, "blank.md"), []byte("  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "ingest", "kb", filepath.Join(root, "blank.md"), "--poll", "20ms", "--progress", "plain")
	if r.code != exitFailure {
		t.Fatalf("blank document: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "docs", "kb")
	if r.code != 0 {
		t.Fatalf("docs: code %d stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"a.md", "ready", site.URL + "/dates", "blank.md", "failed", "blank.md: loader: blank.md"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("kb docs lacks %q:\n%s", want, r.stdout)
		}
	}
}
