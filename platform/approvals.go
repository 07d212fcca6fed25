package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/turn"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/workflow"
)

// A person in the loop, in a chat: an agent's tool_approvals make calls of
// its tools wait for a decision. The engine pauses the turn (ai.Approval):
// the round's other calls run, the calls' message is stored in the
// session's memory, and the session row holds the interrupt
// (meta.SessionInterrupt), so that any replica lists it (GET
// /v1/interrupts?kind=turn, GET /v1/sessions/{id}) and resumes it (POST
// /v1/sessions/{id}/interrupts/{interrupt}/resume) after any restart. A new
// message to a paused session is a 409 until then. The engine's lease and
// records make a resume run each call at most once: a second or concurrent
// resume is a 409.

// maxApprovalExpr bounds an approval expression's source.
const maxApprovalExpr = 1 << 10

// approver compiles an agent's tool_approvals into the engine's approver.
func approver(approvals map[string]string) (tool.Approver, error) {
	out := tool.Approvals{}
	for name, policy := range approvals {
		switch policy {
		case "always":
			out[name] = tool.Always
		case "never":
			out[name] = tool.Never
		default:
			if len(policy) > maxApprovalExpr {
				return nil, fmt.Errorf("tool %q: the expression exceeds %d bytes", name, maxApprovalExpr)
			}
			cond, err := workflow.NewCondition("args", policy)
			if err != nil {
				return nil, fmt.Errorf("tool %q: want \"always\", \"never\" or an expression over args: %v", name, err)
			}
			out[name] = exprApprover{cond}
		}
	}
	return out, nil
}

// exprApprover asks an expression about a call's arguments, under the
// workflow conditions' guard (a tenant's expression makes bounded values
// and stops within a second). Arguments that are not a JSON object, and an
// expression that fails on them, make the call wait: a person sees what
// the model sent.
type exprApprover struct{ cond *workflow.Condition }

func (a exprApprover) NeedsApproval(ctx context.Context, call llm.ToolCall) (bool, error) {
	var args map[string]any
	if json.Unmarshal([]byte(call.Arguments), &args) != nil {
		return true, nil
	}
	wait, err := a.cond.Eval(ctx, args)
	return wait || err != nil, nil
}

// interruptOf is a paused turn's interrupt as the session keeps it.
func interruptOf(in *ai.Interrupt, messageID string) *meta.SessionInterrupt {
	si := &meta.SessionInterrupt{ID: in.ID, MessageID: messageID, CreatedAt: time.Now().UTC(), Calls: make([]meta.SessionInterruptCall, len(in.Calls))}
	for i, c := range in.Calls {
		si.Calls[i] = meta.SessionInterruptCall{ID: c.ID, Name: c.Name, Arguments: argumentsJSON(c.Arguments)}
	}
	return si
}

// interruptAPI is a session's interrupt in the API's terms.
func interruptAPI(ss meta.Session) *api.Interrupt {
	si := ss.Interrupt
	out := &api.Interrupt{ID: si.ID, Kind: api.InterruptTurn, SessionID: ss.ID, AgentID: ss.AgentID, CreatedAt: si.CreatedAt,
		Calls:  make([]api.PendingCall, len(si.Calls)),
		Resume: "/v1/sessions/" + ss.ID + "/interrupts/" + si.ID + "/resume"}
	for i, c := range si.Calls {
		out.Calls[i] = api.PendingCall(c)
	}
	return out
}

// setInterrupt records that the session's turn paused (in) or that its
// interrupt prev was resumed (in nil), on the session row and in every
// replica's session cache.
func (s *Server) setInterrupt(ctx context.Context, ss meta.Session, prev string, in *meta.SessionInterrupt) {
	ok, err := s.meta.SetSessionInterrupt(ctx, ss.TenantID, ss.ID, prev, in)
	if err != nil {
		s.log.ErrorContext(ctx, "session interrupt not stored", "session", ss.ID, "err", err)
		return
	}
	if !ok && in != nil {
		s.log.WarnContext(ctx, "session interrupt replaced another", "session", ss.ID, "prev", prev)
	}
	s.registry.invalidate(ss.TenantID, ss.ID)
	s.bus.publish(ctx, "session", ss.TenantID, ss.ID)
}

// turnInterrupts lists the tenant's paused turns for the inbox.
func (s *Server) turnInterrupts(ctx context.Context, tenant string, limit int) ([]api.Interrupt, error) {
	list, err := s.meta.InterruptedSessions(ctx, tenant, "", limit)
	if err != nil {
		return nil, err
	}
	out := make([]api.Interrupt, 0, len(list))
	for _, ss := range list {
		out = append(out, *interruptAPI(ss))
	}
	return out, nil
}

// resumeTurn: POST /v1/sessions/{id}/interrupts/{interrupt}/resume
// {decisions, stream?} resumes the session's paused turn with a decision
// per waiting call; it answers (or streams) like a chat turn.
func (s *Server) resumeTurn(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	var req api.ResumeRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	id, iid := r.PathValue("id"), r.PathValue("interrupt")
	// The row, not the cache: a resume on another replica cleared it.
	ss, err := s.meta.Session(r.Context(), p.Tenant, id)
	if err != nil {
		writeError(w, notFoundOr(err, "session", id))
		return
	}
	if ss.Interrupt != nil && ss.Interrupt.ID != iid {
		writeError(w, errorf(http.StatusNotFound, CodeNotFound, "session %q has no interrupt %q (it waits for %q)", id, iid, ss.Interrupt.ID))
		return
	}
	if len(req.Decisions) == 0 {
		e := invalid("field \"decisions\": want a decision per waiting call")
		e.Param = "decisions"
		writeError(w, e)
		return
	}
	ds := make([]ai.Decision, len(req.Decisions))
	for i, d := range req.Decisions {
		ds[i] = ai.Decision{CallID: d.CallID, Action: ai.Action(d.Action), Arguments: d.Arguments, Reason: d.Reason}
	}
	agent, err := s.agents.getIn(r.Context(), p.Tenant, ss.AgentID)
	if err != nil {
		writeError(w, notFoundOr(err, "agent", ss.AgentID))
		return
	}
	s.serveTurn(w, r, agent, turn.Input{Agent: agent, SessionID: ss.ID, Interrupt: iid, Decisions: ds}, req.Stream)
}

// decisionFailure is a refused resume in the API's terms.
func decisionFailure(err *ai.DecisionError) *turnFailure {
	switch {
	case errors.Is(err, ai.ErrUnknownCall):
		return failTurn(errorf(http.StatusNotFound, CodeNotFound, "%v", err), false)
	case errors.Is(err, ai.ErrResolved):
		return failTurn(errorf(http.StatusConflict, CodeConflict, "%v", err), false)
	}
	e := invalid("%v", err)
	e.Param = "decisions"
	return failTurn(e, false)
}
