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
