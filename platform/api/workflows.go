package api

import (
	"encoding/json"
	"time"
)

// WorkflowRun is one run of a workflow. Nodes are listed when a run is
// read on its own (a blocking run's answer, GET …/runs/{run}), not in lists.
type WorkflowRun struct {
	ID         string          `json:"id"`
	WorkflowID string          `json:"workflow_id"`
	Version    int             `json:"version"`
	Status     string          `json:"status"`
	Inputs     json.RawMessage `json:"inputs"`
	Outputs    json.RawMessage `json:"outputs,omitempty"`
	Error      string          `json:"error,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	StartedAt  time.Time       `json:"started_at,omitzero"`
	FinishedAt time.Time       `json:"finished_at,omitzero"`
	Nodes      []WorkflowNode  `json:"nodes,omitempty"`
	// Interrupts are the open questions of a waiting run (status
	// "waiting"), when the run is read on its own.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
}

// WorkflowNode is one finished node of a run: its inputs and outputs (the
// values of the secrets the run used redacted), error, usage and times.
type WorkflowNode struct {
	Key        string          `json:"key"`
	NodeID     string          `json:"node_id"`
	Inputs     json.RawMessage `json:"inputs,omitempty"`
	Outputs    json.RawMessage `json:"outputs,omitempty"`
	Error      string          `json:"error,omitempty"`
	Usage      json.RawMessage `json:"usage,omitempty"`
	StartedAt  time.Time       `json:"started_at,omitzero"`
	FinishedAt time.Time       `json:"finished_at,omitzero"`
	LatencyMS  int64           `json:"latency_ms"`
}

// Interrupt kinds.
const (
	// InterruptWorkflow is a workflow run waiting at a human node or a Go
	// node's pause.
	InterruptWorkflow = "workflow"
	// InterruptTurn is a chat turn waiting for approval of tool calls
	// (an agent's tool_approvals).
	InterruptTurn = "turn"
)

// Interrupt is an open question to a person, as the inbox lists it
// (GET /v1/interrupts) and a run's interrupts route does: what waits
// (Kind; for a workflow run, its run, node and the answer's JSON Schema),
// since when and until when, and the route that answers it.
type Interrupt struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// RunID and WorkflowID name the waiting run (kind "workflow").
	RunID      string `json:"run_id,omitempty"`
	WorkflowID string `json:"workflow_id,omitempty"`
	// NodeID is the node that waits; Key tells apart its runs inside an
	// iteration; Name is a Go node's pause's name.
	// SessionID and AgentID name the paused turn's session and agent,
	// Calls the tool calls waiting for a decision (kind "turn").
	SessionID string        `json:"session_id,omitempty"`
	AgentID   string        `json:"agent_id,omitempty"`
	Calls     []PendingCall `json:"calls,omitempty"`
	NodeID    string        `json:"node_id,omitempty"`
	Key       string        `json:"key,omitempty"`
	Name      string        `json:"name,omitempty"`
	Message   string        `json:"message,omitempty"`
	// OutputSchema is the JSON Schema an answer must fit (absent: any
	// object).
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	CreatedAt    time.Time       `json:"created_at"`
	// ExpiresAt, when set, is when the question times out and the run
	// takes its timeout branch.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Resume is the route that answers it (POST).
	Resume string `json:"resume"`
}

// InterruptList is a page of open interrupts, oldest first.
type InterruptList struct {
	Data []Interrupt `json:"data"`
}

// ResumeRequest answers a workflow run's interrupt: Answer must fit the
// interrupt's output_schema. Stream asks for the resumed run's events as
// SSE instead of the run once it stops again.
type ResumeRequest struct {
	Answer map[string]any `json:"answer"`
	// Decisions answer a paused turn's calls (kind "turn"), one per call.
	Decisions []Decision `json:"decisions,omitempty"`
	Stream    bool       `json:"stream,omitempty"`
}

// PendingCall is a tool call of a paused turn, waiting for a decision.
type PendingCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Decision answers one pending call: action "approve" runs it as the
// model made it, "edit" with Arguments instead (checked against the
// tool's JSON Schema), "reject" answers the model with Reason instead of
// running it.
type Decision struct {
	CallID    string          `json:"call_id"`
	Action    string          `json:"action"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
}
