package ai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/tokens"
	"github.com/weftlabs/weft/tool"
)

// Engine is the untyped pipeline every typed call and every platform turn
// runs. Build one with [NewEngine] (once: it validates its configuration and
// precomputes what it can), then run turns with [Engine.Run] or
// [Engine.Do]. An Engine is safe for concurrent use.
type Engine struct {
	cfg       *config
	exec      tool.Executor
	specs     []llm.ToolSpec
	modelName string
	// toolTok caches what the tools' specifications cost in a request, as
	// the last counter that could be cached counts them.
	toolTok atomic.Pointer[toolTokens]
}

type toolTokens struct {
	c tokens.Counter
	n int
}

// toolTokens returns what the engine's tools' specifications cost in every
// request, as c counts them.
func (e *Engine) toolTokens(c tokens.Counter) int {
	cacheable := false
	switch c.(type) {
	case *tokens.Encoding, tokens.Estimator: // comparable, and fixed
		cacheable = true
	}
	if p := e.toolTok.Load(); cacheable && p != nil && p.c == c {
		return p.n
	}
	n := 0
	for _, s := range e.specs {
		n += tokens.ToolTokens(c, s)
	}
	if cacheable {
		e.toolTok.Store(&toolTokens{c, n})
	}
	return n
}

// Turn is one user turn through an [Engine].
type Turn struct {
	// ID names the turn: its answer is stored in memory with this record
	// id, and the turn's other records are named after it (see
	// [TurnOfRecord]), so that a retried turn with the same ID stores
	// nothing twice. Empty lets the store name the records.
	ID string
	// Message is the user message. A Turn without one (the zero Message)
	// continues a conversation after the results of a turn that ended with
	// calls of ClientTools: ToolResults are those results, or else the
	// History (or memory) ends with them.
	Message llm.Message
	// ToolResults are the results of the calls a previous turn left
	// pending (llm.ToolResultMessage), for a Turn without a Message. Each
	// waiting call must get exactly one ([*ToolResultError] otherwise).
	// They are stored in memory before the model is called.
	ToolResults []llm.Message
	// System is the system message's text. Empty leaves the one in memory
	// (or History), or asks the engine's SystemFor provider.
	System string
	// MemoryID selects the conversation in the engine's MemoryPerID. The
	// turn's tools read it with tool.MemoryID.
	MemoryID string
	// Memory is the conversation to read and write, overriding MemoryID and
	// the engine's Memory.
	Memory *memory.Chat
	// History is the conversation before Message, for callers that keep it
	// themselves. It is not modified; the turn's new messages are in
	// Outcome.Messages. With a memory too, the history is History (cut by
	// the memory's window), the store is not read for it, and the turn's
	// new messages are still stored in the memory.
	History []llm.Message
	// Params override model parameters for this turn.
	Params *Params
	// Output asks for a structured answer (see [Output]).
	Output *Output
	// Decisions answer the calls a previous turn's Interrupt left waiting,
	// for a Turn without a Message: one per call (beside ToolResults for
	// the caller's tools), checked before anything runs
	// ([*DecisionError] otherwise; nothing is stored). The approved calls
	// run, the rejections answer the model, and all are stored in memory
	// before the model is called. The resuming turn needs an ID of its
	// own: not the interrupt's.
	Decisions []Decision
	// ClientTools are tools the caller runs, not the engine: the model is
	// offered them beside the engine's tools, and a response that calls
	// any of them ends the turn — the round's calls of the engine's tools
	// run first, and Outcome.Pending holds the caller's calls. Append their
	// results (llm.ToolResultMessage) to the conversation and run a Turn
	// without a Message to continue. Names must not clash with the
	// engine's tools.
	ClientTools []llm.ToolSpec
}

// NewEngine returns an engine over model. System and User templates are not
// options of an engine (a Turn carries its messages); everything else is.
func NewEngine(model llm.ChatModel, opts ...Option) (*Engine, error) {
	cfg, err := newConfig(model, opts)
	if err != nil {
		return nil, err
	}
	if cfg.system != nil || cfg.user != nil {
		return nil, errors.New("ai: NewEngine: System and User templates apply to Func and Bind; give each Turn its System text and Message instead")
	}
	if cfg.clock != nil {
		return nil, errors.New("ai: NewEngine: Clock is the clock of Func and Bind templates; an engine renders none")
	}
	return newEngine(cfg)
}

func newEngine(cfg *config) (*Engine, error) {
	e := &Engine{cfg: cfg, exec: cfg.exec}
	if len(cfg.tools) > 0 {
		set, err := tool.NewSet(cfg.tools...)
		if err != nil {
			return nil, fmt.Errorf("ai: %w", err)
		}
		if !cfg.caps.Tools {
			return nil, errors.New("ai: the model declares no tool support; remove the Tools option or use a model that calls tools")
		}
		e.exec.Tools = set
		e.specs = set.Specs()
	}
	if n, ok := cfg.model.(llm.Namer); ok {
		e.modelName = n.Name()
	}
	return e, nil
}

// errStopped reports that the consumer of a stream stopped reading.
var errStopped = errors.New("ai: stream consumer stopped")

// Run runs the turn and yields its events: text and reasoning as the model
// produces them (through every tool round), tool calls and results,
// retrieval, usage per model call, and finally EventDone with the Outcome
// — after EventInterrupt when the turn paused for a person, once the
// paused turn is stored.
// A failure ends the stream with the error. Breaking out of the loop
// cancels the model call.
func (e *Engine) Run(ctx context.Context, t Turn) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		stopped := false
		emit := func(ev Event) bool {
			if !stopped && !yield(ev, nil) {
				stopped = true
			}
			return !stopped
		}
		out, err := e.run(ctx, &t, emit)
		if stopped {
			return
		}
		if err != nil {
			yield(Event{}, err)
			return
		}
		if out.Interrupt != nil && !yield(Event{Kind: EventInterrupt, Interrupt: out.Interrupt}, nil) {
			return
		}
		yield(Event{Kind: EventDone, Outcome: out}, nil)
	}
}

// Do runs the turn to completion: Run drained. The model is called without
// streaming.
func (e *Engine) Do(ctx context.Context, t Turn) (*Outcome, error) {
	return e.run(ctx, &t, nil)
}

// run is the pipeline. emit is nil when nobody consumes events: then no
// event is built and the model is called without streaming.
func (e *Engine) run(ctx context.Context, t *Turn, emit func(Event) bool) (*Outcome, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	inv := newInvocation(e.cfg.listeners, t.MemoryID)
	ctx, span := e.startTurn(ctx, t)
	inv.notify(ctx, Notice{Kind: NoticeStarted})
	s := &turnState{e: e, turn: *t, inv: inv, emit: emit}
	s.t = &s.turn // a copy: the caller's Turn stays on its stack
	s.out = &s.outcome
	s.out.Messages = s.msgBuf[:0]
	s.out.Intermediate = s.respBuf[:0]
	s.out.ToolExecutions = s.execBuf[:0]
	s.stream = emit != nil && e.cfg.caps.Streaming
	err := s.run(ctx)
	if err != nil {
		if s.out.Partial && err != errStopped {
			err = &PartialError{Err: err, Outcome: s.out}
		}
		if err != errStopped {
			inv.notify(ctx, Notice{Kind: NoticeError, Err: err, Outcome: s.out})
		}
		endSpan(span, nil, err)
		return nil, err
	}
	inv.notify(ctx, Notice{Kind: NoticeCompleted, Outcome: s.out})
	endSpan(span, s.out, nil)
	return s.out, nil
}

// memTurn is what a turn with memory keeps: the conversation and its hold,
// its counter, a new system message, the history it loaded (without its system record) for the
// window to cut (unless it came cut), how many of Outcome.Messages memory holds already, and
// room for the records the turn stores. It is allocated only for turns
// with memory.
type memTurn struct {
	chat    *memory.Chat
	hold    *memory.Hold
	counter tokens.Counter
	// system is a system message memory does not hold yet.
	system *llm.Message
	log    []memory.Record
	// summary is the conversation's running summary (see
	// memory.WithSummary), sent after the system prompt.
	summary memory.Summary
	exact   bool // the history came cut (a window without a token budget)
	stored  int
	buf     [4]memory.Record
}

// turnState is one turn in progress.
type turnState struct {
	e      *Engine
	t      *Turn // &turn
	turn   Turn
	inv    *invocation
	emit   func(Event) bool
	stream bool

	msgs []llm.Message // what the model is sent
	base llm.Request
	out  *Outcome
	mod  *moderation
	// mem is the turn's memory state, nil without memory.
	mem *memTurn
	// calls are the tool calls of the response being streamed (callDelta).
	calls []streamedCall

	// The outcome and room for a typical turn (one tool round), allocated
	// with the state in one piece.
	outcome Outcome
	msgBuf  [4]llm.Message
	respBuf [1]llm.Response
	execBuf [2]tool.Execution
	reqBuf  [2]llm.Request
}

func (s *turnState) run(ctx context.Context) error {
	err := s.prepare(ctx)
	if err == nil {
		err = s.loop(ctx)
		if s.mod != nil {
			if err == nil {
				err = s.mod.verdict(true)
			}
			s.mod.stop()
		}
	}
	if perr := s.persist(ctx, err); err == nil {
		err = perr
	}
	return err
}

// toolContext is the context the turn's tools run in: ctx with the turn's
// memory ID (see tool.MemoryID), or the key of its memory when the turn
// has a memory without an ID.
func (s *turnState) toolContext(ctx context.Context) context.Context {
	id := s.t.MemoryID
	if id == "" && s.mem != nil {
		id = s.mem.chat.Key().Session
	}
	if id == "" {
		return ctx
	}
	return tool.WithMemoryID(ctx, id)
}
