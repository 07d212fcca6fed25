package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/workflow"
)

// counted is a Func node kind that counts its runs per name.
func counted(t *testing.T, runs *sync.Map) *workflow.NodeType {
	t.Helper()
	return stepKind(t, func(ctx context.Context, name string) (string, error) {
		n, _ := runs.LoadOrStore(name, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		return name + " done", nil
	})
}

func runsOf(runs *sync.Map, name string) int64 {
	n, ok := runs.Load(name)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// store is a checkpointer that keeps what each Save stored, as a database
// would, and can be read as a whole.
type store struct {
	*workflow.MemoryCheckpointer
	mu    sync.Mutex
	saves []int // the size of each saved checkpoint's JSON
}

func newStore() *store { return &store{MemoryCheckpointer: workflow.NewMemoryCheckpointer()} }

func (s *store) Save(ctx context.Context, runID string, cp workflow.Checkpoint) error {
	b, _ := json.Marshal(cp)
	s.mu.Lock()
	s.saves = append(s.saves, len(b))
	s.mu.Unlock()
	return s.MemoryCheckpointer.Save(ctx, runID, cp)
}

func (s *store) dump(t *testing.T, runID string) string {
	t.Helper()
	cps, err := s.Completed(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(cps)
	return string(b)
}

const reviewYAML = `
name: review
nodes:
  - {id: start, kind: start, inputs: {topic: {type: string}}}
  - {id: draft, kind: step, args: {name: draft}, depends_on: [start]}
  - id: review
    kind: human
    message: "Publish {{nodes.draft.outputs.value}} about {{inputs.topic}}?"
    output_schema:
      type: object
      required: [approved]
      properties:
        approved: {type: boolean}
        note: {type: string}
        copies: {type: integer}
  - {id: publish, kind: step, args: {name: publish}, depends_on: [review]}
  - id: end
    kind: end
    outputs: {approved: "{{nodes.review.outputs.approved}}", note: "{{nodes.review.outputs.note}}", published: "{{nodes.publish.outputs.value}}"}
`

// TestHumanNode runs a workflow to its human node, refuses bad answers
// (the run stays waiting, nothing stored), and resumes it with a good one
// from a fresh engine (a restart): finished nodes do not run again.
func TestHumanNode(t *testing.T) {
	var runs sync.Map
	nt := counted(t, &runs)
	d := mustParse(t, reviewYAML, workflow.WithNodeTypes(nt))
	cp := newStore()
	ctx := context.Background()
	run := func(opts ...workflow.RunOption) (*workflow.Result, error) {
		e := workflow.New(workflow.Services{}, workflow.Register(nt)) // a new process each time
		return workflow.Collect(e.Run(ctx, d, map[string]any{"topic": "tides"}, append([]workflow.RunOption{workflow.WithRunID("r1"), workflow.WithCheckpointer(cp)}, opts...)...))
	}

	before := runtime.NumGoroutine()
	res, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Waiting) != 1 || res.Outputs != nil {
		t.Fatalf("waiting %+v, outputs %v", res.Waiting, res.Outputs)
	}
	in := res.Waiting[0]
	if in.ID != "r1:review" || in.Node != "review" || in.Message != "Publish draft done about tides?" || in.Schema == nil || in.Created.IsZero() || !in.Deadline.IsZero() {
		t.Errorf("interrupt %+v", in)
	}
	if runsOf(&runs, "draft") != 1 || runsOf(&runs, "publish") != 0 {
		t.Errorf("draft ran %d times, publish %d", runsOf(&runs, "draft"), runsOf(&runs, "publish"))
	}
	// Nothing runs while the run waits.
	for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the run ended waiting, %d before", n, before)
	}

	snapshot := cp.dump(t, "r1")
	for _, tt := range []struct {
		id      string
		payload map[string]any
		field   string
		is      error
	}{
		{"r1:review", map[string]any{"approved": "yes"}, "approved", nil},
		{"r1:review", map[string]any{"note": "fine"}, "approved", nil},
		{"r1:review", map[string]any{"approved": true, "copies": 1.5}, "copies", nil},
		{"r1:review", map[string]any{"approved": true, "colour": "red"}, "colour", nil},
		{"r1:nope", map[string]any{"approved": true}, "", workflow.ErrUnknownInterrupt},
		{"r2:review", map[string]any{"approved": true}, "", workflow.ErrUnknownInterrupt},
	} {
		_, err := run(workflow.WithAnswer(tt.id, tt.payload))
		var ae *workflow.AnswerError
		if !errors.As(err, &ae) || ae.Field != tt.field || tt.is != nil && !errors.Is(err, tt.is) || ae.Interrupt != tt.id {
			t.Errorf("answer %s %v: err = %v, want field %q %v", tt.id, tt.payload, err, tt.field, tt.is)
		}
	}
	if got := cp.dump(t, "r1"); got != snapshot {
		t.Errorf("a refused answer changed the checkpoints:\n%s\n%s", snapshot, got)
	}
	if res, err := run(); err != nil || len(res.Waiting) != 1 {
		t.Fatalf("after refused answers: %v, waiting %v", err, res.Waiting)
	}

	res, err = run(workflow.WithAnswer("r1:review", map[string]any{"approved": true, "copies": 3}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"approved": true, "note": nil, "published": "publish done"}
	if !maps.Equal(res.Outputs, want) || len(res.Waiting) != 0 {
		t.Errorf("outputs %v, waiting %v; want %v", res.Outputs, res.Waiting, want)
	}
	for _, ev := range res.Nodes {
		if ev.Node == "review" && (ev.Outputs["copies"] != int64(3) || ev.Outputs["timed_out"] != false) {
			t.Errorf("review's outputs %v", ev.Outputs)
		}
	}
	if runsOf(&runs, "draft") != 1 || runsOf(&runs, "publish") != 1 {
		t.Errorf("draft ran %d times, publish %d; want once each", runsOf(&runs, "draft"), runsOf(&runs, "publish"))
	}

	// A second answer is refused with the first; the run is done.
	_, err = run(workflow.WithAnswer("r1:review", map[string]any{"approved": false}))
	var ae *workflow.AnswerError
	if !errors.Is(err, workflow.ErrAnswered) || !errors.As(err, &ae) || ae.Answer["approved"] != true {
		t.Errorf("second answer: %v", err)
	}
	if res, err := run(); err != nil || res.Outputs["published"] != "publish done" || runsOf(&runs, "publish") != 1 {
		t.Errorf("a finished run ran again: %v %v, publish ran %d times", err, res.Outputs, runsOf(&runs, "publish"))
	}
}

// TestHumanEvents checks the events of a waiting run and of its resumption.
func TestHumanEvents(t *testing.T) {
	t.Parallel()
	var runs sync.Map
	nt := counted(t, &runs)
	d := mustParse(t, reviewYAML, workflow.WithNodeTypes(nt))
	e := workflow.New(workflow.Services{}, workflow.Register(nt))
	cp := workflow.NewMemoryCheckpointer()
	opts := []workflow.RunOption{workflow.WithRunID("r1"), workflow.WithCheckpointer(cp)}
	evs, err := events(t, e, d, map[string]any{"topic": "x"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, string(ev.Type)+" "+ev.Node)
	}
	want := []string{"workflow.started ", "node.started start", "node.finished start", "node.started draft", "node.finished draft", "node.started review", "node.waiting review", "workflow.waiting "}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %q, want %q", kinds, want)
	}
	if last := evs[len(evs)-1]; len(last.Interrupts) != 1 || last.Interrupts[0].ID != "r1:review" {
		t.Errorf("workflow.waiting %+v", last)
	}
	evs, err = events(t, e, d, nil, append(opts, workflow.WithAnswer("r1:review", map[string]any{"approved": false, "note": "no"}))...)
	if err != nil {
		t.Fatal(err)
	}
	kinds = kinds[:0]
	for _, ev := range evs {
		kinds = append(kinds, fmt.Sprintf("%s %s %v", ev.Type, ev.Node, ev.Restored))
	}
	want = []string{"workflow.started  false", "node.finished start true", "node.finished draft true", "node.started review false", "node.finished review false", "node.started publish false", "node.finished publish false", "node.started end false", "node.finished end false", "workflow.finished  false"}
	if !slices.Equal(kinds, want) {
		t.Errorf("resumed events %q, want %q", kinds, want)
	}
}

const timeoutYAML = `
name: escalation
nodes:
  - {id: start, kind: start}
  - {id: ask, kind: human, message: "Refund?", timeout: 1h, on_timeout: [escalate], depends_on: [start], output_schema: {type: object, properties: {ok: {type: boolean}}}}
  - {id: refund, kind: template, template: "refund: {{nodes.ask.outputs.ok}}"}
  - {id: escalate, kind: template, template: "escalated ({{nodes.ask.outputs.timed_out}})"}
  - {id: end, kind: end, depends_on: [refund, escalate], outputs: {refund: "{{nodes.refund.outputs.text}}", escalated: "{{nodes.escalate.outputs.text}}"}}
`

// TestHumanTimeout checks the timeout branch with an injected clock: a
// run after the deadline refuses the answer and takes the branch.
func TestHumanTimeout(t *testing.T) {
	t.Parallel()
	d := mustParse(t, timeoutYAML)
	var now atomic.Pointer[time.Time]
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	now.Store(&t0)
	e := workflow.New(workflow.Services{}, workflow.Clock(func() time.Time { return *now.Load() }))
	cp := workflow.NewMemoryCheckpointer()
	ctx := context.Background()
	run := func(opts ...workflow.RunOption) (*workflow.Result, error) {
		return workflow.Collect(e.Run(ctx, d, nil, append([]workflow.RunOption{workflow.WithRunID("r1"), workflow.WithCheckpointer(cp)}, opts...)...))
	}
	res, err := run()
	if err != nil || len(res.Waiting) != 1 {
		t.Fatalf("%v, waiting %v", err, res.Waiting)
	}
	if in := res.Waiting[0]; !in.Created.Equal(t0) || !in.Deadline.Equal(t0.Add(time.Hour)) {
		t.Errorf("interrupt opened %v, deadline %v", in.Created, in.Deadline)
	}
	// Before the deadline a run without an answer still waits, and the
	// deadline stays.
	later := t0.Add(59 * time.Minute)
	now.Store(&later)
	if res, err := run(); err != nil || len(res.Waiting) != 1 || !res.Waiting[0].Deadline.Equal(t0.Add(time.Hour)) {
		t.Fatalf("before the deadline: %v %+v", err, res.Waiting)
	}
	past := t0.Add(61 * time.Minute)
	now.Store(&past)
	if _, err := run(workflow.WithAnswer("r1:ask", map[string]any{"ok": true})); !errors.Is(err, workflow.ErrExpired) {
		t.Errorf("a late answer: %v", err)
	}
	res, err = run()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"refund": nil, "escalated": "escalated (true)"}
	if !maps.Equal(res.Outputs, want) {
		t.Errorf("outputs %v, want %v", res.Outputs, want)
	}
	for _, ev := range res.Nodes {
		if ev.Node == "refund" && ev.Status != workflow.Skipped {
			t.Errorf("refund %s after a timeout", ev.Status)
		}
	}
	if _, err := run(workflow.WithAnswer("r1:ask", map[string]any{"ok": true})); !errors.Is(err, workflow.ErrExpired) {
		t.Errorf("an answer after the timeout branch: %v", err)
	}

	// Answered in time, the branch is not taken.
	cp2 := workflow.NewMemoryCheckpointer()
	now.Store(&t0)
	opts := []workflow.RunOption{workflow.WithRunID("r2"), workflow.WithCheckpointer(cp2)}
	if _, err := workflow.Collect(e.Run(ctx, d, nil, opts...)); err != nil {
		t.Fatal(err)
	}
	res, err = workflow.Collect(e.Run(ctx, d, nil, append(opts, workflow.WithAnswer("r2:ask", map[string]any{"ok": true}))...))
	if want := map[string]any{"refund": "refund: true", "escalated": nil}; err != nil || !maps.Equal(res.Outputs, want) {
		t.Errorf("answered in time: %v, outputs %v", err, res.Outputs)
	}

	// Without a timeout branch the node fails with ErrTimedOut.
	noBranch := mustParse(t, `
name: strict
nodes:
  - {id: start, kind: start}
  - {id: ask, kind: human, message: "Refund?", timeout: 1h, depends_on: [start]}
  - {id: end, kind: end, outputs: {t: "{{nodes.ask.outputs.timed_out}}"}}
`)
	cp3 := workflow.NewMemoryCheckpointer()
	opts = []workflow.RunOption{workflow.WithRunID("r3"), workflow.WithCheckpointer(cp3)}
	if _, err := workflow.Collect(e.Run(ctx, noBranch, nil, opts...)); err != nil {
		t.Fatal(err)
	}
	now.Store(&past)
	_, err = workflow.Collect(e.Run(ctx, noBranch, nil, opts...))
	var ne *workflow.NodeError
	if !errors.As(err, &ne) || ne.Node != "ask" || !errors.Is(err, workflow.ErrTimedOut) {
		t.Errorf("timeout without a branch: %v", err)
	}
}

const parallelYAML = `
name: two_approvals
nodes:
  - {id: start, kind: start}
  - {id: prep, kind: step, args: {name: prep}, depends_on: [start]}
  - {id: legal, kind: human, message: "Legal?", depends_on: [prep], output_schema: {type: object, properties: {ok: {type: boolean}}}}
  - {id: finance, kind: human, message: "Finance?", depends_on: [prep], output_schema: {type: object, properties: {ok: {type: boolean}}}}
  - {id: join, kind: step, args: {name: join}, depends_on: [legal, finance]}
  - {id: end, kind: end, outputs: {legal: "{{nodes.legal.outputs.ok}}", finance: "{{nodes.finance.outputs.ok}}", joined: "{{nodes.join.outputs.value}}"}}
`

// TestParallelPauses checks that pauses on two branches are answered one
// at a time, in either order, and that the join waits for both.
func TestParallelPauses(t *testing.T) {
	t.Parallel()
	for _, order := range [][]string{{"legal", "finance"}, {"finance", "legal"}} {
		t.Run(strings.Join(order, "_then_"), func(t *testing.T) {
			t.Parallel()
			var runs sync.Map
			nt := counted(t, &runs)
			d := mustParse(t, parallelYAML, workflow.WithNodeTypes(nt))
			e := workflow.New(workflow.Services{}, workflow.Register(nt))
			cp := workflow.NewMemoryCheckpointer()
			opts := []workflow.RunOption{workflow.WithRunID("r1"), workflow.WithCheckpointer(cp)}
			res, err := workflow.Collect(e.Run(context.Background(), d, nil, opts...))
			if err != nil {
				t.Fatal(err)
			}
			if ids := interruptIDs(res.Waiting); !slices.Equal(ids, []string{"r1:finance", "r1:legal"}) {
				t.Fatalf("waiting %v", ids)
			}
			res, err = workflow.Collect(e.Run(context.Background(), d, nil, append(opts, workflow.WithAnswer("r1:"+order[0], map[string]any{"ok": true}))...))
			if err != nil {
				t.Fatal(err)
			}
			if ids := interruptIDs(res.Waiting); !slices.Equal(ids, []string{"r1:" + order[1]}) || runsOf(&runs, "join") != 0 {
				t.Fatalf("after the first answer: waiting %v, join ran %d times", ids, runsOf(&runs, "join"))
			}
			res, err = workflow.Collect(e.Run(context.Background(), d, nil, append(opts, workflow.WithAnswer("r1:"+order[1], map[string]any{"ok": false}))...))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"legal": order[0] == "legal", "finance": order[0] == "finance", "joined": "join done"}
			if !maps.Equal(res.Outputs, want) || runsOf(&runs, "join") != 1 || runsOf(&runs, "prep") != 1 {
				t.Errorf("outputs %v (want %v), join ran %d times, prep %d", res.Outputs, want, runsOf(&runs, "join"), runsOf(&runs, "prep"))
			}
		})
	}
}

func interruptIDs(ins []workflow.Interrupt) []string {
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.ID
	}
	return ids
}

type order struct {
	Item string `json:"item"`
}

type shipped struct {
	Label   string `json:"label"`
	Carrier string `json:"carrier"`
}

// TestPauseAndStep checks a Go node that pauses twice: its Steps' effects
// happen once across every pause and resume, it is not run while it
// waits, and each pause's answer reaches it.
func TestPauseAndStep(t *testing.T) {
	t.Parallel()
	var labels, sent, calls atomic.Int64
	carrier := &workflow.Schema{Type: workflow.TypeObject, Required: []string{"carrier"}, Properties: map[string]*workflow.Schema{"carrier": {Type: workflow.TypeString, Enum: []any{"post", "courier"}}}}
	nt, err := workflow.Func("ship", func(ctx context.Context, in order) (shipped, error) {
		calls.Add(1)
		label, err := workflow.Step(ctx, "label", func(ctx context.Context) (string, error) {
			return fmt.Sprintf("label-%d for %s", labels.Add(1), in.Item), nil
		})
		if err != nil {
			return shipped{}, err
		}
		ok, err := workflow.Pause(ctx, workflow.Request{Name: "confirm", Message: "Ship " + label + "?"})
		if err != nil {
			return shipped{}, err
		}
		if ok["yes"] != true {
			return shipped{Label: "cancelled"}, nil
		}
		how, err := workflow.Pause(ctx, workflow.Request{Name: "carrier", Message: "Which carrier?", Schema: carrier})
		if err != nil {
			return shipped{}, err
		}
		if _, err := workflow.Step(ctx, "send", func(ctx context.Context) (int64, error) { return sent.Add(1), nil }); err != nil {
			return shipped{}, err
		}
		return shipped{Label: label, Carrier: how["carrier"].(string)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d := mustParse(t, `
name: shipping
nodes:
  - {id: start, kind: start, inputs: {item: {type: string}}}
  - {id: ship, kind: ship, args: {item: "{{inputs.item}}"}}
  - {id: end, kind: end, outputs: {label: "{{nodes.ship.outputs.label}}", carrier: "{{nodes.ship.outputs.carrier}}"}}
`, workflow.WithNodeTypes(nt))
	cp := newStore()
	ctx := context.Background()
	run := func(opts ...workflow.RunOption) *workflow.Result {
		t.Helper()
		e := workflow.New(workflow.Services{}, workflow.Register(nt))
		res, err := workflow.Collect(e.Run(ctx, d, map[string]any{"item": "tea"}, append([]workflow.RunOption{workflow.WithRunID("r1"), workflow.WithCheckpointer(cp)}, opts...)...))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run()
	if ids := interruptIDs(res.Waiting); !slices.Equal(ids, []string{"r1:ship#confirm"}) || res.Waiting[0].Message != "Ship label-1 for tea?" {
		t.Fatalf("waiting %+v", res.Waiting)
	}
	run() // nothing answered: the node does not run
	if calls.Load() != 1 {
		t.Errorf("the waiting node ran %d times, want 1", calls.Load())
	}
	res = run(workflow.WithAnswer("r1:ship#confirm", map[string]any{"yes": true}))
	if ids := interruptIDs(res.Waiting); !slices.Equal(ids, []string{"r1:ship#carrier"}) {
		t.Fatalf("after the first answer, waiting %v", ids)
	}
	e := workflow.New(workflow.Services{}, workflow.Register(nt))
	_, err = workflow.Collect(e.Run(ctx, d, nil, workflow.WithRunID("r1"), workflow.WithCheckpointer(cp), workflow.WithAnswer("r1:ship#carrier", map[string]any{"carrier": "pigeon"})))
	var ae *workflow.AnswerError
	if !errors.As(err, &ae) || ae.Field != "carrier" {
		t.Errorf("an answer outside the enum: %v", err)
	}
	res = run(workflow.WithAnswer("r1:ship#carrier", map[string]any{"carrier": "courier"}))
	if want := map[string]any{"label": "label-1 for tea", "carrier": "courier"}; !maps.Equal(res.Outputs, want) {
		t.Errorf("outputs %v, want %v", res.Outputs, want)
	}
	if labels.Load() != 1 || sent.Load() != 1 || calls.Load() != 3 {
		t.Errorf("labels made %d, sent %d, node runs %d; want 1, 1, 3", labels.Load(), sent.Load(), calls.Load())
	}

	// Outside a run Step calls its function and Pause refuses.
	v, err := workflow.Step(ctx, "x", func(ctx context.Context) (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Errorf("Step outside a run: %v %v", v, err)
	}
	if _, err := workflow.Pause(ctx, workflow.Request{}); err == nil {
		t.Error("Pause outside a run succeeded")
	}
	// A run without a checkpointer cannot wait.
	_, err = workflow.Collect(workflow.New(workflow.Services{}, workflow.Register(nt)).Run(ctx, d, map[string]any{"item": "tea"}))
	if err == nil || !strings.Contains(err.Error(), "needs a durable run") {
		t.Errorf("a pause without a checkpointer: %v", err)
	}
}

// TestCheckpointPerNode checks that a run's checkpoints each hold one
// node's result: their size does not grow with the run's state, across
// steps, a pause and its resumption.
func TestCheckpointPerNode(t *testing.T) {
	t.Parallel()
	blob := strings.Repeat("x", 4<<10)
	nt, err := workflow.Func("grow", func(ctx context.Context, in stepIn) (stepOut, error) {
		for i := range 3 {
			if _, err := workflow.Step(ctx, fmt.Sprintf("s%d", i), func(ctx context.Context) (string, error) { return blob, nil }); err != nil {
				return stepOut{}, err
			}
		}
		return stepOut{Value: blob}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("name: long\nnodes:\n  - {id: start, kind: start}\n")
	prev := "start"
	for i := range 20 {
		id := fmt.Sprintf("n%d", i)
		fmt.Fprintf(&b, "  - {id: %s, kind: grow, args: {name: x}, depends_on: [%s]}\n", id, prev)
		prev = id
		if i == 10 {
			b.WriteString("  - {id: ask, kind: human, message: \"go on?\", depends_on: [n10]}\n")
			prev = "ask"
		}
	}
	fmt.Fprintf(&b, "  - {id: end, kind: end, outputs: {v: \"{{nodes.%s.outputs.value}}\"}}\n", prev)
	d := mustParse(t, b.String(), workflow.WithNodeTypes(nt))
	e := workflow.New(workflow.Services{}, workflow.Register(nt))
	cp := newStore()
	opts := []workflow.RunOption{workflow.WithRunID("r1"), workflow.WithCheckpointer(cp)}
	if _, err := workflow.Collect(e.Run(context.Background(), d, nil, opts...)); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Collect(e.Run(context.Background(), d, nil, append(opts, workflow.WithAnswer("r1:ask", nil))...)); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range cp.saves {
		if n > len(blob)+1024 {
			t.Errorf("a checkpoint of %d bytes: more than one result of %d", n, len(blob))
		}
		total += n
	}
	// 20 nodes × (3 steps + outputs) results, each stored once, and the
	// markers of the nodes that started.
	if results := 20 * 4 * len(blob); total > results+results/4 {
		t.Errorf("%d bytes saved for %d bytes of results", total, results)
	}
	cp.Delete("r1")
	if cps, _ := cp.Completed(context.Background(), "r1"); len(cps) != 0 {
		t.Errorf("%d checkpoints after Delete", len(cps))
	}
}

// TestHumanInIteration checks a human node inside an iteration: each
// item's question is answered on its own, and the iteration collects its
// results once all are.
func TestHumanInIteration(t *testing.T) {
	t.Parallel()
	d := mustParse(t, `
name: per_item
nodes:
  - {id: start, kind: start, inputs: {xs: {type: array, items: {type: string}}}}
  - id: loop
    kind: iteration
    items: "{{inputs.xs}}"
    concurrency: 2
    output: "{{nodes.ok.outputs.n}}"
    nodes:
      - {id: ok, kind: human, message: "Keep {{item}}?", output_schema: {type: object, properties: {n: {type: integer}}}}
  - {id: end, kind: end, outputs: {ns: "{{nodes.loop.outputs.results}}"}}
`)
	e := workflow.New(workflow.Services{})
	cp := workflow.NewMemoryCheckpointer()
	opts := []workflow.RunOption{workflow.WithRunID("r1"), workflow.WithCheckpointer(cp)}
	in := map[string]any{"xs": []any{"a", "b"}}
	res, err := workflow.Collect(e.Run(context.Background(), d, in, opts...))
	if err != nil {
		t.Fatal(err)
	}
	if ids := interruptIDs(res.Waiting); !slices.Equal(ids, []string{"r1:loop[0].ok", "r1:loop[1].ok"}) || res.Waiting[1].Message != "Keep b?" {
		t.Fatalf("waiting %+v", res.Waiting)
	}
	res, err = workflow.Collect(e.Run(context.Background(), d, nil, append(opts, workflow.WithAnswer("r1:loop[1].ok", map[string]any{"n": 2}))...))
	if err != nil || !slices.Equal(interruptIDs(res.Waiting), []string{"r1:loop[0].ok"}) {
		t.Fatalf("after one answer: %v, waiting %v", err, interruptIDs(res.Waiting))
	}
	res, err = workflow.Collect(e.Run(context.Background(), d, nil, append(opts, workflow.WithAnswer("r1:loop[0].ok", map[string]any{"n": 1}))...))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(res.Outputs["ns"]); string(got) != "[1,2]" {
		t.Errorf("results %s", got)
	}
}

func TestHumanValidation(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ node, want string }{
		{`{id: h, kind: human, depends_on: [start]}`, "message: missing"},
		{`{id: h, kind: human, message: hi, on_timeout: [end], depends_on: [start]}`, "on_timeout: a timeout branch needs a timeout"},
		{`{id: h, kind: human, message: hi, retry: {max_attempts: 2}, depends_on: [start]}`, "retry: a human node is asked once"},
		{`{id: h, kind: human, message: hi, depends_on: [start], output_schema: {type: object, properties: {timed_out: {type: string}}}}`, `"timed_out" is already an output`},
		{`{id: h, kind: human, message: hi, prompt: x, depends_on: [start]}`, "a human node does not use prompt"},
		{`{id: h, kind: human, message: "{{nodes.nope.outputs.x}}", depends_on: [start]}`, `no node "nope"`},
	} {
		d, err := workflow.Parse([]byte("name: v\nnodes:\n  - {id: start, kind: start}\n  - " + tt.node + "\n  - {id: end, kind: end, depends_on: [h]}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.node, err, tt.want)
		}
	}
	// The answer's fields are typed outputs.
	_, err := workflow.Parse([]byte(reviewYAML))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(reviewYAML, "{{nodes.review.outputs.note}}", "{{nodes.review.outputs.notes}}", 1)
	d, _ := workflow.Parse([]byte(bad))
	var runs sync.Map
	if err := d.Validate(workflow.WithNodeTypes(counted(t, &runs))); err == nil || !strings.Contains(err.Error(), `no field "notes"`) {
		t.Errorf("a reference to no field of the answer: %v", err)
	}
}

// TestPauseTimeout checks that a Go node's pause past its deadline
// returns ErrTimedOut to the node, which decides what follows.
func TestPauseTimeout(t *testing.T) {
	t.Parallel()
	nt, err := workflow.Func("wait", func(ctx context.Context, in stepIn) (stepOut, error) {
		ans, err := workflow.Pause(ctx, workflow.Request{Message: "ok?", Timeout: time.Minute})
		if errors.Is(err, workflow.ErrTimedOut) {
			return stepOut{Value: "default"}, nil
		}
		if err != nil {
			return stepOut{}, err
		}
		return stepOut{Value: fmt.Sprint(ans["v"])}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d := mustParse(t, `
name: w
nodes:
  - {id: start, kind: start}
  - {id: w, kind: wait, args: {name: x}, depends_on: [start]}
  - {id: end, kind: end, outputs: {v: "{{nodes.w.outputs.value}}"}}
`, workflow.WithNodeTypes(nt))
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var now atomic.Pointer[time.Time]
	now.Store(&t0)
	e := workflow.New(workflow.Services{}, workflow.Register(nt), workflow.Clock(func() time.Time { return *now.Load() }))
	opts := []workflow.RunOption{workflow.WithRunID("r1"), workflow.WithCheckpointer(workflow.NewMemoryCheckpointer())}
	res, err := workflow.Collect(e.Run(context.Background(), d, nil, opts...))
	if err != nil || len(res.Waiting) != 1 || res.Waiting[0].ID != "r1:w" || !res.Waiting[0].Deadline.Equal(t0.Add(time.Minute)) {
		t.Fatalf("%v, waiting %+v", err, res.Waiting)
	}
	late := t0.Add(2 * time.Minute)
	now.Store(&late)
	res, err = workflow.Collect(e.Run(context.Background(), d, nil, opts...))
	if err != nil || res.Outputs["v"] != "default" {
		t.Errorf("after the deadline: %v, outputs %v", err, res.Outputs)
	}
}
