package platform

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/turn"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/toolname"
)

// The platform's chat turn, whatever the transport that asked for it (the
// native chat API, the OpenAI-compatible one, delegation): one input, one
// run, one answer or one error. chat.go and openai.go are its HTTP edges,
// idempotency.go, sessions.go and turns.go the concerns around it.

// sink receives a turn's events. A non-nil error (the client went away)
// stops the turn.
type sink func(turn.Event) error

// turnInput is one chat turn, whatever the endpoint that asked for it.
type turnInput struct {
	agent   meta.Agent
	session meta.Session
	// message is the user's message; query its text, for retrieval.
	message llm.Message
	query   string
	user    string
	// answerID is the id the assistant message will have (announced first).
	answerID string
	// depth is the delegation depth: 0 for the agent the client talks to;
	// maxDepth is that agent's max_delegate_depth; chain lists the agents
	// working on the request, outermost first.
	depth    int
	maxDepth int
	chain    []string
	sink     sink

	// stateless turns take their history from the request (history) instead
	// of the session store; system is the client's system text, sent after
	// the agent's system prompt.
	stateless bool
	history   []llm.Message
	system    string
	// params override the agent's model parameters for this turn; output
	// asks for a JSON answer.
	params *ai.Params
	output *ai.Output
	// clientTools are the caller's tools; toolResults, instead of a
	// message, continue a turn that ended with calls of them.
	clientTools []llm.ToolSpec
	toolResults []llm.Message
	// interrupt and decisions resume the session's paused turn.
	interrupt string
	decisions []ai.Decision
}

// runTurn is the platform's chat turn. The engine owns it (ai.Engine with
// the session as its memory.Chat): it takes the session's lease, loads the
// window that leaves room for everything else in the request, recalls the
// agent's knowledge (the engine's augmentor, see knowledgeAugmentor),
// stores the user's message before the model is called, runs the tool
// loop, and stores the tool rounds and the answer as it releases the lease
// — or, when the turn fails or is cancelled, its finished rounds and the
// text said so far, marked partial, under the same ids. runTurn maps the
// engine's events to the turn's one to one, and observes the turn (trace,
// usage, metrics).
func (s *Server) runTurn(ctx context.Context, in turnInput) (*turn.Answer, *turnFailure) {
	start := time.Now()
	outcome := "ok"
	defer func() {
		s.metrics.turns.WithLabelValues(outcome).Inc()
		s.metrics.turnLatency.Observe(time.Since(start).Seconds())
	}()
	agent := in.agent
	// The observer keeps the turn's trace, usage, spans and log line (see
	// traces.go).
	ctx, obs := s.observeTurn(ctx, turnInfo{tenant: agent.TenantID, keyID: principalFrom(ctx).Key.ID, agent: agent,
		sessionID: in.session.ID, messageID: in.answerID, model: cmp.Or(agent.Model, s.cfg.DefaultModel), depth: in.depth})
	fail := func(f *turnFailure, usage llm.Usage) *turnFailure {
		outcome = f.err.Code
		obs.finish(f.err.Code, usage, f.err.Message)
		return f
	}
	model, err := s.model(agent.Model)
	if err != nil {
		return nil, fail(failTurn(errorf(http.StatusBadGateway, CodeModelError, "agent %q: model %q: %v", agent.Name, agent.Model, err), false), llm.Usage{})
	}
	obs.info.model = model.Name()

	// The agent's turn deadline: a hung model or tool ends the turn as a
	// model_error, with what was said so far kept.
	tt := agent.Timeouts
	tt.Defaults()
	ctx, cancelTurn := context.WithTimeoutCause(ctx, time.Duration(tt.TurnMS)*time.Millisecond, &turnTimeoutError{time.Duration(tt.TurnMS) * time.Millisecond})
	defer cancelTurn()

	if agent.Remote != nil {
		ans, f := s.runRemoteTurn(ctx, in, start)
		if f != nil {
			return nil, fail(f, llm.Usage{})
		}
		ans.CostUSD = obs.finish("ok", llm.Usage{PromptTokens: ans.Usage.PromptTokens, CompletionTokens: ans.Usage.CompletionTokens, TotalTokens: ans.Usage.TotalTokens}, "")
		return &turn.Answer{ChatAnswer: *ans}, nil
	}

	eng, err := s.engineFor(ctx, agent, model, in)
	if err != nil {
		return nil, fail(failTurn(asAPIError(err), false), llm.Usage{})
	}
	for _, c := range in.clientTools {
		if slices.ContainsFunc(eng.specs, func(own llm.ToolSpec) bool { return own.Name == c.Name }) {
			return nil, fail(failTurn(badParam("tools", "the agent has a tool named %q; rename the client's tool", c.Name), false), llm.Usage{})
		}
	}

	at := ai.Turn{ID: in.answerID, MemoryID: in.session.ID, Memory: sessionChat(s.sessions, in.session, agent, eng), System: in.system,
		Params: in.params, Output: in.output, ClientTools: in.clientTools, ToolResults: in.toolResults, Decisions: in.decisions}
	if agent.SystemPrompt != "" {
		at.System = agent.SystemPrompt
		if in.system != "" {
			at.System += "\n\n" + in.system
		}
	}
	if len(in.toolResults) == 0 && len(in.decisions) == 0 {
		at.Message = in.message
		if in.user != "" {
			// Providers accept message names like tool names.
			at.Message.Name = toolname.Sanitize(in.user)
		}
	}
	if in.stateless {
		// The request's history goes through the session's window; the
		// turn is stored in the new session all the same.
		at.History = in.history
		if at.History == nil {
			at.History = []llm.Message{}
		}
	}
	// Tools read the session (tool.MemoryID) and the end user (tool.User)
	// from their context; a delegate's turn keeps the user of its parent.
	if in.user != "" {
		ctx = tool.WithUser(ctx, in.user)
	}
	if eng.recalls {
		ctx = context.WithValue(ctx, observerKey{}, obs)
	}

	var (
		frags  []api.RagFragment
		usage  llm.Usage
		out    *ai.Outcome
		runErr error
		said   bool           // the model said some of its answer
		paused *api.Interrupt // the interrupt the turn paused for
	)
	send := func(ev turn.Event) bool { return in.sink(ev) == nil }
	for ev, err := range eng.eng.Run(ctx, at) {
		if err != nil {
			runErr = err
			break
		}
		var ok bool
		switch ev.Kind {
		case ai.EventText:
			if !said {
				said = true
				s.metrics.firstToken.Observe(time.Since(start).Seconds())
			}
			ok = send(turn.Event{Kind: turn.TextDelta, Text: ev.Text})
		case ai.EventRetrieval:
			// The knowledge bases' recall, and the user's facts (knowledge
			// base "memory") when the agent remembers.
			more := fragments(ev.Sources)
			if slices.ContainsFunc(ev.Sources, func(src rag.Source) bool { return src.Collection == ai.FactsCollection }) {
				obs.retrieval(time.Now(), more, nil)
			}
			frags = append(frags, more...)
			ok = send(turn.Event{Kind: turn.Retrieval, Fragments: more})
		case ai.EventToolCallDelta:
			// The caller sees its own tools' calls as they come (the
			// OpenAI-compatible stream); the agent's run server-side.
			ok = !slices.ContainsFunc(in.clientTools, func(c llm.ToolSpec) bool { return c.Name == ev.ToolCall.Name }) ||
				send(turn.Event{Kind: turn.ToolCallDelta, Tool: &api.ToolCallOutcome{ID: ev.ToolCall.ID, Name: ev.ToolCall.Name}, Text: ev.Text})
		case ai.EventToolCall:
			obs.toolCall(ev.ToolCall.ID)
			ok = send(turn.Event{Kind: turn.ToolCall, Tool: &api.ToolCallOutcome{ID: ev.ToolCall.ID, Name: ev.ToolCall.Name, Arguments: argumentsJSON(ev.ToolCall.Arguments)}})
		case ai.EventToolResult:
			x := ev.Execution
			obs.toolResult(x.Call.ID, x.Call.Name, argumentsJSON(x.Call.Arguments), !x.IsError, x.Content)
			ok = send(turn.Event{Kind: turn.ToolResult, Tool: toolOutcome(x)})
		case ai.EventAgent:
			ok = send(delegationEvent(ev))
		case ai.EventUsage:
			usage = usage.Add(ev.Usage)
			obs.modelCall(ev.Usage)
			ok = true
		case ai.EventInterrupt:
			// Stored by the engine; the session row lists it.
			ss := in.session
			ss.Interrupt = interruptOf(ev.Interrupt, in.answerID)
			s.setInterrupt(ctx, in.session, in.interrupt, ss.Interrupt)
			paused = interruptAPI(ss)
			ok = send(turn.Event{Kind: turn.Interrupted, Interrupt: paused})
		case ai.EventDone:
			out = ev.Outcome
			ok = true
		default:
			ok = true
		}
		if !ok {
			// The consumer went away: breaking out cancels the turn, and
			// the engine stores what it completed before Run returns.
			runErr = context.Canceled
			break
		}
	}
	if runErr == nil && out == nil {
		runErr = errors.New("turn ended without an outcome")
	}
	s.touch(ctx, in.session)
	var refused *ai.DecisionError
	if in.interrupt != "" && paused == nil && !errors.As(runErr, &refused) && !errors.Is(runErr, memory.ErrLockTimeout) {
		// The decisions were stored: the interrupt is resolved.
		s.setInterrupt(context.WithoutCancel(ctx), in.session, in.interrupt, nil)
	}
	if runErr != nil {
		s.recordUsage(model.Name(), usage)
		return nil, fail(s.turnFailed(ctx, in, runErr, model.Name(), said), usage)
	}
	s.recordUsage(model.Name(), out.Usage)
	if out.Summary != nil {
		obs.summary(out.Summary.Text)
	}
	if eng.facts != nil && len(in.toolResults) == 0 {
		// What the turn taught about its user, learned in the background.
		s.learnAfter(eng.facts, agent, in.user, in.session.ID, in.answerID, []llm.Message{in.message, llm.AssistantMessage(out.Text)})
	}

	ans := &turn.Answer{Pending: out.Pending}
	ans.ChatAnswer = api.ChatAnswer{SessionID: in.session.ID, MessageID: in.answerID, Answer: out.Text, RagFragments: frags,
		ToolCalls: make([]api.ToolCallOutcome, len(out.ToolExecutions)), Model: model.Name(),
		Usage: api.Usage{PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens, TotalTokens: out.Usage.TotalTokens}}
	if ans.RagFragments == nil {
		ans.RagFragments = []api.RagFragment{}
	}
	for i := range out.ToolExecutions {
		x := &out.ToolExecutions[i]
		s.metrics.toolCalls.WithLabelValues(map[bool]string{true: "error", false: "ok"}[x.IsError]).Inc()
		ans.ToolCalls[i] = *toolOutcome(x)
	}
	ans.Interrupt = paused
	ans.LatencyMS = time.Since(start).Milliseconds()
	ans.CostUSD = obs.finish("ok", out.Usage, "")
	return ans, nil
}

// sessionChat is the session's conversation as the engine holds it for a
// turn: the agent's token window, with the engine's memory options.
func sessionChat(store memory.Store, ss meta.Session, agent meta.Agent, eng *agentEngine) *memory.Chat {
	return memory.NewChat(store, sessionKey(ss), memory.Window{MaxTokens: agent.ContextWindowTokens, Reserve: agent.ReserveTokens}, eng.chat...)
}

// delegationEvent is a delegated turn's step as the turn reports it.
func delegationEvent(ev ai.Event) turn.Event {
	st := ev.Agent
	d := &turn.Delegation{AgentID: st.Agent, Depth: st.Depth}
	switch st.Phase {
	case ai.AgentStarted:
		return turn.Event{Kind: turn.DelegateStart, Delegate: d}
	case ai.AgentText:
		return turn.Event{Kind: turn.DelegateDelta, Delegate: d, Text: ev.Text}
	}
	d.OK = st.Err == nil
	if st.Err != nil {
		d.Error = st.Err.Error()
	}
	return turn.Event{Kind: turn.DelegateEnd, Delegate: d}
}

// turnFailed maps a failed turn to the API's error. said reports that the
// model said some of its answer, which the engine stored marked partial:
// only then is the failure partial.
func (s *Server) turnFailed(ctx context.Context, in turnInput, err error, model string, said bool) *turnFailure {
	var (
		rounds      *ai.ToolRoundsError
		results     *ai.ToolResultError
		mem         *ai.MemoryError
		turnTimeout *turnTimeoutError
	)
	kept := ""
	if said {
		kept = "; the partial answer was saved"
	}
	var refused *ai.DecisionError
	switch {
	case errors.As(err, &refused):
		return decisionFailure(refused)
	case errors.As(err, &results):
		if results.Missing {
			return failTurn(badParam("messages", "the tool call %q has no result", results.CallID), false)
		}
		return failTurn(badParam("tool_call_id", "no tool call %q is waiting for a result", results.CallID), false)
	case errors.Is(err, llm.ErrContextTooLong):
		s.metrics.modelErrors.WithLabelValues(model).Inc()
		return failTurn(errorf(http.StatusBadRequest, CodeContextTooLong, "%v", err), said)
	case errors.Is(err, memory.ErrLockTimeout):
		return failTurn(errorf(http.StatusConflict, CodeConflict, "session %q is busy with another turn; retry when it ends", in.session.ID), false)
	case errors.As(context.Cause(ctx), &turnTimeout):
		s.metrics.modelErrors.WithLabelValues(model).Inc()
		return failTurn(errorf(http.StatusBadGateway, CodeModelError, "timeout: %v", turnTimeout), said)
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errShuttingDown):
			return failTurn(errorf(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down%s", kept), said)
		case errors.Is(cause, errCancelledByClient):
			return failTurn(errorf(499, CodeCancelled, "the turn was cancelled%s", kept), said)
		}
		return failTurn(errorf(499, CodeCancelled, "the turn was cancelled"), said)
	case errors.As(err, &mem):
		if said {
			return failTurn(errorf(http.StatusServiceUnavailable, CodeUnavailable, "answer not stored: %v", mem.Err), false)
		}
		return failTurn(errorf(http.StatusServiceUnavailable, CodeUnavailable, "session store: %v", mem.Err), false)
	case errors.As(err, &rounds):
		return failTurn(errorf(http.StatusBadGateway, CodeModelError, "the model kept calling tools past the agent's max_tool_rounds (%d)", rounds.Rounds), said)
	}
	s.metrics.modelErrors.WithLabelValues(model).Inc()
	s.log.WarnContext(ctx, "model call failed", "request_id", requestID(ctx), "model", model, "err", err)
	return failTurn(errorf(http.StatusBadGateway, CodeModelError, "%v", err), said)
}

// questionRecordID is the record id of a turn's user message, as the
// engine names it (ai.TurnOfRecord reads the turn's id back): remote
// turns, which the engine does not run, store theirs under it too.
func questionRecordID(answer string) string { return answer + "-q" }

// toolOutcome is a tool execution in the API's terms.
func toolOutcome(x *tool.Execution) *api.ToolCallOutcome {
	tc := &api.ToolCallOutcome{ID: x.Call.ID, Name: x.Call.Name, Arguments: argumentsJSON(x.Call.Arguments), OK: !x.IsError}
	if x.IsError {
		tc.Error = x.Content
	} else {
		tc.Result = x.Content
	}
	return tc
}

func (s *Server) recordUsage(model string, u llm.Usage) {
	if u.PromptTokens > 0 {
		s.metrics.tokens.WithLabelValues("prompt", model).Add(float64(u.PromptTokens))
	}
	if u.CompletionTokens > 0 {
		s.metrics.tokens.WithLabelValues("completion", model).Add(float64(u.CompletionTokens))
	}
}
