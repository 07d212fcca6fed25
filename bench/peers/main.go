// Command peers compares weft serve with peer Go agent servers on one
// machine in one run, behind the same zero-latency fake OpenAI upstream
// (llmtest, in the harness process), each server in its own process so its
// CPU time is its own:
//
//   - weft, SQLite: the native chat API, SQLite metadata and sessions (every turn persisted);
//   - weft, Redis: the same with Redis sessions (given -redis);
//   - ADK: google/adk-go's REST server (adkrest) with ADK's in-memory sessions
//     (nothing persisted), over a chat-completions model adapter; it is built
//     from bench/adkserver, a module of its own (see its doc);
//   - trpc-agent-go: its OpenAI-compatible server with its in-memory sessions
//     (nothing persisted); the history travels in each request, as that API wants.
//
// For each history length (-histories, default "0,10" earlier turns) it
// measures non-streamed turns in an open loop at -rate (latency from the
// scheduled send): p50, p99, their excess over a direct call to the
// upstream carrying the same messages, and the server process's CPU time
// per turn. With 0 turns each request is a new conversation (ADK's
// sessions are created before the run: adkrest does not create them on
// /run); with 10, each of 64 conversations holds 10 earlier turns, made
// through each server's API. Then streamed turns (a 50-word echo, 50
// chunks) in a closed loop of -concurrency clients on new conversations,
// against a plain net/http SSE relay.
//
//	cd bench && go run ./peers -redis redis://127.0.0.1:6379/0 [-rate 1000] [-duration 5s] [-cpuprofile DIR]
//
// With -cpuprofile each weft, trpc-agent-go and relay server process writes
// its CPU profile to DIR/<target>-<pid>.pprof (read them with the harness's
// binary: go build -o peers ./peers; go tool pprof peers DIR/weft-redis-*.pprof).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weftlabs/weft/llmtest"
)

func main() {
	if t := os.Getenv(envServe); t != "" {
		if err := serve(t); err != nil {
			fmt.Fprintln(os.Stderr, "peers server:", err)
			os.Exit(1)
		}
		return
	}
	rate := flag.Float64("rate", 1000, "offered rate of non-streamed turns, per second (open loop)")
	duration := flag.Duration("duration", 5*time.Second, "length of each measured run")
	concurrency := flag.Int("concurrency", 32, "clients of the streaming runs (closed loop)")
	redisURL := flag.String("redis", "", "Redis URL: adds weft with Redis sessions")
	histories := flag.String("histories", "0,10", "earlier turns per conversation, one run each")
	only := flag.String("targets", "weft-sqlite,weft-redis,adk,trpc", "targets to run")
	flag.StringVar(&profileDir, "cpuprofile", "", "directory for the CPU profiles of the server processes written in Go here (not ADK's)")
	adk := flag.String("adkserver", "", "a built bench/adkserver binary (default: built from ./adkserver, so run from bench/)")
	flag.Parse()
	if err := buildADK(*adk); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
	if err := run(context.Background(), *rate, *duration, *concurrency, *redisURL, *histories, *only); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// profileDir is where server processes write CPU profiles ("" for none).
var profileDir string

// adkBinary is the ADK server's executable (its own module: see
// adkserver/main.go).
var adkBinary string

func buildADK(path string) error {
	if path != "" {
		adkBinary = path
		return nil
	}
	dir, err := os.MkdirTemp("", "weft-peers-adk-")
	if err != nil {
		return err
	}
	adkBinary = filepath.Join(dir, "adkserver")
	cmd := exec.Command("go", "build", "-o", adkBinary, ".")
	cmd.Dir = "adkserver"
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build ./adkserver (run from bench/ or pass -adkserver): %w", err)
	}
	return nil
}

// child is a target's server process.
type child struct {
	name, url string
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	cpu       func() time.Duration
}

func start(name, upstream, redisURL string) (*child, error) {
	dir, err := os.MkdirTemp("", "weft-peers-")
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if name == "adk" {
		exe = adkBinary
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envServe+"="+name, envUpstream+"="+upstream, envDir+"="+dir, envRedis+"="+redisURL, envProfile+"="+profileDir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "LISTEN ") {
		cmd.Process.Kill()
		return nil, fmt.Errorf("%s did not start: %q %v", name, line, err)
	}
	go io.Copy(io.Discard, out)
	c := &child{name: name, url: strings.TrimSpace(strings.TrimPrefix(line, "LISTEN ")), cmd: cmd, stdin: stdin, cpu: procCPU(cmd.Process.Pid)}
	go func() { cmd.Wait(); os.RemoveAll(dir) }()
	return c, nil
}

func (c *child) stop() { c.stdin.Close() }

var labels = map[string]string{
	"weft-sqlite": "weft, SQLite (persisted)",
	"weft-redis":  "weft, Redis sessions (persisted)",
	"adk":         "ADK adkrest (in-memory)",
	"trpc":        "trpc-agent-go OpenAI server (in-memory)",
}

func run(ctx context.Context, rate float64, d time.Duration, concurrency int, redisURL, histories, only string) error {
	up := llmtest.NewServer()
	defer up.Close()
	up.SetRecording(false)
	var names []string
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		if n == "weft-redis" && redisURL == "" {
			continue
		}
		if _, ok := labels[n]; ok {
			names = append(names, n)
		}
	}
	c := newClient()
	var firstErrs []string
	fmt.Printf("peers: %s, rate %.0f/s, %s per run, %d streaming clients\n", time.Now().UTC().Format(time.RFC3339), rate, d, concurrency)
	for _, hs := range strings.Split(histories, ",") {
		var h int
		fmt.Sscan(strings.TrimSpace(hs), &h)
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Printf("\nNon-streamed turns at %.0f/s, %d earlier turns per conversation\n", rate, h)
		fmt.Fprintln(tw, "target\tachieved/s\terrors\tp50\tp99\tadded p50\tadded p99\tserver CPU/turn\t")
		for _, name := range names {
			t, err := newTarget(ctx, name, up.URL(), redisURL, c)
			if err != nil {
				return err
			}
			convs, err := t.prepare(ctx, h, int(rate*(d.Seconds()+1))+16)
			if err != nil {
				t.proc.stop()
				return fmt.Errorf("%s: prepare: %w", name, err)
			}
			// The direct call carries what the target sends upstream.
			direct := func(ctx context.Context, i int) error { return directCall(ctx, c, up.URL(), convs.upstreamMessages(i)) }
			openLoop(ctx, rate, time.Second, nil, direct)
			base := openLoop(ctx, rate, d, nil, direct)
			do := func(ctx context.Context, i int) error { return t.turn(ctx, convs, i) }
			openLoop(ctx, rate, time.Second, nil, func(ctx context.Context, i int) error { return t.turn(ctx, convs, i+1<<30) })
			r := openLoop(ctx, rate, d, t.proc.cpu, do)
			t.proc.stop()
			fmt.Fprintf(tw, "direct → upstream\t%.0f\t%d\t%s\t%s\t\t\t\t\n", base.Achieved, base.Errors, fmtDur(base.pct(.5)), fmtDur(base.pct(.99)))
			fmt.Fprintf(tw, "%s\t%.0f\t%d\t%s\t%s\t%s\t%s\t%s\t\n", labels[name], r.Achieved, r.Errors, fmtDur(r.pct(.5)), fmtDur(r.pct(.99)),
				fmtDur(r.pct(.5)-base.pct(.5)), fmtDur(r.pct(.99)-base.pct(.99)), fmtDur(r.cpuPerTurn()))
			if r.FirstError != "" {
				firstErrs = append(firstErrs, fmt.Sprintf("first error of %s: %.300s", labels[name], r.FirstError))
			}
		}
		tw.Flush()
		for _, e := range firstErrs {
			fmt.Println(e)
		}
		firstErrs = nil
	}

	fmt.Printf("\nStreamed turns (50-chunk echo), %d clients, closed loop, new conversations\n", concurrency)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tturns/s\terrors\tp50\tp99\tserver CPU/turn\tof relay\t")
	relayProc, err := start("relay", up.URL(), "")
	if err != nil {
		return err
	}
	rr := closedLoop(ctx, concurrency, d, relayProc.cpu, func(ctx context.Context, w int) error {
		return relayStream(ctx, c, relayProc.url, longQuery(w))
	})
	relayProc.stop()
	fmt.Fprintf(tw, "net/http SSE relay\t%.0f\t%d\t%s\t%s\t%s\t\t\n", rr.Achieved, rr.Errors, fmtDur(rr.pct(.5)), fmtDur(rr.pct(.99)), fmtDur(rr.cpuPerTurn()))
	for _, name := range names {
		t, err := newTarget(ctx, name, up.URL(), redisURL, c)
		if err != nil {
			return err
		}
		convs, err := t.prepare(ctx, 0, 40000)
		if err != nil {
			t.proc.stop()
			return err
		}
		var seq int64
		var mu = make(chan struct{}, 1)
		next := func() int {
			mu <- struct{}{}
			seq++
			v := seq
			<-mu
			return int(v)
		}
		r := closedLoop(ctx, concurrency, d, t.proc.cpu, func(ctx context.Context, w int) error {
			return t.stream(ctx, convs, next())
		})
		t.proc.stop()
		of := ""
		if rr.Achieved > 0 {
			of = fmt.Sprintf("%.0f%%", 100*r.Achieved/rr.Achieved)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%d\t%s\t%s\t%s\t%s\t\n", labels[name], r.Achieved, r.Errors, fmtDur(r.pct(.5)), fmtDur(r.pct(.99)), fmtDur(r.cpuPerTurn()), of)
		if r.FirstError != "" {
			firstErrs = append(firstErrs, fmt.Sprintf("first error of %s: %.300s", labels[name], r.FirstError))
		}
	}
	tw.Flush()
	for _, e := range firstErrs {
		fmt.Println(e)
	}
	fmt.Println("\nLatencies are from the scheduled send; added = target − direct call at the same rate, same run.")
	fmt.Println("Server CPU/turn is the target process's CPU time (user+system, /proc, 10 ms ticks) per completed turn.")
	return nil
}
