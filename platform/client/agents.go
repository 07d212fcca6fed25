package client

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Agent is an agent as data (see docs/api.md, "Agents"). Zero fields are left
// out of requests, so the server applies its defaults on create and keeps
// the stored values on update; pointer fields tell "unset" from an explicit
// zero, and an empty (non-nil) list is sent, to clear one.
type Agent struct {
	ID                  string     `json:"id,omitzero"`
	Name                string     `json:"name,omitzero"`
	SystemPrompt        string     `json:"system_prompt,omitzero"`
	Model               string     `json:"model,omitzero"`
	Temperature         *float64   `json:"temperature,omitzero"`
	MaxTokens           *int       `json:"max_tokens,omitzero"`
	ContextWindowTokens int        `json:"context_window_tokens,omitzero"`
	ReserveTokens       int        `json:"reserve_tokens,omitzero"`
	KnowledgeBaseIDs    []string   `json:"knowledge_base_ids,omitzero"`
	Retrieval           *Retrieval `json:"retrieval,omitzero"`
	ToolIDs             []string   `json:"tool_ids,omitzero"`
	DelegateAgentIDs    []string   `json:"delegate_agent_ids,omitzero"`
	// WorkflowIDs are the workflows the agent may run as tools
	// (workflow_<name>); names are accepted and stored as ids.
	WorkflowIDs      []string  `json:"workflow_ids,omitzero"`
	MaxToolRounds    int       `json:"max_tool_rounds,omitzero"`
	MaxDelegateDepth int       `json:"max_delegate_depth,omitzero"`
	Enabled          *bool     `json:"enabled,omitzero"`
	Timeouts         *Timeouts `json:"timeouts,omitzero"`
	Remote           *Remote   `json:"remote,omitzero"`
	// Version is the saved version this configuration is; of an agent
	// read, its published version (set by the server, ignored in a save).
	Version   int       `json:"version,omitzero"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// IsEnabled reports whether the agent answers chats (an unset Enabled
// means the server's default, true).
func (a Agent) IsEnabled() bool { return a.Enabled == nil || *a.Enabled }

// Retrieval configures how an agent recalls from its knowledge bases.
type Retrieval struct {
	TopK     int     `json:"top_k,omitzero"`
	Mode     string  `json:"mode,omitzero"`
	MinScore float64 `json:"min_score"`
}

// Timeouts bound an agent's turns, in milliseconds; zero fields take the
// server's defaults (docs/api.md, "Agents").
type Timeouts struct {
	// FirstTokenMS bounds the wait for a streamed answer's first token.
	FirstTokenMS int `json:"first_token_ms,omitzero"`
	// IdleMS bounds the silence between two chunks of a streamed answer.
	IdleMS int `json:"idle_ms,omitzero"`
	// TurnMS bounds a whole turn: every model call, tool call and
	// delegation in it.
	TurnMS int `json:"turn_ms,omitzero"`
}

// Remote points an agent at an agent of another Weft server, or with
// Protocol "a2a" at any A2A agent (URL: its card's or base URL).
type Remote struct {
	Protocol string `json:"protocol,omitzero"`
	URL      string `json:"url"`
	AgentID  string `json:"agent_id,omitzero"`
	// APIKey references the remote API key as ${secret:NAME}, a secret of
	// the tenant (PUT /v1/secrets/NAME).
	APIKey string `json:"api_key,omitzero"`
	// APIKeyEnv names a server environment variable holding the key: for
	// agents registered with an admin key, and only variables the operator
	// allows.
	APIKeyEnv string `json:"api_key_env,omitzero"`
	// RegisteredByAdmin is set by the server: whether an admin key last
	// registered or changed the agent. It is ignored in requests.
	RegisteredByAdmin bool `json:"registered_by_admin,omitzero"`
}

// CreateAgent creates an agent (POST /v1/agents) and returns it as stored,
// with its id and defaults. A taken name is an *Error with code "conflict".
func (c *Client) CreateAgent(ctx context.Context, a Agent) (Agent, error) {
	var out Agent
	a.ID, a.CreatedAt, a.UpdatedAt = "", time.Time{}, time.Time{}
	err := c.do(ctx, http.MethodPost, "/v1/agents", a, &out)
	return out, err
}

// ListAgents lists the tenant's agents (GET /v1/agents).
func (c *Client) ListAgents(ctx context.Context) ([]Agent, error) {
	var out []Agent
	err := c.do(ctx, http.MethodGet, "/v1/agents", nil, &out)
	return out, err
}

// GetAgent returns the agent id (GET /v1/agents/{id}).
func (c *Client) GetAgent(ctx context.Context, id string) (Agent, error) {
	var out Agent
	if id == "" {
		return out, errors.New("client: empty agent id")
	}
	err := c.do(ctx, http.MethodGet, "/v1/agents/"+pathEscape(id), nil, &out)
	return out, err
}

// UpdateAgent updates the agent id (PUT /v1/agents/{id}): the fields a sets
// replace the stored ones, the others keep their values.
func (c *Client) UpdateAgent(ctx context.Context, id string, a Agent) (Agent, error) {
	var out Agent
	if id == "" {
		return out, errors.New("client: empty agent id")
	}
	a.ID, a.CreatedAt, a.UpdatedAt = "", time.Time{}, time.Time{}
	err := c.do(ctx, http.MethodPut, "/v1/agents/"+pathEscape(id), a, &out)
	return out, err
}

// DeleteAgent deletes the agent id (DELETE /v1/agents/{id}).
func (c *Client) DeleteAgent(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("client: empty agent id")
	}
	return c.do(ctx, http.MethodDelete, "/v1/agents/"+pathEscape(id), nil, nil)
}

// FindAgent returns the agent whose id or name is ref: an id is tried
// first, then the names. No match is an *Error with code "not_found".
func (c *Client) FindAgent(ctx context.Context, ref string) (Agent, error) {
	if ref == "" {
		return Agent{}, errors.New("client: empty agent name or id")
	}
	a, err := c.GetAgent(ctx, ref)
	if err == nil || !IsNotFound(err) {
		return a, err
	}
	all, err := c.ListAgents(ctx)
	if err != nil {
		return Agent{}, err
	}
	for _, a := range all {
		if a.Name == ref {
			return a, nil
		}
	}
	return Agent{}, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no agent named or with id " + quote(ref)}
}

// ApplyAgent creates the agent named a.Name, or updates it when one by that
// name exists; created says which happened.
func (c *Client) ApplyAgent(ctx context.Context, a Agent) (out Agent, created bool, err error) {
	if a.Name == "" {
		return Agent{}, false, errors.New("client: an applied agent needs a name")
	}
	all, err := c.ListAgents(ctx)
	if err != nil {
		return Agent{}, false, err
	}
	for _, cur := range all {
		if cur.Name == a.Name {
			out, err = c.UpdateAgent(ctx, cur.ID, a)
			return out, false, err
		}
	}
	out, err = c.CreateAgent(ctx, a)
	var e *Error
	if errors.As(err, &e) && e.Code == CodeConflict {
		// Created meanwhile by someone else: update that one.
		return c.ApplyAgent(ctx, a)
	}
	return out, err == nil, err
}

func quote(s string) string { return `"` + s + `"` }
