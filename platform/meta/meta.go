// Package meta is the platform's metadata store: tenants, API keys, agents,
// sessions and idempotency records, in SQL — SQLite embedded by default,
// PostgreSQL when the platform scales out. Every read and write is scoped to
// a tenant: a method given one tenant never sees another's rows.
package meta

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors callers branch on.
var (
	// ErrNotFound: no such object in this tenant.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique name is taken, or the object changed meanwhile.
	ErrConflict = errors.New("conflict")
)

// Tenant is an isolated owner of objects.
type Tenant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// APIKey is a stored key. The secret is never stored: only its SHA-256 hash.
type APIKey struct {
	ID       string `json:"id"`
	TenantID string `json:"tenant"`
	Name     string `json:"name"`
	// Admin marks the operator's key (made by Bootstrap only): it manages
	// keys of every tenant and registers tools that run on the server.
	Admin bool `json:"admin"`
	// Role is what the key may do in its tenant (see [Role]).
	Role      Role      `json:"role"`
	Hash      []byte    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
}

// Retrieval configures how an agent recalls from its knowledge bases.
type Retrieval struct {
	TopK     int     `json:"top_k"`
	Mode     string  `json:"mode"`
	MinScore float64 `json:"min_score"`
}

// RemoteA2A is the protocol of a remote agent that is any A2A server.
const RemoteA2A = "a2a"

// Remote points an agent at an agent on another server: another Weft (the
// default protocol, "weft") or any A2A server (protocol "a2a").
type Remote struct {
	// Protocol is "weft" (or empty) or "a2a".
	Protocol string `json:"protocol,omitempty"`
	// URL is the Weft server's base URL, or the A2A agent's card URL or
	// base URL (under which the card is at .well-known/agent-card.json).
	URL string `json:"url"`
	// AgentID is the agent on the remote Weft; unused for A2A.
	AgentID string `json:"agent_id,omitempty"`
	// APIKey references the remote API key as ${secret:NAME}, a secret of
	// the agent's tenant; the key itself is never stored here.
	APIKey string `json:"api_key,omitempty"`
	// APIKeyEnv names the environment variable holding the remote API key;
	// only for agents registered by an admin key, and only variables the
	// operator allows (WEFT_ENV_SECRETS_ALLOW).
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// RegisteredByAdmin records whether an admin key registered (or last
	// changed) the agent; set by the server, never by the client.
	RegisteredByAdmin bool `json:"registered_by_admin,omitempty"`
}

// Memory is an agent's memory setting (docs/memory.md).
type Memory struct {
	// Summary, when set, folds what slides out of a session's window into
	// the session's running summary.
	Summary *SummarySetting `json:"summary,omitempty"`
	// LongTerm learns facts about the turn's end user after each turn (in
	// the background) and recalls the relevant ones into later turns of
	// any of the tenant's agents that set it.
	LongTerm bool `json:"long_term,omitempty"`
	// Tools gives the agent the remember, recall and forget tools over
	// the user's facts; it needs LongTerm.
	Tools bool `json:"tools,omitempty"`
	// Model learns the facts (default: the agent's model).
	Model string `json:"model,omitempty"`
	// EmbeddingModel embeds the facts (default: the server's default
	// embedding model). Agents sharing a user's facts should share it.
	EmbeddingModel string `json:"embedding_model,omitempty"`
	// RecallTokens bounds the facts recalled into a turn (default
	// DefaultRecallTokens).
	RecallTokens int `json:"recall_tokens,omitempty"`
}

// SummarySetting configures an agent's running summaries.
type SummarySetting struct {
	// Model writes the summaries (default: the agent's model).
	Model string `json:"model,omitempty"`
	// ThresholdTokens of unfolded records out of the window start a fold
	// (default 1024).
	ThresholdTokens int `json:"threshold_tokens,omitempty"`
	// Prompt replaces the summarizer's system prompt.
	Prompt string `json:"prompt,omitempty"`
	// MaxTokens bounds a summary (default 512).
	MaxTokens int `json:"max_tokens,omitempty"`
}

// DefaultRecallTokens bounds the facts recalled into a turn when an agent's
// memory names no recall_tokens.
const DefaultRecallTokens = 256

// Timeouts bound an agent's turns, in milliseconds. Zero means the
// default (see [Agent.Defaults]).
type Timeouts struct {
	// FirstTokenMS bounds the wait for the first token of each model
	// call's answer, the call's retries included.
	FirstTokenMS int `json:"first_token_ms"`
	// IdleMS bounds the silence between two chunks of a streamed answer.
	IdleMS int `json:"idle_ms"`
	// TurnMS bounds a whole turn: every model call, tool call and
	// delegation in it.
	TurnMS int `json:"turn_ms"`
}

// Agent is an agent as data. See docs/api.md for the meaning and defaults of each
// field; [Agent.Defaults] applies them.
type Agent struct {
	ID                  string    `json:"id"`
	TenantID            string    `json:"-"`
	Name                string    `json:"name"`
	SystemPrompt        string    `json:"system_prompt"`
	Model               string    `json:"model"`
	Temperature         *float64  `json:"temperature,omitempty"`
	MaxTokens           *int      `json:"max_tokens,omitempty"`
	ContextWindowTokens int       `json:"context_window_tokens"`
	ReserveTokens       int       `json:"reserve_tokens"`
	KnowledgeBaseIDs    []string  `json:"knowledge_base_ids"`
	Retrieval           Retrieval `json:"retrieval"`
	ToolIDs             []string  `json:"tool_ids"`
	DelegateAgentIDs    []string  `json:"delegate_agent_ids"`
	// ToolApprovals makes calls of the agent's tools wait for a person,
	// by the tool's name as the model sees it: "always", "never", or an
	// expression over the call's arguments (args) that is true when the
	// call must wait, e.g. `args.amount > 100`. Tools not named never wait.
	ToolApprovals map[string]string `json:"tool_approvals,omitempty"`
	// WorkflowIDs are the workflows the agent may run as tools
	// (workflow_<name>).
	WorkflowIDs      []string `json:"workflow_ids,omitempty"`
	MaxToolRounds    int      `json:"max_tool_rounds"`
	MaxDelegateDepth int      `json:"max_delegate_depth"`
	Enabled          bool     `json:"enabled"`
	Timeouts         Timeouts `json:"timeouts"`
	Remote           *Remote  `json:"remote,omitempty"`
	// Memory is the agent's memory beyond its window: running summaries
	// and long-term memory of its end users (docs/memory.md). Nil keeps
	// the plain window.
	Memory *Memory `json:"memory,omitempty"`
	// Version is the number of the saved version this configuration is
	// (see [AgentVersion]): for the agent served, its published version.
	// Set by the store; 0 for an agent not saved since versions exist.
	Version   int       `json:"version,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// The agent defaults of docs/api.md.
const (
	DefaultContextWindow    = 4096
	DefaultReserveTokens    = 512
	DefaultTopK             = 5
	DefaultRetrievalMode    = "hybrid"
	DefaultMaxToolRounds    = 5
	DefaultMaxDelegateDepth = 3
	DefaultFirstTokenMS     = 60_000
	DefaultIdleMS           = 30_000
	DefaultTurnMS           = 300_000
)

// Defaults fills the zero fields of a new agent with docs/api.md's defaults.
// Enabled is the caller's to set (it defaults to true at the API).
func (a *Agent) Defaults() {
	if a.ContextWindowTokens == 0 {
		a.ContextWindowTokens = DefaultContextWindow
	}
	if a.ReserveTokens == 0 {
		a.ReserveTokens = DefaultReserveTokens
	}
	if a.Retrieval.TopK == 0 {
		a.Retrieval.TopK = DefaultTopK
	}
	if a.Retrieval.Mode == "" {
		a.Retrieval.Mode = DefaultRetrievalMode
	}
	if a.MaxToolRounds == 0 {
		a.MaxToolRounds = DefaultMaxToolRounds
	}
	if a.MaxDelegateDepth == 0 {
		a.MaxDelegateDepth = DefaultMaxDelegateDepth
	}
	a.Timeouts.Defaults()
	if a.KnowledgeBaseIDs == nil {
		a.KnowledgeBaseIDs = []string{}
	}
	if a.ToolIDs == nil {
		a.ToolIDs = []string{}
	}
	if a.DelegateAgentIDs == nil {
		a.DelegateAgentIDs = []string{}
	}
}

// Defaults fills the zero timeouts with the defaults: 60 s to the first
// token, 30 s between chunks, 5 minutes per turn. Agents stored before
// timeouts existed get them when read.
func (t *Timeouts) Defaults() {
	if t.FirstTokenMS == 0 {
		t.FirstTokenMS = DefaultFirstTokenMS
	}
	if t.IdleMS == 0 {
		t.IdleMS = DefaultIdleMS
	}
	if t.TurnMS == 0 {
		t.TurnMS = DefaultTurnMS
	}
}

// Session is a conversation's registration: which tenant and agent own it.
// Its messages live in the session store (package memory).
type Session struct {
	ID        string    `json:"id"`
	TenantID  string    `json:"-"`
	AgentID   string    `json:"agent_id"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// ParentID links a delegate's session to the session that delegated.
	ParentID string `json:"parent_id,omitempty"`
	// UserID is the end user the session is for: the user of the chat
	// request that started it (never taken from message text). Empty
	// when the request named none.
	UserID string `json:"user,omitempty"`
	// Interrupt is the approval the session's last turn paused for, nil
	// when none waits: a new message is refused until it is resumed.
	Interrupt *SessionInterrupt `json:"interrupt,omitempty"`
}

// SessionInterrupt is a paused turn of a session: the tool calls that wait
// for a person's decision (see ai.Interrupt). The calls' message is stored
// in the session's memory under ID; this copy lists it.
type SessionInterrupt struct {
	ID    string                 `json:"id"`
	Calls []SessionInterruptCall `json:"calls"`
	// MessageID is the id the paused turn's answer was announced with.
	MessageID string    `json:"message_id"`
	CreatedAt time.Time `json:"created_at"`
}

// SessionInterruptCall is a tool call waiting for a decision.
type SessionInterruptCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// SessionTouch is one session's new update time, for [Store.TouchSessions].
type SessionTouch struct {
	TenantID, ID string
	At           time.Time
}

// Idempotent is the stored outcome of a request made with an Idempotency-Key.
type Idempotent struct {
	Status int    `json:"status"`
	Body   []byte `json:"body"`
}

// Store is the metadata store. Every method that takes a tenant ID only
// touches that tenant's rows; an object of another tenant is ErrNotFound.
type Store interface {
	// Tenants.
	EnsureTenant(ctx context.Context, name string) (Tenant, error)
	TenantByID(ctx context.Context, id string) (Tenant, error)
	TenantByName(ctx context.Context, name string) (Tenant, error)
	CountKeys(ctx context.Context) (int, error)

	// API keys.
	CreateKey(ctx context.Context, k APIKey) error
	KeyByID(ctx context.Context, id string) (APIKey, error)
	ListKeys(ctx context.Context, tenant string) ([]APIKey, error)
	DeleteKey(ctx context.Context, tenant, id string) error
	// SetKeyRole changes the role of a key of tenant.
	SetKeyRole(ctx context.Context, tenant, id string, role Role) error
	// ReplaceAdminKeys makes k (an admin key) the only admin key of its
	// tenant, at once: it revokes every other admin key of that tenant (and
	// a stored key of k's id whose hash differs) and stores k unless it is
	// already there. It returns the revoked keys' ids.
	ReplaceAdminKeys(ctx context.Context, k APIKey) (revoked []string, err error)

	// Agents.
	CreateAgent(ctx context.Context, a Agent) error
	Agent(ctx context.Context, tenant, id string) (Agent, error)
	AgentByName(ctx context.Context, tenant, name string) (Agent, error)
	ListAgents(ctx context.Context, tenant string) ([]Agent, error)
	UpdateAgent(ctx context.Context, a Agent) error
	DeleteAgent(ctx context.Context, tenant, id string) error

	// Sessions.
	CreateSession(ctx context.Context, s Session) error
	Session(ctx context.Context, tenant, id string) (Session, error)
	ListSessions(ctx context.Context, tenant, agent string) ([]Session, error)
	// TouchSessions sets the update time of several sessions at once (one
	// transaction): the platform gathers the touches of concurrent turns.
	// Sessions that no longer exist are skipped.
	TouchSessions(ctx context.Context, touches []SessionTouch) error
	DeleteSession(ctx context.Context, tenant, id string) error
	// SetSessionInterrupt replaces the session's interrupt (nil: none)
	// when its current one has id prev ("" for none), and reports whether
	// it did: of two resumes of one interrupt, one claims it.
	SetSessionInterrupt(ctx context.Context, tenant, id, prev string, in *SessionInterrupt) (bool, error)
	// InterruptedSessions lists up to limit of the tenant's sessions (of
	// one agent when agent is not empty) that wait for approvals.
	InterruptedSessions(ctx context.Context, tenant, agent string, limit int) ([]Session, error)

	// Idempotency: Claim reserves key for a request; it returns the stored
	// outcome and true when the key was used before (Status 0 while the
	// first request is still running). Complete stores the outcome.
	ClaimIdempotent(ctx context.Context, tenant, key string, ttl time.Duration) (Idempotent, bool, error)
	CompleteIdempotent(ctx context.Context, tenant, key string, out Idempotent) error
	ReleaseIdempotent(ctx context.Context, tenant, key string) error

	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
	Close() error
}
