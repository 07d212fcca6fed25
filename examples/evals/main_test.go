package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftlabs/weft/eval"
	"github.com/weftlabs/weft/eval/inproc"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform/config"
)

// TestSuitesOffline runs every example suite from its cassettes, as
// `go run ./examples/evals -junit FILE` does, and checks the JUnit report:
// at least 20 cases over the agent, the workflow's, the ADK and trpc-agent-go
// evalsets', all passing, without a network.
func TestSuitesOffline(t *testing.T) {
	cas := eval.NewCassettes("testdata/cassettes", llmtest.Replay, nil)
	report, err := runSuites(t.Context(), ".", cas, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := writeJUnit(report, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var junit struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Tests int    `xml:"tests,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &junit); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"support": 20, "triage": 4, "support-adk": 3, "orders-trpc": 2}
	for _, s := range junit.Suites {
		if s.Tests < want[s.Name] {
			t.Errorf("suite %s has %d cases, want at least %d", s.Name, s.Tests, want[s.Name])
		}
		delete(want, s.Name)
	}
	if len(want) > 0 || junit.Failures+junit.Errors > 0 {
		t.Errorf("junit: %d tests, %d failures, %d errors, suites missing: %v", junit.Tests, junit.Failures, junit.Errors, want)
		report.WriteTable(os.Stderr, nil)
	}
}

// TestSupportSuite runs the support suite as subtests, one per case
// (eval.Test), the way a project's own go test would.
func TestSupportSuite(t *testing.T) {
	cfg, err := config.Load("weft.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	cas := eval.NewCassettes("testdata/cassettes", llmtest.Replay, nil)
	srv, err := inproc.Start(t.Context(), inproc.Options{Config: cfg, Cassettes: cas, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	suite, err := eval.Load("support.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Setup(t.Context(), suite); err != nil {
		t.Fatal(err)
	}
	eval.Test(t, srv, suite, eval.WithCassettes(cas), eval.WithJudgeOpener(srv.OpenModel))
}
