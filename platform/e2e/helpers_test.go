package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/all"
)

// repoRoot is the module's root directory.
func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// TestMain removes the binary built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// weftBinary builds cmd/weft once per test run and returns its path.
func weftBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "weft-e2e-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "weft")
		cmd := exec.Command("go", "build", "-o", buildBin, "./cmd/weft")
		cmd.Dir = repoRoot(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/weft: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// proc is a running `weft serve` process.
type proc struct {
	t    testing.TB
	cmd  *exec.Cmd
	addr string
	// exited is closed when the process has exited; err is its Wait error.
	exited chan struct{}
	err    error

	mu   sync.Mutex
	logs []string
}

// listenRe finds the address in the "weft serve listening" line of a text
// or JSON log.
var listenRe = regexp.MustCompile(`weft serve listening.*?"?addr"?[=:]"?([0-9.]+:[0-9]+)`)

// startServe starts `weft serve` with args in dir (a temporary directory
// when ""), with only PATH, HOME and vars as its environment, and waits
// until it listens.
func startServe(t testing.TB, dir string, vars map[string]string, args ...string) *proc {
	t.Helper()
	bin := weftBinary(t)
	if dir == "" {
		dir = t.TempDir()
	}
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, exited: make(chan struct{})}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs = append(p.logs, line)
			p.mu.Unlock()
			if m := listenRe.FindStringSubmatch(line); m != nil {
				select {
				case listening <- m[1]:
				default:
				}
			}
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("weft serve %v log:\n%s", args, p.log())
		}
	})
	select {
	case p.addr = <-listening:
	case <-p.exited:
		t.Fatalf("weft serve exited before listening (%v):\n%s", p.err, p.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("weft serve did not listen within 60 s:\n%s", p.log())
	}
	return p
}

// url is the process's base URL.
func (p *proc) url() string { return "http://" + p.addr }

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs, "\n")
}

// signal sends sig and returns how long the process took to exit, failing
// the test when it takes longer than limit.
func (p *proc) signal(sig syscall.Signal, limit time.Duration) time.Duration {
	p.t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.exited:
		return time.Since(start)
	case <-time.After(limit):
		p.t.Fatalf("weft serve did not exit within %v of %v:\n%s", limit, sig, p.log())
		return 0
	}
}

// upstreamVars points a process's OpenAI provider at the fake upstream.
func upstreamVars(up *llmtest.Server) map[string]string {
	return map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": up.URL()}
}

// inProcess starts a platform server in the test process, on a real
// loopback port, over embedded stores; its models are opened against the
// fake upstream. It returns the server's URL and the admin key.
func inProcess(t testing.TB, up *llmtest.Server) (string, string) {
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
	srv, err := platform.New(platform.Config{
		Meta: store, Sessions: memory.NewInMemory(), RateLimit: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OpenModel: func(spec string) (*llm.Model, error) {
			return provider.Open(spec, provider.WithAPIKey("sk-test"), provider.WithBaseURL(up.URL()), provider.WithModelOptions(llm.WithRetries(0)))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); store.Close() })
	return hs.URL, key
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// nodePackage returns node and the folder testdata/<folder>, where npm
// package pkg (what names it in messages) is pinned. Without node or the
// installed package the test is skipped, or fails with WEFT_TEST_NODE=1
// (as .ci/run sets it after npm ci).
func nodePackage(t *testing.T, folder, pkg, what string) (node, dir string) {
	t.Helper()
	dir = filepath.Join(repoRoot(t), "platform", "e2e", "testdata", folder)
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"))
	}
	if err != nil {
		if os.Getenv("WEFT_TEST_NODE") == "1" {
			t.Fatalf("WEFT_TEST_NODE=1 but %s is not installed (%v): run npm ci in %s", what, err, dir)
		}
		t.Skipf("%s is not installed (%v); run npm ci --no-audit --no-fund in %s, or .ci/run", what, err, dir)
	}
	return node, dir
}

// runNode runs `node script.mjs` in dir with env (beside PATH and a
// temporary HOME) and returns its standard output.
func runNode(t *testing.T, node, dir string, env ...string) []byte {
	t.Helper()
	return runNodeScript(t, node, dir, "script.mjs", env...)
}

// runNodeScript runs `node script` as runNode runs script.mjs.
func runNodeScript(t *testing.T, node, dir, script string, env ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), node, script)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	return out
}
