package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A run that reaches a human node, or a Go node that calls Pause, does not
// wait in the process: the node's question is checkpointed as an open
// Interrupt, the rest of the run goes on as far as it can without the
// node, and the run ends with WorkflowWaiting listing its open
// interrupts. Running the run again (the same run ID and checkpointer)
// WithAnswer records the answer and resumes: finished nodes are restored,
// nodes still waiting stay so without running, and the answered node runs
// again from its first line — a human node renders its message and takes
// the answer as its outputs; a Go node finds the answer returned by its
// Pause, and the results of its Steps as they were.

// Interrupt is an open question of a run to a person: a human node, or a
// Go node's [Pause], waiting for an answer.
type Interrupt struct {
	// ID names the interrupt, the same in every run of the run: the run's
	// ID and the node's key ("r1:review", "r1:loop[2].review"), and the
	// pause's name after "#" for a named Pause ("r1:publish#legal").
	ID    string `json:"id"`
	RunID string `json:"run_id"`
	Node  string `json:"node"`
	Key   string `json:"key"`
	// Name is the Pause's name, "" for a human node.
	Name    string `json:"name,omitempty"`
	Message string `json:"message,omitempty"`
	// Schema is the answer's type: an answer that does not fit it is
	// refused. Nil takes any object.
	Schema  *Schema   `json:"schema,omitempty"`
	Created time.Time `json:"created"`
	// Deadline, when not zero, is when the question times out: a run after
	// it refuses answers and goes on without one (see [ErrTimedOut]). No
	// timer waits for it: the caller runs the run again then.
	Deadline time.Time `json:"deadline,omitzero"`
}

// Request is what a Go node asks a person with [Pause].
type Request struct {
	// Name tells apart the pauses of one node (and names its answer); a
	// node that pauses once may leave it empty. Letters, digits, '_' and
	// '-'.
	Name    string
	Message string
	// Schema is the answer's type; nil takes any object.
	Schema *Schema
	// Timeout, when positive, bounds the wait (see Interrupt.Deadline).
	Timeout time.Duration
}

// Errors of pauses and answers.
var (
	// ErrPaused is returned by [Pause] until the question is answered: the
	// node returns it (wrapped or not) and the run waits.
	ErrPaused = errors.New("workflow: waiting for a person's answer")
	// ErrTimedOut is wrapped by what a pause returns once its deadline
	// passed without an answer, and by the error of a human node without
	// a timeout branch then.
	ErrTimedOut = errors.New("workflow: nobody answered before the deadline")
	// ErrUnknownInterrupt: the run has no interrupt of that ID (an API
	// answers 404).
	ErrUnknownInterrupt = errors.New("workflow: no such interrupt")
	// ErrAnswered: the interrupt was answered already; the AnswerError
	// holds the answer (an API answers 409).
	ErrAnswered = errors.New("workflow: the interrupt was answered already")
	// ErrExpired: the interrupt's deadline passed; the run goes on without
	// the answer when it is next run (an API answers 409).
	ErrExpired = errors.New("workflow: the interrupt's deadline passed")
)

// AnswerError refuses an answer ([WithAnswer]) before anything is stored
// or run: the run stays as it was, waiting. Err is ErrUnknownInterrupt,
// ErrAnswered (Answer is the stored answer), ErrExpired, or what is wrong
// with the answer, Field then naming the field at fault ("" for the
// answer itself; nested fields joined by dots, items by index: "items[2].sku").
type AnswerError struct {
	Interrupt string
	Field     string
	Err       error
	Answer    map[string]any
}

// Error names the interrupt, the field and the fault.
func (e *AnswerError) Error() string {
	s := "workflow: answer to " + e.Interrupt + ": "
	if e.Field != "" {
		s += e.Field + ": "
	}
	return s + e.Err.Error()
}

// Unwrap returns the fault.
func (e *AnswerError) Unwrap() error { return e.Err }

// WithAnswer answers the run's open interrupt id with payload before the
// run resumes: the payload is checked against the interrupt's schema
// (integers as integers, required fields, enums; unknown top-level fields
// of a schema with properties are refused) and stored, then the run goes
// on. A refused answer ends the run before it starts with an
// [*AnswerError], and nothing is stored. It needs [WithCheckpointer].
// Several answers may be given at once. Runs of one run ID must not
// overlap (a server holds a lease on the run): a run answering one
// interrupt then sees the answers of earlier runs to the others.
func WithAnswer(id string, payload map[string]any) RunOption {
	return func(c *runConfig) { c.answers = append(c.answers, answer{id, payload}) }
}

type answer struct {
	id      string
	payload map[string]any
}

// Clock sets the engine's clock (default time.Now): the time interrupts
// are opened at and their deadlines are checked against. A test pins it
// to take a timeout branch without waiting.
func Clock(now func() time.Time) Option {
	return func(e *Engine) {
		if now != nil {
			e.now = now
		}
	}
}

// Pause asks a person from a Go node (a kind made with [Func]) and returns
// the answer once it is given. Until then it returns an error wrapping
// [ErrPaused], which the node returns: the run waits, its interrupt
// checkpointed, and nothing of the node is kept but its [Step] results.
// When the answer comes, the node runs again from its first line with the
// same arguments, and this Pause returns the answer. So a node calls
// Pause where the answer is needed, after its Steps:
//
//	func(ctx context.Context, in Draft) (Out, error) {
//		text, err := workflow.Step(ctx, "draft", func(ctx context.Context) (string, error) {
//			return writeDraft(ctx, in) // runs once, however often the node runs
//		})
//		…
//		ok, err := workflow.Pause(ctx, workflow.Request{Name: "review", Message: text, Schema: approval})
//		if err != nil {
//			return Out{}, err // ErrPaused: the run waits here
//		}
//		… // runs once the answer is given
//	}
//
// Everything the node does before a Pause runs again on every run that
// reaches it, so what must not repeat (a model call, a message sent) goes
// through Step. Answers are kept by name: a node that pauses several times
// gives each pause its own name, and each answered one returns its
// answer. A node waits for one question at a time; what it returns after
// a Pause that was not answered is discarded. Once the deadline of the
// request's Timeout passed without an answer, Pause returns an error
// wrapping [ErrTimedOut] (the node decides what follows). Pause needs a
// durable run ([WithRunID] and [WithCheckpointer]).
func Pause(ctx context.Context, req Request) (map[string]any, error) {
	x, _ := ctx.Value(nodeKey{}).(*nodeRun)
	if x == nil {
		return nil, errors.New("workflow: Pause called outside a node of a run")
	}
	return x.pause(req)
}

// Step runs fn once per node of a durable run: its result is checkpointed
// under name, and when the node runs again (after a [Pause], or a retry)
// Step returns the stored result instead of calling fn. A failing fn is
// not stored: it is called again next time. The result goes through JSON
// (T must survive the round trip) and counts against the run's bytes.
// Outside a node, or in a run without a checkpointer, Step calls fn.
//
// The step's effect happens once unless the process dies between fn's
// return and its checkpoint's save: then fn runs again.
func Step[T any](ctx context.Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	x, _ := ctx.Value(nodeKey{}).(*nodeRun)
	if x == nil || x.g.r.cp == nil {
		return fn(ctx)
	}
	var zero T
	if !nameRE.MatchString(name) {
		return zero, fmt.Errorf("workflow: step name %q: want 1 to 64 letters, digits, '_' or '-'", name)
	}
	r := x.g.r
	key := stepKey(x.g.key(x.pn), name)
	if cp := r.memoized(key); cp != nil {
		var v T
		b, err := json.Marshal(cp.Outputs["value"])
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		if err != nil {
			return zero, fmt.Errorf("workflow: step %s: stored result: %w", name, err)
		}
		return v, nil
	}
	started := time.Now()
	v, err := fn(ctx)
	if err != nil {
		return v, err
	}
	stored, err := plainJSON(v)
	if err == nil && valueSize(stored, MaxValueSize) < 0 {
		err = fmt.Errorf("result %w of %d bytes", ErrLimit, MaxValueSize)
	}
	if err == nil {
		err = r.charge(stored)
	}
	if err != nil {
		return zero, fmt.Errorf("workflow: step %s: %w", name, err)
	}
	cp := &Checkpoint{NodeID: x.pn.n.ID, Key: key, Outputs: map[string]any{"value": stored}, Started: started, Finished: time.Now()}
	if err := r.cp.Save(ctx, r.runID, *cp); err != nil {
		return zero, fmt.Errorf("workflow: step %s: checkpoint: %w", name, err)
	}
	r.remember(cp)
	return v, nil
}

// nodeKey is the context key of the nodeRun a Pause or Step runs in.
type nodeKey struct{}

// The keys of the checkpoints beside a node's own: its Steps' results and
// its answers. Node IDs have neither '#' nor ':'.
func stepKey(key, name string) string   { return key + "#step:" + name }
func answerKey(key, name string) string { return key + "#answer:" + name }

func interruptID(runID, key, name string) string {
	id := runID + ":" + key
	if name != "" {
		id += "#" + name
	}
	return id
}

// pause is Pause in node run x (a human node's too).
func (x *nodeRun) pause(req Request) (map[string]any, error) {
	r := x.g.r
	if r.cp == nil {
		return nil, errors.New("workflow: a pause needs a durable run (WithRunID and WithCheckpointer)")
	}
	if req.Name != "" && !nameRE.MatchString(req.Name) {
		return nil, fmt.Errorf("workflow: pause name %q: want 1 to 64 letters, digits, '_' or '-'", req.Name)
	}
	if req.Schema != nil {
		if err := req.Schema.check("schema"); err != nil {
			return nil, fmt.Errorf("workflow: pause %q: %w", req.Name, err)
		}
	}
	key := x.g.key(x.pn)
	if cp := r.memoized(answerKey(key, req.Name)); cp != nil {
		return copyMap(cp.Outputs), nil
	}
	id := interruptID(r.runID, key, req.Name)
	now := r.e.now()
	in := &Interrupt{ID: id, RunID: r.runID, Node: x.pn.n.ID, Key: key, Name: req.Name, Message: req.Message, Schema: req.Schema, Created: now}
	if req.Timeout > 0 {
		in.Deadline = now.Add(req.Timeout)
	}
	if cp := r.restored[key]; cp != nil && cp.Waiting != nil && cp.Waiting.ID == id {
		// Asked again: the question keeps the time it was opened at.
		in.Created, in.Deadline = cp.Waiting.Created, cp.Waiting.Deadline
		if r.expired(in) {
			return nil, fmt.Errorf("%w: %s at %s", ErrTimedOut, id, in.Deadline.Format(time.RFC3339))
		}
	}
	x.mu.Lock()
	if x.pending == nil {
		x.pending = in
	}
	x.mu.Unlock()
	return nil, fmt.Errorf("%w: %s", ErrPaused, id)
}

// human runs a human node: its question, then its answer (or its timeout
// branch) as its outputs.
func (x *nodeRun) human(ctx context.Context) (in, out map[string]any, err error) {
	pn, n := x.pn, x.pn.n
	msg, err := pn.prompt.render(x.g.sc)
	if err != nil {
		return nil, nil, fmt.Errorf("message: %w", err)
	}
	in = map[string]any{"message": msg}
	ans, err := x.pause(Request{Message: msg, Schema: n.OutputSchema, Timeout: time.Duration(n.Timeout)})
	timedOut := errors.Is(err, ErrTimedOut) && len(n.OnTimeout) > 0
	if err != nil && !timedOut {
		return in, nil, err
	}
	out = ans
	if out == nil {
		out = map[string]any{}
	}
	if s := n.OutputSchema; s != nil {
		for k := range s.Properties {
			if _, ok := out[k]; !ok || timedOut {
				out[k] = nil
			}
		}
	}
	out["timed_out"] = timedOut
	return in, out, nil
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// expired reports whether in's deadline passed.
func (r *runner) expired(in *Interrupt) bool {
	return !in.Deadline.IsZero() && !r.e.now().Before(in.Deadline)
}

// memoized returns the checkpoint of a Step result or an answer.
func (r *runner) memoized(key string) *Checkpoint {
	r.memoMu.Lock()
	defer r.memoMu.Unlock()
	return r.memo[key]
}

func (r *runner) remember(cp *Checkpoint) {
	r.memoMu.Lock()
	defer r.memoMu.Unlock()
	if r.memo == nil {
		r.memo = map[string]*Checkpoint{}
	}
	r.memo[cp.Key] = cp
}

// answer checks an answer to interrupt id and stores it.
func (r *runner) answer(ctx context.Context, a answer) error {
	fail := func(field string, err error) error { return &AnswerError{Interrupt: a.id, Field: field, Err: err} }
	for _, cp := range r.memo {
		if cp.Waiting != nil && cp.Waiting.ID == a.id {
			return &AnswerError{Interrupt: a.id, Err: ErrAnswered, Answer: copyMap(cp.Outputs)}
		}
	}
	var in *Interrupt
	for _, cp := range r.restored {
		if cp.Waiting != nil && cp.Waiting.ID == a.id {
			if !cp.Finished.IsZero() || cp.Error != "" {
				return fail("", ErrExpired) // it went on without an answer
			}
			in = cp.Waiting
		}
	}
	switch {
	case in == nil:
		return fail("", ErrUnknownInterrupt)
	case r.expired(in):
		return fail("", ErrExpired)
	}
	v, err := plainJSON(a.payload)
	if err != nil {
		return fail("", err)
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	if valueSize(m, MaxValueSize) < 0 {
		return fail("", fmt.Errorf("the answer is %w of %d bytes", ErrLimit, MaxValueSize))
	}
	if s := in.Schema; s != nil {
		if len(s.Properties) > 0 {
			for _, k := range sortedKeys(m) {
				if _, ok := s.Properties[k]; !ok {
					return fail(k, fmt.Errorf("unknown field (want %s)", strings.Join(sortedKeys(s.Properties), ", ")))
				}
			}
		}
		c, err := s.conform("answer", m)
		var fe *fieldError
		if errors.As(err, &fe) {
			return fail(strings.TrimPrefix(strings.TrimPrefix(fe.field, "answer"), "."), errors.New(fe.msg))
		}
		if err != nil {
			return fail("", err)
		}
		m, _ = c.(map[string]any)
	}
	cp := &Checkpoint{NodeID: in.Node, Key: answerKey(in.Key, in.Name), Outputs: m, Started: in.Created, Finished: r.e.now(), Waiting: in}
	if err := r.cp.Save(ctx, r.runID, *cp); err != nil {
		return fmt.Errorf("workflow: checkpoint the answer to %s: %w", a.id, err)
	}
	r.remember(cp)
	return nil
}

// waitState is a node that waits: its own question (checkpointed with
// it), and every question it waits for (an iteration's are its items').
type waitState struct {
	own *Interrupt
	all []Interrupt
}

// waitError is what an iteration returns when items wait.
type waitError struct{ all []Interrupt }

func (e *waitError) Error() string {
	return fmt.Sprintf("workflow: %d items wait for answers", len(e.all))
}

// wait records that node i waits: its question is checkpointed (unless
// it was restored so) and reported, and the node does not finish — the
// nodes after it stay pending.
func (g *graph) wait(i int, res result) {
	pn := g.p.nodes[i]
	w := res.wait
	if w.own != nil {
		if g.r.cp != nil && !res.restored {
			cp := Checkpoint{NodeID: pn.n.ID, Key: g.key(pn), Started: res.started, Waiting: w.own}
			if err := g.r.cp.Save(g.ctx, g.r.runID, cp); err != nil {
				g.fail(fmt.Errorf("workflow: checkpoint %s: %w", cp.Key, err))
				return
			}
		}
		ev := g.event(NodeWaiting, pn)
		ev.Inputs, ev.Usage = res.inputs, res.usage
		ev.Interrupts = []Interrupt{*w.own}
		g.send(ev)
	}
	g.usage = g.usage.Add(res.usage)
	g.waits = append(g.waits, w.all...)
}

// sortInterrupts orders interrupts by key, for a stable report.
func sortInterrupts(ins []Interrupt) {
	slices.SortFunc(ins, func(a, b Interrupt) int { return strings.Compare(a.ID, b.ID) })
}
