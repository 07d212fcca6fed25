package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/weftlabs/weft/platform/api"
)

// The wire types of sessions, from package api.
type (
	// Session is a conversation with one agent.
	Session = api.Session
	// Message is a stored message of a session.
	Message = api.Message
	// ToolCall is a tool call of an assistant message.
	ToolCall = api.ToolCall
)

// ListSessions lists the tenant's sessions, of one agent when agentID is
// not empty (GET /v1/sessions).
func (c *Client) ListSessions(ctx context.Context, agentID string) ([]Session, error) {
	path := "/v1/sessions"
	if agentID != "" {
		path += "?agent_id=" + url.QueryEscape(agentID)
	}
	var out []Session
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// GetSession returns the session id (GET /v1/sessions/{id}).
func (c *Client) GetSession(ctx context.Context, id string) (Session, error) {
	var out Session
	if id == "" {
		return out, errors.New("client: empty session id")
	}
	err := c.do(ctx, http.MethodGet, "/v1/sessions/"+pathEscape(id), nil, &out)
	return out, err
}

// Messages returns the messages of session id in order
// (GET /v1/sessions/{id}/messages).
func (c *Client) Messages(ctx context.Context, id string) ([]Message, error) {
	var out []Message
	if id == "" {
		return out, errors.New("client: empty session id")
	}
	err := c.do(ctx, http.MethodGet, "/v1/sessions/"+pathEscape(id)+"/messages", nil, &out)
	return out, err
}

// DeleteSession deletes session id and its messages.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("client: empty session id")
	}
	return c.do(ctx, http.MethodDelete, "/v1/sessions/"+pathEscape(id), nil, nil)
}

// APIKey is an API key of the tenant. Key, the secret, is set only in the
// answer of [Client.CreateKey].
type APIKey struct {
	ID     string `json:"id"`
	Key    string `json:"key,omitempty"`
	Tenant string `json:"tenant"`
	Name   string `json:"name"`
	Admin  bool   `json:"admin"`
	// Role is the key's role in its tenant: owner, admin, builder,
	// viewer or end_user.
	Role      string    `json:"role,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateKey creates an API key named name (POST /v1/api-keys; only admin
// keys manage keys). tenant names the key's tenant, created if new; ""
// means the caller's.
func (c *Client) CreateKey(ctx context.Context, name, tenant string) (APIKey, error) {
	var out APIKey
	err := c.do(ctx, http.MethodPost, "/v1/api-keys", map[string]string{"name": name, "tenant": tenant}, &out)
	return out, err
}

// ListKeys lists the caller's tenant's API keys, without their secrets
// (admin keys only).
func (c *Client) ListKeys(ctx context.Context) ([]APIKey, error) {
	return c.ListTenantKeys(ctx, "")
}

// ListTenantKeys lists the API keys of the tenant named (or with the id)
// tenant, without their secrets; "" means the caller's (admin keys only).
func (c *Client) ListTenantKeys(ctx context.Context, tenant string) ([]APIKey, error) {
	path := "/v1/api-keys"
	if tenant != "" {
		path += "?tenant=" + url.QueryEscape(tenant)
	}
	var out []APIKey
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// DeleteKey revokes the API key id of any tenant, on every replica at once
// (admin keys only; the admin key itself cannot be revoked this way).
func (c *Client) DeleteKey(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("client: empty key id")
	}
	return c.do(ctx, http.MethodDelete, "/v1/api-keys/"+pathEscape(id), nil, nil)
}
