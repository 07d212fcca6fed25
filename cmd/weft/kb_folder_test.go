package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/meta"
)

// newRateLimitedPlatform is newTestPlatform with a small per-key rate limit:
// rate requests a second, in bursts of burst.
func newRateLimitedPlatform(t *testing.T, rate float64, burst int) *testPlatform {
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
	srv, err := platform.New(platform.Config{Meta: store, Sessions: memory.NewInMemory(), RateLimit: rate, RateBurst: burst,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); store.Close() })
	return &testPlatform{url: hs.URL, key: key, c: client.New(hs.URL, key)}
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestKBIngestFolder ingests a folder of files with repeated base names,
// more of them than the server's rate limit lets through in one burst.
func TestKBIngestFolder(t *testing.T) {
	t.Parallel()
	const n = 14
	p := newRateLimitedPlatform(t, 4, 4)
	if _, err := p.c.CreateKnowledgeBase(t.Context(), client.NewKnowledgeBase{Name: "src", EmbeddingModel: new("")}); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"skip/doc.md":   "excluded folder",
		"notes.txt":     "not included",
		"deep/a/doc.md": "deep document about zebras",
	}
	for i := range n - 1 {
		files[fmt.Sprintf("pkg%02d/doc.md", i)] = fmt.Sprintf("# Package %d\n\nDocuments package number %d.\n", i, i)
	}
	root := writeTree(t, files)
	r := runCLI(t, t.Context(), p.vars(), "", "kb", "ingest", "src", root, "--include", "*.md", "--exclude", "skip", "--poll", "20ms", "--concurrency", "3")
	if r.code != 0 {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if got := strings.Count(r.stdout, "added "); got != n {
		t.Errorf("%d uploads reported, want %d: %q", got, n, r.stdout)
	}
	docs, err := p.c.ListDocuments(t.Context(), mustKB(t, p, "src"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range docs {
		names = append(names, d.Name)
		if d.Status != client.DocumentReady {
			t.Errorf("%s: %s %s", d.Name, d.Status, d.Error)
		}
	}
	slices.Sort(names)
	var want []string
	for name := range files {
		if strings.HasSuffix(name, ".md") && !strings.HasPrefix(name, "skip/") {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("documents %q, want %q", names, want)
	}

	// kb docs shows the status; rm-doc removes by name.
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "docs", "src")
	if r.code != 0 || !strings.Contains(r.stdout, "pkg00/doc.md") || !strings.Contains(r.stdout, "ready") {
		t.Fatalf("docs: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "rm-doc", "src", "deep/a/doc.md")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "document deep/a/doc.md removed (") {
		t.Fatalf("rm-doc: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "rm-doc", "src", "deep/a/doc.md")
	if r.code != exitFailure || !strings.Contains(r.stderr, `no document named or with id "deep/a/doc.md"`) {
		t.Fatalf("rm-doc again: code %d stderr %q", r.code, r.stderr)
	}
	docs, _ = p.c.ListDocuments(t.Context(), mustKB(t, p, "src"))
	if len(docs) != n-1 {
		t.Errorf("%d documents after rm-doc, want %d", len(docs), n-1)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ingest", "src", root, "--include", "*.pdf"}, exitFailure, "no files to upload"},
		{[]string{"ingest", "src", root, "--include", "["}, exitUsage, "glob"},
		{[]string{"ingest", "src", root, "--concurrency", "0"}, exitUsage, "--concurrency"},
	} {
		r := runCLI(t, t.Context(), p.vars(), "", append([]string{"kb"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: code %d stderr %q, want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}

func mustKB(t *testing.T, p *testPlatform, name string) string {
	t.Helper()
	kb, err := p.c.FindKnowledgeBase(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return kb.ID
}
