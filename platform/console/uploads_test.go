package console_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/weftlabs/weft/platform"
)

// refusals counts the server's "rate limited" log lines: the requests it
// refused with 429.
type refusals struct{ n atomic.Int64 }

func (r *refusals) Enabled(context.Context, slog.Level) bool { return true }
func (r *refusals) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message == "request refused: rate limited" {
		r.n.Add(1)
	}
	return nil
}
func (r *refusals) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *refusals) WithGroup(string) slog.Handler      { return r }

// rateLimit gives the server a rate limit per key (0: the defaults, 20 a
// second with bursts of 40) and counts what it refuses.
func rateLimit(rate float64, burst int, count *refusals) func(*platform.Config) {
	return func(c *platform.Config) {
		c.RateLimit, c.RateBurst = rate, burst
		c.Logger = slog.New(count)
	}
}

// writeTree writes files (relative path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// handbook is a folder of n Markdown files in nested folders (30 teams of
// five), with base names repeated across folders (readme.md and faq.md in
// each team, notes/readme.md below it).
func handbook(n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		team := fmt.Sprintf("team%02d", i/5)
		rel := map[int]string{0: "readme.md", 1: "faq.md", 2: "notes/readme.md", 3: fmt.Sprintf("notes/page%d.md", i), 4: fmt.Sprintf("page%d.md", i)}[i%5]
		files[team+"/"+rel] = fmt.Sprintf("# Page %d\n\nPage %d of the handbook says that parcel %d ships on day %d.\n", i, i, i*7, i%5+1)
	}
	return files
}

// uploadDone is the JavaScript predicate: the newest upload batch has
// every file answered and its document ready or failed.
const uploadDone = `document.querySelector('.upload-batch')?.dataset.done === 'true'`

// TestFolderUploadNoLosses uploads a 150-file folder (nested folders,
// base names repeated across them) through the folder picker under the
// server's default rate limit: every file is added and indexed, named by
// its path inside the folder as weft kb ingest names it, and the console's
// requests — uploads and the status polling — stay within the limit (the
// server refuses none).
func TestFolderUploadNoLosses(t *testing.T) {
	var count refusals
	e := newEnv(t, rateLimit(0, 0, &count))
	var kb struct{ ID string }
	e.api(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "handbook"}, &kb)
	files := handbook(150)
	dir := filepath.Join(t.TempDir(), "handbook")
	writeTree(t, dir, files)
	e.signIn(e.admin)
	e.goTo("#/knowledge/" + kb.ID)
	e.do(
		chromedp.WaitVisible(chromedp.CSS(`.kb-detail .drop`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#kb-folder`), []string{dir}),
	)
	e.until("the folder uploaded and indexed", uploadDone)
	if s := e.text(".upload-summary"); s != "150 files: 150 added; 150 ready" {
		t.Fatalf("summary %q", s)
	}
	var docs []struct{ Name, Status string }
	e.api(e.admin, "GET", "/v1/knowledge-bases/"+kb.ID+"/documents", nil, &docs)
	var names []string
	for _, d := range docs {
		if d.Status != "ready" {
			t.Errorf("%s: %s", d.Name, d.Status)
		}
		names = append(names, d.Name)
	}
	var want []string
	for rel := range files {
		want = append(want, rel)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("documents %q\nwant %q", names, want)
	}
	if n := count.n.Load(); n != 0 {
		t.Fatalf("the server refused %d of the console's requests (429): the console does not keep to the default limit", n)
	}
	e.noPageErrors()
}

// failUploads answers 503 to the first n uploads of a document named name
// (more than the console's automatic retries), as a server restarting
// would.
func failUploads(name string, n int) wrapHandler {
	var mu sync.Mutex
	left := n
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/documents") {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				mu.Lock()
				fail := left > 0 && bytes.Contains(body, []byte(`filename="`+name+`"`))
				if fail {
					left--
				}
				mu.Unlock()
				if fail {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusServiceUnavailable)
					io.WriteString(w, `{"error":{"code":"unavailable","message":"the server is restarting"}}`)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// TestUploadRetries: under a rate limit far below the console's pace,
// every file of a drop still arrives (the 429s are waited out with their
// Retry-After), and a screen opened while the key is rate limited loads
// (its requests wait too) instead of showing the error. A file whose
// upload keeps failing past the automatic retries keeps a row with the
// server's reason and a Retry button that uploads it; each drop is
// counted on its own.
func TestUploadRetries(t *testing.T) {
	var count refusals
	e := newEnv(t, rateLimit(2, 4, &count), failUploads("flaky.md", 4))
	var kb struct{ ID string }
	e.api(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "notes"}, &kb)
	dir := t.TempDir()
	files := map[string]string{"flaky.md": "# Flaky\n\nThis one fails at first.\n"}
	for i := range 24 {
		files[fmt.Sprintf("n%02d.md", i)] = fmt.Sprintf("# Note %d\n\nNote %d.\n", i, i)
	}
	writeTree(t, dir, files)
	var paths []string
	for rel := range files {
		paths = append(paths, filepath.Join(dir, rel))
	}
	e.signIn(e.admin)
	e.goTo("#/knowledge/" + kb.ID)
	e.do(
		chromedp.WaitVisible(chromedp.CSS(`.kb-detail .drop`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#kb-files`), paths),
	)
	e.until("the drop answered", uploadDone)
	if s := e.text(".upload-summary"); s != "25 files: 24 added, 1 failed; 24 ready" {
		t.Fatalf("summary %q", s)
	}
	if count.n.Load() == 0 {
		t.Fatal("the server refused nothing: the test did not exercise the retries")
	}
	row := `document.querySelector('ul.progress li[data-name="flaky.md"]')`
	if got := eval[string](e, row+`.textContent`); !strings.Contains(got, "the server is restarting") {
		t.Fatalf("failed row %q", got)
	}
	if eval[bool](e, row+`.querySelector('progress').checkVisibility()`) {
		t.Fatal("the failed row still shows a progress bar")
	}
	e.do(chromedp.Click(chromedp.CSS(`button[aria-label="Retry flaky.md"]`)))
	e.until("the retried file ready", row+`.dataset.status === 'ready' && `+uploadDone)
	if s := e.text(".upload-summary"); s != "25 files: 25 added; 25 ready" {
		t.Fatalf("summary after the retry %q", s)
	}

	// A second drop is counted on its own.
	e.do(chromedp.SetUploadFiles(chromedp.CSS(`#kb-files`), paths[:3]))
	e.until("the second drop answered", `document.querySelectorAll('.upload-batch').length === 2 && `+uploadDone)
	if s := e.text(".upload-summary"); s != "3 files: 3 unchanged; 3 ready" {
		t.Fatalf("second drop's summary %q", s)
	}

	// Spend the key's bucket, then open a screen: it waits, then loads.
	for e.api(e.admin, "GET", "/v1/me", nil, nil) != http.StatusTooManyRequests {
	}
	e.goTo("#/agents")
	e.until("the agents screen loaded", `document.querySelector('form.agent-form') !== null`)
	if got := e.text("main"); strings.Contains(got, "rate limit") {
		t.Fatalf("the screen shows the rate limit: %q", got)
	}
	e.noPageErrors()
}
