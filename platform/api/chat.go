package api

import (
	"encoding/json"
	"time"
)

// ChatRequest is the body of POST /v1/agents/{id}/chat.
type ChatRequest struct {
	// Query is the user's message.
	Query string `json:"query"`
	// SessionID continues a session of the agent; empty starts a new one.
	SessionID string `json:"session_id,omitempty"`
	// Stream asks for an event stream instead of one JSON answer.
	Stream bool `json:"stream,omitempty"`
	// User names the end user, for the model and the logs.
	User string `json:"user,omitempty"`
}

// ChatAnswer is the blocking answer of a turn, and the data of
// chat.completed.
type ChatAnswer struct {
	SessionID    string            `json:"session_id"`
	MessageID    string            `json:"message_id"`
	Answer       string            `json:"answer"`
	RagFragments []RagFragment     `json:"rag_fragments"`
	ToolCalls    []ToolCallOutcome `json:"tool_calls"`
	Usage        Usage             `json:"usage"`
	LatencyMS    int64             `json:"latency_ms"`
	// Model is the model that answered.
	Model string `json:"model,omitempty"`
	// CostUSD is what the turn cost by the server's price table (0 for a
	// model it does not price).
	CostUSD float64 `json:"cost_usd"`
	// Interrupt, when set, says that the turn paused for approval of the
	// tool calls it lists (the agent's tool_approvals): Answer is what the
	// model said before, and the turn goes on when the interrupt is
	// resumed (POST its resume route) with a decision per call.
	Interrupt *Interrupt `json:"interrupt,omitempty"`
}

// RagFragment is a chunk recalled from a knowledge base.
type RagFragment struct {
	KnowledgeBaseID string  `json:"knowledge_base_id"`
	DocumentID      string  `json:"document_id"`
	DocumentName    string  `json:"document_name"`
	ChunkID         string  `json:"chunk_id"`
	Content         string  `json:"content"`
	Score           float64 `json:"score"`
}

// ToolCallOutcome is a tool call a turn made, with its outcome.
type ToolCallOutcome struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	OK        bool            `json:"ok"`
	Result    string          `json:"result"`
	Error     string          `json:"error"`
}

// Usage counts the tokens of a turn.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// The event names of a chat stream (see docs/api.md, "Chat").
const (
	EventCreated       = "chat.created"
	EventRetrieval     = "retrieval"
	EventMessageDelta  = "message.delta"
	EventToolCall      = "tool.call"
	EventToolResult    = "tool.result"
	EventDelegateStart = "delegate.start"
	EventDelegateDelta = "delegate.delta"
	EventDelegateEnd   = "delegate.end"
	EventInterrupt     = "interrupt"
	EventCompleted     = "chat.completed"
	EventError         = "error"
)

// Event is one event of a chat stream as a reader decodes it: Type says
// which fields are set.
type Event struct {
	// Type is the event name, one of the Event* constants (or a newer one;
	// its Data is still there).
	Type string `json:"type"`
	// SessionID and MessageID (chat.created).
	SessionID string `json:"session_id,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	// Text is a piece of the answer (message.delta, delegate.delta).
	Text string `json:"text,omitempty"`
	// RagFragments are the recalled chunks (retrieval).
	RagFragments []RagFragment `json:"rag_fragments,omitempty"`
	// ID, Name, Arguments, OK, Result and Error describe a tool call
	// (tool.call, tool.result); OK and Error also end a delegation
	// (delegate.end).
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	OK        bool            `json:"ok,omitempty"`
	Result    string          `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	// AgentID and Depth describe a delegation (delegate.*).
	AgentID string `json:"agent_id,omitempty"`
	Depth   int    `json:"depth,omitempty"`
	// Code and Message are the failure of an error event.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Answer is the whole answer (chat.completed).
	Answer *ChatAnswer `json:"-"`
	// Data is the event's JSON as sent.
	Data json.RawMessage `json:"-"`
}

// CancelRequest is the body of POST /v1/chat/cancel: one of the two ids.
type CancelRequest struct {
	SessionID string `json:"session_id,omitempty"`
	MessageID string `json:"message_id,omitempty"`
}

// Session is a conversation with one agent.
type Session struct {
	ID      string `json:"id"`
	AgentID string `json:"agent_id"`
	// Title names the session (PUT /v1/sessions/{id}); empty until set.
	Title    string `json:"title,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
	// User is the end user the session is for (the user of the chat
	// request that started it).
	User         string    `json:"user,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	MessageCount int       `json:"message_count"`
	// Interrupt is the approval the session's last turn paused for (see
	// ChatAnswer.Interrupt); absent when none waits.
	Interrupt *Interrupt `json:"interrupt,omitempty"`
	// Summary is the session's running summary (the agent's
	// memory.summary) in GET /v1/sessions/{id}; nil before the first fold.
	Summary *SessionSummary `json:"summary,omitempty"`
}

// SessionSummary is a session's running summary: what slid out of its
// window, folded by a model.
type SessionSummary struct {
	Text string `json:"text"`
	// ThroughMessageID is the newest message the summary holds.
	ThroughMessageID string    `json:"through_message_id,omitempty"`
	Tokens           int       `json:"tokens"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// Message is a stored message of a session.
type Message struct {
	ID         string     `json:"id"`
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	CreatedAt  time.Time  `json:"created_at"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Name is the tool's name, on a tool result.
	Name string `json:"name,omitempty"`
	// Partial marks an answer cut short (cancelled, failed, or the server
	// shut down) and saved as far as it got.
	Partial bool `json:"partial,omitempty"`
	// IsError marks a tool result that reports a failure.
	IsError bool `json:"is_error,omitempty"`
}

// ToolCall is a tool call of an assistant message.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}
