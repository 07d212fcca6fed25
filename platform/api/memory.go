package api

import "time"

// Memory is a long-term memory of an end user: a fact learned from their
// turns, told by an agent's remember tool, or written through the API.
type Memory struct {
	ID        string       `json:"id"`
	Text      string       `json:"text"`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
	Source    MemorySource `json:"source"`
}

// MemorySource says where a memory was learned or last changed.
type MemorySource struct {
	// Kind is "extraction" (learned after a turn), "tool" (the agent's
	// remember tool) or "api".
	Kind      string `json:"kind"`
	AgentID   string `json:"agent_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	MessageID string `json:"message_id,omitempty"`
}

// MemoryRequest is the body of PUT /v1/users/{user}/memories/{id}.
type MemoryRequest struct {
	// Text is the memory, one short sentence.
	Text string `json:"text"`
	// AgentID chooses the embedding model (its memory setting's); empty
	// means the server's default embedding model.
	AgentID string `json:"agent_id,omitempty"`
}

// ForgetUserAnswer is the answer of DELETE /v1/users/{user}.
type ForgetUserAnswer struct {
	// AuditID names the audit record kept of the forgetting.
	AuditID string `json:"audit_id"`
	// UserHash is the SHA-256 (hex) of the tenant's id, a zero byte and
	// the user, which the audit record keeps instead of the user.
	UserHash string `json:"user_hash"`
	// Deleted counts what was deleted: sessions, messages, memories,
	// traces, a2a_tasks, idempotent_replies.
	Deleted map[string]int `json:"deleted"`
}
