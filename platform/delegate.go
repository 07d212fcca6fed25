package platform

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/turn"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/toolname"
)

// Delegation: each id in an agent's delegate_agent_ids becomes a tool
// "delegate_agent_<id>" taking {"query": string}. Calling it runs a turn of
// the delegate — its own system prompt, model, tools and knowledge — in a
// session of its own tied to the parent session, and its answer is the tool
// result. max_delegate_depth (of the agent the client talks to) bounds the
// nesting, and an agent already working on the request (a cycle A → B → A)
// is refused, so delegation can never run away.

// delegatePrefix starts the name of every delegation tool.
const delegatePrefix = "delegate_agent_"

var delegateParams = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"The question or task for the other agent, self-contained: it does not see this conversation."}},"required":["query"]}`)

// delegateTools is the tool source of delegation.
func (s *Server) delegateTools(ctx context.Context, agent meta.Agent, in turnInput) ([]tool.Tool, error) {
	if len(agent.DelegateAgentIDs) == 0 {
		return nil, nil
	}
	out := make([]tool.Tool, 0, len(agent.DelegateAgentIDs))
	for _, id := range agent.DelegateAgentIDs {
		target, err := s.agents.getIn(ctx, agent.TenantID, id)
		desc := "Delegate a task to another agent and get its answer."
		if err == nil {
			desc = fmt.Sprintf("Delegate a task to the agent %q and get its answer.", target.Name)
			if sp := firstLine(target.SystemPrompt); sp != "" {
				desc += " It is instructed: " + sp
			}
		} else if !errors.Is(err, meta.ErrNotFound) {
			return nil, err
		}
		out = append(out, &delegateTool{s: s, parent: in, targetID: id, spec: llm.ToolSpec{
			Name: delegateToolName(id), Description: desc, Parameters: delegateParams,
		}})
	}
	return out, nil
}

// delegateToolName is the tool name for delegating to agent id, within the
// providers' ^[a-zA-Z0-9_-]{1,64}$.
func delegateToolName(id string) string {
	return toolname.Join(strings.TrimSuffix(delegatePrefix, "_"), id)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

type delegateTool struct {
	s        *Server
	parent   turnInput
	targetID string
	spec     llm.ToolSpec
}

func (d *delegateTool) Spec() llm.ToolSpec { return d.spec }

// Call runs the delegate's turn. Refusals (depth, cycle, disabled, missing
// agent) are error results that tell the model to answer by itself.
func (d *delegateTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var a struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return tool.Result{}, &tool.ArgumentError{Tool: d.spec.Name, Err: err}
	}
	if strings.TrimSpace(a.Query) == "" {
		return tool.Result{}, &tool.ArgumentError{Tool: d.spec.Name, Field: "query", Err: errors.New("required")}
	}
	p := d.parent
	depth := p.depth + 1
	if depth > p.maxDepth {
		return tool.Result{}, fmt.Errorf("delegation refused: the delegation depth limit (%d) is reached; answer the user directly", p.maxDepth)
	}
	if slices.Contains(p.chain, d.targetID) {
		return tool.Result{}, fmt.Errorf("delegation refused: agent %s is already working on this request (a delegation cycle); answer the user directly", d.targetID)
	}
	target, err := d.s.agents.getIn(ctx, p.agent.TenantID, d.targetID)
	if err != nil {
		return tool.Result{}, fmt.Errorf("delegation refused: agent %s does not exist; answer the user directly", d.targetID)
	}
	if !target.Enabled {
		return tool.Result{}, fmt.Errorf("delegation refused: agent %q is disabled; answer the user directly", target.Name)
	}
	// The delegate's turn streams through the parent's (ai.Forward): its
	// steps as delegate.* events, never mixed into the parent's answer.
	step := func(ph ai.AgentPhase, text string, err error) {
		ai.Forward(ctx, ai.Event{Kind: ai.EventAgent, Text: text, Agent: &ai.AgentStep{Agent: target.ID, Depth: depth, Phase: ph, Err: err}})
	}
	step(ai.AgentStarted, "", nil)
	answer, err := d.run(ctx, target, a.Query, depth)
	step(ai.AgentEnded, "", err)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Content: answer}, nil
}

// run runs the delegate's turn, here or on the remote server it points at,
// forwarding its text and its own delegations' steps.
func (d *delegateTool) run(ctx context.Context, target meta.Agent, query string, depth int) (string, error) {
	p := d.parent
	ss, e := d.s.childSession(ctx, p, target)
	if e != nil {
		return "", errors.New(e.Message)
	}
	in := turnInput{
		agent: target, session: ss, message: llm.UserMessage(query), query: query, answerID: memory.NewID(),
		depth: depth, maxDepth: p.maxDepth, chain: append(slices.Clip(p.chain), target.ID),
	}
	in.sink = func(ev turn.Event) error {
		switch ev.Kind {
		case turn.TextDelta:
			ai.Forward(ctx, ai.Event{Kind: ai.EventAgent, Text: ev.Text, Agent: &ai.AgentStep{Agent: target.ID, Depth: depth, Phase: ai.AgentText}})
		case turn.DelegateStart, turn.DelegateDelta, turn.DelegateEnd:
			// A delegation of the delegate, already in the parent's terms.
			ai.Forward(ctx, agentEvent(ev))
		}
		return nil
	}
	ans, f := d.s.runTurn(ctx, in)
	if f != nil {
		return "", fmt.Errorf("agent %q failed: %s", target.Name, f.err.Message)
	}
	return ans.Answer, nil
}

// agentEvent is a delegation step of a turn as the engine forwards it (the
// inverse of delegationEvent).
func agentEvent(ev turn.Event) ai.Event {
	d := ev.Delegate
	st := &ai.AgentStep{Agent: d.AgentID, Depth: d.Depth}
	switch ev.Kind {
	case turn.DelegateStart:
		st.Phase = ai.AgentStarted
	case turn.DelegateDelta:
		st.Phase = ai.AgentText
	default:
		st.Phase = ai.AgentEnded
		if !d.OK {
			st.Err = errors.New(d.Error)
		}
	}
	return ai.Event{Kind: ai.EventAgent, Text: ev.Text, Agent: st}
}

// childSession returns the delegate's session under the parent session: one
// per (parent session, delegate), so a delegate keeps its context across the
// delegations of one conversation.
func (s *Server) childSession(ctx context.Context, p turnInput, target meta.Agent) (meta.Session, *apiError) {
	sum := sha256.Sum256([]byte(p.session.ID + "\x00" + target.ID))
	id := "ses_d" + idEncodingLower(sum[:10])
	ss, err := s.meta.Session(ctx, p.agent.TenantID, id)
	if err == nil {
		return ss, nil
	}
	if !errors.Is(err, meta.ErrNotFound) {
		return ss, asAPIError(err)
	}
	now := time.Now().UTC()
	ss = meta.Session{ID: id, TenantID: p.agent.TenantID, AgentID: target.ID, ParentID: p.session.ID, CreatedAt: now, UpdatedAt: now}
	if err := s.meta.CreateSession(ctx, ss); err != nil && !errors.Is(err, meta.ErrConflict) {
		return ss, asAPIError(err)
	}
	return ss, nil
}

func idEncodingLower(b []byte) string { return secretEncoding.EncodeToString(b) }
