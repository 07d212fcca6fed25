package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/eval"
	"github.com/weftlabs/weft/eval/inproc"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/config"
	"github.com/weftlabs/weft/provider"
)

func newEvalCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Run test suites against agents and workflows",
		Long: `Run eval suites (docs/evals.md): cases of one or several turns with an agent,
or runs of a workflow, checked against expectations.`,
	}
	cmd.AddCommand(newEvalRunCmd(e))
	return cmd
}

type evalRunFlags struct {
	server, key, configPath string
	record                  bool
	cassettes               string
	judgeModel              string
	agent                   string
	junit, jsonOut, html    string
	baseline                string
	progress                bool
}

func newEvalRunCmd(e *env) *cobra.Command {
	var f evalRunFlags
	cmd := &cobra.Command{
		Use:   "run SUITE...",
		Short: "Run eval suites and report; exit 1 when a case fails",
		Long: `Run eval suites (files, or the suites of directories): Weft suites (YAML or JSON), ADK evalsets (*.evalset.json or
*.test.json, with test_config.json beside them) and trpc-agent-go evalsets
(*.evalset.json with *.metrics.json beside them).

In process (the default): a Weft server starts inside the command from a
configuration file (--config, default ./weft.yaml) over temporary stores; every
model call goes through cassettes, one per case under --cassettes. By default
they are replayed: nothing reaches a provider, and a request the cassette does
not hold, or a missing cassette, fails the case naming it. --record calls the
real providers and writes the cassettes. HTTP tools are answered by the cases'
mocks.

Against a server (--server URL): the server runs its own models and tools
(mocks cannot apply); only the judge's calls go through the cassettes.

A summary table goes to stdout; --junit, --json and --html write reports, and
--baseline (an earlier --json report) lists regressions.`,
		Example: `  weft eval run examples/evals/support.yaml --junit junit.xml
  weft eval run suites/*.yaml --config weft.yaml --record
  weft eval run adk/home.evalset.json --agent home --server http://localhost:8080 --key $KEY
  weft eval run suites/ --json now.json --baseline last.json --html report.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runEval(cmd, e, &f, args) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.server, "server", "", "run against this server's API instead of in process")
	fl.StringVar(&f.key, "key", "", "API key of --server (default $WEFT_API_KEY)")
	fl.StringVar(&f.configPath, "config", "", "configuration of the in-process server (default ./weft.yaml)")
	fl.BoolVar(&f.record, "record", false, "call the real providers and record the cassettes")
	fl.StringVar(&f.cassettes, "cassettes", "", "cassette directory (default testdata/cassettes beside the first suite)")
	fl.StringVar(&f.judgeModel, "judge-model", "", "judge model, overriding the suites' (provider/model or an alias)")
	fl.StringVar(&f.agent, "agent", "", "agent of imported evalsets (default: their app name)")
	fl.StringVar(&f.junit, "junit", "", "write a JUnit XML report to this file")
	fl.StringVar(&f.jsonOut, "json", "", "write a JSON report (a later --baseline) to this file")
	fl.StringVar(&f.html, "html", "", "write a self-contained HTML report to this file")
	fl.StringVar(&f.baseline, "baseline", "", "an earlier --json report to compare with")
	fl.BoolVar(&f.progress, "progress", true, "show a progress bar on stderr")
	return cmd
}

// loadSuites reads the suites named by args: files, or directories whose
// *.yaml, *.yml, *.evalset.json and *.test.json files are suites (but
// weft.yaml and weft.yml, a configuration).
func loadSuites(args []string, agent string) ([]*eval.Suite, error) {
	var paths []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			paths = append(paths, a)
			continue
		}
		for _, pattern := range []string{"*.yaml", "*.yml", "*.evalset.json", "*.test.json"} {
			m, _ := filepath.Glob(filepath.Join(a, pattern))
			for _, p := range m {
				if base := filepath.Base(p); base != "weft.yaml" && base != "weft.yml" {
					paths = append(paths, p)
				}
			}
		}
	}
	if len(paths) == 0 {
		return nil, usageError{errors.New("no suite: name suite files or directories holding them")}
	}
	var suites []*eval.Suite
	for _, p := range paths {
		s, err := eval.LoadAs(p, agent)
		if err != nil {
			return nil, err
		}
		suites = append(suites, s)
	}
	return suites, nil
}

func runEval(cmd *cobra.Command, e *env, f *evalRunFlags, args []string) error {
	ctx := cmd.Context()
	suites, err := loadSuites(args, f.agent)
	if err != nil {
		return err
	}
	var baseline *eval.Report
	if f.baseline != "" {
		if baseline, err = eval.ReadReport(f.baseline); err != nil {
			return err
		}
	}
	dir := f.cassettes
	if dir == "" {
		dir = filepath.Join(filepath.Dir(suites[0].Path), "testdata", "cassettes")
	}
	mode, modeName := llmtest.Replay, "replay"
	if f.record {
		mode, modeName = llmtest.Record, "record"
	}
	cas := eval.NewCassettes(dir, mode, nil)
	opts := []eval.Option{eval.WithCassettes(cas)}
	if f.judgeModel != "" {
		opts = append(opts, eval.WithJudgeModel(f.judgeModel))
	}

	var target eval.Target
	var local *inproc.Server
	if f.server != "" {
		if f.configPath != "" {
			return usageError{errors.New("--server and --config exclude each other")}
		}
		key := firstNonEmpty(f.key, e.getenv("WEFT_API_KEY"))
		if key == "" {
			return usageError{errors.New("no API key for --server: pass --key or set WEFT_API_KEY")}
		}
		target = eval.ClientTarget(client.New(f.server, key, client.WithUserAgent("weft-eval")))
		modeName += " (judge only; the server's models are live)"
		opts = append(opts, eval.WithJudgeOpener(func(spec string) (*llm.Model, error) {
			po := []provider.Option{provider.WithHTTPClient(cas.Client()), provider.WithGetenv(e.getenv)}
			if mode == llmtest.Replay {
				po = append(po, provider.WithAPIKey("replayed-from-cassette"))
			}
			return provider.Open(spec, po...)
		}))
	} else {
		path := firstNonEmpty(f.configPath, "weft.yaml")
		cfg, err := config.Load(path, e.stdin)
		if err != nil {
			if f.configPath == "" && errors.Is(err, os.ErrNotExist) {
				return usageError{errors.New("no ./weft.yaml: pass --config FILE for an in-process server, or --server URL")}
			}
			return err
		}
		local, err = inproc.Start(ctx, inproc.Options{Config: cfg, Cassettes: cas, Getenv: e.getenv})
		if err != nil {
			return err
		}
		defer local.Close()
		target = local
		opts = append(opts, eval.WithJudgeOpener(local.OpenModel))
	}

	total := 0
	for _, s := range suites {
		total += len(s.Cases)
	}
	var bar *progressbar.ProgressBar
	if f.progress {
		bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(e.stderr),
			progressbar.OptionSetDescription("eval"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(e.stderr) }),
		)
		opts = append(opts, eval.WithProgress(func(int, int, *eval.CaseResult) { bar.Add(1) }))
	}
	report := &eval.Report{Started: time.Now(), Mode: modeName}
	for _, s := range suites {
		if local != nil {
			if err := local.Setup(ctx, s); err != nil {
				return fmt.Errorf("suite %s: %w", s.Name, err)
			}
		}
		res, err := eval.Run(ctx, target, s, opts...)
		if err != nil {
			return err
		}
		report.Suites = append(report.Suites, res)
	}
	report.Duration = time.Since(report.Started)
	if bar != nil {
		bar.Finish()
	}

	if err := report.WriteTable(e.stdout, baseline); err != nil {
		return err
	}
	for _, out := range []struct {
		path  string
		write func(io.Writer) error
	}{
		{f.junit, report.WriteJUnit},
		{f.jsonOut, report.WriteJSON},
		{f.html, func(w io.Writer) error { return report.WriteHTML(w, baseline) }},
	} {
		if out.path == "" {
			continue
		}
		if err := writeReport(out.path, out.write); err != nil {
			return err
		}
	}
	if _, failed := report.Counts(); failed > 0 {
		passed, _ := report.Counts()
		return fmt.Errorf("%d of %d cases failed", failed, passed+failed)
	}
	return nil
}

func writeReport(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return fh.Close()
}
