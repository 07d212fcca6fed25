package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftlabs/weft/llm"
)

// runner is the state one run shares between its graphs.
type runner struct {
	e        *Engine
	runID    string
	cp       Checkpointer
	restored map[string]*Checkpoint
	inputs   map[string]any

	// nodeRuns counts the node runs (Limits.NodeRuns); bytes is what is
	// left of Limits.RunBytes; slots, when the engine has a Parallelism,
	// holds a token for each node running.
	nodeRuns atomic.Int64
	bytes    atomic.Int64
	slots    chan struct{}

	// memo holds the checkpoints of Step results and answers, by key.
	memoMu sync.Mutex
	memo   map[string]*Checkpoint
}

// reserve counts n node runs, or reports false (counting none) when they
// would take the run over its limit.
func (r *runner) reserve(n int64) bool {
	if r.nodeRuns.Add(n) > int64(r.e.limits.NodeRuns) {
		r.nodeRuns.Add(-n)
		return false
	}
	return true
}

// charge counts the size of vs against the run's bytes, or fails
// (counting nothing) when it would take the run over its limit.
func (r *runner) charge(vs ...any) error {
	left := r.bytes.Load()
	rem := int(left)
	for _, v := range vs {
		if rem = valueSize(v, rem); rem < 0 {
			break
		}
	}
	if rem >= 0 {
		if r.bytes.Add(int64(rem)-left) >= 0 {
			return nil
		}
		r.bytes.Add(left - int64(rem))
	}
	return fmt.Errorf("inputs and outputs take the run %w of %d bytes", ErrLimit, r.e.limits.RunBytes)
}

// graph schedules one run of a plan: the top level, or one item of an
// iteration. Its fields belong to the goroutine that calls run (the
// coordinator); nodes that run on other goroutines report through msgs.
type graph struct {
	r      *runner
	p      *plan
	sc     *scope
	prefix string
	emit   func(Event) bool
	sendFn func(Event) // g.send, made once

	ctx     context.Context
	cancel  context.CancelFunc
	pending []int32 // incoming edges not yet decided
	live    []int32 // control edges in decided live
	dead    []int32 // data edges in decided dead
	ready   []int
	msgs    chan msg
	running int
	usage   llm.Usage
	err     error
	gone    bool // emit returned false: nobody listens any more
	// waits are the open questions of the nodes that wait.
	waits []Interrupt
}

// msg is what a node running on its own goroutine sends its coordinator:
// an event to pass on, or its result.
type msg struct {
	idx  int
	done bool
	ev   Event
	res  result
}

// result is the outcome of running a node.
type result struct {
	inputs   map[string]any
	outputs  map[string]any
	err      error
	usage    llm.Usage
	started  time.Time
	attempts int
	restored bool
	// wait, when set, says the node waits for a person: it did not finish.
	wait *waitState
}

func newGraph(r *runner, p *plan, sc *scope, prefix string, emit func(Event) bool) *graph {
	return &graph{r: r, p: p, sc: sc, prefix: prefix, emit: emit}
}

// run runs the graph to its end and returns the error that stopped it.
func (g *graph) run(ctx context.Context) error {
	g.ctx, g.cancel = context.WithCancel(ctx)
	defer g.cancel()
	n := len(g.p.nodes)
	counts := make([]int32, 3*n)
	g.pending, g.live, g.dead = counts[:n:n], counts[n:2*n:2*n], counts[2*n:]
	for i, pn := range g.p.nodes {
		g.pending[i] = int32(pn.preds)
	}
	g.ready = append(make([]int, 0, 8), g.p.roots...)
	limit := g.r.e.parallel
	for {
		for len(g.ready) > 0 && g.err == nil && (limit == 0 || g.running < limit) {
			last := len(g.ready) - 1
			i := g.ready[last]
			g.ready = g.ready[:last]
			g.launch(i)
		}
		if g.running == 0 {
			break
		}
		m := <-g.msgs
		if !m.done {
			g.send(m.ev)
			continue
		}
		g.running--
		g.finish(m.idx, m.res)
	}
	if g.err == nil && ctx.Err() != nil {
		g.err = ctx.Err()
	}
	return g.err
}

// send passes an event on; when nobody listens any more the run stops.
func (g *graph) send(ev Event) {
	if g.gone {
		return
	}
	if !g.emit(ev) {
		g.gone = true
		g.fail(context.Canceled)
	}
}

// fail records the error that ends the run and stops its nodes.
func (g *graph) fail(err error) {
	if g.err == nil {
		g.err = err
	}
	g.cancel()
}

func (g *graph) key(pn *pnode) string {
	if g.prefix == "" {
		return pn.n.ID
	}
	return g.prefix + pn.n.ID
}

func (g *graph) event(t EventType, pn *pnode) Event {
	return Event{Type: t, RunID: g.r.runID, Node: pn.n.ID, Key: g.key(pn), Kind: pn.n.Kind, Time: time.Now()}
}

// launch starts node i, whose incoming edges are all decided: it is
// skipped when none is live, restored when it has a checkpoint, run on the
// coordinator's goroutine when nothing else can run meanwhile, and on its
// own goroutine otherwise.
func (g *graph) launch(i int) {
	if err := g.ctx.Err(); err != nil {
		g.fail(err) // cancelled between nodes: start no more
		return
	}
	pn := g.p.nodes[i]
	if pn.ctrlPreds > 0 && g.live[i] == 0 || pn.ctrlPreds == 0 && g.dead[i] > 0 {
		ev := g.event(NodeFinished, pn)
		ev.Status = Skipped
		g.send(ev)
		g.decide(pn, Skipped, nil)
		return
	}
	key := g.key(pn)
	var marker bool
	if cp := g.r.restored[key]; cp != nil {
		switch {
		case cp.Waiting != nil && cp.Finished.IsZero() && cp.Error == "":
			in := cp.Waiting
			if g.r.memoized(answerKey(in.Key, in.Name)) == nil && !g.r.expired(in) {
				// Still waiting: the node does not run.
				g.wait(i, result{wait: &waitState{own: in, all: []Interrupt{*in}}, started: cp.Started, restored: true})
				return
			}
			// Answered, or past its deadline: it runs again from its first
			// line, finding its answer and its Steps' results.
		case cp.Finished.IsZero() && cp.Error != "":
			// It failed and failed the run: it is tried again.
		case !cp.Finished.IsZero():
			// Counted as when it ran; it is stored already, so it
			// fails nothing even over the limit (the nodes after do).
			_ = g.r.charge(cp.Outputs)
			res := result{outputs: cp.Outputs, usage: cp.Usage, started: cp.Started, restored: true}
			if cp.Error != "" {
				res.err = errors.New(cp.Error)
			}
			g.finish(i, res)
			return
		default:
			marker = true
		}
	}
	ev := g.event(NodeStarted, pn)
	started := ev.Time
	g.send(ev)
	if marker && pn.sideEffects && !pn.n.Idempotent {
		g.finish(i, result{err: ErrInterrupted, started: started})
		return
	}
	if g.r.cp != nil && pn.sideEffects && !pn.n.Idempotent {
		cp := Checkpoint{NodeID: pn.n.ID, Key: key, Started: started}
		if err := g.r.cp.Save(g.ctx, g.r.runID, cp); err != nil {
			g.fail(fmt.Errorf("workflow: checkpoint %s: %w", key, err))
			return
		}
	}
	if g.running == 0 && len(g.ready) == 0 {
		if g.sendFn == nil {
			g.sendFn = g.send
		}
		// Nothing of this graph runs, so nothing waits for this
		// goroutine while it waits for a slot.
		res := g.execSlot(g.ctx, pn, g.sendFn, started)
		g.finish(i, res)
		return
	}
	if g.msgs == nil {
		g.msgs = make(chan msg, 16)
	}
	g.running++
	go func() {
		res := g.execSlot(g.ctx, pn, func(ev Event) { g.msgs <- msg{idx: i, ev: ev} }, started)
		g.msgs <- msg{idx: i, done: true, res: res}
	}()
}

// execSlot runs a node with exec once the run has a slot for it (see
// Parallelism). An iteration takes none: it only waits for its items'
// nodes, which do, so iterations nested in each other cannot hold every
// slot while their nodes wait for one.
func (g *graph) execSlot(ctx context.Context, pn *pnode, up func(Event), started time.Time) result {
	if g.r.slots != nil && pn.n.Kind != KindIteration {
		select {
		case g.r.slots <- struct{}{}:
			defer func() { <-g.r.slots }()
		case <-ctx.Done():
			return result{err: ctx.Err(), started: started}
		}
	}
	return g.exec(ctx, pn, up, started)
}

// finish records node i's result: it applies the failure policy, saves
// the checkpoint, reports the node and decides its outgoing edges.
func (g *graph) finish(i int, res result) {
	if res.wait != nil {
		if g.err == nil {
			g.wait(i, res)
		}
		return
	}
	pn := g.p.nodes[i]
	status := Succeeded
	ev := g.event(NodeFinished, pn)
	ev.Inputs, ev.Usage, ev.Attempts, ev.Restored = res.inputs, res.usage, res.attempts, res.restored
	if !res.started.IsZero() && !res.restored {
		ev.Latency = ev.Time.Sub(res.started)
	}
	if res.err != nil {
		if g.err != nil {
			return // the run is ending already; this is an echo of its cancel
		}
		status = Failed
		ev.Error = res.err.Error()
		action := FailRun
		if pn.n.OnError != nil && pn.n.OnError.Action != "" {
			action = pn.n.OnError.Action
		}
		if g.ctx.Err() != nil && !res.restored {
			action = FailRun // a cancelled run does not carry on with defaults
		}
		switch {
		case res.restored:
		case action == Continue:
			res.outputs = nil
			if pn.def != nil {
				var err error
				if res.outputs, err = pn.def.resolveMap(g.sc); err != nil {
					ev.Status = status
					g.send(ev)
					g.fail(&NodeError{Node: pn.n.ID, Key: ev.Key, Err: fmt.Errorf("on_error.default: %w", err)})
					return
				}
			}
		case action == Branch:
			res.outputs = map[string]any{"error": ev.Error}
		default:
			ev.Status = status
			g.send(ev)
			if g.ctx.Err() != nil {
				g.fail(g.ctx.Err())
				return
			}
			if g.r.cp != nil && pn.sideEffects && !pn.n.Idempotent {
				// The node did not finish, but it is known to have
				// failed: a resumed run may try it again.
				cp := Checkpoint{NodeID: pn.n.ID, Key: ev.Key, Error: ev.Error, Started: res.started}
				if prev := g.r.restored[ev.Key]; prev != nil {
					cp.Waiting = prev.Waiting // the question it gave up on
				}
				if err := g.r.cp.Save(g.ctx, g.r.runID, cp); err != nil {
					g.fail(fmt.Errorf("workflow: checkpoint %s: %w", ev.Key, err))
					return
				}
			}
			g.fail(&NodeError{Node: pn.n.ID, Key: ev.Key, Err: res.err})
			return
		}
	}
	ev.Status, ev.Outputs = status, res.outputs
	if g.r.cp != nil && !res.restored {
		cp := Checkpoint{NodeID: pn.n.ID, Key: ev.Key, Outputs: res.outputs, Error: ev.Error, Usage: res.usage, Started: res.started, Finished: ev.Time}
		if prev := g.r.restored[ev.Key]; prev != nil {
			cp.Waiting = prev.Waiting // the question it answered or gave up on
		}
		if err := g.r.cp.Save(g.ctx, g.r.runID, cp); err != nil {
			g.fail(fmt.Errorf("workflow: checkpoint %s: %w", ev.Key, err))
			return
		}
	}
	g.sc.outs[i] = res.outputs
	g.usage = g.usage.Add(res.usage)
	g.send(ev)
	errBranch := status == Failed && pn.n.OnError != nil && pn.n.OnError.Action == Branch
	timeoutBranch := status == Succeeded && pn.n.Kind == KindHuman && res.outputs["timed_out"] == true
	if errBranch || timeoutBranch {
		status = Skipped // for the edges: only error (timeout) edges are live
		for _, e := range pn.edges {
			if errBranch && e.onError || timeoutBranch && e.onTimeout {
				g.live[e.to]++
			}
		}
	}
	g.decide(pn, status, res.outputs)
}

// decide marks the outgoing edges of a node that finished with status (a
// skipped node's are all dead) and queues the nodes that have all theirs.
func (g *graph) decide(pn *pnode, status Status, outputs map[string]any) {
	for _, e := range pn.edges {
		live := false
		if status != Skipped && !e.onError && !e.onTimeout {
			if e.routes == nil {
				live = true
			} else if b, _ := outputs["branch"].(string); slices.Contains(e.routes, b) {
				live = true
			}
		}
		switch {
		case e.data && !live:
			g.dead[e.to]++
		case !e.data && live:
			g.live[e.to]++
		}
		if g.pending[e.to]--; g.pending[e.to] == 0 {
			g.ready = append(g.ready, e.to)
		}
	}
}

// exec runs a node with its retry policy and timeout; up passes events on
// to the coordinator.
func (g *graph) exec(ctx context.Context, pn *pnode, up func(Event), started time.Time) result {
	res := result{started: started}
	attempts := 1
	if r := pn.n.Retry; r != nil && r.MaxAttempts > 1 {
		attempts = r.MaxAttempts
	}
	x := &nodeRun{g: g, pn: pn, up: up}
	for a := 1; ; a++ {
		res.attempts = a
		actx, cancel := ctx, context.CancelFunc(nil)
		if t := pn.n.Timeout; t > 0 && pn.n.Kind != KindHuman { // a human node's bounds its wait
			actx, cancel = context.WithTimeout(ctx, time.Duration(t))
		}
		x.usage = llm.Usage{}
		x.pending = nil
		res.inputs, res.outputs, res.err = x.safeRun(actx)
		var we *waitError
		if x.pending != nil || errors.As(res.err, &we) {
			// It waits for a person: no retry, nothing of it kept but its
			// question.
			if cancel != nil {
				cancel()
			}
			res.usage = res.usage.Add(x.usage)
			res.outputs, res.err = nil, nil
			if x.pending != nil {
				res.wait = &waitState{own: x.pending, all: []Interrupt{*x.pending}}
			} else {
				res.wait = &waitState{all: we.all}
			}
			return res
		}
		if res.err == nil && valueSize(res.outputs, MaxValueSize) < 0 {
			res.outputs, res.err = nil, fmt.Errorf("outputs %w of %d bytes", ErrLimit, MaxValueSize)
		}
		if res.err == nil {
			if res.err = g.r.charge(res.inputs, res.outputs); res.err != nil {
				res.outputs = nil
				attempts = a // trying again would make as much
			}
		}
		if cancel != nil {
			if res.err != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
				res.err = fmt.Errorf("timed out after %s: %w", time.Duration(pn.n.Timeout), res.err)
			}
			cancel()
		}
		res.usage = res.usage.Add(x.usage)
		if res.err == nil || a >= attempts || ctx.Err() != nil {
			return res
		}
		if !sleep(ctx, backoff(pn.n.Retry, a)) {
			res.err = ctx.Err()
			return res
		}
	}
}

// backoff is the wait after failed attempt a.
func backoff(r *Retry, a int) time.Duration {
	d := time.Duration(r.Backoff)
	for i := 1; i < a && d > 0; i++ {
		d *= 2
		if r.MaxBackoff > 0 && d >= time.Duration(r.MaxBackoff) {
			return time.Duration(r.MaxBackoff)
		}
	}
	return d
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// itemPrefix is the key prefix of the nodes of item i of iteration key.
func itemPrefix(key string, i int) string {
	return key + "[" + strconv.Itoa(i) + "]."
}
