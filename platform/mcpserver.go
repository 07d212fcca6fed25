package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/turn"
	"github.com/weftlabs/weft/tool/toolname"
)

// The MCP server: /mcp speaks the Model Context Protocol over streamable
// HTTP (through the official Go SDK), so that an MCP client — Claude
// Desktop, an IDE, another agent framework — sees each enabled agent of the
// caller's tenant as a tool taking {query, session_id?}, and each of its
// workflows as a tool taking the workflow's start inputs (mcpworkflow.go).
//
// Authentication is the API's: every request goes through requireAuth (key,
// rate limit), and an MCP session belongs to the key that opened it (the
// SDK refuses the session's id with another key). What is checked before
// the SDK reads a request — the Origin, the body, a batch's rate, the
// protocol era and the key's places for sessions — is in mcphttp.go.
//
// Each tenant has one mcp.Server, which both of the SDK's handlers serve
// (stateful for the versions with sessions, stateless for 2026-07-28),
// whose tools are its enabled agents; the agent invalidation events of the
// bus (this replica's and, through Redis, the others') resync it, and the
// SDK then sends notifications/tools/list_changed to the tenant's sessions
// and listen streams. A tool call runs a turn; its text deltas go out as
// progress notifications when the client sent a progress token; the
// client's notifications/cancelled, or closing the request, cancels the
// turn (its partial answer is kept, as for the chat API).

// MCP limits.
const (
	// mcpSessionsPerKey bounds the open MCP sessions (and listen streams)
	// of one API key: each holds memory until it is closed, idles out or
	// is evicted for a newer one (see mcpSlots).
	mcpSessionsPerKey = 32
	// mcpSessionIdle closes a session after this long without a POST.
	mcpSessionIdle = 30 * time.Minute
)

// mcpTool is one tool of a tenant's MCP server: an agent or a workflow
// (each kind has its lister, see mcpHub.listers).
type mcpTool struct {
	// name is the wanted name, made valid and unique across listers when
	// the list is built.
	name        string
	title       string
	description string
	// input is the JSON Schema of the arguments; output, when not nil, of
	// the structured content.
	input  json.RawMessage
	output json.RawMessage
	// version identifies what the tool runs and how it is described: a
	// sync replaces a tool only when it changed.
	version string
	// call runs the tool.
	call func(ctx context.Context, c *mcpCall) *mcp.CallToolResult
}

// mcpLister lists MCP tools of a tenant.
type mcpLister func(ctx context.Context, tenant string) ([]mcpTool, error)

// mcpCall is one tools/call: who calls, with what, and where progress goes.
type mcpCall struct {
	p        principal
	req      *mcp.CallToolRequest
	progress float64
}

// mcpInput is the input schema of an agent's tool.
var mcpInput = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"The question or task for the agent."},` +
	`"session_id":{"type":"string","description":"Continue this conversation: the session_id of an earlier answer. Omit it to start a new one."}},` +
	`"required":["query"],"additionalProperties":false}`)

// mcpOutput is the output schema of an agent's tool: an mcpAnswer.
var mcpOutput = json.RawMessage(`{"type":"object","properties":{` +
	`"answer":{"type":"string"},"session_id":{"type":"string"},"message_id":{"type":"string"},` +
	`"sources":{"type":"array","items":{"type":"object","properties":{"knowledge_base_id":{"type":"string"},"document_id":{"type":"string"},` +
	`"document_name":{"type":"string"},"snippet":{"type":"string"},"score":{"type":"number"}},"required":["document_name","snippet","score"]}},` +
	`"usage":{"type":"object","properties":{"prompt_tokens":{"type":"integer"},"completion_tokens":{"type":"integer"},"total_tokens":{"type":"integer"}}},` +
	`"cost_usd":{"type":"number"}},"required":["answer","session_id","message_id","sources","usage","cost_usd"]}`)

// mcpAnswer is the structured content of an agent tool's result.
type mcpAnswer struct {
	Answer    string    `json:"answer"`
	SessionID string    `json:"session_id"`
	MessageID string    `json:"message_id"`
	Sources   []mcpRef  `json:"sources"`
	Usage     api.Usage `json:"usage"`
	CostUSD   float64   `json:"cost_usd"`
}

// mcpRef is a knowledge fragment an answer drew on.
type mcpRef struct {
	KnowledgeBaseID string  `json:"knowledge_base_id"`
	DocumentID      string  `json:"document_id"`
	DocumentName    string  `json:"document_name"`
	Snippet         string  `json:"snippet"`
	Score           float64 `json:"score"`
}

// mcpHub is the MCP endpoint: the SDK's handlers and one server per
// tenant.
type mcpHub struct {
	s *Server
	// handler is the SDK's: stateful for the protocol versions with
	// sessions, stateless for 2026-07-28 on, behind the bearer check.
	handler http.Handler
	listers []mcpLister
	// origins are the allowed web origins besides the server's own
	// (EnvAllowedOrigins); slots the keys' places for sessions.
	origins map[string]bool
	slots   *mcpSlots

	// ctx ends with the hub: it cancels the calls still running.
	ctx    context.Context
	cancel context.CancelFunc
	syncs  sync.WaitGroup

	mu      sync.Mutex
	tenants map[string]*mcpTenant
}

// mcpTenant is the MCP server of one tenant.
type mcpTenant struct {
	id  string
	srv *mcp.Server

	loaded  atomic.Bool
	pending atomic.Bool // a resync is scheduled and has not started reading
	syncMu  sync.Mutex  // serialises syncs
	tools   map[string]string
}

// mcpCallerKey is the key of the caller in a TokenInfo's Extra.
const mcpCallerKey = "weft.caller"

// mcpCaller is what the SDK hands a request's handlers about the HTTP
// request that carried it.
type mcpCaller struct {
	p principal
	// ctx is the HTTP request's: when it ends (the client closed the
	// request), the answer can no longer be delivered.
	ctx context.Context
	// slot is the place serve took for the session an initialize opens.
	slot *mcpSlot
}

// mcpSlotKey carries the place serve took to the bearer check.
type mcpSlotKey struct{}

func newMCPHub(s *Server) (*mcpHub, error) {
	origins, err := parseOrigins(s.cfg.Getenv(EnvAllowedOrigins))
	if err != nil {
		return nil, err
	}
	h := &mcpHub{s: s, tenants: map[string]*mcpTenant{}, origins: origins, slots: newMCPSlots()}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.listers = []mcpLister{h.agentTools}
	if s.workflows != nil {
		h.listers = append(h.listers, h.workflowTools)
		s.bus.subscribe("workflow", h.changed)
	}
	// checkOrigin is the protection against DNS rebinding: the SDK's own
	// refuses any name but localhost on a loopback address, which a
	// reverse proxy on the same host cannot avoid.
	stateful := mcp.NewStreamableHTTPHandler(h.server, &mcp.StreamableHTTPOptions{
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        MaxBodyBytes,
		SessionTimeout:             mcpSessionIdle,
	})
	stateless := mcp.NewStreamableHTTPHandler(h.server, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		DisableLocalhostProtection:   true,
		MaxRequestBodyBytes:          MaxBodyBytes,
		PropagateRequestCancellation: true,
	})
	sdk := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(mcpStatelessKey{}) != nil {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	// RequireBearerToken is how the SDK learns who owns a session: the
	// TokenInfo's UserID (the key id) is checked on every request of it.
	h.handler = auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		p := principalFrom(r.Context())
		if p.Tenant == "" {
			return nil, auth.ErrInvalidToken
		}
		slot, _ := r.Context().Value(mcpSlotKey{}).(*mcpSlot)
		return &auth.TokenInfo{UserID: p.Key.ID, Extra: map[string]any{mcpCallerKey: &mcpCaller{p: p, ctx: r.Context(), slot: slot}}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(sdk)
	s.bus.subscribe("agent", h.changed)
	return h, nil
}

// mcpStatelessKey marks a request for the SDK's stateless handler.
type mcpStatelessKey struct{}

func (h *mcpHub) routes(s *Server) {
	// The Origin is checked before the key: a page that may not call /mcp
	// learns nothing of keys.
	s.handleOuter("POST /mcp", use(endUser), h.serve, h.checkOrigin)
	s.handleOuter("GET /mcp", use(endUser), h.serve, h.checkOrigin)
	s.handleOuter("DELETE /mcp", use(endUser), h.serve, h.checkOrigin)
}

// serve: /mcp, after the Origin check and requireAuth.
func (h *mcpHub) serve(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	if _, err := h.tenant(r.Context(), p.Tenant); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	ctx := r.Context()
	stateless := mcpModern(r)
	sessionID := r.Header.Get("Mcp-Session-Id")
	var slot *mcpSlot
	if r.Method == http.MethodPost {
		b, ok := h.readPOST(w, r, p)
		if !ok {
			return
		}
		// A server/discover lists the versions of the handler that
		// answers it: the stateless one serves them all.
		stateless = stateless || (b.discover && !b.batch && sessionID == "")
		if (!stateless && sessionID == "" && b.initialize) || (stateless && b.listen) {
			if slot = h.slots.take(p.Key.ID); slot == nil {
				writeError(w, errorf(http.StatusTooManyRequests, CodeRateLimited,
					"this API key has %d MCP sessions and listen streams with a request in flight, the most it may hold: retry when one ends", mcpSessionsPerKey))
				return
			}
			defer h.slots.leave(slot)
			ctx = context.WithValue(ctx, mcpSlotKey{}, slot)
		}
	}
	if sessionID != "" && !stateless {
		if s := h.slots.enter(sessionID, p.Key.ID); s != nil {
			defer h.slots.leave(s)
		}
	}
	if stateless {
		ctx = context.WithValue(ctx, mcpStatelessKey{}, true)
	}
	// The key was checked; the SDK's bearer check only needs one, and
	// neither it nor the handlers need the secret.
	r = r.WithContext(ctx)
	r.Header = r.Header.Clone()
	r.Header.Set("Authorization", "Bearer "+p.Key.ID)
	ew := &mcpErrorWriter{ResponseWriter: w}
	h.handler.ServeHTTP(ew, r)
	ew.finish()
}

// mcpErrorWriter gives the transport errors the SDK writes as plain text
// (an unknown session, a missing Accept, a malformed body…) the API's
// error shape, {"error": {"code", "message"}}; JSON-RPC answers and
// streams pass through untouched.
type mcpErrorWriter struct {
	http.ResponseWriter
	status int // of a captured plain-text error; 0 while passing through
	msg    []byte
}

// maxMCPErrorText bounds a captured error message.
const maxMCPErrorText = 1 << 10

func (w *mcpErrorWriter) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *mcpErrorWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		return w.ResponseWriter.Write(p)
	}
	w.msg = append(w.msg, p[:min(len(p), maxMCPErrorText-len(w.msg))]...)
	return len(p), nil
}

// Flush keeps SSE streams flowing through the wrapper.
func (w *mcpErrorWriter) Flush() {
	if w.status == 0 {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *mcpErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a captured error in the API's shape.
func (w *mcpErrorWriter) finish() {
	if w.status == 0 {
		return
	}
	code := CodeInvalidRequest
	switch {
	case w.status == http.StatusUnauthorized:
		code = CodeUnauthorized
	case w.status == http.StatusForbidden:
		code = CodeForbidden
	case w.status == http.StatusNotFound:
		code = CodeNotFound
	case w.status == http.StatusConflict:
		code = CodeConflict
	case w.status == http.StatusRequestEntityTooLarge:
		code = CodePayloadTooLarge
	case w.status == http.StatusTooManyRequests:
		code = CodeRateLimited
	case w.status >= 500:
		code = CodeInternal
	}
	w.Header().Del("X-Content-Type-Options")
	writeError(w.ResponseWriter, errorf(w.status, code, "%s", strings.TrimSpace(string(w.msg))))
}

// server is the SDK's getServer: the caller's tenant's server (loaded by
// serve before the SDK sees the request).
func (h *mcpHub) server(r *http.Request) *mcp.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.tenants[principalFrom(r.Context()).Tenant]; t != nil {
		return t.srv
	}
	return nil
}

// tenant returns the MCP server of tenant, building its tool list on first
// use.
func (h *mcpHub) tenant(ctx context.Context, id string) (*mcpTenant, error) {
	h.mu.Lock()
	t := h.tenants[id]
	if t == nil {
		t = &mcpTenant{id: id}
		t.srv = mcp.NewServer(&mcp.Implementation{Name: "weft", Title: "Weft agents and workflows", Version: "1"}, &mcp.ServerOptions{
			Instructions: "Each tool is an agent or a workflow of this Weft tenant. An agent takes a query; pass a session_id from an earlier answer to continue its conversation. " +
				"A workflow (a tool named workflow_<name>) takes its inputs as arguments and answers its outputs.",
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
			Logger:       h.s.log,
		})
		t.srv.AddReceivingMiddleware(h.bindSessions, h.freshList(t))
		h.tenants[id] = t
	}
	h.mu.Unlock()
	if !t.loaded.Load() {
		if err := h.sync(ctx, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// bindSessions gives the session an initialize opened the place serve
// took for it (mcpSlots), and gives the place up when the session closes.
func (h *mcpHub) bindSessions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "initialize" || err != nil {
			return res, err
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		c := callerOf(req.GetExtra())
		if ss == nil || c == nil || c.slot == nil {
			return res, err
		}
		switch ok, first := h.slots.bind(c.slot, ss); {
		case !ok:
			// The request ended first and its place was given up: the
			// client will not learn of the session.
			go ss.Close()
		case first:
			go func() {
				ss.Wait()
				h.slots.closed(c.slot)
			}()
		}
		return res, err
	}
}

// freshList builds t's tool list again before answering tools/list, so
// that a lost invalidation (Redis unreachable) leaves no client with a
// stale list for longer than its next listing.
func (h *mcpHub) freshList(t *mcpTenant) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				if err := h.sync(ctx, t); err != nil {
					h.s.log.WarnContext(ctx, "MCP tool list not refreshed; the last one is served", "tenant", t.id, "err", err)
				}
			}
			return next(ctx, method, req)
		}
	}
}

// callerOf returns the caller the bearer check recorded for a request.
func callerOf(x *mcp.RequestExtra) *mcpCaller {
	if x == nil || x.TokenInfo == nil {
		return nil
	}
	c, _ := x.TokenInfo.Extra[mcpCallerKey].(*mcpCaller)
	return c
}

// changed is the bus subscriber: an agent or a workflow of tenant changed
// here or on another replica, so its MCP tool list is built again.
func (h *mcpHub) changed(tenant, _ string) {
	h.mu.Lock()
	t := h.tenants[tenant]
	h.mu.Unlock()
	if t == nil || !t.loaded.Load() || t.pending.Swap(true) {
		return // not served here, or a resync is already waiting
	}
	h.syncs.Add(1)
	go func() {
		defer h.syncs.Done()
		if err := h.sync(h.ctx, t); err != nil && h.ctx.Err() == nil {
			h.s.log.Warn("MCP tool list not refreshed", "tenant", tenant, "err", err)
		}
	}()
}

// sync makes the tenant server's tools match its listers'. The SDK tells
// the tenant's sessions when the list changed.
func (h *mcpHub) sync(ctx context.Context, t *mcpTenant) error {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	t.pending.Store(false)
	var all []mcpTool
	for _, list := range h.listers {
		got, err := list(ctx, t.id)
		if err != nil {
			return err
		}
		all = append(all, got...)
	}
	names := make([]string, len(all))
	for i, x := range all {
		names[i] = x.name
	}
	names = toolname.Unique(names)
	want := make(map[string]string, len(all))
	for i := range all {
		all[i].name = names[i]
		want[names[i]] = all[i].version
	}
	var gone []string
	for name := range t.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		t.srv.RemoveTools(gone...)
	}
	for _, x := range all {
		if v, ok := t.tools[x.name]; ok && v == x.version {
			continue
		}
		tool := &mcp.Tool{Name: x.name, Title: x.title, Description: x.description, InputSchema: x.input}
		if x.output != nil {
			tool.OutputSchema = x.output
		}
		t.srv.AddTool(tool, h.toolHandler(t.id, x))
	}
	t.tools = want
	t.loaded.Store(true)
	return nil
}

// agentTools lists the enabled agents of tenant as MCP tools, oldest
// first (so that the older of two agents whose names sanitise alike keeps
// the plain name).
func (h *mcpHub) agentTools(ctx context.Context, tenant string) ([]mcpTool, error) {
	agents, err := h.s.meta.ListAgents(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	slices.SortStableFunc(agents, func(a, b meta.Agent) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	var out []mcpTool
	for _, a := range agents {
		if !a.Enabled {
			continue
		}
		desc := fmt.Sprintf("Ask the agent %q; it answers in a conversation that session_id continues.", a.Name)
		if sp := firstLine(a.SystemPrompt); sp != "" {
			desc += " It is instructed: " + sp
		}
		id := a.ID
		out = append(out, mcpTool{
			name: toolname.Sanitize(a.Name), title: a.Name, description: desc, input: mcpInput, output: mcpOutput,
			version: "agent\x00" + a.ID + "\x00" + a.Name + "\x00" + desc,
			call: func(ctx context.Context, c *mcpCall) *mcp.CallToolResult {
				return h.callAgent(ctx, c, tenant, id)
			},
		})
	}
	return out, nil
}

// toolHandler is the SDK handler of one tool: it finds the caller, ties
// the call's context to the HTTP request's and to the hub's, and runs the
// tool (which reads its arguments).
func (h *mcpHub) toolHandler(tenant string, x mcpTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := callerOf(req.Extra)
		if c == nil || c.p.Tenant != tenant {
			return nil, errors.New("the request carries no caller of this tenant")
		}
		ctx, cancel := context.WithCancelCause(context.WithValue(ctx, principalKey{}, c.p))
		defer cancel(nil)
		stop1 := context.AfterFunc(c.ctx, func() { cancel(errors.New("the client closed the request")) })
		defer stop1()
		stop2 := context.AfterFunc(h.ctx, func() { cancel(errShuttingDown) })
		defer stop2()
		return x.call(ctx, &mcpCall{p: c.p, req: req}), nil
	}
}

// parseMCPArgs reads an agent tool's arguments: {query, session_id?}.
func parseMCPArgs(raw json.RawMessage) (query, session string, err error) {
	var args struct {
		Query     *string `json:"query"`
		SessionID string  `json:"session_id"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return "", "", fmt.Errorf("arguments: want {\"query\": string, \"session_id\"?: string}: %v", err)
		}
	}
	if args.Query == nil || strings.TrimSpace(*args.Query) == "" {
		return "", "", errors.New("argument \"query\" is required")
	}
	query = strings.TrimSpace(*args.Query)
	if len(query) > MaxQueryBytes {
		return "", "", fmt.Errorf("argument \"query\" exceeds %d bytes", MaxQueryBytes)
	}
	for field, v := range map[string]string{"query": query, "session_id": args.SessionID} {
		if e := checkText(field, v); e != nil {
			return "", "", errors.New(strings.Replace(e.Message, "field", "argument", 1))
		}
	}
	return query, args.SessionID, nil
}

// notify sends a progress notification, when the client asked for them.
func (c *mcpCall) notify(ctx context.Context, msg string) {
	tok := c.req.Params.GetProgressToken()
	if tok == nil {
		return
	}
	c.progress++
	// A notification that cannot be sent (the client went away) is not
	// the turn's failure: cancellation ends the turn.
	c.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: c.progress, Message: msg})
}

// callAgent runs a turn of agent id for an MCP tool call, through the turn
// service: text deltas become progress notifications, a failure an error
// result.
func (h *mcpHub) callAgent(ctx context.Context, c *mcpCall, tenant, id string) *mcp.CallToolResult {
	query, session, err := parseMCPArgs(c.req.Params.Arguments)
	if err != nil {
		return toolError(err.Error())
	}
	agent, err := h.s.agents.getIn(ctx, tenant, id)
	if err != nil {
		return toolError(notFoundOr(err, "agent", id).Message)
	}
	for ev, err := range h.s.runTurnStream(ctx, turn.Input{Agent: agent, SessionID: session, Message: llm.UserMessage(query)}) {
		if err != nil {
			var te *turn.Error
			if !errors.As(err, &te) {
				return toolError(err.Error())
			}
			msg := te.Code + ": " + te.Message
			if te.Partial && session != "" {
				msg += " (the partial answer is kept in session " + session + ")"
			}
			return toolError(msg)
		}
		switch ev.Kind {
		case turn.Started:
			session = ev.SessionID
		case turn.TextDelta:
			c.notify(ctx, ev.Text)
		case turn.Completed:
			return answerResult(&ev.Answer.ChatAnswer)
		}
	}
	return toolError("the turn ended without an answer")
}

// answerResult is the tool result of an answer: its text, and the answer
// with its sources and usage as structured content.
func answerResult(ans *api.ChatAnswer) *mcp.CallToolResult {
	out := mcpAnswer{Answer: ans.Answer, SessionID: ans.SessionID, MessageID: ans.MessageID, Sources: []mcpRef{}, Usage: ans.Usage, CostUSD: ans.CostUSD}
	for _, f := range ans.RagFragments {
		out.Sources = append(out.Sources, mcpRef{KnowledgeBaseID: f.KnowledgeBaseID, DocumentID: f.DocumentID, DocumentName: f.DocumentName,
			Snippet: snippet(f.Content), Score: f.Score})
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ans.Answer}}, StructuredContent: out}
}

// toolError is a failed tool call, for the client's model to read.
func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: processSecrets.Text(msg)}}, IsError: true}
}

// close cancels the running calls and closes every session.
func (h *mcpHub) close() {
	h.cancel()
	h.syncs.Wait()
	h.mu.Lock()
	servers := make([]*mcp.Server, 0, len(h.tenants))
	for _, t := range h.tenants {
		servers = append(servers, t.srv)
	}
	h.mu.Unlock()
	for _, srv := range servers {
		for ss := range srv.Sessions() {
			ss.Close()
		}
	}
}
