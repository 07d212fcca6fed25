package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weftlabs/weft/workflow"
)

type shout struct {
	Text string `json:"text"`
}

type shouted struct {
	Loud string `json:"loud"`
	N    int    `json:"n"`
}

// counter is a node kind that counts its runs and fails while fail is set.
func counter(t *testing.T, runs *atomic.Int64, fail *atomic.Bool) *workflow.NodeType {
	t.Helper()
	nt, err := workflow.Func("shout", func(ctx context.Context, in shout) (shouted, error) {
		n := runs.Add(1)
		if fail.Load() {
			return shouted{}, errors.New("crash")
		}
		return shouted{Loud: in.Text + "!", N: int(n)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if nt.Kind() != "shout" {
		t.Fatalf("kind %q", nt.Kind())
	}
	return nt
}

const chainYAML = `
name: chain
nodes:
  - {id: start, kind: start, inputs: {text: {type: string}}}
  - {id: a, kind: shout, args: {text: "{{inputs.text}}"}}
  - {id: b, kind: shout, args: {text: "{{nodes.a.outputs.loud}}"}}
  - {id: end, kind: end, outputs: {out: "{{nodes.b.outputs.loud}}", n: "{{nodes.b.outputs.n}}"}}
`

func TestResumeSkipsFinishedNodes(t *testing.T) {
	var runs atomic.Int64
	var fail atomic.Bool
	nt := counter(t, &runs, &fail)
	d, err := workflow.Parse([]byte(chainYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(workflow.WithNodeTypes(nt)); err != nil {
		t.Fatal(err)
	}
	e := workflow.New(workflow.Services{}, workflow.Register(nt))
	cp := workflow.NewMemoryCheckpointer()
	ctx := context.Background()

	// First attempt: a runs, b fails and fails the run.
	runs.Store(0)
	seq := e.Run(ctx, d, map[string]any{"text": "hi"}, workflow.WithRunID("r1"), workflow.WithCheckpointer(cp))
	var a atomic.Bool
	_, err = workflow.Collect(func(yield func(workflow.Event, error) bool) {
		for ev, err := range seq {
			if ev.Type == workflow.NodeFinished && ev.Node == "a" {
				a.Store(true)
				fail.Store(true)
			}
			if !yield(ev, err) {
				return
			}
		}
	})
	var ne *workflow.NodeError
	if !errors.As(err, &ne) || ne.Node != "b" {
		t.Fatalf("first attempt: %v", err)
	}
	if !a.Load() {
		t.Fatal("a did not finish")
	}

	// Second attempt resumes: a is restored, b (interrupted? no: it failed
	// and was never recorded as started) runs again.
	fail.Store(false)
	runs.Store(0)
	res, err := workflow.Collect(e.Run(ctx, d, nil, workflow.WithRunID("r1"), workflow.WithCheckpointer(cp)))
	if err != nil {
		t.Fatal(err)
	}
	if got := runs.Load(); got != 1 {
		t.Errorf("resumed run ran %d shout nodes, want 1 (b only)", got)
	}
	if res.Outputs["out"] != "hi!!" {
		t.Errorf("outputs %v", res.Outputs)
	}
	restored := 0
	for _, ev := range res.Nodes {
		if ev.Restored {
			restored++
		}
	}
	if restored != 2 { // start and a
		t.Errorf("%d nodes restored, want 2", restored)
	}
}

func TestResumeInterruptedNode(t *testing.T) {
	for _, idempotent := range []bool{false, true} {
		t.Run(map[bool]string{false: "not idempotent", true: "idempotent"}[idempotent], func(t *testing.T) {
			var calls atomic.Int64
			started := make(chan struct{}, 1)
			block := true
			nt, err := workflow.Func("send", func(ctx context.Context, in map[string]any) (map[string]any, error) {
				calls.Add(1)
				if block {
					started <- struct{}{}
					<-ctx.Done() // the process dies mid-call
					return nil, ctx.Err()
				}
				return map[string]any{"sent": true}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			y := `
name: t
nodes:
  - {id: start, kind: start}
  - {id: send, kind: send, depends_on: [start], idempotent: ` + map[bool]string{false: "false", true: "true"}[idempotent] + `}
  - {id: end, kind: end, outputs: {sent: "{{nodes.send.outputs.sent}}"}}
`
			d := mustParse(t, y, workflow.WithNodeTypes(nt))
			e := workflow.New(workflow.Services{}, workflow.Register(nt))
			cp := workflow.NewMemoryCheckpointer()
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-started; cancel() }()
			if _, err := workflow.Collect(e.Run(ctx, d, nil, workflow.WithRunID("r"), workflow.WithCheckpointer(cp))); !errors.Is(err, context.Canceled) {
				t.Fatalf("first attempt: %v", err)
			}
			block = false
			res, err := workflow.Collect(e.Run(context.Background(), d, nil, workflow.WithRunID("r"), workflow.WithCheckpointer(cp)))
			if idempotent {
				if err != nil || res.Outputs["sent"] != true || calls.Load() != 2 {
					t.Errorf("resume: %v %v after %d calls", err, res.Outputs, calls.Load())
				}
				return
			}
			if !errors.Is(err, workflow.ErrInterrupted) || calls.Load() != 1 {
				t.Errorf("resume: %v after %d calls, want ErrInterrupted and no second call", err, calls.Load())
			}
		})
	}
}

func TestResumeIteration(t *testing.T) {
	var calls sync.Map // item → runs
	var fail atomic.Bool
	fail.Store(true)
	nt, err := workflow.Func("work", func(ctx context.Context, in struct {
		Item string `json:"item"`
	}) (struct {
		Out string `json:"out"`
	}, error) {
		v, _ := calls.LoadOrStore(in.Item, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		if in.Item == "c" && fail.Load() {
			return struct {
				Out string `json:"out"`
			}{}, errors.New("c failed")
		}
		return struct {
			Out string `json:"out"`
		}{strings.ToUpper(in.Item)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start, inputs: {xs: {type: array, items: {type: string}}}}
  - id: route
    kind: condition
    cases: [{id: many, when: 'len(inputs.xs) > 2', next: [loop]}]
    else: [few]
  - {id: few, kind: template, template: "few"}
  - id: loop
    kind: iteration
    items: "{{inputs.xs}}"
    output: "{{nodes.w.outputs.out}}"
    nodes:
      - {id: w, kind: work, args: {item: "{{item}}"}}
  - {id: end, kind: end, depends_on: [loop, few], outputs: {r: "{{nodes.loop.outputs.results}}", few: "{{nodes.few.outputs.text}}"}}
`, workflow.WithNodeTypes(nt))
	e := workflow.New(workflow.Services{}, workflow.Register(nt))
	cp := workflow.NewMemoryCheckpointer()
	in := map[string]any{"xs": []string{"a", "b", "c", "d"}}
	_, err = workflow.Collect(e.Run(context.Background(), d, in, workflow.WithRunID("r"), workflow.WithCheckpointer(cp)))
	if err == nil || !strings.Contains(err.Error(), "item 2: workflow: node loop[2].w: c failed") {
		t.Fatalf("first attempt: %v", err)
	}
	fail.Store(false)
	res, err := workflow.Collect(e.Run(context.Background(), d, nil, workflow.WithRunID("r"), workflow.WithCheckpointer(cp)))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Outputs["r"]); got != "[A B C D]" || res.Outputs["few"] != nil {
		t.Errorf("outputs %v", res.Outputs)
	}
	for item, want := range map[string]int64{"a": 1, "b": 1, "c": 2, "d": 1} {
		v, _ := calls.Load(item)
		if got := v.(*atomic.Int64).Load(); got != want {
			t.Errorf("item %s ran %d times, want %d", item, got, want)
		}
	}
	restored := map[string]bool{}
	for _, ev := range res.Nodes {
		restored[ev.Key] = ev.Restored
	}
	if !restored["route"] || !restored["loop[0].w"] || restored["loop[2].w"] || restored["loop"] {
		t.Errorf("restored %v", restored)
	}
}

type brokenStore struct{ workflow.Checkpointer }

func (brokenStore) Save(context.Context, string, workflow.Checkpoint) error {
	return errors.New("disk full")
}

func TestCheckpointErrorFailsTheRun(t *testing.T) {
	d := mustParse(t, chainYAML, workflow.WithNodeTypes(counter(t, new(atomic.Int64), new(atomic.Bool))))
	e := workflow.New(workflow.Services{})
	_, err := workflow.Collect(e.Run(context.Background(), d, map[string]any{"text": "x"}, workflow.WithRunID("r"), workflow.WithCheckpointer(brokenStore{workflow.NewMemoryCheckpointer()})))
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("error %v", err)
	}
	_, err = workflow.Collect(e.Run(context.Background(), d, map[string]any{"text": "x"}, workflow.WithCheckpointer(workflow.NewMemoryCheckpointer())))
	if err == nil || !strings.Contains(err.Error(), "run id") {
		t.Errorf("without a run id: %v", err)
	}
}
