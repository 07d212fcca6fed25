package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/internal/redact"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// Turn observation: one observer per turn sees its steps (retrieval, each
// model call, each tool call, delegations) and its end, and from them
//
//   - keeps the turn's compact trace (GET /v1/sessions/{id}/messages/{message}/trace),
//   - records its usage and cost, and checks nothing (budgets are checked
//     before the turn, see accounting.check),
//   - makes its OpenTelemetry spans and GenAI metrics,
//   - writes the one info line an operator reads per turn.
//
// The turn calls the observer at a few points only; everything else lives
// here.

// DefaultTraceRetention is how long turn traces are kept when
// Config.TraceRetention is zero.
const DefaultTraceRetention = 7 * 24 * time.Hour

// Bounds of one trace, so that a turn with huge tool results stays
// compact: each text is cut at maxTraceText bytes, and a trace keeps at
// most maxTraceSteps steps.
const (
	maxTraceText  = 2048
	maxTraceSteps = 256
)

// turnTrace is the stored trace of a turn (the body of the trace route).
type turnTrace struct {
	MessageID  string      `json:"message_id"`
	SessionID  string      `json:"session_id"`
	AgentID    string      `json:"agent_id"`
	Agent      string      `json:"agent"`
	Model      string      `json:"model"`
	Depth      int         `json:"depth,omitempty"`
	StartedAt  time.Time   `json:"started_at"`
	DurationMS int64       `json:"duration_ms"`
	Outcome    string      `json:"outcome"`
	Error      string      `json:"error,omitempty"`
	Usage      api.Usage   `json:"usage"`
	CostUSD    float64     `json:"cost_usd"`
	Steps      []traceStep `json:"steps"`
	// Summary is the session's running summary the turn sent after the
	// system prompt (the agent's memory.summary), cut as texts are.
	Summary string `json:"summary,omitempty"`
	// Truncated says steps were left out (past maxTraceSteps).
	Truncated bool `json:"truncated,omitempty"`
}

// traceStep is one step of a turn. Kind says which fields are set:
// "retrieval" (Hits, Error), "model" (Model, tokens), "tool" (Tool, ID,
// Arguments, OK, Result or Error; AgentID on a delegation).
type traceStep struct {
	Kind             string     `json:"kind"`
	StartMS          int64      `json:"start_ms"`
	DurationMS       int64      `json:"duration_ms"`
	Model            string     `json:"model,omitempty"`
	PromptTokens     int        `json:"prompt_tokens,omitempty"`
	CompletionTokens int        `json:"completion_tokens,omitempty"`
	Tool             string     `json:"tool,omitempty"`
	ID               string     `json:"id,omitempty"`
	Arguments        string     `json:"arguments,omitempty"`
	OK               *bool      `json:"ok,omitempty"`
	Result           string     `json:"result,omitempty"`
	Error            string     `json:"error,omitempty"`
	Hits             []traceHit `json:"hits,omitempty"`
	AgentID          string     `json:"agent_id,omitempty"`
}

// traceHit is a retrieval hit, without the chunk's text beyond a snippet.
type traceHit struct {
	KnowledgeBaseID string  `json:"knowledge_base_id"`
	DocumentID      string  `json:"document_id"`
	DocumentName    string  `json:"document_name"`
	ChunkID         string  `json:"chunk_id"`
	Score           float64 `json:"score"`
	Snippet         string  `json:"snippet"`
}

// traceStore is what traces need of the metadata store.
type traceStore interface {
	PutTrace(ctx context.Context, t meta.TurnTrace) error
	Trace(ctx context.Context, tenant, session, message string) (meta.TurnTrace, error)
	PruneTraces(ctx context.Context, before time.Time) (int64, error)
}

// traces keeps turn traces for their retention.
type traces struct {
	store     traceStore
	retention time.Duration
	lastPrune atomic.Int64 // unix nanos
	pruning   sync.Mutex
}

// secretPatterns are credentials a trace must not keep even when a tool or
// model echoes them: Weft API keys, bearer tokens, common provider keys.
var secretPatterns = regexp.MustCompile(`wk_[A-Za-z0-9_]{8,}|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,}|sk-[A-Za-z0-9_-]{16,}|xox[abpr]-[A-Za-z0-9-]{10,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}`)

// scrub redacts secrets from a text kept in a trace (URL passwords as the
// logs do, and credential-shaped tokens) and bounds its length.
func scrub(s string) string {
	s = secretPatterns.ReplaceAllString(processSecrets.Text(s), redact.Mask)
	if len(s) > maxTraceText {
		cut := maxTraceText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…[truncated]"
	}
	return s
}

// turnInfo is what the observer is told of a turn when it starts.
type turnInfo struct {
	tenant    string
	keyID     string
	agent     meta.Agent
	sessionID string
	messageID string
	model     string
	depth     int
}

// turnObserver observes one turn. Its methods are called from the turn's
// goroutine, in order; a nil observer ignores everything.
type turnObserver struct {
	s     *Server
	info  turnInfo
	start time.Time
	mark  time.Time // end of the last model call or tool step: where the next model call began
	trace turnTrace
	usage llm.Usage
	calls map[string]time.Time // tool calls started, by id

	ctx  context.Context // the turn's, with its span
	span trace.Span      // nil when tracing is off
}

// observeTurn starts observing a turn: its span begins now, and ctx
// carries it to what the turn calls (delegates' turns become its
// children).
func (s *Server) observeTurn(ctx context.Context, info turnInfo) (context.Context, *turnObserver) {
	now := time.Now()
	o := &turnObserver{s: s, info: info, start: now, mark: now}
	o.trace = turnTrace{MessageID: info.messageID, SessionID: info.sessionID, AgentID: info.agent.ID, Agent: info.agent.Name,
		Model: info.model, Depth: info.depth, StartedAt: now.UTC(), Steps: []traceStep{}}
	if s.otel.on {
		provider, model := splitModel(info.model)
		attrs := []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.id", info.agent.ID),
			attribute.String("gen_ai.agent.name", info.agent.Name),
			attribute.String("gen_ai.provider.name", provider),
			attribute.String("gen_ai.request.model", model),
			attribute.String("weft.tenant.id", info.tenant),
			attribute.String("weft.message.id", info.messageID),
		}
		if info.sessionID != "" {
			attrs = append(attrs, attribute.String("gen_ai.conversation.id", info.sessionID))
		}
		if info.depth > 0 {
			attrs = append(attrs, attribute.Int("weft.delegation.depth", info.depth))
		}
		ctx, o.span = s.otel.tracer.Start(ctx, "invoke_agent "+info.agent.Name, trace.WithTimestamp(now),
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	}
	o.ctx = ctx
	return ctx, o
}

func (o *turnObserver) ms(t time.Time) int64 { return t.Sub(o.start).Milliseconds() }

func (o *turnObserver) addStep(st traceStep) {
	if len(o.trace.Steps) >= maxTraceSteps {
		o.trace.Truncated = true
		return
	}
	o.trace.Steps = append(o.trace.Steps, st)
}

// childSpan records a finished step as a span of the turn.
func (o *turnObserver) childSpan(name string, kind trace.SpanKind, start, end time.Time, failed string, attrs ...attribute.KeyValue) {
	if o.span == nil {
		return
	}
	_, sp := o.s.otel.tracer.Start(o.ctx, name, trace.WithTimestamp(start), trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	if failed != "" {
		sp.SetStatus(codes.Error, failed)
	}
	sp.End(trace.WithTimestamp(end))
}

// retrieval records the knowledge-base recall that began at start.
func (o *turnObserver) retrieval(start time.Time, frags []api.RagFragment, err error) {
	if o == nil {
		return
	}
	end := time.Now()
	st := traceStep{Kind: "retrieval", StartMS: o.ms(start), DurationMS: end.Sub(start).Milliseconds(), Hits: []traceHit{}}
	for _, f := range frags {
		st.Hits = append(st.Hits, traceHit{KnowledgeBaseID: f.KnowledgeBaseID, DocumentID: f.DocumentID, DocumentName: f.DocumentName,
			ChunkID: f.ChunkID, Score: f.Score, Snippet: scrub(snippet(f.Content))})
	}
	failed := ""
	if err != nil {
		failed = scrub(err.Error())
		st.Error = failed
		o.s.log.WarnContext(o.ctx, "retrieval degraded: answering without knowledge", "request_id", requestID(o.ctx),
			"tenant", o.info.tenant, "agent", o.info.agent.ID, "session", o.info.sessionID, "err", failed)
	}
	o.addStep(st)
	o.mark = end
	o.childSpan("retrieval "+o.info.agent.Name, trace.SpanKindInternal, start, end, failed,
		attribute.String("gen_ai.operation.name", "retrieval"),
		attribute.Int("weft.retrieval.hits", len(frags)))
}

// snippet is the start of a recalled chunk.
func snippet(s string) string {
	const n = 200
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// modelCall records a model call that ended now with usage u (it began
// when the previous step ended).
// summary records the running summary the turn sent.
func (o *turnObserver) summary(text string) { o.trace.Summary = scrub(text) }

func (o *turnObserver) modelCall(u llm.Usage) {
	if o == nil {
		return
	}
	end := time.Now()
	o.usage = o.usage.Add(u)
	o.addStep(traceStep{Kind: "model", StartMS: o.ms(o.mark), DurationMS: end.Sub(o.mark).Milliseconds(), Model: o.info.model,
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens})
	o.s.otel.recordModelCall(o.ctx, o.info.model, end.Sub(o.mark).Seconds(), u.PromptTokens, u.CompletionTokens, "")
	provider, model := splitModel(o.info.model)
	o.childSpan("chat "+model, trace.SpanKindClient, o.mark, end, "",
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", provider),
		attribute.String("gen_ai.request.model", model),
		attribute.Int("gen_ai.usage.input_tokens", u.PromptTokens),
		attribute.Int("gen_ai.usage.output_tokens", u.CompletionTokens))
	o.mark = end
}

// toolCall records that the model called a tool (it runs now).
func (o *turnObserver) toolCall(id string) {
	if o == nil {
		return
	}
	now := time.Now()
	if o.calls == nil {
		o.calls = map[string]time.Time{}
	}
	o.calls[id] = now
	// The model call that asked for the tool ended when it was asked.
	if now.After(o.mark) {
		o.mark = now
	}
}

// toolResult records a finished tool call.
func (o *turnObserver) toolResult(id, name string, arguments json.RawMessage, ok bool, content string) {
	if o == nil {
		return
	}
	end := time.Now()
	start, seen := o.calls[id]
	if !seen {
		start = o.mark
	}
	delete(o.calls, id)
	st := traceStep{Kind: "tool", StartMS: o.ms(start), DurationMS: end.Sub(start).Milliseconds(), Tool: name, ID: id,
		Arguments: scrub(string(arguments)), OK: &ok}
	// A delegation's tool step names the delegate (whose own trace is in
	// its session).
	for _, d := range o.info.agent.DelegateAgentIDs {
		if delegateToolName(d) == name {
			st.AgentID = d
		}
	}
	failed := ""
	if ok {
		st.Result = scrub(content)
	} else {
		st.Error = scrub(content)
		failed = st.Error
		o.s.log.WarnContext(o.ctx, "tool call failed", "request_id", requestID(o.ctx), "tenant", o.info.tenant,
			"agent", o.info.agent.ID, "session", o.info.sessionID, "tool", name, "call_id", id)
	}
	o.addStep(st)
	if end.After(o.mark) {
		o.mark = end
	}
	o.childSpan("execute_tool "+name, trace.SpanKindInternal, start, end, failed,
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", name),
		attribute.String("gen_ai.tool.call.id", id))
}

// finish ends the turn: outcome is "ok" or the error code, usage what the
// model calls used in all (when the turn knows better than the sum of its
// calls). It records usage and cost, stores the trace, ends the span,
// writes the turn's log line, and returns the cost in US dollars.
func (o *turnObserver) finish(outcome string, usage llm.Usage, failure string) float64 {
	if o == nil {
		return 0
	}
	end := time.Now()
	if usage.IsZero() {
		usage = o.usage
	}
	if usage.TotalTokens == 0 {
		usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	}
	var cost int64
	if o.s.accounting != nil {
		cost = o.s.accounting.record(o.ctx, o.info.tenant, o.info.agent.ID, o.info.keyID, o.info.model, usage)
	}
	t := &o.trace
	t.DurationMS = end.Sub(o.start).Milliseconds()
	t.Outcome = outcome
	t.Error = scrub(failure)
	t.Usage = api.Usage{PromptTokens: usage.PromptTokens, CompletionTokens: usage.CompletionTokens, TotalTokens: usage.TotalTokens}
	t.CostUSD = dollars(cost)
	o.s.keepTrace(o.ctx, o.info, t)

	if o.span != nil {
		o.span.SetAttributes(
			attribute.Int("gen_ai.usage.input_tokens", usage.PromptTokens),
			attribute.Int("gen_ai.usage.output_tokens", usage.CompletionTokens),
			attribute.Float64("weft.cost_usd", t.CostUSD),
			attribute.String("weft.outcome", outcome))
		if outcome != "ok" {
			o.span.SetAttributes(attribute.String("error.type", outcome))
			o.span.SetStatus(codes.Error, t.Error)
		}
		o.span.End(trace.WithTimestamp(end))
	}

	// The operator's line: who, what model, how much, how long, how it
	// ended — never the content. Typed attributes: no boxing.
	if o.s.log.Enabled(o.ctx, slog.LevelInfo) {
		o.s.log.LogAttrs(o.ctx, slog.LevelInfo, "turn",
			slog.String("request_id", requestID(o.ctx)), slog.String("tenant", o.info.tenant), slog.String("agent", o.info.agent.ID),
			slog.String("session", o.info.sessionID), slog.String("message", o.info.messageID), slog.String("key_id", o.info.keyID),
			slog.String("model", o.info.model), slog.Int("prompt_tokens", usage.PromptTokens), slog.Int("completion_tokens", usage.CompletionTokens),
			slog.Float64("cost_usd", t.CostUSD), slog.Int64("latency_ms", t.DurationMS), slog.Int("steps", len(t.Steps)),
			slog.Int("depth", o.info.depth), slog.String("outcome", outcome))
	}
	return t.CostUSD
}

// keepTrace stores a turn's trace, when traces are kept, and now and then
// drops the expired ones.
func (s *Server) keepTrace(ctx context.Context, info turnInfo, t *turnTrace) {
	if s.traces == nil || info.sessionID == "" {
		return
	}
	data, err := json.Marshal(t)
	if err != nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	row := meta.TurnTrace{TenantID: info.tenant, SessionID: info.sessionID, MessageID: info.messageID,
		AgentID: info.agent.ID, CreatedAt: t.StartedAt, Data: data}
	if s.ledger != nil {
		s.ledger.add(ledgerItem{trace: &row})
		s.traces.prune(ctx, s)
		return
	}
	if err := s.traces.store.PutTrace(ctx, row); err != nil {
		s.log.WarnContext(ctx, "turn trace not stored", "session", info.sessionID, "message", info.messageID, "err", err)
		return
	}
	s.traces.prune(ctx, s)
}

// prune drops expired traces, at most once a minute per server.
func (tr *traces) prune(ctx context.Context, s *Server) {
	now := time.Now()
	last := tr.lastPrune.Load()
	if now.UnixNano()-last < int64(time.Minute) || !tr.lastPrune.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	if !tr.pruning.TryLock() {
		return
	}
	go func() {
		defer tr.pruning.Unlock()
		if n, err := tr.store.PruneTraces(ctx, now.Add(-tr.retention)); err != nil {
			s.log.WarnContext(ctx, "expired turn traces not pruned", "err", err)
		} else if n > 0 {
			s.log.DebugContext(ctx, "pruned expired turn traces", "count", n)
		}
	}()
}

// turnTraceRoute: GET /v1/sessions/{id}/messages/{message}/trace — the
// trace of the turn that wrote an answer of the caller's session.
func (s *Server) turnTraceRoute(w http.ResponseWriter, r *http.Request) {
	ss, e := s.session(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	msg := strings.TrimSpace(r.PathValue("message"))
	s.ledger.flush(r.Context())
	tr, err := s.traces.store.Trace(r.Context(), ss.TenantID, ss.ID, msg)
	if answer, ok := ai.TurnOfRecord(msg); ok && errors.Is(err, meta.ErrNotFound) {
		// A turn that failed before any text stored no answer: its trace
		// is found from the message that started it.
		tr, err = s.traces.store.Trace(r.Context(), ss.TenantID, ss.ID, answer)
	}
	if err != nil {
		e := notFoundOr(err, "trace of message", msg)
		if e.Code == CodeNotFound {
			e.Message += " (traces are kept " + s.traces.retention.String() + ")"
		}
		writeError(w, e)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(s.withFeedback(r.Context(), ss, msg, tr.Data))
	w.Write([]byte("\n"))
}

// parseRetention reads WEFT_TRACE_RETENTION: a Go duration ("72h"), a
// number of days ("30d"), or "off" / "0" to keep no trace; empty is the
// default.
func parseRetention(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return 0, nil
	case "off", "0", "none":
		return -1, nil
	}
	if d, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("WEFT_TRACE_RETENTION=%q: want a duration (72h), days (30d) or off", v)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("WEFT_TRACE_RETENTION=%q: want a duration (72h), days (30d) or off", v)
	}
	return d, nil
}
