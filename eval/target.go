package eval

import (
	"context"
	"encoding/json"
	"time"
)

// Target is what a suite runs against: a Weft server through its client
// ([ClientTarget]), a server started in the process (package eval/inproc),
// or any other implementation.
type Target interface {
	// Chat sends one user message to the named agent in session (empty
	// starts a new one) and returns the whole answer.
	Chat(ctx context.Context, agent, session, message string) (*Answer, error)
	// RunWorkflow runs the named workflow with inputs and waits for the
	// run to end. A failed run is an Answer with Status "failed", not an
	// error.
	RunWorkflow(ctx context.Context, workflow string, inputs map[string]any) (*Answer, error)
}

// Mocker is a [Target] that answers tool calls with mocks. The runner
// calls SetMocks with a case's mocks (its own, then the suite's) before
// the case, and with nil after it. A target that is not a Mocker cannot
// run cases with mocks: they fail with an error saying so.
type Mocker interface {
	SetMocks(mocks []Mock)
}

// Cataloger is a [Target] that lists what it serves, so that a suite's
// unknown agent, workflow or tool names are reported before any case runs.
type Cataloger interface {
	Catalog(ctx context.Context) (*Catalog, error)
}

// Catalog is the agents, workflows and tools a target serves, by name.
type Catalog struct {
	Agents    []string
	Workflows []string
	Tools     []string
}

// Answer is what a target answered to one turn or workflow run.
type Answer struct {
	// Text is the agent's answer; for a workflow, its one string output
	// or else its outputs as JSON.
	Text string `json:"text"`
	// SessionID continues the conversation.
	SessionID string `json:"session_id,omitempty"`
	// ToolCalls are the tool calls of the turn, in order: the trajectory.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Citations are the fragments retrieved for the turn.
	Citations []Citation `json:"citations,omitempty"`
	// Tokens counts the turn's tokens; CostUSD is its cost by the
	// server's price table.
	Tokens  int     `json:"tokens,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Model is the model that answered.
	Model string `json:"model,omitempty"`
	// Status, Outputs and Error are a workflow run's.
	Status  string          `json:"status,omitempty"`
	Outputs json.RawMessage `json:"outputs,omitempty"`
	Error   string          `json:"error,omitempty"`
	// Latency is the time the call took, measured by the runner.
	Latency time.Duration `json:"latency_ns"`
}

// ToolCall is one tool call of a turn, with its outcome.
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    string          `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// Citation is a fragment retrieved from a knowledge base for a turn.
type Citation struct {
	Document      string  `json:"document"`
	DocumentID    string  `json:"document_id,omitempty"`
	KnowledgeBase string  `json:"knowledge_base,omitempty"`
	Content       string  `json:"content,omitempty"`
	Score         float64 `json:"score,omitempty"`
}
