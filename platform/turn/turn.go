package turn

import (
	"errors"
	"iter"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// Input is one turn of an agent.
type Input struct {
	// Agent answers the turn.
	Agent meta.Agent
	// SessionID continues a stored session of the agent; empty starts a
	// new one.
	SessionID string
	// Stateless turns take their history from History instead of the
	// session store (the OpenAI-compatible endpoint without
	// X-Weft-Session). The turn is still stored, in a new session.
	Stateless bool
	// History is a stateless turn's conversation before the new messages,
	// cut by the agent's sliding window like a stored session.
	History []llm.Message
	// System is the caller's system text, sent after the agent's system
	// prompt.
	System string
	// Message is the user's new message (text, or text and images).
	Message llm.Message
	// ToolResults, instead of Message, continue a turn that ended with
	// calls of the caller's tools: one result per pending call.
	ToolResults []llm.Message
	// ClientTools are tools the caller runs: the model sees them beside
	// the agent's own tools, and a turn in which the model calls one ends
	// with the calls in the answer's pending calls (FinishReason
	// "tool_calls").
	ClientTools []llm.ToolSpec
	// User names the end user, for the model and the logs.
	User string
	// Params override the agent's model parameters for this turn.
	Params *ai.Params
	// Output asks for a structured answer.
	Output *ai.Output
	// Interrupt and Decisions, instead of Message, resume the session's
	// turn that paused for approval of tool calls: the interrupt's id and
	// a decision per waiting call.
	Interrupt string
	Decisions []ai.Decision
}

// Kind says what an [Event] reports.
type Kind uint8

// The kinds of events, in the order a turn produces them.
const (
	// Started: the turn has its session and message ids (SessionID,
	// MessageID); always the first event.
	Started Kind = iota + 1
	// Retrieval: knowledge was recalled (Fragments).
	Retrieval
	// TextDelta: a piece of the answer (Text).
	TextDelta
	// ToolCallDelta: a piece of a call of one of Input.ClientTools as the
	// model streams it: Tool.ID and Tool.Name (no Arguments), and Text the
	// next fragment of its JSON arguments; a call's first ToolCallDelta
	// comes once its id and name are known, and its fragments, in order,
	// are its arguments. ToolCall follows with the whole call.
	ToolCallDelta
	// ToolCall: the model called a tool (Tool: ID, Name, Arguments).
	ToolCall
	// ToolResult: a tool call's outcome (Tool).
	ToolResult
	// DelegateStart, DelegateDelta and DelegateEnd: a delegated turn
	// (Delegate; Text for a delta).
	DelegateStart
	DelegateDelta
	DelegateEnd
	// Interrupted: the turn paused for approval of tool calls
	// (Interrupt); Completed follows, its answer carrying the interrupt.
	Interrupted
	// Completed: the answer (Answer); always the last event of a turn
	// that did not fail.
	Completed
)

// Event is one event of a turn; Kind says which fields are set.
type Event struct {
	Kind      Kind
	SessionID string
	MessageID string
	Text      string
	Fragments []api.RagFragment
	Tool      *api.ToolCallOutcome
	Delegate  *Delegation
	Interrupt *api.Interrupt
	Answer    *Answer
}

// Delegation describes a delegated turn.
type Delegation struct {
	// AgentID is the delegate; Depth its delegation depth (1 for the
	// agent the client talks to's delegates).
	AgentID string
	Depth   int
	// OK and Error end the delegation (DelegateEnd).
	OK    bool
	Error string
}

// Answer is a completed turn: the API's answer, and the calls of the
// caller's tools the turn ended with.
type Answer struct {
	api.ChatAnswer
	// Pending are the calls of Input.ClientTools the model made; the turn
	// continues when their results come back (Input.ToolResults).
	Pending []llm.ToolCall
}

// Error is a failed turn. Code is one of the API's error codes (see
// platform/api); Param names the input at fault, when one is.
type Error struct {
	Code    string
	Message string
	Param   string
	// Partial reports that part of an answer was produced and stored,
	// marked partial, before the failure.
	Partial bool
	// RetryAfter, in seconds, tells when a refused turn may be retried
	// (a budget or a busy session); 0 when it does not apply.
	RetryAfter int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Collect drains a turn's events into its answer: the blocking form of a
// turn.
func Collect(events iter.Seq2[Event, error]) (*Answer, error) {
	for ev, err := range events {
		if err != nil {
			return nil, err
		}
		if ev.Kind == Completed {
			return ev.Answer, nil
		}
	}
	return nil, errors.New("turn: the stream ended without an answer")
}
