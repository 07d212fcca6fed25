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

// stepFn is a Func node kind whose behaviour each test sets per node.
type stepIn struct {
	Name string `json:"name"`
}

type stepOut struct {
	Value string `json:"value"`
}

func stepKind(t *testing.T, f func(ctx context.Context, name string) (string, error)) *workflow.NodeType {
	t.Helper()
	nt, err := workflow.Func("step", func(ctx context.Context, in stepIn) (stepOut, error) {
		v, err := f(ctx, in.Name)
		return stepOut{Value: v}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return nt
}

func TestBranchesRunConcurrently(t *testing.T) {
	// a and b each wait for the other to have started: a scheduler that
	// ran them one after the other would never finish (the test's
	// deadline would fail it).
	started := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	other := map[string]string{"a": "b", "b": "a"}
	nt := stepKind(t, func(ctx context.Context, name string) (string, error) {
		if ch, ok := started[name]; ok {
			close(ch)
			select {
			case <-started[other[name]]:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return name, nil
	})
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start}
  - {id: a, kind: step, args: {name: a}, depends_on: [start]}
  - {id: b, kind: step, args: {name: b}, depends_on: [start]}
  - {id: end, kind: end, outputs: {v: "{{nodes.a.outputs.value}}{{nodes.b.outputs.value}}"}}
`, workflow.WithNodeTypes(nt))
	ctx, cancel := context.WithTimeout(context.Background(), 30e9)
	defer cancel()
	res, err := workflow.Collect(workflow.New(workflow.Services{}, workflow.Register(nt)).Run(ctx, d, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs["v"] != "ab" {
		t.Errorf("outputs %v", res.Outputs)
	}
}

func TestJoinWaitsForInputs(t *testing.T) {
	// c follows a and b; it must start after both finished.
	var mu sync.Mutex
	var order []string
	nt := stepKind(t, func(ctx context.Context, name string) (string, error) {
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		return name, nil
	})
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start}
  - {id: a, kind: step, args: {name: a}, depends_on: [start]}
  - {id: b, kind: step, args: {name: b}, depends_on: [start]}
  - {id: c, kind: step, args: {name: "{{nodes.a.outputs.value}}+{{nodes.b.outputs.value}}"}}
  - {id: end, kind: end, outputs: {v: "{{nodes.c.outputs.value}}"}}
`, workflow.WithNodeTypes(nt))
	for range 20 {
		order = nil
		res, err := workflow.Collect(workflow.New(workflow.Services{}, workflow.Register(nt)).Run(context.Background(), d, nil))
		if err != nil {
			t.Fatal(err)
		}
		if res.Outputs["v"] != "a+b" || len(order) != 3 || order[2] != "a+b" {
			t.Fatalf("order %v outputs %v", order, res.Outputs)
		}
	}
}

func TestIterationConcurrencyBound(t *testing.T) {
	// Items wait at a barrier of 3: with concurrency 3 all pass; the
	// highest number running at once is exactly 3.
	var running, peak atomic.Int64
	var arrived sync.WaitGroup
	arrived.Add(3)
	release := make(chan struct{})
	var once sync.Once
	nt := stepKind(t, func(ctx context.Context, name string) (string, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if name < "i3" { // items 0, 1, 2 meet; later ones pass
			arrived.Done()
			go once.Do(func() { arrived.Wait(); close(release) })
			select {
			case <-release:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return "v" + name[1:], nil
	})
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start, inputs: {xs: {type: array}}}
  - id: loop
    kind: iteration
    items: "{{inputs.xs}}"
    concurrency: 3
    output: "{{nodes.s.outputs.value}}"
    nodes:
      - {id: s, kind: step, args: {name: "i{{index}}"}}
  - {id: end, kind: end, outputs: {r: "{{nodes.loop.outputs.results}}"}}
`, workflow.WithNodeTypes(nt))
	ctx, cancel := context.WithTimeout(context.Background(), 30e9)
	defer cancel()
	res, err := workflow.Collect(workflow.New(workflow.Services{}, workflow.Register(nt)).Run(ctx, d, map[string]any{"xs": []int{0, 0, 0, 0, 0, 0, 0}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Outputs["r"]); got != "[v0 v1 v2 v3 v4 v5 v6]" {
		t.Errorf("results %s", got)
	}
	if peak.Load() != 3 {
		t.Errorf("peak concurrency %d, want 3", peak.Load())
	}
}

func failing(t *testing.T, fails map[string]int) (*workflow.NodeType, *sync.Map) {
	calls := &sync.Map{}
	nt := stepKind(t, func(ctx context.Context, name string) (string, error) {
		v, _ := calls.LoadOrStore(name, new(atomic.Int64))
		n := v.(*atomic.Int64).Add(1)
		if int(n) <= fails[name] {
			return "", fmt.Errorf("%s failed (call %d)", name, n)
		}
		return name + " ok", nil
	})
	return nt, calls
}

func callsOf(m *sync.Map, name string) int64 {
	v, ok := m.Load(name)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

func TestFailurePolicies(t *testing.T) {
	const tail = `
  - {id: after, kind: step, args: {name: "after {{nodes.x.outputs.value}}"}}
  - {id: end, kind: end, depends_on: [after, handler], outputs: {after: "{{nodes.after.outputs.value}}", handled: "{{nodes.handler.outputs.value}}"}}
`
	head := "name: t\nnodes:\n  - {id: start, kind: start}\n"
	cases := []struct {
		name, x string
		check   func(t *testing.T, res *workflow.Result, err error)
	}{
		{"fail", `  - {id: x, kind: step, args: {name: x}, depends_on: [start]}
  - {id: handler0, kind: step, args: {name: h}, depends_on: [start]}
  - {id: handler, kind: step, args: {name: h2}, depends_on: [handler0]}`, func(t *testing.T, res *workflow.Result, err error) {
			var ne *workflow.NodeError
			if !errors.As(err, &ne) || ne.Node != "x" || !strings.Contains(err.Error(), "x failed") {
				t.Fatalf("error %v", err)
			}
			var x workflow.Event
			for _, ev := range res.Nodes {
				if ev.Node == "x" {
					x = ev
				}
			}
			if x.Status != workflow.Failed || x.Error != "x failed (call 1)" {
				t.Errorf("x's node event %+v", x)
			}
		}},
		{"continue", `  - {id: x, kind: step, args: {name: x}, depends_on: [start], on_error: {action: continue, default: {value: "fallback"}}}
  - {id: handler, kind: step, args: {name: "handler"}, depends_on: [start]}`, func(t *testing.T, res *workflow.Result, err error) {
			if err != nil {
				t.Fatal(err)
			}
			if res.Outputs["after"] != "after fallback ok" {
				t.Errorf("outputs %v", res.Outputs)
			}
			for _, ev := range res.Nodes {
				if ev.Node == "x" && (ev.Status != workflow.Failed || ev.Error != "x failed (call 1)" || ev.Outputs["value"] != "fallback") {
					t.Errorf("x %+v", ev)
				}
			}
		}},
		{"branch", `  - {id: x, kind: step, args: {name: x}, depends_on: [start], on_error: {action: branch, next: [handler]}}
  - {id: handler, kind: step, args: {name: "handler"}}`, func(t *testing.T, res *workflow.Result, err error) {
			if err != nil {
				t.Fatal(err)
			}
			if res.Outputs["handled"] != "handler ok" || res.Outputs["after"] != nil {
				t.Errorf("outputs %v", res.Outputs)
			}
			st := map[string]workflow.Status{}
			for _, ev := range res.Nodes {
				st[ev.Node] = ev.Status
			}
			if st["x"] != workflow.Failed || st["after"] != workflow.Skipped || st["handler"] != workflow.Succeeded || st["end"] != workflow.Succeeded {
				t.Errorf("statuses %v", st)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nt, _ := failing(t, map[string]int{"x": 1})
			d := mustParse(t, head+tc.x+tail, workflow.WithNodeTypes(nt))
			res, err := workflow.Collect(workflow.New(workflow.Services{}, workflow.Register(nt)).Run(context.Background(), d, nil))
			tc.check(t, res, err)
		})
	}
}

func TestRetry(t *testing.T) {
	nt, calls := failing(t, map[string]int{"x": 2, "y": 5})
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start}
  - {id: x, kind: step, args: {name: x}, depends_on: [start], retry: {max_attempts: 3, backoff: 1ms, max_backoff: 2ms}}
  - {id: end, kind: end, outputs: {v: "{{nodes.x.outputs.value}}"}}
`, workflow.WithNodeTypes(nt))
	e := workflow.New(workflow.Services{}, workflow.Register(nt))
	res, err := workflow.Collect(e.Run(context.Background(), d, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs["v"] != "x ok" || callsOf(calls, "x") != 3 {
		t.Errorf("outputs %v after %d calls", res.Outputs, callsOf(calls, "x"))
	}
	for _, ev := range res.Nodes {
		if ev.Node == "x" && ev.Attempts != 3 {
			t.Errorf("attempts %d", ev.Attempts)
		}
	}
	// Spent retries fail the node.
	d = mustParse(t, strings.ReplaceAll(`
name: t
nodes:
  - {id: start, kind: start}
  - {id: y, kind: step, args: {name: y}, depends_on: [start], retry: {max_attempts: 3}}
  - {id: end, kind: end, outputs: {v: "{{nodes.y.outputs.value}}"}}
`, "\t", ""), workflow.WithNodeTypes(nt))
	_, err = workflow.Collect(e.Run(context.Background(), d, nil))
	if err == nil || !strings.Contains(err.Error(), "y failed (call 3)") || callsOf(calls, "y") != 3 {
		t.Errorf("error %v after %d calls", err, callsOf(calls, "y"))
	}
}

func TestTimeout(t *testing.T) {
	var attempts atomic.Int64
	nt := stepKind(t, func(ctx context.Context, name string) (string, error) {
		attempts.Add(1)
		<-ctx.Done() // never answers: only the timeout ends it
		return "", ctx.Err()
	})
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start}
  - {id: x, kind: step, args: {name: x}, depends_on: [start], timeout: 1ms, retry: {max_attempts: 2}}
  - {id: end, kind: end, outputs: {v: "{{nodes.x.outputs.value}}"}}
`, workflow.WithNodeTypes(nt))
	_, err := workflow.Collect(workflow.New(workflow.Services{}, workflow.Register(nt)).Run(context.Background(), d, nil))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 1ms") {
		t.Errorf("error %v", err)
	}
	if attempts.Load() != 2 {
		t.Errorf("%d attempts, want 2 (a timeout is retried)", attempts.Load())
	}
}

func TestCancel(t *testing.T) {
	started := make(chan struct{})
	var stopped atomic.Bool
	nt := stepKind(t, func(ctx context.Context, name string) (string, error) {
		close(started)
		<-ctx.Done()
		stopped.Store(true)
		return "", ctx.Err()
	})
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start}
  - {id: x, kind: step, args: {name: x}, depends_on: [start], on_error: {action: continue}}
  - {id: y, kind: template, template: "y", depends_on: [start]}
  - {id: end, kind: end, depends_on: [x, y], outputs: {}}
`, workflow.WithNodeTypes(nt))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := workflow.Collect(workflow.New(workflow.Services{}, workflow.Register(nt)).Run(ctx, d, nil))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled (a cancel is not continued past)", err)
	}
	if !stopped.Load() {
		t.Error("the run returned before its node stopped")
	}
}

func TestBreakStopsTheRun(t *testing.T) {
	var stopped atomic.Bool
	nt := stepKind(t, func(ctx context.Context, name string) (string, error) {
		<-ctx.Done()
		stopped.Store(true)
		return "", ctx.Err()
	})
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start}
  - {id: x, kind: step, args: {name: x}, depends_on: [start]}
  - {id: y, kind: step, args: {name: y}, depends_on: [start]}
  - {id: end, kind: end, depends_on: [x, y], outputs: {}}
`, workflow.WithNodeTypes(nt))
	n := 0
	for ev, err := range workflow.New(workflow.Services{}, workflow.Register(nt)).Run(context.Background(), d, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if ev.Type == workflow.NodeStarted && ev.Node == "y" {
			break
		}
	}
	if !stopped.Load() {
		t.Error("breaking out of the loop returned before the nodes stopped")
	}
}

func TestPanicIsAnError(t *testing.T) {
	nt := stepKind(t, func(ctx context.Context, name string) (string, error) { panic("boom") })
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start}
  - {id: x, kind: step, args: {name: x}, depends_on: [start]}
  - {id: end, kind: end, depends_on: [x]}
`, workflow.WithNodeTypes(nt))
	_, err := workflow.Collect(workflow.New(workflow.Services{}, workflow.Register(nt)).Run(context.Background(), d, nil))
	if err == nil || !strings.Contains(err.Error(), "panic: boom") {
		t.Errorf("error %v", err)
	}
}

func TestInputs(t *testing.T) {
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start, inputs: {n: {type: integer}, tone: {type: string, enum: [warm, cold], default: warm}}}
  - {id: end, kind: end, outputs: {n: "{{inputs.n}}", tone: "{{inputs.tone}}"}}
`)
	e := workflow.New(workflow.Services{})
	res, err := workflow.Collect(e.Run(context.Background(), d, map[string]any{"n": 3}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs["n"] != int64(3) || res.Outputs["tone"] != "warm" {
		t.Errorf("outputs %#v", res.Outputs)
	}
	for _, in := range []map[string]any{{"n": 1.5}, {"n": "3"}, {"n": 1, "tone": "hot"}, {"n": 1, "x": 1}, {}} {
		if _, err := workflow.Collect(e.Run(context.Background(), d, in)); !errors.Is(err, workflow.ErrInputs) {
			t.Errorf("inputs %v: error %v", in, err)
		}
	}
}

func TestNestedIteration(t *testing.T) {
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start, inputs: {rows: {type: array, items: {type: array, items: {type: string}}}, sep: {type: string}}}
  - {id: prefix, kind: template, template: "row", depends_on: [start]}
  - id: outer
    kind: iteration
    items: "{{inputs.rows}}"
    concurrency: 2
    output: "{{nodes.join.outputs.text}}"
    nodes:
      - id: inner
        kind: iteration
        items: "{{item}}"
        output: "{{nodes.cell.outputs.text}}"
        nodes:
          - {id: cell, kind: template, template: "{{nodes.prefix.outputs.text}}{{index}}:{{item}}"}
      - {id: join, kind: template, template: "{{nodes.inner.outputs.results}}{{inputs.sep}}{{index}}"}
  - {id: end, kind: end, outputs: {r: "{{nodes.outer.outputs.results}}"}}
`)
	evs, err := events(t, workflow.New(workflow.Services{}), d, map[string]any{"rows": [][]string{{"a", "b"}, {"c"}}, "sep": "/"})
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if got := fmt.Sprint(last.Outputs["r"]); got != `[["row0:a","row1:b"]/0 ["row0:c"]/1]` {
		t.Errorf("results %s", got)
	}
	for _, key := range []string{"outer[0].inner[1].cell", "outer[1].inner[0].cell", "outer[1].join", "outer"} {
		if ev, ok := finished(evs, key); !ok || ev.Status != workflow.Succeeded {
			t.Errorf("%s: %+v", key, ev)
		}
	}
}

func TestParallelism(t *testing.T) {
	// Six branches under Parallelism(2): the first two to start wait for
	// each other (so two do run at once), and no more than two ever run.
	var running, peak, arrived atomic.Int64
	pair := make(chan struct{})
	nt := stepKind(t, func(ctx context.Context, name string) (string, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		switch arrived.Add(1) {
		case 1:
			select {
			case <-pair:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		case 2:
			close(pair)
		}
		return name, nil
	})
	y := "name: t\nnodes:\n  - {id: start, kind: start}\n"
	for i := range 6 {
		y += fmt.Sprintf("  - {id: b%d, kind: step, args: {name: b%d}, depends_on: [start]}\n", i, i)
	}
	y += "  - {id: end, kind: end, depends_on: [b0, b1, b2, b3, b4, b5]}\n"
	d := mustParse(t, y, workflow.WithNodeTypes(nt))
	ctx, cancel := context.WithTimeout(context.Background(), 30e9)
	defer cancel()
	e := workflow.New(workflow.Services{}, workflow.Register(nt), workflow.Parallelism(2))
	if _, err := workflow.Collect(e.Run(ctx, d, nil)); err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 2 {
		t.Errorf("peak %d nodes at once, want 2", peak.Load())
	}
}

func TestValueSizeLimit(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	nine := strings.Repeat("{{inputs.x}}", 9)
	for _, tc := range []struct{ name, node, want string }{
		{"template", `{id: n, kind: template, template: "` + nine + `"}`, "template: text over"},
		{"end outputs", `{id: n, kind: end, outputs: {list: ["{{inputs.x}}", "{{inputs.x}}", "{{inputs.x}}", "{{inputs.x}}", "{{inputs.x}}", "{{inputs.x}}", "{{inputs.x}}", "{{inputs.x}}", "{{inputs.x}}"]}}`, "outputs over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := "name: t\nnodes:\n  - {id: start, kind: start, inputs: {x: {type: string}}}\n  - " + tc.node + "\n"
			if !strings.Contains(tc.node, "kind: end") {
				y += "  - {id: end, kind: end, depends_on: [n]}\n"
			}
			d := mustParse(t, y)
			_, err := workflow.Collect(workflow.New(workflow.Services{}).Run(context.Background(), d, map[string]any{"x": big}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestIterationItemLimit(t *testing.T) {
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start, inputs: {xs: {type: array}}}
  - {id: loop, kind: iteration, items: "{{inputs.xs}}", output: "{{item}}", nodes: [{id: t, kind: template, template: "{{item}}"}]}
  - {id: end, kind: end, depends_on: [loop]}
`)
	_, err := workflow.Collect(workflow.New(workflow.Services{}).Run(context.Background(), d, map[string]any{"xs": make([]int, workflow.MaxItems+1)}))
	if !errors.Is(err, workflow.ErrLimit) || !strings.Contains(err.Error(), "10001 items is over the limit of 10000") {
		t.Errorf("error %v", err)
	}
}

func TestCancelledBeforeRun(t *testing.T) {
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start}
  - {id: a, kind: template, template: a, depends_on: [start]}
  - {id: end, kind: end, depends_on: [a]}
`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := workflow.Collect(workflow.New(workflow.Services{}).Run(ctx, d, nil))
	if !errors.Is(err, context.Canceled) || len(res.Nodes) != 0 {
		t.Errorf("error %v after %d nodes", err, len(res.Nodes))
	}
}
