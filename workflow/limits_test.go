package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/workflow"
)

// nested is two nested iterations over inputs.xs: len(xs)² template
// nodes.
const nested = `
name: t
nodes:
  - {id: start, kind: start, inputs: {xs: {type: array}}}
  - id: outer
    kind: iteration
    items: "{{inputs.xs}}"
    output: "{{nodes.inner.outputs.results}}"
    nodes:
      - id: inner
        kind: iteration
        items: "{{inputs.xs}}"
        concurrency: 8
        output: "{{nodes.cell.outputs.text}}"
        nodes:
          - {id: cell, kind: template, template: "{{item}}"}
  - {id: end, kind: end, outputs: {r: "{{nodes.outer.outputs.results}}"}}
`

func TestNodeRunLimit(t *testing.T) {
	d := mustParse(t, nested)
	xs := make([]any, 80)
	for i := range xs {
		xs[i] = i
	}
	in := map[string]any{"xs": xs}
	// 80 × 80 cells, 80 inner iterations and 3 nodes: 6,483 node runs,
	// over the default limit. The inner iteration that would go over
	// fails before its first item.
	evs, err := events(t, workflow.New(workflow.Services{}), d, in)
	if !errors.Is(err, workflow.ErrLimit) || !strings.Contains(err.Error(), fmt.Sprintf("limit of %d node runs", workflow.DefaultNodeRuns)) {
		t.Fatalf("error %v", err)
	}
	var ne *workflow.NodeError
	if !errors.As(err, &ne) || ne.Node != "outer" {
		t.Errorf("error %#v, want the outer iteration's", err)
	}
	started := 0
	for _, ev := range evs {
		if ev.Type == workflow.NodeStarted {
			started++
		}
	}
	if started > workflow.DefaultNodeRuns {
		t.Errorf("%d nodes started, over the limit of %d", started, workflow.DefaultNodeRuns)
	}

	// Under a limit that allows them, they all run.
	res, err := workflow.Collect(workflow.New(workflow.Services{}, workflow.WithLimits(workflow.Limits{NodeRuns: 6483})).Run(context.Background(), d, in))
	if err != nil || len(res.Outputs["r"].([]any)) != 80 || len(res.Nodes) != 6483 {
		t.Fatalf("run under 6483 node runs: %v, %d nodes", err, len(res.Nodes))
	}
	_, err = workflow.Collect(workflow.New(workflow.Services{}, workflow.WithLimits(workflow.Limits{NodeRuns: 6482})).Run(context.Background(), d, in))
	if !errors.Is(err, workflow.ErrLimit) {
		t.Fatalf("run under 6482 node runs: %v", err)
	}
}

// sizeCheckpointer counts the bytes of the checkpoints saved.
type sizeCheckpointer struct {
	*workflow.MemoryCheckpointer
	bytes atomic.Int64
}

func (c *sizeCheckpointer) Save(ctx context.Context, runID string, cp workflow.Checkpoint) error {
	b, _ := json.Marshal(cp)
	c.bytes.Add(int64(len(b)))
	return c.MemoryCheckpointer.Save(ctx, runID, cp)
}

func TestIterationResultsLimit(t *testing.T) {
	// Each of 100 items copies a 900 KB text into its result: the
	// results pass MaxValueSize at the tenth, which fails the iteration
	// before the others run or are stored.
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start, inputs: {text: {type: string}, xs: {type: array}}}
  - id: loop
    kind: iteration
    items: "{{inputs.xs}}"
    output: "{{nodes.copy.outputs.text}}"
    nodes:
      - {id: copy, kind: template, template: "{{index}}{{inputs.text}}"}
  - {id: end, kind: end, outputs: {r: "{{nodes.loop.outputs.results}}"}}
`)
	text := strings.Repeat("x", 900_000)
	cp := &sizeCheckpointer{MemoryCheckpointer: workflow.NewMemoryCheckpointer()}
	evs, err := events(t, workflow.New(workflow.Services{}), d, map[string]any{"text": text, "xs": make([]any, 100)},
		workflow.WithRunID("r"), workflow.WithCheckpointer(cp))
	if !errors.Is(err, workflow.ErrLimit) || !strings.Contains(err.Error(), "item 9: results over the limit of 8388608 bytes") {
		t.Fatalf("error %v", err)
	}
	copies := 0
	for _, ev := range evs {
		if ev.Type == workflow.NodeFinished && ev.Node == "copy" {
			copies++
		}
	}
	if copies != 10 {
		t.Errorf("%d items made their copy, want 10", copies)
	}
	if n := cp.bytes.Load(); n > 11*901_000 {
		t.Errorf("%d bytes of checkpoints saved, want those of the inputs and 10 items at most", n)
	}
}

func TestRunBytesLimit(t *testing.T) {
	// The inputs and three templates of 400 KB, and a fourth that would
	// take the run over 1.7 MB: the fourth fails before its outputs are
	// stored, and nothing after it runs.
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start, inputs: {text: {type: string}}}
  - {id: a, kind: template, template: "{{inputs.text}}"}
  - {id: b, kind: template, template: "{{nodes.a.outputs.text}}"}
  - {id: c, kind: template, template: "{{nodes.b.outputs.text}}"}
  - {id: d, kind: template, template: "{{nodes.c.outputs.text}}"}
  - {id: end, kind: end, outputs: {d: "{{nodes.d.outputs.text}}"}}
`)
	cp := &sizeCheckpointer{MemoryCheckpointer: workflow.NewMemoryCheckpointer()}
	e := workflow.New(workflow.Services{}, workflow.WithLimits(workflow.Limits{RunBytes: 1_700_000}))
	_, err := events(t, e, d, map[string]any{"text": strings.Repeat("x", 400_000)}, workflow.WithRunID("r"), workflow.WithCheckpointer(cp))
	var ne *workflow.NodeError
	if !errors.Is(err, workflow.ErrLimit) || !errors.As(err, &ne) || ne.Node != "d" || !strings.Contains(err.Error(), "over the limit of 1700000 bytes") {
		t.Fatalf("error %v", err)
	}
	if n := cp.bytes.Load(); n > 1_700_000 {
		t.Errorf("%d bytes of checkpoints saved, over the run's limit", n)
	}
}

// slowMatch is a condition whose regular expression costs about a
// microsecond per byte of text (the pattern has thousands of states).
const slowMatch = `
name: t
nodes:
  - {id: start, kind: start, inputs: {text: {type: string}}}
  - id: check
    kind: condition
    cases: [{when: '%s', next: [yes]}]
    else: [no]
  - {id: yes, kind: template, template: "yes"}
  - {id: no, kind: template, template: "no"}
  - {id: end, kind: end, depends_on: [yes, no]}
`

func TestConditionTimeLimit(t *testing.T) {
	// Matching 64 KB takes seconds; the condition's limit ends it.
	d := mustParse(t, fmt.Sprintf(slowMatch, `inputs.text matches ".{0,1000}x"`))
	e := workflow.New(workflow.Services{}, workflow.WithLimits(workflow.Limits{ConditionTime: 50 * time.Millisecond}))
	_, err := events(t, e, d, map[string]any{"text": strings.Repeat("a", 64<<10)})
	var ne *workflow.NodeError
	if !errors.Is(err, workflow.ErrLimit) || !errors.As(err, &ne) || ne.Node != "check" || !strings.Contains(err.Error(), "evaluation over the limit of 50ms") {
		t.Fatalf("error %v", err)
	}
}

func TestConditionCancel(t *testing.T) {
	// A thousand matches of 256 KB would take hours: cancelling the run
	// while its condition evaluates ends the run.
	d := mustParse(t, fmt.Sprintf(slowMatch, `none(1..1000, {inputs.text matches ".{0,1000}x"})`))
	e := workflow.New(workflow.Services{}, workflow.WithLimits(workflow.Limits{ConditionTime: time.Hour}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last error
	for ev, err := range e.Run(ctx, d, map[string]any{"text": strings.Repeat("a", 256<<10)}) {
		if ev.Type == workflow.NodeStarted && ev.Node == "check" {
			time.AfterFunc(20*time.Millisecond, cancel)
		}
		last = err
	}
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("error %v, want the run cancelled", last)
	}
}

func TestConditionGuard(t *testing.T) {
	run := func(t *testing.T, when string, in map[string]any) (bool, error) {
		t.Helper()
		d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start, inputs: {t: {type: string}, p: {type: string, default: ""}, big: {type: string, default: ""}}}
  - id: check
    kind: condition
    depends_on: [start]
    cases: [{id: yes, when: '`+when+`', next: [yes]}]
    else: [no]
  - {id: yes, kind: template, template: "yes"}
  - {id: no, kind: template, template: "no"}
  - {id: end, kind: end, depends_on: [yes, no], outputs: {yes: "{{nodes.yes.outputs.text}}"}}
`)
		res, err := workflow.Collect(workflow.New(workflow.Services{}).Run(context.Background(), d, in))
		return err == nil && res.Outputs["yes"] == "yes", err
	}
	kb := strings.Repeat("k", 4<<10)
	for _, tc := range []struct {
		when string
		in   map[string]any
	}{
		{`repeat(inputs.t, 1000) != ""`, map[string]any{"t": strings.Repeat("r", 10<<10)}},
		{`replace(inputs.t, "", inputs.t) != ""`, map[string]any{"t": kb}},
		{`join(split(inputs.t, ""), inputs.t) != ""`, map[string]any{"t": kb}},
		{`let a = inputs.t + inputs.t; let b = a + a; let c = b + b; let d = c + c; let e = d + d; let f = e + e; len(f + f) > 0`, map[string]any{"t": strings.Repeat("d", 100<<10)}},
		{`inputs.t matches inputs.p`, map[string]any{"t": "a", "p": strings.Repeat("a", 5000)}},
		{`inputs.t == "x"`, map[string]any{"t": strings.Repeat("b", 2<<20)}},
		{`$env.inputs.t == "x"`, map[string]any{"t": "x", "big": strings.Repeat("b", 2<<20)}}, // all of them
	} {
		if _, err := run(t, tc.when, tc.in); !errors.Is(err, workflow.ErrLimit) {
			t.Errorf("%s: error %v, want one over a limit", tc.when, err)
		}
	}
	// Within bounds, the same functions give what expr-lang's do.
	for _, when := range []string{
		`repeat(inputs.t, 2) == "abab"`,
		`replace(inputs.t, "b", "-") == "a-"`,
		`replace("a-b-c", "-", "+", 1) == "a+b-c"`,
		`join(split("a,b", ","), "+") == "a+b" && join(["x", "y"]) == "xy"`,
		`inputs.t matches "^a" && !(inputs.t matches inputs.p)`,
		`all(1..100, {# < 101}) && len(filter(1..10, {# % 2 == 0})) == 5`,
		`inputs.t == "ab"`, // a large input it does not read
	} {
		if ok, err := run(t, when, map[string]any{"t": "ab", "p": "^b", "big": strings.Repeat("b", 2<<20)}); !ok || err != nil {
			t.Errorf("%s: %v, %v", when, ok, err)
		}
	}
}
