package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/httptool"
	"github.com/weftlabs/weft/tool/mcptool"
	"github.com/weftlabs/weft/tool/sqltool"
)

// The tool registry: each tenant registers HTTP tools, MCP servers (whose
// tools each become a tool of their own) and SQL tools; agents whitelist
// them by id in tool_ids. A model that names a tool the agent has not
// whitelisted gets an error result listing the tools it has: the tool is
// simply not in the turn's tool set, so nothing a model says can run it.

// toolStore is what the registry needs of the metadata store.
type toolStore interface {
	CreateTool(ctx context.Context, t meta.Tool) error
	Tool(ctx context.Context, tenant, id string) (meta.Tool, error)
	ListTools(ctx context.Context, tenant string) ([]meta.Tool, error)
	UpdateTool(ctx context.Context, t meta.Tool) error
	DeleteTool(ctx context.Context, tenant, id string) error
}

// The kinds of tool record. An MCP server's record has kind "mcp"; each of
// its tools has kind "mcp_tool" and the server's id as ParentID.
const (
	kindHTTP    = "http"
	kindMCP     = "mcp"
	kindMCPTool = "mcp_tool"
	kindSQL     = "sql"
)

// toolDef is a tool as the API creates and shows it.
type toolDef struct {
	ID          string          `json:"id,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Kind        string          `json:"kind"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	HTTP        *httpDef        `json:"http,omitempty"`
	MCP         *mcpDef         `json:"mcp,omitempty"`
	SQL         *sqlDef         `json:"sql,omitempty"`
	// ParentID is the MCP server a tool of kind mcp_tool belongs to;
	// RemoteName is its name on that server.
	ParentID   string `json:"parent_id,omitempty"`
	RemoteName string `json:"remote_name,omitempty"`
	// RegisteredByAdmin records whether an admin key registered the tool:
	// only then may its headers or environment reference allowed server
	// variables as ${NAME}. Set by the server, never by the client.
	RegisteredByAdmin bool      `json:"registered_by_admin,omitempty"`
	CreatedAt         time.Time `json:"created_at,omitzero"`
}

type httpDef struct {
	Method    string            `json:"method"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers,omitempty"`
	TimeoutMS int               `json:"timeout_ms,omitempty"`
}

type mcpDef struct {
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
}

type sqlDef struct {
	Driver string   `json:"driver"`
	DSNEnv string   `json:"dsn_env"`
	Query  string   `json:"query"`
	Bind   []string `json:"bind,omitempty"`
}

// tools is the registry's runtime: tools built from their records, kept
// while their records live, and MCP connections shared by their tools.
// Each is kept with the definition it was made from, and made again when
// the record read for a turn no longer has that definition (the record was
// updated, maybe through another replica): the "tool" topic of the bus only
// frees what an update or delete left behind sooner.
type tools struct {
	s     *Server
	store toolStore

	mu    sync.Mutex
	built map[string]builtTool // tenant\x00id → http and sql tools
	mcp   map[string]mcpConn   // tenant\x00server id → connection
}

// builtTool is an http or sql tool and the record config it was built from.
type builtTool struct {
	t   tool.Tool
	cfg string
}

// mcpConn is an MCP server's connection and the record config it was made from.
type mcpConn struct {
	srv *mcptool.Server
	cfg string
}

func newTools(s *Server, store toolStore) *tools {
	ts := &tools{s: s, store: store, built: map[string]builtTool{}, mcp: map[string]mcpConn{}}
	s.bus.subscribe("tool", ts.forget)
	return ts
}

func (ts *tools) routes(s *Server) {
	s.handle("POST /v1/tools", need(builder), ts.create)
	s.handle("GET /v1/tools", need(viewer), ts.list)
	s.handle("GET /v1/tools/{id}", need(viewer), ts.get)
	s.handle("PUT /v1/tools/{id}", need(builder), ts.update)
	s.handle("DELETE /v1/tools/{id}", need(builder), ts.delete)
	s.handle("POST /v1/tools/{id}/refresh", need(builder), ts.refresh)
	s.handle("POST /v1/tools/{id}/invoke", need(builder), ts.invoke)
}

func (ts *tools) getenv(name string) (string, bool) {
	v := ts.s.cfg.Getenv(name)
	return v, v != ""
}

// sqlAllowFunctions reads WEFT_SQL_ALLOW_FUNCTIONS, the operator's
// comma-separated list of volatile PostgreSQL functions SQL tools may call
// (immutable and stable ones need no listing; see sqltool.Config).
func sqlAllowFunctions(getenv func(string) string) []string {
	var names []string
	for _, n := range strings.Split(getenv("WEFT_SQL_ALLOW_FUNCTIONS"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// build makes the runnable tool of an http or sql definition of tenant.
func (ts *tools) build(tenant string, d toolDef) (tool.Tool, error) {
	switch d.Kind {
	case kindHTTP:
		return httptool.New(httptool.Config{Name: d.Name, Description: d.Description, Method: d.HTTP.Method, URL: d.HTTP.URL,
			Headers: d.HTTP.Headers, Parameters: d.Parameters, Timeout: time.Duration(d.HTTP.TimeoutMS) * time.Millisecond},
			httptool.WithLookup(ts.s.lookup(tenant, d.RegisteredByAdmin)), httptool.WithGuard(ts.s.guard))
	case kindSQL:
		return sqltool.New(sqltool.Config{Name: d.Name, Description: d.Description, Driver: d.SQL.Driver, DSNEnv: d.SQL.DSNEnv,
			Query: d.SQL.Query, Bind: d.SQL.Bind, Parameters: d.Parameters, AllowFunctions: sqlAllowFunctions(ts.s.cfg.Getenv)},
			sqltool.WithGetenv(ts.getenv))
	}
	return nil, errors.New("unknown tool kind " + d.Kind)
}

// server returns the connection to an MCP server record, connecting once
// per definition: a connection made from another definition of the record
// is closed and replaced.
func (ts *tools) server(ctx context.Context, rec meta.Tool) (*mcptool.Server, error) {
	key := rec.TenantID + "\x00" + rec.ID
	ts.mu.Lock()
	c, ok := ts.mcp[key]
	ts.mu.Unlock()
	if ok && c.cfg == string(rec.Config) {
		return c.srv, nil
	}
	d := ts.view(rec)
	srv, err := ts.connect(ctx, rec.TenantID, d)
	if err != nil {
		return nil, err
	}
	return ts.install(rec.TenantID, rec.ID, string(rec.Config), srv), nil
}

// connect makes a connection to the MCP server of definition d of tenant,
// owned by the caller until installed.
func (ts *tools) connect(ctx context.Context, tenant string, d toolDef) (*mcptool.Server, error) {
	id := d.ID
	opts := []mcptool.Option{mcptool.WithLookup(ts.s.lookup(tenant, d.RegisteredByAdmin)),
		// The server's notifications/tools/list_changed updates its tool
		// records as POST /v1/tools/{id}/refresh does.
		mcptool.WithToolsChanged(func(fresh []tool.Tool) { ts.listChanged(tenant, id, fresh) })}
	if d.MCP.Transport == mcptool.HTTP {
		// MCP over HTTP goes through the same outbound guard as HTTP tools.
		opts = append(opts, mcptool.WithHTTPClient(ts.s.guard.Client()))
	}
	srv, err := mcptool.New(mcptool.Config{Name: d.Name, Transport: d.MCP.Transport, Command: d.MCP.Command, Args: d.MCP.Args,
		Env: d.MCP.Env, URL: d.MCP.URL, Headers: d.MCP.Headers}, opts...)
	if err != nil {
		return nil, err
	}
	if err := srv.Connect(ctx); err != nil {
		srv.Close()
		return nil, err
	}
	return srv, nil
}

// install shares srv as the connection of MCP server id, made from the
// record config cfg, and returns the connection to use: one of the same
// config installed meanwhile wins (srv is closed); one of another config
// is replaced and closed.
func (ts *tools) install(tenant, id, cfg string, srv *mcptool.Server) *mcptool.Server {
	key := tenant + "\x00" + id
	ts.mu.Lock()
	prev, ok := ts.mcp[key]
	if ok && prev.cfg == cfg {
		ts.mu.Unlock()
		srv.Close()
		return prev.srv
	}
	ts.mcp[key] = mcpConn{srv: srv, cfg: cfg}
	ts.mu.Unlock()
	if ok {
		prev.srv.Close()
	}
	return srv
}

// runnable returns the tools a record stands for: itself (http, sql, an MCP
// server's tool) or all the tools of an MCP server.
func (ts *tools) runnable(ctx context.Context, rec meta.Tool) ([]tool.Tool, error) {
	var d toolDef
	if err := json.Unmarshal(rec.Config, &d); err != nil {
		return nil, err
	}
	d.ID = rec.ID
	switch d.Kind {
	case kindHTTP, kindSQL:
		key := rec.TenantID + "\x00" + rec.ID
		ts.mu.Lock()
		b, ok := ts.built[key]
		ts.mu.Unlock()
		if ok && b.cfg == string(rec.Config) {
			return []tool.Tool{b.t}, nil
		}
		t, err := ts.build(rec.TenantID, d)
		if err != nil {
			return nil, err
		}
		ts.mu.Lock()
		prev, replaced := ts.built[key]
		ts.built[key] = builtTool{t: t, cfg: string(rec.Config)}
		ts.mu.Unlock()
		if c, ok := prev.t.(io.Closer); replaced && ok && prev.cfg != string(rec.Config) {
			c.Close()
		}
		return []tool.Tool{t}, nil
	case kindMCP:
		srv, err := ts.server(ctx, rec)
		if err != nil {
			return nil, err
		}
		return srv.Tools(), nil
	case kindMCPTool:
		parent, err := ts.store.Tool(ctx, rec.TenantID, d.ParentID)
		if err != nil {
			return nil, err
		}
		all, err := ts.runnable(ctx, parent)
		if err != nil {
			return nil, err
		}
		for _, t := range all {
			if t.Spec().Name == d.Name {
				return []tool.Tool{t}, nil
			}
		}
		return nil, errors.New("the MCP server no longer offers tool " + d.Name + "; refresh it")
	}
	return nil, errors.New("unknown tool kind " + d.Kind)
}

// agentTools is the tool source of whitelisted tools. A tool that cannot be
// built (a deleted record, an MCP server that does not start) is left out
// and logged: tools are an enhancement, the turn goes on.
func (ts *tools) agentTools(ctx context.Context, agent meta.Agent, _ turnInput) ([]tool.Tool, error) {
	var out []tool.Tool
	seen := map[string]bool{}
	for _, id := range agent.ToolIDs {
		rec, err := ts.store.Tool(ctx, agent.TenantID, id)
		if err != nil {
			ts.s.log.WarnContext(ctx, "whitelisted tool unavailable", "agent", agent.ID, "tool", id, "err", err)
			continue
		}
		got, err := ts.runnable(ctx, rec)
		if err != nil {
			ts.s.log.WarnContext(ctx, "whitelisted tool unavailable", "agent", agent.ID, "tool", id, "err", err)
			continue
		}
		for _, t := range got {
			if name := t.Spec().Name; !seen[name] {
				seen[name] = true
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// validateToolRefs checks an agent's tool_ids.
func (ts *tools) validateToolRefs(ctx context.Context, a *meta.Agent) *apiError {
	for _, id := range a.ToolIDs {
		if _, err := ts.store.Tool(ctx, a.TenantID, id); err != nil {
			if errors.Is(err, meta.ErrNotFound) {
				return invalid("field \"tool_ids\": no tool %q", id)
			}
			return asAPIError(err)
		}
	}
	return nil
}

// check validates a definition as POST and PUT /v1/tools receive it, for
// principal p: its name, who may register its kind, and the kind's
// settings (secret references, an http or sql tool's build). An MCP
// server is not connected to here.
func (ts *tools) check(p principal, d *toolDef) *apiError {
	switch {
	case !tool.ValidName(d.Name):
		return invalid("field \"name\": want 1 to 64 letters, digits, _ or -")
	case strings.HasPrefix(d.Name, delegatePrefix):
		return invalid("field \"name\": names starting with %q are reserved for delegation", delegatePrefix)
	}
	// A stdio MCP server runs a command on this machine, and a SQL tool
	// reads a database named by this machine's environment: only an admin
	// key may register them.
	if !p.Key.Admin && (d.Kind == kindSQL || d.Kind == kindMCP && d.MCP != nil && d.MCP.Transport == mcptool.Stdio) {
		return errorf(http.StatusForbidden, CodeForbidden, "only an admin key may register %s tools: they run commands or read databases of the server", map[bool]string{true: "SQL", false: "stdio MCP"}[d.Kind == kindSQL])
	}
	switch d.Kind {
	case kindHTTP:
		if d.HTTP == nil {
			return invalid("field \"http\" is required for kind \"http\"")
		}
		if e := ts.s.checkRefs("http.headers", d.HTTP.Headers, p.Key.Admin); e != nil {
			return e
		}
		if _, err := ts.build(p.Tenant, *d); err != nil {
			return invalid("field \"http\": %v", err)
		}
	case kindSQL:
		if d.SQL == nil {
			return invalid("field \"sql\" is required for kind \"sql\"")
		}
		if err := sqltool.CheckQuery(d.SQL.Driver, d.SQL.Query); err != nil {
			return invalid("field \"sql.query\": %v", err)
		}
		t, err := ts.build(p.Tenant, *d)
		if err != nil {
			return invalid("field \"sql\": %v", err)
		}
		if c, ok := t.(io.Closer); ok {
			c.Close()
		}
	case kindMCP:
		if d.MCP == nil {
			return invalid("field \"mcp\" is required for kind \"mcp\"")
		}
		if e := ts.s.checkRefs("mcp.headers", d.MCP.Headers, p.Key.Admin); e != nil {
			return e
		}
		if e := ts.s.checkRefs("mcp.env", d.MCP.Env, p.Key.Admin); e != nil {
			return e
		}
	default:
		return invalid("field \"kind\": want \"http\", \"mcp\" or \"sql\"")
	}
	return nil
}

// children makes the tool records of the tools an MCP server offers.
func children(tenant, parent string, offered []tool.Tool, now time.Time) []meta.Tool {
	out := make([]meta.Tool, 0, len(offered))
	for _, t := range offered {
		spec := t.Spec()
		child := toolDef{Name: spec.Name, Description: spec.Description, Kind: kindMCPTool, Parameters: spec.Parameters, ParentID: parent}
		cfg, _ := json.Marshal(child)
		out = append(out, meta.Tool{ID: meta.NewID("tool"), TenantID: tenant, Name: spec.Name, Kind: kindMCPTool, ParentID: parent, Config: cfg, CreatedAt: now})
	}
	return out
}

// create: POST /v1/tools.
func (ts *tools) create(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	var d toolDef
	if e := decodeJSON(w, r, &d); e != nil {
		writeError(w, e)
		return
	}
	d.Name = strings.TrimSpace(d.Name)
	d.ID, d.ParentID, d.RemoteName, d.CreatedAt = meta.NewID("tool"), "", "", time.Now().UTC()
	d.RegisteredByAdmin = p.Key.Admin
	if e := ts.check(p, &d); e != nil {
		writeError(w, e)
		return
	}
	cfg, _ := json.Marshal(d)
	rec := meta.Tool{ID: d.ID, TenantID: p.Tenant, Name: d.Name, Kind: d.Kind, Config: cfg, CreatedAt: d.CreatedAt}
	var kids []meta.Tool
	if d.Kind == kindMCP {
		// Registering lists the server's tools: each becomes a tool record.
		srv, err := ts.server(r.Context(), rec)
		if err != nil {
			writeError(w, invalid("field \"mcp\": the server could not be reached: %v", err))
			return
		}
		kids = children(p.Tenant, d.ID, srv.Tools(), d.CreatedAt)
	}
	if err := ts.store.CreateTool(r.Context(), rec); err != nil {
		ts.forget(p.Tenant, d.ID)
		if errors.Is(err, meta.ErrConflict) {
			writeError(w, nameTaken("a tool", d.Name))
			return
		}
		writeError(w, asAPIError(err))
		return
	}
	for _, c := range kids {
		err := ts.store.CreateTool(r.Context(), c)
		if errors.Is(err, meta.ErrConflict) && ts.hasChild(r.Context(), p.Tenant, d.ID, c.Name) {
			// The server announced a change (tools/list_changed) as soon as
			// it was connected, and listChanged recorded this tool first.
			continue
		}
		if err != nil {
			ts.store.DeleteTool(context.WithoutCancel(r.Context()), p.Tenant, d.ID)
			ts.forget(p.Tenant, d.ID)
			if errors.Is(err, meta.ErrConflict) {
				writeError(w, errorf(http.StatusConflict, CodeConflict, "the MCP server's tool %q clashes with an existing tool name; register the server under another name", c.Name))
				return
			}
			writeError(w, asAPIError(err))
			return
		}
	}
	writeJSON(w, http.StatusCreated, ts.view(rec))
}

// update: PUT /v1/tools/{id} changes a tool in place, keeping its id, so
// the agents that whitelist it keep it. The body is a whole definition, as
// for POST, checked the same way (an admin key for SQL and stdio MCP, the
// same secret references); the kind cannot change. An MCP server whose
// name or connection changes is connected to again and its tools listed
// again before anything is stored: a tool it still offers under the same
// name keeps its record and id, a new one gets a record, a dropped one
// loses its record.
func (ts *tools) update(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	id := r.PathValue("id")
	var d toolDef
	if e := decodeJSON(w, r, &d); e != nil {
		writeError(w, e)
		return
	}
	rec, err := ts.store.Tool(r.Context(), p.Tenant, id)
	if err != nil {
		writeError(w, notFoundOr(err, "tool", id))
		return
	}
	if rec.Kind == kindMCPTool {
		writeError(w, invalid("tool %q is a tool of MCP server %q: update the server, or refresh it", rec.Name, rec.ParentID))
		return
	}
	if d.Kind == "" {
		writeError(w, invalid("field \"kind\" is required: %q, the tool's kind", rec.Kind))
		return
	}
	if d.Kind != rec.Kind {
		writeError(w, invalid("field \"kind\": tool %q is of kind %q, and a tool's kind cannot change: delete it and register a new one", rec.Name, rec.Kind))
		return
	}
	old := ts.view(rec)
	d.Name = strings.TrimSpace(d.Name)
	d.ID, d.ParentID, d.RemoteName, d.CreatedAt = rec.ID, "", "", rec.CreatedAt
	// Who updates it now is who registered it: an admin's ${NAME}
	// references do not survive a tenant key's update.
	d.RegisteredByAdmin = p.Key.Admin
	if e := ts.check(p, &d); e != nil {
		writeError(w, e)
		return
	}
	cfg, _ := json.Marshal(d)
	next := rec
	next.Name, next.Config = d.Name, cfg
	var srv *mcptool.Server
	if d.Kind == kindMCP && (d.Name != old.Name || d.RegisteredByAdmin != old.RegisteredByAdmin || !reflect.DeepEqual(d.MCP, old.MCP)) {
		if srv, err = ts.connect(r.Context(), p.Tenant, d); err != nil {
			writeError(w, invalid("field \"mcp\": the server could not be reached: %v", err))
			return
		}
		if e := ts.clash(r.Context(), p.Tenant, id, srv.Tools()); e != nil {
			srv.Close()
			writeError(w, e)
			return
		}
	}
	if err := ts.store.UpdateTool(r.Context(), next); err != nil {
		if srv != nil {
			srv.Close()
		}
		if errors.Is(err, meta.ErrConflict) {
			writeError(w, nameTaken("a tool", d.Name))
			return
		}
		writeError(w, notFoundOr(err, "tool", id))
		return
	}
	if srv == nil {
		// Every replica drops what it built from the old definition.
		ts.s.bus.publish(r.Context(), "tool", p.Tenant, id)
	} else {
		// This replica keeps the new connection; the others drop theirs.
		ts.install(p.Tenant, id, string(cfg), srv)
		ts.s.bus.publishRemote(r.Context(), "tool", p.Tenant, id)
		if err := ts.syncChildren(r.Context(), p.Tenant, id, srv.Tools()); err != nil {
			writeError(w, asAPIError(err))
			return
		}
	}
	writeJSON(w, http.StatusOK, ts.view(next))
}

// clash returns a 409 when a tool MCP server id offers has the name of a
// tool of tenant that is neither the server nor one of its tools.
func (ts *tools) clash(ctx context.Context, tenant, id string, offered []tool.Tool) *apiError {
	recs, err := ts.store.ListTools(ctx, tenant)
	if err != nil {
		return asAPIError(err)
	}
	for _, t := range offered {
		name := t.Spec().Name
		if slices.ContainsFunc(recs, func(r meta.Tool) bool { return r.Name == name && r.ID != id && r.ParentID != id }) {
			return errorf(http.StatusConflict, CodeConflict, "the MCP server's tool %q clashes with an existing tool name; name the server otherwise", name)
		}
	}
	return nil
}

// view shows a record as the API does: its definition with id and date.
func (ts *tools) view(rec meta.Tool) toolDef {
	var d toolDef
	json.Unmarshal(rec.Config, &d)
	d.ID, d.CreatedAt = rec.ID, rec.CreatedAt
	if d.Kind == kindMCPTool {
		d.ParentID = rec.ParentID
	}
	return d
}

func (ts *tools) list(w http.ResponseWriter, r *http.Request) {
	recs, err := ts.store.ListTools(r.Context(), principalFrom(r.Context()).Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := make([]toolDef, len(recs))
	for i, rec := range recs {
		out[i] = ts.view(rec)
	}
	writeJSON(w, http.StatusOK, out)
}

func (ts *tools) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rec, err := ts.store.Tool(r.Context(), principalFrom(r.Context()).Tenant, id)
	if err != nil {
		writeError(w, notFoundOr(err, "tool", id))
		return
	}
	writeJSON(w, http.StatusOK, ts.view(rec))
}

func (ts *tools) delete(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	id := r.PathValue("id")
	if err := ts.store.DeleteTool(r.Context(), p.Tenant, id); err != nil {
		writeError(w, notFoundOr(err, "tool", id))
		return
	}
	// Every replica closes what it built or connected for it.
	ts.s.bus.publish(r.Context(), "tool", p.Tenant, id)
	w.WriteHeader(http.StatusNoContent)
}

// refresh: POST /v1/tools/{id}/refresh re-lists an MCP server's tools.
func (ts *tools) refresh(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	id := r.PathValue("id")
	rec, err := ts.store.Tool(r.Context(), p.Tenant, id)
	if err != nil {
		writeError(w, notFoundOr(err, "tool", id))
		return
	}
	if rec.Kind != kindMCP {
		writeError(w, invalid("tool %q is not an MCP server", rec.Name))
		return
	}
	srv, err := ts.server(r.Context(), rec)
	if err != nil {
		writeError(w, errorf(http.StatusBadGateway, CodeUnavailable, "the MCP server could not be reached: %v", err))
		return
	}
	fresh, err := srv.Refresh(r.Context())
	if err != nil {
		writeError(w, errorf(http.StatusBadGateway, CodeUnavailable, "refresh: %v", err))
		return
	}
	if err := ts.syncChildren(r.Context(), p.Tenant, id, fresh); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	ts.list(w, r)
}

// hasChild reports whether MCP server id has a tool record named name.
func (ts *tools) hasChild(ctx context.Context, tenant, id, name string) bool {
	recs, err := ts.store.ListTools(ctx, tenant)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(recs, func(t meta.Tool) bool { return t.ParentID == id && t.Name == name })
}

// syncChildren makes the tool records of MCP server id match the tools it
// offers: a record for each new tool, none for a tool it dropped (its
// record could only fail when called). Kept tools keep their ids.
func (ts *tools) syncChildren(ctx context.Context, tenant, id string, fresh []tool.Tool) error {
	existing, err := ts.store.ListTools(ctx, tenant)
	if err != nil {
		return err
	}
	have := map[string]string{} // name → id of the server's tool records
	for _, t := range existing {
		if t.ParentID == id {
			have[t.Name] = t.ID
		}
	}
	offered := map[string]bool{}
	for _, t := range fresh {
		spec := t.Spec()
		offered[spec.Name] = true
		if have[spec.Name] != "" {
			continue
		}
		if err := ts.store.CreateTool(ctx, children(tenant, id, []tool.Tool{t}, time.Now().UTC())[0]); err != nil && !errors.Is(err, meta.ErrConflict) {
			return err
		}
	}
	for name, childID := range have {
		if !offered[name] {
			if err := ts.store.DeleteTool(ctx, tenant, childID); err != nil && !errors.Is(err, meta.ErrNotFound) {
				return err
			}
		}
	}
	return nil
}

// listChanged records the tools of MCP server id after it announced a
// change (notifications/tools/list_changed). A server record deleted in
// the meantime keeps no child records.
func (ts *tools) listChanged(tenant, id string, fresh []tool.Tool) {
	ctx, cancel := context.WithTimeout(context.Background(), mcptool.DefaultConnectTimeout)
	defer cancel()
	if _, err := ts.store.Tool(ctx, tenant, id); err != nil {
		return // deleted: its connection is closing
	}
	err := ts.syncChildren(ctx, tenant, id, fresh)
	if err == nil {
		if _, err = ts.store.Tool(ctx, tenant, id); errors.Is(err, meta.ErrNotFound) {
			// Deleted while the records were written: drop those left.
			err = ts.syncChildren(ctx, tenant, id, nil)
		}
	}
	if err != nil {
		ts.s.log.Warn("MCP server's changed tool list not recorded; POST /v1/tools/{id}/refresh retries", "tenant", tenant, "tool", id, "err", err)
	}
}

// invokeTimeout bounds a tool run on its own (POST /v1/tools/{id}/invoke):
// the default turn deadline, the longest a tool call can run in a turn of
// an agent with default timeouts. The tool's own timeout (an HTTP tool's
// timeout_ms) applies within it.
const invokeTimeout = meta.DefaultTurnMS * time.Millisecond

// invokeRequest is the body of POST /v1/tools/{id}/invoke.
type invokeRequest struct {
	// Arguments is the JSON object the tool is called with, as a model
	// would pass it; absent or null means {}.
	Arguments json.RawMessage `json:"arguments"`
}

// invocation is the answer to POST /v1/tools/{id}/invoke: what a model
// would have been given as the tool result.
type invocation struct {
	Tool       string `json:"tool"`
	OK         bool   `json:"ok"`
	Result     string `json:"result,omitempty"`
	Error      string `json:"error,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// invoke: POST /v1/tools/{id}/invoke {arguments} runs one of the tenant's
// tools with the given arguments, as a turn would run it for a model: the
// same built tool (outbound guard, secrets resolved and redacted from the
// answer, the tool's own timeout) through the same executor (argument
// checks, panics recovered, the result capped at tool.DefaultMaxResultBytes).
// A failing call is a 200 with ok false and the error the model would see;
// the request itself fails only when the tool cannot be found or started.
func (ts *tools) invoke(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	id := r.PathValue("id")
	var req invokeRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	args := bytes.TrimSpace(req.Arguments)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	if args[0] != '{' {
		writeError(w, invalid("field \"arguments\": want a JSON object"))
		return
	}
	rec, err := ts.store.Tool(r.Context(), p.Tenant, id)
	if err != nil {
		writeError(w, notFoundOr(err, "tool", id))
		return
	}
	if rec.Kind == kindMCP {
		writeError(w, invalid("tool %q is an MCP server: invoke one of its tools", rec.Name))
		return
	}
	got, err := ts.runnable(r.Context(), rec)
	if err != nil || len(got) != 1 {
		if err == nil {
			err = errors.New("no runnable tool")
		}
		writeError(w, errorf(http.StatusBadGateway, CodeUnavailable, "tool %q could not be started: %v", rec.Name, err))
		return
	}
	set, err := tool.NewSet(got...)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), invokeTimeout)
	defer cancel()
	name := got[0].Spec().Name
	callID := meta.NewID("call")
	// The same span a turn's tool call makes, under the request's span.
	ctx, span := ts.s.otel.tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", name),
		attribute.String("gen_ai.tool.call.id", callID)))
	exec := tool.Executor{Tools: set}
	xs, _ := exec.Run(ctx, []llm.ToolCall{{ID: callID, Name: name, Arguments: string(args)}}, nil)
	x := xs[0]
	if x.IsError {
		span.SetStatus(codes.Error, scrub(x.Content))
	}
	span.End()
	ts.s.metrics.toolCalls.WithLabelValues(map[bool]string{true: "error", false: "ok"}[x.IsError]).Inc()
	out := invocation{Tool: name, OK: !x.IsError, Truncated: x.Truncated, DurationMS: x.Duration.Milliseconds()}
	if x.IsError {
		out.Error = x.Content
		ts.s.log.WarnContext(r.Context(), "tool invocation failed", "request_id", requestID(r.Context()), "tenant", p.Tenant, "tool", rec.ID)
	} else {
		out.Result = x.Content
	}
	writeJSON(w, http.StatusOK, out)
}

// forget drops the runtime of a deleted record (closing connections).
func (ts *tools) forget(tenant, id string) {
	key := tenant + "\x00" + id
	ts.mu.Lock()
	b := ts.built[key]
	c, ok := ts.mcp[key]
	delete(ts.built, key)
	delete(ts.mcp, key)
	ts.mu.Unlock()
	if c, ok := b.t.(io.Closer); ok {
		c.Close()
	}
	if ok {
		c.srv.Close()
	}
}

// close ends every MCP connection and SQL pool.
func (ts *tools) close() {
	ts.mu.Lock()
	built, servers := ts.built, ts.mcp
	ts.built, ts.mcp = map[string]builtTool{}, map[string]mcpConn{}
	ts.mu.Unlock()
	for _, b := range built {
		if c, ok := b.t.(io.Closer); ok {
			c.Close()
		}
	}
	for _, c := range servers {
		c.srv.Close()
	}
}
