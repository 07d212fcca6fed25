package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/weftlabs/weft/llm"
)

// Checkpoint records a node of a run. It is saved when the node finishes,
// with its outputs; and, for a node with effects outside the run that is
// not idempotent, also when it starts (Finished and Error empty: a resumed
// run will not run it again) and when it fails the run (Finished empty,
// Error set: a resumed run tries it again); and when it waits for a
// person (Waiting set). A checkpoint replaces an earlier one with the
// same Key. Beside a node's own (Key: its key), the results of its Steps
// and the answers to its questions are checkpoints of their own, keyed
// "KEY#step:NAME" and "KEY#answer:NAME": each result is stored once, and
// a checkpoint holds one node's result, never the run's whole state.
type Checkpoint struct {
	NodeID string `json:"node_id"`
	// Key is the node's ID, prefixed inside an iteration by the iteration
	// and the item ("loop[2].draft").
	Key     string         `json:"key"`
	Outputs map[string]any `json:"outputs,omitempty"`
	// Error is the failure the node's policy let the run go past (its
	// outputs are then the default, or the error branch's).
	Error    string    `json:"error,omitempty"`
	Usage    llm.Usage `json:"usage,omitzero"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Waiting is the open question of a node that waits for a person
	// (Finished empty); on the checkpoint of an answer, the question it
	// answers.
	Waiting *Interrupt `json:"waiting,omitempty"`
}

// Checkpointer keeps the checkpoints of runs. Save is called by the run's
// scheduler before the nodes that follow the checkpointed node start, so
// a run that resumes from Completed never runs a finished node again.
// Implementations must be safe for concurrent use (iterations save from
// several goroutines) and must return from Completed what Save stored,
// outputs as JSON decodes them.
type Checkpointer interface {
	// Completed returns the checkpoints of run runID, in any order.
	Completed(ctx context.Context, runID string) ([]Checkpoint, error)
	// Save stores cp for run runID, replacing the one with the same Key.
	Save(ctx context.Context, runID string, cp Checkpoint) error
}

// MemoryCheckpointer is a [Checkpointer] in memory, for tests and for
// programs that resume runs within one process. It stores a JSON copy of
// each checkpoint, as a database would.
type MemoryCheckpointer struct {
	mu   sync.Mutex
	runs map[string]map[string][]byte
}

// NewMemoryCheckpointer returns an empty checkpointer.
func NewMemoryCheckpointer() *MemoryCheckpointer {
	return &MemoryCheckpointer{runs: map[string]map[string][]byte{}}
}

// Save stores cp.
func (m *MemoryCheckpointer) Save(ctx context.Context, runID string, cp Checkpoint) error {
	b, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", cp.Key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	run := m.runs[runID]
	if run == nil {
		run = map[string][]byte{}
		m.runs[runID] = run
	}
	run[cp.Key] = b
	return nil
}

// Delete removes the checkpoints of run runID: a run's checkpoints go
// with the run, when its record expires.
func (m *MemoryCheckpointer) Delete(runID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.runs, runID)
}

// Completed returns the checkpoints of run runID, ordered by key.
func (m *MemoryCheckpointer) Completed(ctx context.Context, runID string) ([]Checkpoint, error) {
	m.mu.Lock()
	run := m.runs[runID]
	keys := sortedKeys(run)
	raw := make([][]byte, len(keys))
	for i, k := range keys {
		raw[i] = run[k]
	}
	m.mu.Unlock()
	out := make([]Checkpoint, len(raw))
	for i, b := range raw {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", keys[i], err)
		}
	}
	return out, nil
}
