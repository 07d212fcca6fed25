// Package workflow_test measures the scheduler overhead of Weft's workflow
// package against Eino's compose graph: no-op nodes in chains and wide
// fan-outs, per node; and the time to resume a finished 100-node run from
// its checkpoints.
package workflow_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/cloudwego/eino/compose"
	"github.com/weftlabs/weft/workflow"
)

var sizes = []int{10, 100, 1000}

// noop is the no-op node kind.
var noop = func() *workflow.NodeType {
	nt, err := workflow.Func("noop", func(context.Context, map[string]any) (map[string]any, error) { return nil, nil })
	if err != nil {
		panic(err)
	}
	return nt
}()

// weftDef builds start → n chain or fan-out of no-op nodes → end.
func weftDef(n int, fan bool) *workflow.Definition {
	d := &workflow.Definition{Name: "bench", Nodes: []workflow.Node{{ID: "start", Kind: workflow.KindStart}}}
	prev := "start"
	var all []string
	for i := range n {
		id := "n" + strconv.Itoa(i)
		d.Nodes = append(d.Nodes, workflow.Node{ID: id, Kind: "noop", DependsOn: []string{prev}})
		if !fan {
			prev = id
		}
		all = append(all, id)
	}
	end := workflow.Node{ID: "end", Kind: workflow.KindEnd, DependsOn: []string{prev}}
	if fan {
		end.DependsOn = all
	}
	d.Nodes = append(d.Nodes, end)
	if err := d.Validate(workflow.WithNodeTypes(noop)); err != nil {
		panic(err)
	}
	return d
}

func benchWeft(b *testing.B, n int, fan bool) {
	ctx := context.Background()
	e := workflow.New(workflow.Services{}, workflow.Register(noop))
	d := weftDef(n, fan)
	b.ReportAllocs()
	start := mallocs()
	for b.Loop() {
		for _, err := range e.Run(ctx, d, nil) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	perNode(b, n, start)
}

// einoGraph builds START → n chain or fan-out of no-op lambdas → END, in
// DAG mode (a node waits for all its predecessors, as Weft's joins do) or,
// for chains, in Eino's default Pregel mode.
func einoGraph(b *testing.B, n int, fan, pregel bool) compose.Runnable[map[string]any, map[string]any] {
	ctx := context.Background()
	g := compose.NewGraph[map[string]any, map[string]any]()
	prev := compose.START
	for i := range n {
		id := "n" + strconv.Itoa(i)
		var opts []compose.GraphAddNodeOpt
		if fan {
			opts = append(opts, compose.WithOutputKey(id))
		}
		lambda := compose.InvokableLambda(func(_ context.Context, in map[string]any) (map[string]any, error) { return in, nil })
		if fan {
			lambda = compose.InvokableLambda(func(_ context.Context, in map[string]any) (any, error) { return nil, nil })
		}
		if err := g.AddLambdaNode(id, lambda, opts...); err != nil {
			b.Fatal(err)
		}
		if err := g.AddEdge(prev, id); err != nil {
			b.Fatal(err)
		}
		if fan {
			if err := g.AddEdge(id, compose.END); err != nil {
				b.Fatal(err)
			}
		} else {
			prev = id
		}
	}
	if !fan {
		if err := g.AddEdge(prev, compose.END); err != nil {
			b.Fatal(err)
		}
	}
	opts := []compose.GraphCompileOption{compose.WithNodeTriggerMode(compose.AllPredecessor)}
	if pregel {
		opts = []compose.GraphCompileOption{compose.WithMaxRunSteps(n + 10)}
	}
	r, err := g.Compile(ctx, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func benchEino(b *testing.B, n int, fan, pregel bool) {
	ctx := context.Background()
	r := einoGraph(b, n, fan, pregel)
	in := map[string]any{}
	b.ReportAllocs()
	start := mallocs()
	for b.Loop() {
		if _, err := r.Invoke(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	perNode(b, n, start)
}

// mallocs returns the number of heap allocations so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// perNode reports time and allocations per node of the graph (since
// start, the allocation count when the timed loop began).
func perNode(b *testing.B, n int, start uint64) {
	allocs := mallocs() - start
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
	b.ReportMetric(float64(allocs)/float64(b.N)/float64(n), "allocs/node")
}

func BenchmarkScheduler(b *testing.B) {
	for _, shape := range []string{"chain", "fan"} {
		for _, n := range sizes {
			fan := shape == "fan"
			b.Run(fmt.Sprintf("%s/%d/weft", shape, n), func(b *testing.B) { benchWeft(b, n, fan) })
			b.Run(fmt.Sprintf("%s/%d/eino-dag", shape, n), func(b *testing.B) { benchEino(b, n, fan, false) })
			if !fan {
				b.Run(fmt.Sprintf("%s/%d/eino-pregel", shape, n), func(b *testing.B) { benchEino(b, n, fan, true) })
			}
		}
	}
}

// frozen is a checkpointer whose saves are dropped, so that every
// iteration resumes the same interrupted run.
type frozen struct{ *workflow.MemoryCheckpointer }

func (frozen) Save(context.Context, string, workflow.Checkpoint) error { return nil }

// BenchmarkResume resumes a 100-node chain interrupted before its end node:
// the checkpoints are read (and decoded from JSON, as from a database), the
// 101 finished nodes restored, and the end node run.
func BenchmarkResume(b *testing.B) {
	ctx := context.Background()
	e := workflow.New(workflow.Services{}, workflow.Register(noop))
	d := weftDef(100, false)
	cp := workflow.NewMemoryCheckpointer()
	for _, err := range e.Run(ctx, d, nil, workflow.WithRunID("r"), workflow.WithCheckpointer(cp)) {
		if err != nil {
			b.Fatal(err)
		}
	}
	// The crash: forget the end node's checkpoint.
	cps, err := cp.Completed(ctx, "r")
	if err != nil {
		b.Fatal(err)
	}
	crashed := workflow.NewMemoryCheckpointer()
	for _, c := range cps {
		if c.Key != "end" {
			if err := crashed.Save(ctx, "r", c); err != nil {
				b.Fatal(err)
			}
		}
	}
	store := frozen{crashed}
	b.ReportAllocs()
	for b.Loop() {
		restored := 0
		for ev, err := range e.Run(ctx, d, nil, workflow.WithRunID("r"), workflow.WithCheckpointer(store)) {
			if err != nil {
				b.Fatal(err)
			}
			if ev.Restored {
				restored++
			}
		}
		if restored != 101 {
			b.Fatalf("%d nodes restored, want 101", restored)
		}
	}
}
