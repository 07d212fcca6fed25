package ai

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/weftlabs/weft/guardrail"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
)

// EventKind says what an [Event] carries.
type EventKind uint8

// The kinds of stream event.
const (
	// EventText carries a piece of answer text in Text.
	EventText EventKind = iota + 1
	// EventReasoning carries a piece of reasoning in Text.
	EventReasoning
	// EventToolCall announces a tool call in ToolCall, before it runs.
	EventToolCall
	// EventToolResult carries a finished call in Execution.
	EventToolResult
	// EventRetrieval carries the sources retrieval used in Sources.
	EventRetrieval
	// EventUsage carries one model call's usage in Usage.
	EventUsage
	// EventDone ends a successful turn; Outcome holds everything.
	EventDone
	// EventInterrupt carries, in Interrupt, the calls a turn paused for
	// (see [Approval]), just before its EventDone: the paused turn is
	// stored by then.
	EventInterrupt
	// EventToolCallDelta carries a piece of a tool call as the model
	// streams it: the call's ID and Name in ToolCall (Arguments empty) and
	// the next fragment of its JSON arguments in Text. A call's first
	// EventToolCallDelta comes once its id and name are known, with the
	// fragments received until then (possibly none); the fragments of a
	// call, in order, are its arguments. EventToolCall follows with the
	// whole call. Only streamed model calls have them, and not while output
	// guardrails buffer the answer ([GuardBuffer]).
	EventToolCallDelta
	// EventAgent reports a step of another agent's turn that a tool runs
	// for this one (delegation), in Agent: its start, a piece of its
	// answer (Text), or its end. Tools send them with [Forward]; they are
	// never the turn's own answer text. A delegate's own delegations come
	// through with their depth.
	EventAgent
)

var eventNames = [...]string{"", "text", "reasoning", "tool_call", "tool_result", "retrieval", "usage", "done", "interrupt", "tool_call_delta", "agent"}

// AgentPhase says which step of a delegated turn an [AgentStep] reports.
type AgentPhase uint8

// The steps of a delegated turn, in order.
const (
	// AgentStarted: the delegate's turn began.
	AgentStarted AgentPhase = iota + 1
	// AgentText: a piece of the delegate's answer, in Event.Text.
	AgentText
	// AgentEnded: the delegate's turn ended; Err says why it failed.
	AgentEnded
)

// AgentStep is the step of a delegated turn an EventAgent reports.
type AgentStep struct {
	// Agent names the delegate (the platform: its id).
	Agent string
	// Depth is the delegation depth: 1 for the delegates of the agent the
	// caller talks to, 2 for theirs.
	Depth int
	Phase AgentPhase
	// Err is the delegate's failure (AgentEnded), nil when it answered.
	Err error
}

// String returns the kind's name.
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k != 0 {
		return eventNames[k]
	}
	return "unknown"
}

// Event is one step of a streamed turn.
type Event struct {
	Kind EventKind
	// Text is a piece of answer text or reasoning, or a fragment of a tool
	// call's arguments (EventToolCallDelta).
	Text string
	// ToolCall is the call of EventToolCall, and the call a fragment belongs
	// to in EventToolCallDelta.
	ToolCall  llm.ToolCall
	Execution *tool.Execution
	Sources   []rag.Source
	Usage     llm.Usage
	Outcome   *Outcome
	Interrupt *Interrupt
	// Agent is the step of a delegated turn (EventAgent).
	Agent *AgentStep
}

// NoticeKind says what a [Notice] reports.
type NoticeKind uint8

// The kinds of notice.
const (
	// NoticeStarted: a turn began.
	NoticeStarted NoticeKind = iota + 1
	// NoticeRequest: a request is about to go to the model.
	NoticeRequest
	// NoticeResponse: the model answered.
	NoticeResponse
	// NoticeToolExecuted: a tool call finished.
	NoticeToolExecuted
	// NoticeGuardrail: a guardrail did not simply pass.
	NoticeGuardrail
	// NoticeRetrievalFailed: the augmentor failed and the turn went on.
	NoticeRetrievalFailed
	// NoticeCompleted: the turn succeeded.
	NoticeCompleted
	// NoticeError: the turn failed.
	NoticeError
)

var noticeNames = [...]string{"", "started", "request", "response", "tool_executed", "guardrail", "retrieval_failed", "completed", "error"}

// String returns the kind's name.
func (k NoticeKind) String() string {
	if int(k) < len(noticeNames) && k != 0 {
		return noticeNames[k]
	}
	return "unknown"
}

// Notice is what a [Listener] sees. Fields that do not apply are zero.
type Notice struct {
	Kind NoticeKind
	// InvocationID is the same for every notice of one turn.
	InvocationID string
	// MemoryID is the turn's memory ID, if any.
	MemoryID  string
	Request   *llm.Request
	Response  *llm.Response
	Execution *tool.Execution
	Verdict   *guardrail.Verdict
	Outcome   *Outcome
	Err       error
	// Duration is the time since the turn started (Completed, Error), or
	// the model call's (Response).
	Duration time.Duration
}

// Listener observes turns. Listeners run synchronously on the turn's
// goroutine and must be quick; they must not modify what they are shown.
// Without listeners no notice is built.
type Listener func(ctx context.Context, n Notice)

// invocation carries a turn's observers.
type invocation struct {
	id        string
	memoryID  string
	start     time.Time
	listeners []Listener
}

func newInvocation(listeners []Listener, memoryID string) *invocation {
	if len(listeners) == 0 {
		return nil
	}
	return &invocation{
		id:        strconv.FormatUint(rand.Uint64(), 36),
		memoryID:  memoryID,
		start:     time.Now(),
		listeners: listeners,
	}
}

func (inv *invocation) notify(ctx context.Context, n Notice) {
	if inv == nil {
		return
	}
	n.InvocationID = inv.id
	n.MemoryID = inv.memoryID
	if n.Kind == NoticeCompleted || n.Kind == NoticeError {
		n.Duration = time.Since(inv.start)
	}
	for _, l := range inv.listeners {
		l(ctx, n)
	}
}
