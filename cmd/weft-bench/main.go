// Command weft-bench measures weft serve as a whole system, against a
// zero-latency fake model (llmtest) on loopback, and prints one table:
//
//  1. the latency a non-streamed chat turn adds to the model call, p50 and
//     p99, at a fixed offered rate (open loop: requests are scheduled on a
//     timeline and measured from their scheduled time, so a slow server
//     cannot hide its slowness by slowing the generator), against a direct
//     call to the same upstream with the same client, with the embedded
//     stores and, given --redis, with Redis sessions. Every turn goes to an
//     existing session whose window holds 10 earlier turns, so the window
//     load and both appends happen;
//  2. streamed turns per second (50 chunks an answer, persistence on) with
//     --concurrency clients in a closed loop, against a plain net/http SSE
//     relay of the same upstream in the same run;
//  3. the resident memory of a weft serve process (this binary re-executed
//     in server mode, running platform.Run) with --streams concurrent
//     streams held open by a slow upstream, in total and per stream.
//
// Usage:
//
//	go run ./cmd/weft-bench [--duration 5s] [--rate 2000] [--concurrency 32]
//	    [--streams 1000] [--redis redis://127.0.0.1:6379/0] [--json]
//	    [--only latency,stream,rss] [--cpuprofile FILE]
//
// With --json the table goes to stderr and the results, as JSON, to
// stdout. The load generator, the fake upstream and (for 1 and 2) weft
// share one process and the machine's cores: the figures are relative to
// their peers in the same run more than absolute.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"
)

// options are the command's flags.
type options struct {
	duration    time.Duration
	rate        float64
	concurrency int
	streams     int
	redisURL    string
	json        bool
	only        map[string]bool
	cpuprofile  string
	sessions    int
	history     int
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("weft-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measured run (a full run takes about 15 of them plus a minute)")
	fs.Float64Var(&o.rate, "rate", 2000, "offered rate of non-streamed turns, per second (open loop)")
	fs.IntVar(&o.concurrency, "concurrency", 32, "concurrent clients of the streaming runs (closed loop)")
	fs.IntVar(&o.streams, "streams", 1000, "concurrent streams of the memory measurement")
	fs.StringVar(&o.redisURL, "redis", "", "Redis URL: adds runs with Redis sessions (e.g. redis://127.0.0.1:6379/0)")
	fs.BoolVar(&o.json, "json", false, "print the results as JSON on stdout (the table goes to stderr)")
	only := fs.String("only", "latency,stream,rss", "comma-separated measurements to run: latency, stream, rss")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the latency and streaming runs (weft in-process) to this file")
	fs.IntVar(&o.sessions, "sessions", 256, "sessions the non-streamed turns are spread over")
	fs.IntVar(&o.history, "history", 10, "earlier turns in each session's window")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (all settings are flags; see -h)", fs.Arg(0))
	}
	o.only = map[string]bool{}
	for _, m := range strings.Split(*only, ",") {
		switch m = strings.TrimSpace(m); m {
		case "latency", "stream", "rss":
			o.only[m] = true
		case "":
		default:
			return o, fmt.Errorf("--only: unknown measurement %q (want latency, stream or rss)", m)
		}
	}
	switch {
	case o.duration < 100*time.Millisecond:
		return o, errors.New("--duration must be at least 100ms")
	case o.rate <= 0:
		return o, errors.New("--rate must be positive")
	case o.concurrency < 1:
		return o, errors.New("--concurrency must be at least 1")
	case o.streams < 1:
		return o, errors.New("--streams must be at least 1")
	case o.sessions < 1:
		return o, errors.New("--sessions must be at least 1")
	case o.history < 0:
		return o, errors.New("--history must not be negative")
	}
	return o, nil
}

func main() {
	if dir := os.Getenv(serverEnv); dir != "" {
		if err := serveMode(dir); err != nil {
			fmt.Fprintln(os.Stderr, "weft-bench server:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "weft-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	table := io.Writer(os.Stdout)
	if o.json {
		table = os.Stderr
	}
	rep := &report{
		Command:    "weft-bench " + strings.Join(os.Args[1:], " "),
		Date:       time.Now().UTC().Format(time.RFC3339),
		GoVersion:  runtime.Version(),
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	if strings.TrimSpace(rep.Command) == "weft-bench" {
		rep.Command = "weft-bench"
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "weft-bench:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "weft-bench:", err)
			os.Exit(1)
		}
	}
	err = run(ctx, o, rep, os.Stderr)
	if o.cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	rep.print(table)
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "weft-bench:", err)
		os.Exit(1)
	}
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
