package ai

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/tool"
)

// A person in the loop: calls of the engine's tools that the Approval
// option's Approver picks do not run. The round's other calls run, and the
// turn ends with Outcome.Interrupt listing the waiting calls; with a
// memory, the assistant message that made them (its record named after
// the interrupt) and the results of the calls that ran are stored as the
// turn ends, so the conversation itself is the checkpoint. A later Turn
// without a Message carries a Decision per waiting call (Turn.Decisions):
// the approved calls run, the rejected ones answer the model with the
// reason, both are stored before the model is called (named ID-r<i> after
// the resuming turn), and the turn goes on.

// Approval makes the calls that a's Approver picks wait for a person's
// decision (see tool.Approvals, tool.Always, tool.When): the turn ends
// with an [Interrupt] in Outcome.Interrupt (EventInterrupt when streamed,
// an [*InterruptError] from a typed call) instead of running them, and a
// Turn with Decisions resumes it. Calls of the caller's tools
// (Turn.ClientTools) are not asked about.
func Approval(a tool.Approver) Option {
	return func(c *config) error {
		if a == nil {
			return errors.New("ai: Approval(nil)")
		}
		c.approver = a
		return nil
	}
}

// Interrupt is a turn paused for a person: the tool calls waiting for a
// decision. It is all a caller needs to keep besides the conversation —
// the memory, or Outcome.Messages appended to the caller's History — to
// resume the turn, in this process or another, with a Turn whose
// Decisions answer every call.
type Interrupt struct {
	// ID names the interrupt: the paused turn's ID when it has one, else a
	// random id (26 characters, 128 bits). With a memory, the stored
	// assistant message that made the calls has this record id.
	ID string `json:"id"`
	// Calls are the calls waiting for a decision, in the order the model
	// made them, with their ids, names and arguments.
	Calls []llm.ToolCall `json:"calls"`
}

// Action is what a person decided about a waiting call.
type Action string

// The actions of a [Decision].
const (
	// ActionApprove runs the call as the model made it.
	ActionApprove Action = "approve"
	// ActionEdit runs the call with the Decision's Arguments instead,
	// checked against the tool's JSON Schema first.
	ActionEdit Action = "edit"
	// ActionReject does not run the call: the model is answered, as the
	// tool's error result, that a person rejected it, and why.
	ActionReject Action = "reject"
)

// Decision answers one waiting call of an [Interrupt].
type Decision struct {
	// CallID is the call's id (llm.ToolCall.ID).
	CallID string `json:"call_id"`
	Action Action `json:"action"`
	// Arguments replace the call's arguments (a JSON object) for
	// ActionEdit.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Reason is why the call was rejected, for the model, for ActionReject.
	Reason string `json:"reason,omitempty"`
}

// Approve returns the decision that runs the call as the model made it.
func Approve(callID string) Decision { return Decision{CallID: callID, Action: ActionApprove} }

// Edit returns the decision that runs the call with args instead.
func Edit(callID string, args json.RawMessage) Decision {
	return Decision{CallID: callID, Action: ActionEdit, Arguments: args}
}

// Reject returns the decision that answers the call with a rejection and
// reason instead of running it.
func Reject(callID, reason string) Decision {
	return Decision{CallID: callID, Action: ActionReject, Reason: reason}
}

// ErrRejected is matched by the Err of the tool.Execution of a rejected
// call.
var ErrRejected = errors.New("rejected by a person")

// Errors a [DecisionError] matches.
var (
	// ErrUnknownCall: no call of the decision's id waits, nor was answered
	// in the conversation (an API answers 404).
	ErrUnknownCall = errors.New("no such tool call is waiting")
	// ErrResolved: the call was answered already, by an earlier decision
	// or result (an API answers 409); DecisionError.Result holds the
	// answer.
	ErrResolved = errors.New("the tool call was resolved already")
)

// DecisionError refuses a Turn's decisions before anything runs or is
// stored: a decision for a call that is not waiting (errors.Is
// ErrUnknownCall, or ErrResolved with the stored answer), edited
// arguments that do not fit the tool's JSON Schema (errors.As finds the
// *tool.ArgumentError naming the field), or a decision that is malformed
// (an unknown action, an edit without arguments, two decisions for one
// call).
type DecisionError struct {
	CallID string
	Err    error
	// Result is the answer stored for a resolved call (ErrResolved): the
	// tool result the model saw.
	Result *llm.Message
	// ResolvedBy is the ID of the turn that stored Result, when memory
	// named it (see TurnOfRecord): that turn's answer is the record of
	// this ID.
	ResolvedBy string
}

// Error names the call and the fault.
func (e *DecisionError) Error() string {
	return "ai: decision on tool call " + strconv.Quote(e.CallID) + ": " + e.Err.Error()
}

// Unwrap returns the fault.
func (e *DecisionError) Unwrap() error { return e.Err }

// InterruptError is how a typed call (Func, Bind, StreamFunc) reports a
// turn that paused for a person: Interrupt lists the waiting calls and
// Outcome holds what the turn produced. Resume the call with [Resume].
type InterruptError struct {
	Interrupt *Interrupt
	Outcome   *Outcome
	// history is the conversation a call without memory continues from.
	history []llm.Message
}

// Error names the waiting calls.
func (e *InterruptError) Error() string {
	var b strings.Builder
	b.WriteString("ai: the turn waits for a decision on ")
	for i, c := range e.Interrupt.Calls {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Name + " (" + c.ID + ")")
	}
	return b.String()
}

type resumeKey struct{}

type resumption struct {
	decisions []Decision
	history   []llm.Message
}

// Resume returns a copy of ctx that turns the next typed call made with it
// into the resumption of the interrupted one: call the same function with
// the same argument (it names the memory and renders the system message;
// no user message is sent) and the turn goes on with the decisions. from
// is the call's *InterruptError: a function without memory continues the
// conversation it carries; a function with memory finds everything in
// the memory, and from may be nil (another process resumes with the
// decisions alone). The context does not reach the turn's tools.
func Resume(ctx context.Context, from *InterruptError, decisions ...Decision) context.Context {
	r := &resumption{decisions: decisions}
	if from != nil {
		r.history = from.history
	}
	return context.WithValue(ctx, resumeKey{}, r)
}

// newInterruptID returns the ID of the turn's interrupt.
func (s *turnState) newInterruptID() string {
	if s.t.ID != "" {
		return s.t.ID
	}
	return rand.Text()
}

// screen returns the calls of the engine's tools that wait for approval,
// nil when none does.
func (s *turnState) screen(ctx context.Context, calls []llm.ToolCall) ([]llm.ToolCall, error) {
	a := s.e.cfg.approver
	if a == nil {
		return nil, nil
	}
	var wait []llm.ToolCall
	ctx = s.toolContext(ctx) // an approver may ask tool.MemoryID too
	for _, call := range calls {
		if s.isClientTool(call.Name) {
			continue
		}
		need, err := a.NeedsApproval(ctx, call)
		if err != nil {
			return nil, fmt.Errorf("ai: approval of the %s call %q: %w", call.Name, call.ID, err)
		}
		if need {
			wait = append(wait, call)
		}
	}
	return wait, nil
}

// decided is a waiting call and its decision.
type decided struct {
	call llm.ToolCall // with the edited arguments
	d    *Decision
}

// checkAnswers checks the caller's tool results and decisions against the
// calls waiting for them: those of the conversation's last assistant
// message that no result follows yet. Each must get exactly one result or
// decision. It returns the decisions in the order of the calls.
func (s *turnState) checkAnswers(results []llm.Message, decisions []Decision) ([]decided, error) {
	history := s.msgs
	last := -1 // the last assistant message
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == llm.RoleAssistant {
			last = i
			break
		}
	}
	var calls []llm.ToolCall
	if last >= 0 {
		calls = history[last].ToolCalls
	}
	if len(decisions) > 0 && len(calls) > 0 && s.t.ID != "" {
		if r := s.recordOf(last); r != nil && r.ID == s.t.ID {
			return nil, fmt.Errorf("ai: the turn resuming interrupt %q needs an ID of its own (its answer would be stored under the interrupt's)", s.t.ID)
		}
	}
	after := history[last+1:]
	out := make([]decided, 0, len(decisions))
	for i := range decisions {
		d := &decisions[i]
		call, ok := waitingCall(calls, after, d.CallID)
		if !ok {
			return nil, s.notWaiting(d.CallID)
		}
		if answeredIn(results, d.CallID) || decisionIndex(decisions[:i], d.CallID) >= 0 {
			return nil, &DecisionError{CallID: d.CallID, Err: errors.New("the call has two answers")}
		}
		switch d.Action {
		case ActionApprove, ActionReject:
			if len(d.Arguments) > 0 {
				return nil, &DecisionError{CallID: d.CallID, Err: fmt.Errorf("arguments belong to an %q decision, not %q", ActionEdit, d.Action)}
			}
		case ActionEdit:
			if len(d.Arguments) == 0 {
				return nil, &DecisionError{CallID: d.CallID, Err: errors.New("an edit needs arguments")}
			}
			if err := s.e.exec.Tools.CheckArguments(call.Name, d.Arguments); err != nil {
				return nil, &DecisionError{CallID: d.CallID, Err: err}
			}
			call.Arguments = string(d.Arguments)
		default:
			return nil, &DecisionError{CallID: d.CallID, Err: fmt.Errorf("unknown action %q (want approve, edit or reject)", d.Action)}
		}
		if d.Action != ActionReject {
			if _, ok := s.e.exec.Tools.Lookup(call.Name); !ok {
				return nil, &DecisionError{CallID: d.CallID, Err: fmt.Errorf("%w %q: the engine cannot run it (answer the caller's tools with ToolResults)", tool.ErrUnknownTool, call.Name)}
			}
		}
		out = append(out, decided{call: call, d: d})
	}
	// In the order of the calls.
	sorted := out[:0:0]
	for _, c := range calls {
		for _, x := range out {
			if x.call.ID == c.ID {
				sorted = append(sorted, x)
			}
		}
	}
	for i, r := range results {
		if _, ok := waitingCall(calls, after, r.ToolCallID); !ok || answeredIn(results[:i], r.ToolCallID) {
			return nil, &ToolResultError{CallID: r.ToolCallID}
		}
	}
	for _, c := range calls {
		if !answeredIn(after, c.ID) && !answeredIn(results, c.ID) && decisionIndex(decisions, c.ID) < 0 {
			return nil, &ToolResultError{CallID: c.ID, Missing: true}
		}
	}
	return sorted, nil
}

// waitingCall returns the call of id among calls, when no message after
// them answers it.
func waitingCall(calls []llm.ToolCall, after []llm.Message, id string) (llm.ToolCall, bool) {
	for _, c := range calls {
		if c.ID == id {
			return c, !answeredIn(after, id)
		}
	}
	return llm.ToolCall{}, false
}

func decisionIndex(ds []Decision, callID string) int {
	for i := range ds {
		if ds[i].CallID == callID {
			return i
		}
	}
	return -1
}

// notWaiting is the error of a decision for a call that does not wait:
// resolved, when the conversation holds its answer, else unknown.
func (s *turnState) notWaiting(id string) error {
	for i := len(s.msgs) - 1; i >= 0; i-- {
		m := s.msgs[i]
		if m.Role == llm.RoleTool && m.ToolCallID == id {
			e := &DecisionError{CallID: id, Err: ErrResolved, Result: &m}
			if r := s.recordOf(i); r != nil {
				e.ResolvedBy, _ = TurnOfRecord(r.ID)
			}
			return e
		}
	}
	return &DecisionError{CallID: id, Err: ErrUnknownCall}
}

// recordOf returns the memory record of s.msgs[i], nil when it has none
// (no memory, a history that came cut, or the system message).
func (s *turnState) recordOf(i int) *memory.Record {
	m := s.mem
	if m == nil || m.exact || s.t.History != nil {
		return nil
	}
	h := len(s.msgs) - len(m.log)
	if i < h {
		return nil
	}
	return &m.log[i-h]
}

// decide runs the approved calls (as edited) and answers the rejected
// ones, and returns the messages that answer them: the approved calls'
// results in call order, then the rejections. Once the calls ran it
// returns every answer, also with an error (the consumer stopped reading,
// a failure under the Abort policy, ctx ended): they are stored all the
// same, so that no call runs twice.
func (s *turnState) decide(ctx context.Context, ds []decided) ([]llm.Message, error) {
	var run []llm.ToolCall
	for _, x := range ds {
		if x.d.Action != ActionReject {
			run = append(run, x.call)
		}
	}
	first := len(s.out.ToolExecutions)
	var err error
	if len(run) > 0 {
		if s.emit != nil {
			for _, call := range run {
				if !s.emit(Event{Kind: EventToolCall, ToolCall: call}) {
					return nil, errStopped
				}
			}
		}
		err = s.runTools(ctx, run)
		for i := first; i < len(s.out.ToolExecutions); i++ {
			x := &s.out.ToolExecutions[i]
			if ds[decidedIndex(ds, x.Call.ID)].d.Action == ActionEdit {
				x.Content = "[The call ran with arguments a person edited: " + x.Call.Arguments + "]\n" + x.Content
			}
		}
	}
	for _, x := range ds {
		if x.d.Action != ActionReject {
			continue
		}
		content, rerr := "The call did not run: a person rejected it.", ErrRejected
		if x.d.Reason != "" {
			content += " Reason: " + x.d.Reason
			rerr = fmt.Errorf("%w: %s", ErrRejected, x.d.Reason)
		}
		s.out.ToolExecutions = append(s.out.ToolExecutions, tool.Execution{Call: x.call, Content: content, IsError: true, Err: rerr})
	}
	var execs []tool.Execution
	if err == nil {
		var ok bool
		if execs, ok = s.reportTools(ctx, first); !ok {
			err = errStopped
		}
	} else {
		execs = s.out.ToolExecutions[first:]
	}
	msgs := make([]llm.Message, len(execs))
	for i := range execs {
		msgs[i] = execs[i].Message()
	}
	return msgs, err
}

func decidedIndex(ds []decided, id string) int {
	for i := range ds {
		if ds[i].call.ID == id {
			return i
		}
	}
	return -1
}

// resumed applies the resumption ctx carries (see [Resume]), if any, to a
// typed call's turn: no user message, the decisions, and for a turn
// without memory the history. It returns ctx without it (the turn's tools
// must not resume their own typed calls) and the history the turn
// continues.
func (e *Engine) resumed(ctx context.Context, t *Turn) (context.Context, []llm.Message) {
	if ctx == nil {
		return ctx, nil
	}
	r, _ := ctx.Value(resumeKey{}).(*resumption)
	if r == nil {
		return ctx, nil
	}
	t.Message = llm.Message{}
	t.Decisions = r.decisions
	if t.Memory == nil && (e.cfg.memory == nil || t.MemoryID == "") && e.cfg.chat == nil {
		t.History = r.history
	}
	return context.WithValue(ctx, resumeKey{}, nil), r.history
}

// interrupted is the typed error of an outcome that paused (nil for one
// that did not), carrying the conversation a call without memory resumes
// from: history, then the turn's new messages.
func interrupted(o *Outcome, history []llm.Message) error {
	if o.Interrupt == nil {
		return nil
	}
	h := make([]llm.Message, 0, len(history)+len(o.Messages))
	h = append(append(h, history...), o.Messages...)
	return &InterruptError{Interrupt: o.Interrupt, Outcome: o, history: h}
}
