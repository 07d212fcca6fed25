package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/weftlabs/weft/llm"
)

// Services are what nodes use to reach the world. The package does no
// network or file access of its own: a node kind whose service is nil
// fails when it runs. The server fills them with its models, agents,
// knowledge bases, tools and guarded HTTP client; a library user with
// whatever it has.
type Services struct {
	// Model resolves an llm node's model name.
	Model func(ctx context.Context, name string) (llm.ChatModel, error)
	// Agent runs one turn of an agent.
	Agent func(ctx context.Context, req AgentRequest) (AgentResult, error)
	// Knowledge recalls fragments from knowledge bases.
	Knowledge func(ctx context.Context, req KnowledgeRequest) ([]Fragment, error)
	// Tool calls a registered tool with its JSON arguments and returns its
	// text result.
	Tool func(ctx context.Context, name string, args json.RawMessage) (string, error)
	// HTTP sends an http node's requests.
	HTTP *http.Client
}

// AgentRequest is one agent turn asked for by an agent node.
type AgentRequest struct {
	Agent string
	Query string
	// RunID and Key name the run and the node (see [Event.Key]), for
	// tracing and for keys that make the turn idempotent.
	RunID string
	Key   string
	// OnDelta, when the service streams, receives the answer's text as it
	// is produced; it becomes the node's NodeDelta events.
	OnDelta func(text string)
}

// AgentResult is an agent turn's answer.
type AgentResult struct {
	Answer string
	Usage  llm.Usage
}

// KnowledgeRequest is a knowledge node's recall.
type KnowledgeRequest struct {
	KnowledgeBases []string
	Query          string
	// TopK caps the fragments; 0 means the service's default.
	TopK int
}

// Fragment is one recalled piece of knowledge.
type Fragment struct {
	Text   string  `json:"text"`
	Source string  `json:"source,omitempty"`
	Score  float64 `json:"score"`
}

// Engine runs workflows with a set of services and node kinds. It holds
// no run state: one Engine serves any number of concurrent runs.
type Engine struct {
	svc      Services
	types    []*NodeType
	parallel int
	limits   Limits
	now      func() time.Time
}

// Limits bound what one run may do, so that a short definition given
// large inputs (an iteration over a long list, nested in another) cannot
// make a run of unbounded work, memory or storage. A run that reaches a
// limit fails the node that reached it with an error wrapping [ErrLimit]
// (its failure policy then applies: nothing over the limit is kept).
// Zero fields take the defaults.
type Limits struct {
	// NodeRuns bounds a run's node runs: the nodes of the workflow, and
	// for each iteration that starts, its items times the nodes of its
	// sub-graph, whether each then runs, is skipped or restored. An
	// iteration that would go over fails before its first item. Default
	// [DefaultNodeRuns].
	NodeRuns int
	// RunBytes bounds the size of everything a run's nodes produce
	// together: the JSON of each node's inputs and outputs (what a
	// checkpointer and the run's history keep), counted when the node
	// finishes, before its checkpoint is saved or its event yielded.
	// Default [DefaultRunBytes].
	RunBytes int
	// ConditionTime bounds the evaluation of a condition node's cases;
	// ConditionBytes the size of the values they read. Defaults
	// [DefaultConditionTime] and [DefaultConditionBytes].
	ConditionTime  time.Duration
	ConditionBytes int
}

// The default [Limits].
const (
	DefaultNodeRuns       = 5_000
	DefaultRunBytes       = 64 << 20
	DefaultConditionTime  = time.Second
	DefaultConditionBytes = 1 << 20
)

// withDefaults returns l with its zero fields set to the defaults.
func (l Limits) withDefaults() Limits {
	if l.NodeRuns <= 0 {
		l.NodeRuns = DefaultNodeRuns
	}
	if l.RunBytes <= 0 {
		l.RunBytes = DefaultRunBytes
	}
	if l.ConditionTime <= 0 {
		l.ConditionTime = DefaultConditionTime
	}
	if l.ConditionBytes <= 0 {
		l.ConditionBytes = DefaultConditionBytes
	}
	return l
}

// WithLimits sets the engine's [Limits].
func WithLimits(l Limits) Option {
	return func(e *Engine) { e.limits = l.withDefaults() }
}

// ErrLimit is wrapped by the error of a node that reached one of the
// run's [Limits] or [MaxItems], or whose outputs, an iteration's results
// or a value a condition made, went over [MaxValueSize].
var ErrLimit = errors.New("over the limit")

// Option configures an [Engine].
type Option func(*Engine)

// Register adds node kinds made with [Func].
func Register(types ...*NodeType) Option {
	return func(e *Engine) { e.types = append(e.types, types...) }
}

// Parallelism bounds how many nodes of a run run at once: those of the
// workflow and of all its iterations' items together (an iteration node,
// which only waits for its items, does not count), and how many items of
// an iteration run at once, whatever its Concurrency; 0, the default,
// leaves it to the graph. The nodes that are ready wait their turn.
func Parallelism(n int) Option {
	return func(e *Engine) { e.parallel = max(n, 0) }
}

// New returns an engine that runs nodes with svc.
func New(svc Services, opts ...Option) *Engine {
	e := &Engine{svc: svc, limits: Limits{}.withDefaults(), now: time.Now}
	for _, o := range opts {
		o(e)
	}
	return e
}

// EventType says what an [Event] reports.
type EventType string

// The event types, in the order a run produces them. A run that waits for
// a person ends with WorkflowWaiting instead of WorkflowFinished.
const (
	WorkflowStarted  EventType = "workflow.started"
	NodeStarted      EventType = "node.started"
	NodeDelta        EventType = "node.delta"
	NodeWaiting      EventType = "node.waiting"
	NodeFinished     EventType = "node.finished"
	WorkflowWaiting  EventType = "workflow.waiting"
	WorkflowFinished EventType = "workflow.finished"
)

// Status is how a node finished.
type Status string

// The node statuses.
const (
	// Succeeded: the node ran and produced its outputs.
	Succeeded Status = "succeeded"
	// Failed: the node failed and its failure policy (continue or branch)
	// let the run go on. A failure that fails the run ends it with a
	// [*NodeError] instead.
	Failed Status = "failed"
	// Skipped: no branch led to the node, so it did not run.
	Skipped Status = "skipped"
)

// Event is one step of a run. Which fields are set depends on Type:
// NodeStarted has Node, Key, Kind; NodeDelta adds Delta (model or agent
// text as it is produced); NodeFinished adds Status, Inputs (the values
// the node was given after its templates were filled), Outputs, Error,
// Usage, Latency, Attempts and Restored; NodeWaiting has the node's open
// question in Interrupts (and Inputs, Usage when it ran);
// WorkflowFinished has the run's Outputs (those of its end nodes), total
// Usage and Latency; WorkflowWaiting, the run's every open question in
// Interrupts, Usage and Latency.
type Event struct {
	Type  EventType `json:"type"`
	RunID string    `json:"run_id,omitempty"`
	// Node is the node's ID; Key tells apart the runs of a node inside an
	// iteration: "loop[2].draft" is node draft for item 2 of node loop.
	Node     string         `json:"node,omitempty"`
	Key      string         `json:"key,omitempty"`
	Kind     Kind           `json:"kind,omitempty"`
	Status   Status         `json:"status,omitempty"`
	Delta    string         `json:"delta,omitempty"`
	Inputs   map[string]any `json:"inputs,omitempty"`
	Outputs  map[string]any `json:"outputs,omitempty"`
	Error    string         `json:"error,omitempty"`
	Usage    llm.Usage      `json:"usage,omitzero"`
	Latency  time.Duration  `json:"latency,omitempty"`
	Attempts int            `json:"attempts,omitempty"`
	// Restored says the node finished in an earlier attempt of the run
	// and its outputs come from its checkpoint.
	Restored   bool        `json:"restored,omitempty"`
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	Time       time.Time   `json:"time"`
}

// NodeError is the error that ends a run when a node fails and its policy
// is to fail the run.
type NodeError struct {
	Node string
	Key  string
	Err  error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("workflow: node %s: %v", e.Key, e.Err)
}

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }

// ErrInterrupted is the error of a node that had started in an earlier
// attempt of the run, never finished, and is not marked idempotent: it is
// not run again, and its failure policy decides what follows.
var ErrInterrupted = errors.New("interrupted in an earlier attempt and not idempotent")

// ErrInputs is wrapped by the error of a run whose inputs do not match the
// start node's declaration.
var ErrInputs = errors.New("workflow: invalid inputs")

// RunOption configures one run.
type RunOption func(*runConfig)

type runConfig struct {
	id      string
	cp      Checkpointer
	redact  func(string) string
	answers []answer
}

// WithRedact applies f to every string of the events' inputs, outputs,
// deltas and errors, to keep secrets (an API key in a header, a token in
// a response) out of what is shown and recorded as run history.
// Checkpoints keep the exact values, which a resumed run needs.
func WithRedact(f func(string) string) RunOption { return func(c *runConfig) { c.redact = f } }

// redactEvent applies f to the strings of ev.
func redactEvent(f func(string) string, ev Event) Event {
	ev.Delta, ev.Error = f(ev.Delta), f(ev.Error)
	if ev.Inputs != nil {
		ev.Inputs = redactValue(f, ev.Inputs).(map[string]any)
	}
	if ev.Outputs != nil {
		ev.Outputs = redactValue(f, ev.Outputs).(map[string]any)
	}
	return ev
}

// redactValue returns a copy of v with f applied to its strings.
func redactValue(f func(string) string, v any) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = f(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(f, e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = redactValue(f, e)
		}
		return out
	}
	return v
}

// WithRunID names the run, in its events and checkpoints.
func WithRunID(id string) RunOption { return func(c *runConfig) { c.id = id } }

// WithCheckpointer records each finished node under the run's ID and, when
// the run has records already, resumes it: nodes that finished are not run
// again, their outputs are restored. It needs [WithRunID].
func WithCheckpointer(cp Checkpointer) RunOption { return func(c *runConfig) { c.cp = cp } }

// Run runs a definition with inputs and yields its events. Independent
// nodes run concurrently; a node starts when all the nodes it follows
// have finished or been skipped. The stream ends with WorkflowFinished,
// or with an error: a [*NodeError], [ValidationErrors] for a definition
// that does not validate, an error wrapping [ErrInputs], or the context's
// error when ctx is cancelled. Breaking out of the loop cancels the run
// and waits for its nodes to stop.
//
// A definition that was not validated is compiled for this run with the
// engine's node kinds.
func (e *Engine) Run(ctx context.Context, d *Definition, inputs map[string]any, opts ...RunOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		var cfg runConfig
		for _, o := range opts {
			o(&cfg)
		}
		p := d.plan
		if p == nil {
			var err error
			if p, err = compile(d, WithNodeTypes(e.types...)); err != nil {
				yield(Event{}, err)
				return
			}
		}
		if cfg.cp != nil && cfg.id == "" {
			yield(Event{}, errors.New("workflow: a checkpointer needs a run id (WithRunID)"))
			return
		}
		if len(cfg.answers) > 0 && cfg.cp == nil {
			yield(Event{}, errors.New("workflow: an answer needs the run's checkpointer (WithCheckpointer)"))
			return
		}
		if n := len(p.nodes); n > e.limits.NodeRuns {
			yield(Event{}, fmt.Errorf("workflow: %d nodes: %w of %d node runs", n, ErrLimit, e.limits.NodeRuns))
			return
		}
		r := &runner{e: e, runID: cfg.id, cp: cfg.cp}
		r.nodeRuns.Store(int64(len(p.nodes)))
		r.bytes.Store(int64(e.limits.RunBytes))
		if e.parallel > 0 {
			r.slots = make(chan struct{}, e.parallel)
		}
		if cfg.cp != nil {
			cps, err := cfg.cp.Completed(ctx, cfg.id)
			if err != nil {
				yield(Event{}, fmt.Errorf("workflow: read checkpoints of run %s: %w", cfg.id, err))
				return
			}
			if len(cps) > 0 {
				r.restored = make(map[string]*Checkpoint, len(cps))
				for i := range cps {
					if strings.Contains(cps[i].Key, "#") {
						r.remember(&cps[i]) // a Step's result or an answer
					} else {
						r.restored[cps[i].Key] = &cps[i]
					}
				}
			}
			for _, a := range cfg.answers {
				if err := r.answer(ctx, a); err != nil {
					yield(Event{}, err)
					return
				}
			}
		}
		start := p.nodes[p.start]
		if cp := r.restored[start.n.ID]; cp == nil || cp.Finished.IsZero() {
			in, err := conformInputs(start.n, inputs)
			if err != nil {
				yield(Event{}, err)
				return
			}
			r.inputs = in
		}
		began := time.Now()
		if !yield(Event{Type: WorkflowStarted, RunID: r.runID, Time: began}, nil) {
			return
		}
		emit := func(ev Event) bool { return yield(ev, nil) }
		if f := cfg.redact; f != nil {
			emit = func(ev Event) bool { return yield(redactEvent(f, ev), nil) }
		}
		g := newGraph(r, p, &scope{outs: make([]map[string]any, len(p.nodes)), start: p.start}, "", emit)
		err := g.run(ctx)
		if g.gone {
			return
		}
		if err != nil {
			yield(Event{}, err)
			return
		}
		if len(g.waits) > 0 {
			sortInterrupts(g.waits)
			emit(Event{Type: WorkflowWaiting, RunID: r.runID, Interrupts: g.waits, Usage: g.usage, Latency: time.Since(began), Time: time.Now()})
			return
		}
		outs := map[string]any{}
		for _, i := range p.ends {
			for k, v := range g.sc.outs[i] {
				outs[k] = v
			}
		}
		emit(Event{Type: WorkflowFinished, RunID: r.runID, Outputs: outs, Usage: g.usage, Latency: time.Since(began), Time: time.Now()})
	}
}

// Result is what [Collect] gathers from a run.
type Result struct {
	Outputs map[string]any
	Usage   llm.Usage
	// Nodes holds the NodeFinished event of every node, in the order they
	// finished.
	Nodes []Event
	// Waiting holds the open questions of a run that waits for a person
	// (it has no Outputs yet).
	Waiting []Interrupt
}

// Collect drains a run's events into its outputs, usage and node events.
func Collect(events iter.Seq2[Event, error]) (*Result, error) {
	res := &Result{}
	for ev, err := range events {
		if err != nil {
			return res, err
		}
		switch ev.Type {
		case NodeFinished:
			res.Nodes = append(res.Nodes, ev)
		case WorkflowFinished:
			res.Outputs, res.Usage = ev.Outputs, ev.Usage
		case WorkflowWaiting:
			res.Waiting, res.Usage = ev.Interrupts, ev.Usage
		}
	}
	return res, nil
}

// CheckInputs checks inputs against the start node's declaration as
// [Engine.Run] does before a run starts: unknown and missing inputs, and
// each value's type, required fields and enums, in depth. Its error wraps
// [ErrInputs] and names the offending path ("ticket.tags[2]: want string,
// got number"). A definition without a start node takes any inputs.
func (d *Definition) CheckInputs(inputs map[string]any) error {
	for i := range d.Nodes {
		if d.Nodes[i].Kind == KindStart {
			_, err := conformInputs(&d.Nodes[i], inputs)
			return err
		}
	}
	return nil
}

// conformInputs checks the run's inputs against the start node's
// declaration and fills in defaults.
func conformInputs(start *Node, inputs map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(start.Inputs))
	for name := range inputs {
		if _, ok := start.Inputs[name]; !ok {
			return nil, fmt.Errorf("%w: unknown input %q", ErrInputs, name)
		}
	}
	for _, name := range sortedKeys(start.Inputs) {
		s := start.Inputs[name]
		v, ok := inputs[name]
		if !ok || v == nil {
			if s.Default == nil {
				return nil, fmt.Errorf("%w: missing input %q", ErrInputs, name)
			}
			v = s.Default
		}
		v, err := plainJSON(v)
		if err == nil {
			v, err = s.conform(name, v)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInputs, err)
		}
		out[name] = v
	}
	return out, nil
}

// plainJSON returns v as encoding/json decodes it into an any: Go values
// such as []string or structs become []any and map[string]any.
func plainJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
