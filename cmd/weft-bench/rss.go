package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform"
)

// serverEnv names the variable that turns the harness into a weft server
// (platform.Run, which is what weft serve runs) for the RSS measurement: its
// value is the data directory.
const serverEnv = "WEFT_BENCH_SERVER_DATA"

// serveMode runs weft serve's server until SIGTERM, printing "listening
// ADDR" on stdout once it accepts connections. The model provider comes
// from OPENAI_BASE_URL, as in weft serve.
func serveMode(dataDir string) error {
	raiseFileLimit()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return platform.Run(ctx, platform.Options{
		Addr:         "127.0.0.1:0",
		DataDir:      dataDir,
		AdminKey:     adminKey,
		DefaultModel: benchModel,
		RateLimit:    -1,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Ready:        func(addr string) { fmt.Printf("listening %s\n", addr) },
	})
}

// raiseFileLimit raises the soft limit of open files to the hard limit:
// a thousand streams need two thousand sockets in each process.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

// rssResult is the memory measurement of a weft serve process.
type rssResult struct {
	Streams int `json:"streams"`
	// MidStream is how many streams had received their first delta, and
	// none had ended, when RSS was sampled.
	MidStream int     `json:"mid_stream"`
	IdleMB    float64 `json:"idle_mb"`
	LoadedMB  float64 `json:"loaded_mb"`
	PeakMB    float64 `json:"peak_mb"`
	// PerStreamKB is (loaded − idle) / streams.
	PerStreamKB float64 `json:"per_stream_kb"`
	// Goroutines is the server's go_goroutines gauge at the sample.
	Goroutines int    `json:"goroutines,omitempty"`
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

// measureRSS starts weft serve as a child process (this binary in server
// mode) against an upstream that streams slowly, opens n streaming turns,
// and samples the child's VmRSS when all are mid-stream.
func measureRSS(ctx context.Context, n int) (*rssResult, error) {
	raiseFileLimit()
	up := llmtest.NewServer()
	defer up.Close()
	up.SetRecording(false)

	dir, err := os.MkdirTemp("", "weft-bench-rss-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serverEnv+"="+dir, "OPENAI_BASE_URL="+up.URL(), "OPENAI_API_KEY=bench")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				addrc <- a
			}
		}
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a
	case <-exited:
		return nil, errors.New("weft server exited before listening")
	case <-time.After(30 * time.Second):
		return nil, errors.New("weft server did not listen within 30 s")
	}
	pid := cmd.Process.Pid

	c := newClient()
	window, reserve := windowTokens(longQuery(100000), 10)
	agent, err := createAgent(ctx, c, base, "rss", window, reserve)
	if err != nil {
		return nil, err
	}
	st := &weftStack{url: base, streamAgent: agent}
	// Warm up: the idle baseline is a server that has served turns, with
	// its pools and caches filled, but has none running.
	for i := 0; i < 50; i++ {
		if _, err := st.chatStream(ctx, c, "", longQuery(i)); err != nil {
			return nil, fmt.Errorf("warm-up turn: %w", err)
		}
	}
	time.Sleep(time.Second)
	idle, _, err := readRSS(pid)
	if err != nil {
		return nil, err
	}

	// Each answer is 50 chunks a second apart: far longer than opening the
	// streams takes, and the streams are cut once RSS is sampled.
	turns := make([]llmtest.Turn, n)
	for i := range turns {
		turns[i] = llmtest.Turn{Text: longQuery(i), Chunks: 50, ChunkDelay: time.Second}
	}
	up.Enqueue(turns...)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var started, ended, errs atomic.Int64
	var firstErr atomic.Pointer[string]
	allStarted := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := fmt.Appendf(nil, `{"stream":true,"query":%q}`, longQuery(i))
			_, err := stream(sctx, c, base+"/v1/agents/"+agent+"/chat", body, func() {
				if started.Add(1) == int64(n) {
					close(allStarted)
				}
			}, weftEvents)
			ended.Add(1)
			if err != nil && sctx.Err() == nil {
				if errs.Add(1) == 1 {
					s := err.Error()
					firstErr.Store(&s)
				}
			}
		}(i)
	}
	select {
	case <-allStarted:
	case <-time.After(40 * time.Second):
	case <-ctx.Done():
	}
	mid := int(started.Load() - ended.Load())
	loaded, peak, err := readRSS(pid)
	gor := goroutines(ctx, base)
	cancel()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	r := &rssResult{Streams: n, MidStream: mid, IdleMB: mb(idle), LoadedMB: mb(loaded), PeakMB: mb(peak),
		Goroutines: gor, Errors: int(errs.Load())}
	if p := firstErr.Load(); p != nil {
		r.FirstError = *p
	}
	if mid > 0 {
		r.PerStreamKB = float64(loaded-idle) / 1024 / float64(mid)
	}
	return r, nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// readRSS returns a process's resident set size and its peak, in bytes,
// from /proc/PID/status.
func readRSS(pid int) (rss, peak int64, err error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, fmt.Errorf("reading RSS (Linux only): %w", err)
	}
	defer f.Close()
	return parseStatus(f)
}

// parseStatus reads VmRSS and VmHWM from the text of /proc/PID/status.
func parseStatus(r io.Reader) (rss, peak int64, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("unexpected %s line %q", name, sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", name, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if rss == 0 {
		return 0, 0, errors.New("no VmRSS line in /proc status")
	}
	return rss, peak, nil
}

// goroutines reads the server's go_goroutines gauge from /metrics, or 0
// when it has none.
func goroutines(ctx context.Context, base string) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	return 0
}
