package platform

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/turn"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tokens"
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
}

// turnError is a failed turn: the API error, and whether any answer text
// was produced before the failure (it was persisted as partial).
type turnError struct {
	api     *apiError
	partial bool
}

// runTurn is the platform's chat turn: model → lock the session → recall →
// the token window over everything that will be sent → store the user
// message → the ai pipeline (model and tool loop, streaming through sink) →
// store the answer (partial when the turn failed) → the answer.
func (s *Server) runTurn(ctx context.Context, in turnInput) (*turn.Answer, *turnError) {
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
	fail := func(code string, e *apiError, partial bool) *turnError {
		outcome = code
		obs.finish(code, llm.Usage{}, e.Message)
		return &turnError{api: e, partial: partial}
	}
	model, err := s.model(agent.Model)
	if err != nil {
		return nil, fail(CodeModelError, errorf(http.StatusBadGateway, CodeModelError, "agent %q: model %q: %v", agent.Name, agent.Model, err), false)
	}
	obs.info.model = model.Name()
	key := sessionKey(in.session)

	if l, ok := s.sessions.(memory.Locker); ok {
		lctx, cancel := context.WithTimeout(ctx, s.lockWait())
		release, err := l.Lock(lctx, key, memory.Lease{Owner: s.cfg.Instance})
		cancel()
		if err != nil {
			if errors.Is(err, memory.ErrLockTimeout) {
				return nil, fail(CodeConflict, errorf(http.StatusConflict, CodeConflict, "session %q is busy with another turn; retry when it ends", in.session.ID), false)
			}
			return nil, fail(CodeUnavailable, errorf(http.StatusServiceUnavailable, CodeUnavailable, "session store: %v", err), false)
		}
		defer release()
	}

	// The agent's turn deadline: a hung model or tool ends the turn as a
	// model_error, with what was said so far kept.
	tt := agent.Timeouts
	tt.Defaults()
	ctx, cancelTurn := context.WithTimeoutCause(ctx, time.Duration(tt.TurnMS)*time.Millisecond, &turnTimeoutError{time.Duration(tt.TurnMS) * time.Millisecond})
	defer cancelTurn()

	if agent.Remote != nil {
		ans, terr := s.runRemoteTurn(ctx, in, start)
		if terr != nil {
			outcome = terr.api.Code
			obs.finish(terr.api.Code, llm.Usage{}, terr.api.Message)
			return nil, terr
		}
		ans.CostUSD = obs.finish("ok", llm.Usage{PromptTokens: ans.Usage.PromptTokens, CompletionTokens: ans.Usage.CompletionTokens, TotalTokens: ans.Usage.TotalTokens}, "")
		return &turn.Answer{ChatAnswer: *ans}, nil
	}

	eng, err := s.engineFor(ctx, agent, model, in)
	if err != nil {
		return nil, fail(CodeInternal, asAPIError(err), false)
	}
	counter := tokens.ForModel(model.Name())
	for _, c := range in.clientTools {
		for _, own := range eng.specs {
			if own.Name == c.Name {
				return nil, fail(CodeInvalidRequest, badParam("tools", "the agent has a tool named %q; rename the client's tool", c.Name), false)
			}
		}
	}
	// A turn continues after the client's tool results, or starts with the
	// user's message.
	cont := len(in.toolResults) > 0
	userMsg := in.message
	if in.user != "" {
		// Providers accept message names like tool names.
		userMsg.Name = toolname.Sanitize(in.user)
	}

	// Retrieval first: the window must leave room for what it brings.
	aug := rag.Augmentation{Message: userMsg}
	var frags []api.RagFragment
	if !cont {
		rstart := time.Now()
		var recalled bool
		var rerr error
		aug, frags, recalled, rerr = s.recall(ctx, agent, in, userMsg)
		if recalled {
			obs.retrieval(rstart, frags, rerr)
		}
		if len(frags) > 0 {
			if err := in.sink(turn.Event{Kind: turn.Retrieval, Fragments: frags}); err != nil {
				return nil, fail(CodeCancelled, errorf(499, CodeCancelled, "the turn was cancelled"), false)
			}
		}
	}

	system := agent.SystemPrompt
	if in.system != "" {
		if system != "" {
			system += "\n\n"
		}
		system += in.system
	}
	fixed := tokens.ReplyOverhead + eng.toolTokens(counter)
	for _, c := range in.clientTools {
		fixed += tokens.ToolTokens(counter, c)
	}
	var newRecs []memory.Record
	if cont {
		for i, m := range in.toolResults {
			n := tokens.MessageTokens(counter, m)
			fixed += n
			newRecs = append(newRecs, memory.Record{ID: toolResultRecordID(in.answerID, i), Message: m, Tokens: n})
		}
	} else {
		fixed += tokens.MessageTokens(counter, aug.Message)
		newRecs = append(newRecs, memory.Record{ID: questionRecordID(in.answerID), Message: userMsg, Tokens: tokens.MessageTokens(counter, userMsg)})
	}
	if system != "" {
		fixed += tokens.MessageTokens(counter, llm.SystemMessage(system))
	}
	var window []memory.Record
	w := memory.Window{MaxTokens: agent.ContextWindowTokens, Reserve: agent.ReserveTokens + fixed}
	if in.stateless {
		// The request's history goes through the same sliding window as a
		// stored session's.
		recs := make([]memory.Record, len(in.history))
		for i, m := range in.history {
			recs[i] = memory.Record{Message: m, Tokens: tokens.MessageTokens(counter, m)}
		}
		window, err = w.Fit(recs)
	} else {
		window, err = w.Load(ctx, s.sessions, key)
	}
	if err != nil {
		if errors.Is(err, llm.ErrContextTooLong) {
			return nil, fail(CodeContextTooLong, errorf(http.StatusBadRequest, CodeContextTooLong, "%v", err), false)
		}
		return nil, fail(CodeUnavailable, errorf(http.StatusServiceUnavailable, CodeUnavailable, "session store: %v", err), false)
	}
	history := make([]llm.Message, 0, len(window)+len(in.toolResults))
	for _, rec := range window {
		if rec.Message.Role != llm.RoleSystem {
			history = append(history, rec.Message)
		}
	}
	if cont {
		if e := checkToolResults(history, in.toolResults); e != nil {
			return nil, fail(CodeInvalidRequest, e, false)
		}
		history = append(history, in.toolResults...)
		aug.Message = llm.Message{}
	}

	// The user's message (or the client's tool results) is stored before
	// the model is called: a failed turn keeps it.
	if _, err := s.sessions.Append(ctx, key, newRecs...); err != nil {
		return nil, fail(CodeUnavailable, errorf(http.StatusServiceUnavailable, CodeUnavailable, "session store: %v", err), false)
	}

	ans := &turn.Answer{}
	ans.ChatAnswer = api.ChatAnswer{SessionID: in.session.ID, MessageID: in.answerID, RagFragments: frags, ToolCalls: []api.ToolCallOutcome{}, Model: model.Name()}
	if ans.RagFragments == nil {
		ans.RagFragments = []api.RagFragment{}
	}
	var rounds roundLog
	var usage llm.Usage
	var out *ai.Outcome
	var runErr error
	firstToken := true
	// Tools read the session (tool.MemoryID) and the end user (tool.User)
	// from their context; a delegate's turn keeps the user of its parent.
	at := ai.Turn{Message: aug.Message, System: system, MemoryID: in.session.ID, History: history, Params: in.params, Output: in.output, ClientTools: in.clientTools}
	tctx := ctx
	if in.user != "" {
		tctx = tool.WithUser(ctx, in.user)
	}
	for ev, err := range eng.run(tctx, at) {
		if err != nil {
			runErr = err
			break
		}
		var serr error
		switch ev.Kind {
		case ai.EventText:
			if firstToken {
				firstToken = false
				s.metrics.firstToken.Observe(time.Since(start).Seconds())
			}
			rounds.text.WriteString(ev.Text)
			serr = in.sink(turn.Event{Kind: turn.TextDelta, Text: ev.Text})
		case ai.EventToolCallDelta:
			// The caller sees its own tools' calls as they come (the
			// OpenAI-compatible stream); the agent's run server-side.
			if slices.ContainsFunc(in.clientTools, func(c llm.ToolSpec) bool { return c.Name == ev.ToolCall.Name }) {
				serr = in.sink(turn.Event{Kind: turn.ToolCallDelta, Tool: &api.ToolCallOutcome{ID: ev.ToolCall.ID, Name: ev.ToolCall.Name}, Text: ev.Text})
			}
		case ai.EventToolCall:
			obs.toolCall(ev.ToolCall.ID)
			rounds.call(ev.ToolCall)
			serr = in.sink(turn.Event{Kind: turn.ToolCall, Tool: &api.ToolCallOutcome{ID: ev.ToolCall.ID, Name: ev.ToolCall.Name, Arguments: argumentsJSON(ev.ToolCall.Arguments)}})
		case ai.EventToolResult:
			x := ev.Execution
			obs.toolResult(x.Call.ID, x.Call.Name, argumentsJSON(x.Call.Arguments), !x.IsError, x.Content)
			rounds.result(x)
			serr = in.sink(turn.Event{Kind: turn.ToolResult, Tool: toolOutcome(x)})
		case ai.EventUsage:
			usage = usage.Add(ev.Usage)
			obs.modelCall(ev.Usage)
		case ai.EventDone:
			out = ev.Outcome
		}
		if serr != nil {
			runErr = context.Canceled
			break
		}
	}
	persistCtx := context.WithoutCancel(ctx)
	if runErr == nil && out == nil {
		runErr = errors.New("turn ended without an outcome")
	}
	if runErr != nil {
		// What the turn completed is kept, as the library keeps it: the
		// finished tool rounds, then the text said since, marked partial.
		recs := rounds.records(counter)
		partial := rounds.text.Len() > 0
		if partial {
			msg := llm.AssistantMessage(rounds.text.String())
			recs = append(recs, memory.Record{ID: in.answerID, Message: msg, Tokens: tokens.MessageTokens(counter, msg), Partial: true})
		}
		if len(recs) > 0 {
			if _, err := s.sessions.Append(persistCtx, key, recs...); err != nil {
				s.log.ErrorContext(ctx, "partial answer not stored", "session", in.session.ID, "err", err)
			}
		}
		s.touch(persistCtx, in.session)
		s.recordUsage(model.Name(), usage)
		code, e, partial := s.classifyTurnError(ctx, runErr, model.Name())
		outcome = code
		obs.finish(code, usage, e.Message)
		return nil, &turnError{api: e, partial: partial || len(recs) > 0}
	}

	// The answer, with the tool rounds that led to it.
	var recs []memory.Record
	newMsgs := out.Messages
	if len(newMsgs) > 0 && newMsgs[0].Role == llm.RoleUser {
		newMsgs = newMsgs[1:]
	}
	last := -1 // the answer: the last assistant message
	for i, m := range newMsgs {
		if m.Role == llm.RoleAssistant {
			last = i
		}
	}
	for i, m := range newMsgs {
		id := ""
		if i == last {
			id = in.answerID
		}
		recs = append(recs, memory.Record{ID: id, Message: m, Tokens: tokens.MessageTokens(counter, m)})
	}
	if len(recs) > 0 {
		if _, err := s.sessions.Append(persistCtx, key, recs...); err != nil {
			return nil, fail(CodeUnavailable, errorf(http.StatusServiceUnavailable, CodeUnavailable, "answer not stored: %v", err), false)
		}
	}
	s.touch(persistCtx, in.session)
	s.recordUsage(model.Name(), out.Usage)

	ans.Answer = out.Text
	ans.Pending = out.Pending
	for i := range out.ToolExecutions {
		x := &out.ToolExecutions[i]
		s.metrics.toolCalls.WithLabelValues(map[bool]string{true: "error", false: "ok"}[x.IsError]).Inc()
		ans.ToolCalls = append(ans.ToolCalls, *toolOutcome(x))
	}
	ans.Usage = api.Usage{PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens, TotalTokens: out.Usage.TotalTokens}
	ans.LatencyMS = time.Since(start).Milliseconds()
	ans.CostUSD = obs.finish("ok", out.Usage, "")
	return ans, nil
}

// classifyTurnError maps a failed pipeline to the API's error.
func (s *Server) classifyTurnError(ctx context.Context, err error, model string) (string, *apiError, bool) {
	var roundsErr *ai.ToolRoundsError
	var turnTimeout *turnTimeoutError
	switch {
	case errors.As(context.Cause(ctx), &turnTimeout):
		s.metrics.modelErrors.WithLabelValues(model).Inc()
		return CodeModelError, errorf(http.StatusBadGateway, CodeModelError, "timeout: %v", turnTimeout), true
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		cause := context.Cause(ctx)
		if errors.Is(cause, errShuttingDown) {
			return CodeUnavailable, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down; the partial answer was saved"), true
		}
		if errors.Is(cause, errCancelledByClient) {
			return CodeCancelled, errorf(499, CodeCancelled, "the turn was cancelled; the partial answer was saved"), true
		}
		return CodeCancelled, errorf(499, CodeCancelled, "the turn was cancelled"), true
	case errors.As(err, &roundsErr):
		return CodeModelError, errorf(http.StatusBadGateway, CodeModelError, "the model kept calling tools past the agent's max_tool_rounds (%d)", roundsErr.Rounds), true
	case errors.Is(err, llm.ErrContextTooLong):
		s.metrics.modelErrors.WithLabelValues(model).Inc()
		return CodeContextTooLong, errorf(http.StatusBadRequest, CodeContextTooLong, "%v", err), true
	}
	s.metrics.modelErrors.WithLabelValues(model).Inc()
	s.log.WarnContext(ctx, "model call failed", "request_id", requestID(ctx), "model", model, "err", err)
	return CodeModelError, errorf(http.StatusBadGateway, CodeModelError, "%v", err), true
}

// The records a turn stores before its answer are named after the
// answer's id: the user's message questionRecordID, the client's tool
// results toolResultRecordID; turnOfRecord reads the answer's id back.
func questionRecordID(answer string) string { return answer + "-q" }

func toolResultRecordID(answer string, i int) string { return answer + "-r" + strconv.Itoa(i) }

// turnOfRecord returns the answer id of the turn that stored record id
// when it is the turn's user message or one of the client's tool results.
func turnOfRecord(id string) (string, bool) {
	if answer, ok := strings.CutSuffix(id, "-q"); ok && answer != "" {
		return answer, true
	}
	i := strings.LastIndex(id, "-r")
	if i <= 0 || i+2 == len(id) {
		return "", false
	}
	if _, err := strconv.ParseUint(id[i+2:], 10, 32); err != nil {
		return "", false
	}
	return id[:i], true
}

// roundLog rebuilds a turn's finished tool rounds from its events, so that
// a failed turn stores them: text is what the model said since the last
// finished round.
type roundLog struct {
	text    strings.Builder
	cur     []llm.Message // the round in progress: its assistant message, then results
	waiting int
	done    []llm.Message
}

func (r *roundLog) call(c llm.ToolCall) {
	if len(r.cur) == 0 {
		m := llm.Message{Role: llm.RoleAssistant}
		if r.text.Len() > 0 {
			m = llm.AssistantMessage(r.text.String())
			r.text.Reset()
		}
		r.cur = append(r.cur, m)
	}
	r.cur[0].ToolCalls = append(r.cur[0].ToolCalls, c)
	r.waiting++
}

func (r *roundLog) result(x *tool.Execution) {
	if len(r.cur) == 0 {
		return
	}
	r.cur = append(r.cur, x.Message())
	if r.waiting--; r.waiting == 0 {
		r.done = append(r.done, r.cur...)
		r.cur = r.cur[:0:0]
	}
}

// records are the finished rounds as session records.
func (r *roundLog) records(c tokens.Counter) []memory.Record {
	recs := make([]memory.Record, 0, len(r.done)+1)
	for _, m := range r.done {
		recs = append(recs, memory.Record{Message: m, Tokens: tokens.MessageTokens(c, m)})
	}
	return recs
}

// checkToolResults checks the client's tool results against the calls
// waiting for them: those of the conversation's last assistant message
// that no result follows yet. Each must get exactly one.
func checkToolResults(history []llm.Message, results []llm.Message) *apiError {
	waiting := map[string]bool{}
	for i := len(history) - 1; i >= 0; i-- {
		m := history[i]
		if m.Role == llm.RoleAssistant {
			for _, c := range m.ToolCalls {
				waiting[c.ID] = true
			}
			for _, r := range history[i+1:] {
				delete(waiting, r.ToolCallID)
			}
			break
		}
	}
	for _, r := range results {
		if !waiting[r.ToolCallID] {
			return badParam("tool_call_id", "no tool call %q is waiting for a result", r.ToolCallID)
		}
		delete(waiting, r.ToolCallID)
	}
	for id := range waiting {
		return badParam("messages", "the tool call %q has no result", id)
	}
	return nil
}

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
