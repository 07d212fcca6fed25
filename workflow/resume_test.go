package workflow_test

import (
	"context"
	"errors"
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
