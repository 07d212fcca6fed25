// Command evals runs the example eval suites offline: a Weft server in
// the process from weft.yaml (an online shop's support agent with a
// handbook and three tools, and a triage workflow), every model call
// replayed from the cassettes under testdata/cassettes. It prints the
// summary table, writes JUnit XML with -junit, and exits 1 when a case
// fails. `weft eval run` does the same from the command line:
//
//	go run ./examples/evals -junit junit.xml
//	weft eval run examples/evals/support.yaml examples/evals/triage.yaml \
//	    --config examples/evals/weft.yaml --judge-model openai/gpt-4o-mini
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weftlabs/weft/eval"
	"github.com/weftlabs/weft/eval/inproc"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform/config"
	_ "github.com/weftlabs/weft/provider/all"
)

// suites are the example's suites, relative to its directory: Weft's
// own, an ADK evalset and a trpc-agent-go evalset over the same agent.
var suites = []string{"support.yaml", "triage.yaml", "adk/support.evalset.json", "trpc/orders.evalset.json"}

func main() {
	junit := flag.String("junit", "", "write a JUnit XML report to this file")
	dir := flag.String("dir", "examples/evals", "the example's directory")
	flag.Parse()
	cas := eval.NewCassettes(filepath.Join(*dir, "testdata", "cassettes"), llmtest.Replay, nil)
	report, err := runSuites(context.Background(), *dir, cas, os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "evals:", err)
		os.Exit(2)
	}
	report.WriteTable(os.Stdout, nil)
	if *junit != "" {
		if err := writeJUnit(report, *junit); err != nil {
			fmt.Fprintln(os.Stderr, "evals:", err)
			os.Exit(2)
		}
	}
	if _, failed := report.Counts(); failed > 0 {
		os.Exit(1)
	}
}

// runSuites runs the example's suites in a server started from weft.yaml,
// its model calls through cas.
func runSuites(ctx context.Context, dir string, cas *eval.Cassettes, getenv func(string) string) (*eval.Report, error) {
	cfg, err := config.Load(filepath.Join(dir, "weft.yaml"), nil)
	if err != nil {
		return nil, err
	}
	srv, err := inproc.Start(ctx, inproc.Options{Config: cfg, Cassettes: cas, Getenv: getenv})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	mode := "replay"
	if cas.Recording() {
		mode = "record"
	}
	report := &eval.Report{Started: time.Now(), Mode: mode}
	for _, name := range suites {
		s, err := eval.LoadAs(filepath.Join(dir, name), "support")
		if err != nil {
			return nil, err
		}
		if err := srv.Setup(ctx, s); err != nil {
			return nil, err
		}
		res, err := eval.Run(ctx, srv, s, eval.WithCassettes(cas), eval.WithJudgeOpener(srv.OpenModel),
			eval.WithJudgeModel("openai/gpt-4o-mini"))
		if err != nil {
			return nil, err
		}
		report.Suites = append(report.Suites, res)
	}
	report.Duration = time.Since(report.Started)
	return report, nil
}

func writeJUnit(r *eval.Report, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.WriteJUnit(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
