package platform

import (
	"context"
	"errors"
	"iter"
	"net/http"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/turn"
)

// The turn service: the one start path of every chat turn, whatever the
// transport (the native chat API, the OpenAI-compatible endpoint, MCP, A2A,
// workflows). runTurnStream checks the agent and the budget, opens or
// creates the session, registers the turn so that it can be cancelled, and
// runs it (turn.go) as a typed event stream; each edge encodes the events
// in its own wire format.

// errStopped reports that a turn's consumer stopped reading its events.
var errStopped = errors.New("the turn's consumer stopped reading")

// turnFailure is a failed turn as the turn service yields it: the
// transport-neutral turn.Error, with the API error it came from so that
// the HTTP edges answer it exactly (status, Retry-After).
type turnFailure struct {
	err *turn.Error
	api *apiError
}

func (f *turnFailure) Error() string { return f.err.Error() }
func (f *turnFailure) Unwrap() error { return f.err }

func failTurn(e *apiError, partial bool) *turnFailure {
	return &turnFailure{err: &turn.Error{Code: e.Code, Message: e.Message, Param: e.Param, Partial: partial, RetryAfter: e.retryAfter}, api: e}
}

// turnAPIError is the API error of a failed turn.
func turnAPIError(err error) *apiError {
	var f *turnFailure
	if errors.As(err, &f) {
		return f.api
	}
	return asAPIError(err)
}

// runTurnStream runs one turn of in.Agent for the principal of ctx. The
// first event is turn.Started; the last a turn.Completed, or the stream
// ends with the failure (a *turn.Error). Stopping the iteration cancels the
// turn (its partial answer is kept).
func (s *Server) runTurnStream(ctx context.Context, in turn.Input) iter.Seq2[turn.Event, error] {
	return func(yield func(turn.Event, error) bool) {
		p := principalFrom(ctx)
		agent := in.Agent
		if !agent.Enabled {
			yield(turn.Event{}, failTurn(errorf(http.StatusConflict, CodeAgentDisabled, "agent %q is disabled", agent.Name), false))
			return
		}
		if e := s.accounting.check(ctx, p.Tenant, p.Key.ID); e != nil {
			yield(turn.Event{}, failTurn(e, false))
			return
		}
		sessionID := in.SessionID
		if in.Stateless {
			sessionID = ""
		}
		ss, e := s.sessionFor(ctx, p.Tenant, agent, sessionID, in.User)
		if e != nil {
			if sessionID != "" {
				e.Param = "session_id"
			}
			yield(turn.Event{}, failTurn(e, false))
			return
		}
		if ss.Interrupt != nil && len(in.Decisions) == 0 {
			e := errorf(http.StatusConflict, CodeConflict, "session %q waits for approval of %d tool call(s); resume its interrupt first (POST %s)",
				ss.ID, len(ss.Interrupt.Calls), interruptAPI(ss).Resume)
			yield(turn.Event{}, failTurn(e, false))
			return
		}
		ti := turnInput{agent: agent, session: ss, message: in.Message, query: in.Message.Text(), user: in.User, answerID: memory.NewID(),
			maxDepth: agent.MaxDelegateDepth, chain: []string{agent.ID},
			stateless: in.Stateless, history: in.History, system: in.System, params: in.Params, output: in.Output,
			clientTools: in.ClientTools, toolResults: in.ToolResults, interrupt: in.Interrupt, decisions: in.Decisions}
		ctx, done := s.turns.start(ctx, p.Tenant+"\x00"+ss.ID, p.Tenant+"\x00"+ti.answerID)
		defer done()
		if !yield(turn.Event{Kind: turn.Started, SessionID: ss.ID, MessageID: ti.answerID}, nil) {
			return
		}
		stopped := false
		ti.sink = func(ev turn.Event) error {
			if stopped || !yield(ev, nil) {
				stopped = true
				return errStopped
			}
			return nil
		}
		ans, f := s.runTurn(ctx, ti)
		if stopped {
			return
		}
		if f != nil {
			yield(turn.Event{}, f)
			return
		}
		yield(turn.Event{Kind: turn.Completed, Answer: ans}, nil)
	}
}
