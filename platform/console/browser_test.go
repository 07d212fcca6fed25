package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// The browser tests drive Debian's Chromium, headless, against a real
// platform server (in-process, over a loopback socket) with the offline
// scripted model. They skip when Chromium is absent, unless
// WEFT_TEST_CHROMIUM=1 (set by .ci/run), which makes a missing browser a
// failure.

// Markers in a chat query steer the gated model (see gatedModel).
const (
	markGate = "[gate]" // stream the first word, then wait for the test
	markHold = "[hold]" // stream the first word, then wait for the turn to be cancelled
	markLong = "[long]" // stream a 2,000-token Markdown answer
	markFail = "[fail]" // fail before any text, as an overloaded upstream does
)

// gatedModel is the scripted demo model with a hand on its stream: the test
// decides when a gated answer continues, so "deltas appear before the turn
// completes" is observed, not timed.
type gatedModel struct {
	demo *scripted.Model
	gate chan struct{}
}

func (m *gatedModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return m.demo.Generate(ctx, req)
}

func (m *gatedModel) Embed(ctx context.Context, req *llm.EmbedRequest) (*llm.EmbedResponse, error) {
	return m.demo.Embed(ctx, req)
}

func lastUser(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Text()
		}
	}
	return ""
}

// longAnswer is a 2,000-word Markdown answer: paragraphs, a list, code and
// emphasis, streamed one word at a time.
func longAnswer() []string {
	var words []string
	for i := 0; len(words) < 2000; i++ {
		switch i % 4 {
		case 0:
			words = append(words, "## Part ", fmt.Sprint(i/4+1), "\n\n")
		case 1:
			for j := 0; j < 60; j++ {
				w := fmt.Sprintf("word%d ", j)
				if j%15 == 7 {
					w = fmt.Sprintf("**bold%d** ", j)
				}
				words = append(words, w)
			}
			words = append(words, "\n\n")
		case 2:
			for j := 0; j < 5; j++ {
				words = append(words, "- item ", fmt.Sprint(j), " with `code`\n")
			}
			words = append(words, "\n")
		case 3:
			words = append(words, "```go\n", "x := 1\n", "```\n\n")
		}
	}
	return words[:2000]
}

func (m *gatedModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	q := lastUser(req)
	if strings.Contains(q, markLong) {
		return func(yield func(llm.Chunk, error) bool) {
			for _, w := range longAnswer() {
				if !yield(llm.TextChunk(w), nil) {
					return
				}
			}
			yield(llm.UsageChunk(llm.Usage{PromptTokens: 10, CompletionTokens: 2000, TotalTokens: 2010}), nil)
			yield(llm.Chunk{Type: llm.ChunkFinish, FinishReason: llm.FinishStop}, nil)
		}
	}
	if strings.Contains(q, markFail) {
		return func(yield func(llm.Chunk, error) bool) {
			yield(llm.Chunk{}, errors.New("upstream: 529 overloaded"))
		}
	}
	inner := m.demo.Stream(ctx, req)
	return func(yield func(llm.Chunk, error) bool) {
		texts := 0
		for c, err := range inner {
			if !yield(c, err) || err != nil {
				return
			}
			if c.Type != llm.ChunkText {
				continue
			}
			texts++
			if texts != 1 {
				continue
			}
			switch {
			case strings.Contains(q, markGate):
				select {
				case <-m.gate:
				case <-ctx.Done():
					yield(llm.Chunk{}, ctx.Err())
					return
				}
			case strings.Contains(q, markHold):
				<-ctx.Done()
				yield(llm.Chunk{}, ctx.Err())
				return
			}
		}
	}
}

// browser is the Chromium shared by the tests of this package (one process,
// a fresh tab per test).
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	if browser.dir != "" {
		os.RemoveAll(browser.dir)
	}
	os.Exit(code)
}

func chromiumPath() string {
	for _, p := range []string{os.Getenv("WEFT_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// startBrowser starts (once) the shared headless Chromium.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("WEFT_TEST_CHROMIUM") == "1" {
			t.Fatal("WEFT_TEST_CHROMIUM=1 but no Chromium found (apt-get install chromium, or set WEFT_CHROMIUM)")
		}
		t.Skip("no Chromium: install Debian's chromium (or set WEFT_CHROMIUM) to run the browser tests")
	}
	browser.once.Do(func() {
		browser.dir, browser.err = os.MkdirTemp("", "weft-chromium-")
		if browser.err != nil {
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("disable-extensions", true),
			chromedp.Flag("disable-background-timer-throttling", true),
			chromedp.Flag("disable-renderer-backgrounding", true),
			chromedp.Flag("disable-backgrounding-occluded-windows", true),
			chromedp.WindowSize(1366, 820),
			chromedp.UserDataDir(browser.dir),
		}
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		// Start the browser now, with its own first tab.
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			cancel()
			cancelAlloc()
			browser.err = err
			return
		}
		browser.ctx = ctx
		browser.cancel = func() { cancel(); cancelAlloc() }
	})
	if browser.err != nil {
		t.Fatalf("start Chromium: %v", browser.err)
	}
	return browser.ctx
}

// env is one test's server and browser tab.
type env struct {
	t     *testing.T
	url   string
	admin string
	srv   *platform.Server
	model *gatedModel
	tab   context.Context
	// errs collects uncaught exceptions and console errors of the page.
	mu   sync.Mutex
	errs []string
}

// wrapHandler is an option of newEnv that puts a handler in front of the
// server (to delay or fail requests as a network would).
type wrapHandler func(http.Handler) http.Handler

// newEnv starts a server and opens a tab on its console. Options are
// func(*platform.Config), adjusting the server's configuration, and
// wrapHandler.
func newEnv(t *testing.T, opts ...any) *env {
	t.Helper()
	bctx := startBrowser(t)
	ctx := context.Background()
	store, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	admin, err := platform.Bootstrap(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	model := &gatedModel{demo: scripted.Demo(scripted.RecordRequests(false)), gate: make(chan struct{})}
	cfg := platform.Config{
		Meta:                  store,
		Sessions:              memory.NewInMemory(),
		Logger:                slog.New(slog.NewTextHandler(io.Discard, nil)),
		DefaultModel:          "scripted/demo",
		DefaultEmbeddingModel: "scripted/embed",
		OpenModel: func(spec string) (*llm.Model, error) {
			return llm.New(model, llm.WithName(spec), llm.WithRetries(0)), nil
		},
		RateLimit: -1,
	}
	var handler http.Handler
	var wraps []wrapHandler
	for _, o := range opts {
		switch o := o.(type) {
		case func(*platform.Config):
			o(&cfg)
		case wrapHandler:
			wraps = append(wraps, o)
		default:
			t.Fatalf("newEnv: option of type %T", o)
		}
	}
	srv, err := platform.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	handler = srv
	for _, w := range wraps {
		handler = w(handler)
	}
	hs := httptest.NewServer(handler)
	e := &env{t: t, url: hs.URL, admin: admin, srv: srv, model: model}
	tab, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	e.tab = tab
	err = chromedp.Listen(tab, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			e.mu.Lock()
			msg := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
			e.errs = append(e.errs, "exception: "+msg)
			e.mu.Unlock()
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				e.mu.Lock()
				e.errs = append(e.errs, "console.error: "+strings.Join(parts, " "))
				e.mu.Unlock()
			}
		}
	})
	if err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			e.screenshots()
		}
		cancel()
		hs.Close()
		srv.Close()
	})
	e.do(chromedp.Navigate(e.url + "/"))
	return e
}

// do runs browser actions, failing the test on error. Each step is bounded
// (a guard against a hung browser, not a timing assertion).
func (e *env) do(actions ...chromedp.Action[chromedp.Void]) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.tab, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		e.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](e *env, expr string) T {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.tab, 90*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		e.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// until waits for a JavaScript predicate to hold (checked on DOM mutations).
func (e *env) until(what, expr string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.tab, 90*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0)))
	if err != nil {
		e.t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// text returns the text of the first element matching a CSS selector.
func (e *env) text(sel string) string {
	e.t.Helper()
	return eval[string](e, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ''`, sel))
}

// noPageErrors fails the test when the page threw or logged an error.
func (e *env) noPageErrors() {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.errs) > 0 {
		e.t.Fatalf("page errors:\n%s", strings.Join(e.errs, "\n"))
	}
}

// waitSignIn waits for the sign-in form.
func waitSignIn() chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(`form.signin input[type=password]`))
}

// signIn signs in through the form.
func (e *env) signIn(key string) {
	e.t.Helper()
	e.do(
		chromedp.WaitVisible(chromedp.CSS(`form.signin input[type=password]`)),
		chromedp.SendKeys(chromedp.CSS(`form.signin input[type=password]`), key),
		submit(`form.signin`),
		chromedp.WaitVisible(chromedp.CSS(`header.top`)),
	)
}

// submit submits a form as a user does (form.submit() would skip the
// console's submit handler).
func submit(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).requestSubmit()`, sel))
}

// goTo opens a screen by its hash.
func (e *env) goTo(hash string) {
	e.t.Helper()
	e.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, hash)))
}

// api calls the API directly with key (setting up and checking state
// beside the browser).
func (e *env) api(key, method, path string, body, out any) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil && !errors.Is(err, io.EOF) {
			e.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// screenshots saves the current page and each screen of the console under
// testdata/failures (not committed), for a failed test.
func (e *env) screenshots() {
	dir := filepath.Join("testdata", "failures")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Logf("screenshots: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(e.tab, 60*time.Second)
	defer cancel()
	save := func(name string) {
		b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			e.t.Logf("screenshot %s: %v", name, err)
			return
		}
		p := filepath.Join(dir, strings.ReplaceAll(e.t.Name(), "/", "_")+"-"+name+".png")
		if err := os.WriteFile(p, b, 0o644); err == nil {
			e.t.Logf("screenshot: %s", p)
		}
	}
	save("0-current")
	for i, s := range []string{"chat", "agents", "knowledge", "tools", "sessions", "keys"} {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/%s'`, s))); err != nil {
			return
		}
		chromedp.Run(ctx, chromedp.Sleep(300*time.Millisecond)) // let the screen load before the picture
		save(fmt.Sprintf("%d-%s", i+1, s))
	}
}
