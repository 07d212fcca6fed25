package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// The kinds of tool (see docs/api.md, "Tools"). An MCP server is registered with
// kind [ToolMCP]; each tool it offers then appears as a tool of its own with
// kind [ToolMCPTool] and the server's id as ParentID.
const (
	ToolHTTP    = "http"
	ToolMCP     = "mcp"
	ToolMCPTool = "mcp_tool"
	ToolSQL     = "sql"
)

// Tool is a registered tool as data. Exactly one of HTTP, MCP and SQL is set
// on create, matching Kind.
type Tool struct {
	ID          string `json:"id,omitzero"`
	Name        string `json:"name"`
	Description string `json:"description,omitzero"`
	Kind        string `json:"kind"`
	// Parameters is the JSON Schema (an object) of the arguments of an HTTP
	// or SQL tool, or of an MCP server's tool.
	Parameters json.RawMessage `json:"parameters,omitzero"`
	HTTP       *HTTPTool       `json:"http,omitzero"`
	MCP        *MCPServer      `json:"mcp,omitzero"`
	SQL        *SQLTool        `json:"sql,omitzero"`
	// ParentID is the MCP server a tool of kind "mcp_tool" belongs to.
	ParentID string `json:"parent_id,omitzero"`
	// RegisteredByAdmin is set by the server: whether an admin key last
	// registered or changed the tool (only such tools may read the
	// server's environment). It is ignored in requests.
	RegisteredByAdmin bool      `json:"registered_by_admin,omitzero"`
	CreatedAt         time.Time `json:"created_at,omitzero"`
}

// HTTPTool calls an HTTP endpoint: arguments go in the query string for GET
// and as a JSON body otherwise.
type HTTPTool struct {
	Method    string            `json:"method"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers,omitzero"`
	TimeoutMS int               `json:"timeout_ms,omitzero"`
}

// MCPServer is a Model Context Protocol server: a command the platform
// starts (Transport "stdio") or a streamable HTTP endpoint (Transport
// "http").
type MCPServer struct {
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitzero"`
	Args      []string          `json:"args,omitzero"`
	Env       map[string]string `json:"env,omitzero"`
	URL       string            `json:"url,omitzero"`
	Headers   map[string]string `json:"headers,omitzero"`
}

// SQLTool runs one read-only query whose placeholders take the arguments
// named in Bind, in order. The DSN is read from the server's environment
// variable DSNEnv.
type SQLTool struct {
	Driver string   `json:"driver"`
	DSNEnv string   `json:"dsn_env"`
	Query  string   `json:"query"`
	Bind   []string `json:"bind,omitzero"`
}

// CreateTool registers a tool (POST /v1/tools) and returns it as stored.
// Registering an MCP server connects to it and lists its tools, each of
// which becomes a tool of its own ([Client.ListTools] shows them).
func (c *Client) CreateTool(ctx context.Context, t Tool) (Tool, error) {
	var out Tool
	t.ID, t.ParentID, t.CreatedAt = "", "", time.Time{}
	err := c.do(ctx, http.MethodPost, "/v1/tools", t, &out)
	return out, err
}

// ListTools lists the tenant's tools (GET /v1/tools), MCP servers' tools
// included.
func (c *Client) ListTools(ctx context.Context) ([]Tool, error) {
	var out []Tool
	err := c.do(ctx, http.MethodGet, "/v1/tools", nil, &out)
	return out, err
}

// GetTool returns the tool id (GET /v1/tools/{id}).
func (c *Client) GetTool(ctx context.Context, id string) (Tool, error) {
	var out Tool
	if id == "" {
		return out, errors.New("client: empty tool id")
	}
	err := c.do(ctx, http.MethodGet, "/v1/tools/"+pathEscape(id), nil, &out)
	return out, err
}

// UpdateTool replaces the definition of the tool id (PUT /v1/tools/{id})
// with t, keeping its id, so the agents that whitelist it keep it; t is a
// whole definition, as for [Client.CreateTool], of the same kind. Updating
// an MCP server's name or connection lists its tools again: those it
// still offers under the same name keep their ids. An MCP server's own
// tools cannot be updated.
func (c *Client) UpdateTool(ctx context.Context, id string, t Tool) (Tool, error) {
	var out Tool
	if id == "" {
		return out, errors.New("client: empty tool id")
	}
	t.ID, t.ParentID, t.CreatedAt = "", "", time.Time{}
	err := c.do(ctx, http.MethodPut, "/v1/tools/"+pathEscape(id), t, &out)
	return out, err
}

// DeleteTool deletes the tool id (DELETE /v1/tools/{id}). Deleting an MCP
// server closes its connection.
func (c *Client) DeleteTool(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("client: empty tool id")
	}
	return c.do(ctx, http.MethodDelete, "/v1/tools/"+pathEscape(id), nil, nil)
}

// RefreshTool lists an MCP server's tools again (POST
// /v1/tools/{id}/refresh), registering those it newly offers and removing
// those it no longer offers, and returns the tenant's tools.
func (c *Client) RefreshTool(ctx context.Context, id string) ([]Tool, error) {
	var out []Tool
	if id == "" {
		return out, errors.New("client: empty tool id")
	}
	err := c.do(ctx, http.MethodPost, "/v1/tools/"+pathEscape(id)+"/refresh", nil, &out)
	return out, err
}

// ToolInvocation is what running a tool on its own answered: its result,
// or the error a model would have been given.
type ToolInvocation struct {
	// Tool is the tool's name as models see it.
	Tool string `json:"tool"`
	// OK reports a successful call: Result is set, else Error.
	OK     bool   `json:"ok"`
	Result string `json:"result,omitzero"`
	Error  string `json:"error,omitzero"`
	// Truncated reports that Result was cut to the server's cap.
	Truncated  bool  `json:"truncated,omitzero"`
	DurationMS int64 `json:"duration_ms"`
}

// InvokeTool runs the tool id with arguments (a JSON object; nil means {})
// as an agent's turn would (POST /v1/tools/{id}/invoke). A call that fails
// is not an error: it is an invocation with OK false.
func (c *Client) InvokeTool(ctx context.Context, id string, arguments json.RawMessage) (ToolInvocation, error) {
	var out ToolInvocation
	if id == "" {
		return out, errors.New("client: empty tool id")
	}
	if arguments == nil {
		arguments = json.RawMessage("{}")
	}
	err := c.do(ctx, http.MethodPost, "/v1/tools/"+pathEscape(id)+"/invoke", map[string]json.RawMessage{"arguments": arguments}, &out)
	return out, err
}

// FindTool returns the tool whose id or name is ref: an id is tried first,
// then the names. No match is an *Error with code "not_found".
func (c *Client) FindTool(ctx context.Context, ref string) (Tool, error) {
	if ref == "" {
		return Tool{}, errors.New("client: empty tool name or id")
	}
	t, err := c.GetTool(ctx, ref)
	if err == nil || !IsNotFound(err) {
		return t, err
	}
	all, err := c.ListTools(ctx)
	if err != nil {
		return Tool{}, err
	}
	for _, t := range all {
		if t.Name == ref {
			return t, nil
		}
	}
	return Tool{}, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no tool named or with id " + quote(ref)}
}
