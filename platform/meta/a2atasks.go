package meta

import (
	"context"
	"encoding/json"
	"time"
)

// A2A tasks: each turn served over A2A is a task (see the platform's
// a2aserver.go). The replica that runs a task writes it when it starts,
// at each change of state and when it ends; any replica reads it. The
// store keeps the task's protocol form as JSON and knows only whether it
// is final: a final task is never replaced by an unfinished one, so a
// late write of the running replica cannot undo a cancel made elsewhere.

// A2ATask is a stored A2A task.
type A2ATask struct {
	TenantID  string
	ID        string
	AgentID   string
	ContextID string
	// State is the task's A2A state ("working", "completed", …); Final
	// says it is over (completed, failed, canceled, rejected).
	State string
	Final bool
	// Owner is the server instance that runs (or ran) the task.
	Owner string
	// Data is the task as JSON: status, history, artifacts.
	Data      json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// StaleAt is when an unfinished task is taken to be lost with its
	// owner: no turn runs that long.
	StaleAt time.Time
}

const a2aTaskCols = `agent_id, context_id, state, final, owner, data, created_at, updated_at, stale_at`

// PutA2ATask stores t, replacing the stored task of its id unless that
// one is final and t is not. The creation time of a replaced task is
// kept.
func (s *SQL) PutA2ATask(ctx context.Context, t A2ATask) error {
	_, err := s.exec(ctx, `INSERT INTO a2a_tasks (tenant_id, id, `+a2aTaskCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, id) DO UPDATE SET agent_id = excluded.agent_id, context_id = excluded.context_id, state = excluded.state,
			final = excluded.final, owner = excluded.owner, data = excluded.data, updated_at = excluded.updated_at, stale_at = excluded.stale_at
		WHERE a2a_tasks.final = 0 OR excluded.final = 1`,
		t.TenantID, t.ID, t.AgentID, t.ContextID, t.State, boolInt(t.Final), t.Owner, rawOr(t.Data, "{}"),
		micros(t.CreatedAt), micros(t.UpdatedAt), micros(t.StaleAt))
	return wrap("put a2a task "+t.ID, err)
}

// FinishA2ATask stores t, a final task, over the stored task of its id
// only while that one is unfinished; it reports whether it did (false:
// the task is unknown or already over). The owner is kept.
func (s *SQL) FinishA2ATask(ctx context.Context, t A2ATask) (bool, error) {
	res, err := s.exec(ctx, `UPDATE a2a_tasks SET state = ?, final = 1, data = ?, updated_at = ? WHERE tenant_id = ? AND id = ? AND final = 0`,
		t.State, rawOr(t.Data, "{}"), micros(t.UpdatedAt), t.TenantID, t.ID)
	if err != nil {
		return false, wrap("finish a2a task "+t.ID, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// A2ATask returns a task of the tenant.
func (s *SQL) A2ATask(ctx context.Context, tenant, id string) (A2ATask, error) {
	t := A2ATask{TenantID: tenant, ID: id}
	var final int
	var data string
	var created, updated, stale int64
	err := s.queryRow(ctx, `SELECT `+a2aTaskCols+` FROM a2a_tasks WHERE tenant_id = ? AND id = ?`, tenant, id).
		Scan(&t.AgentID, &t.ContextID, &t.State, &final, &t.Owner, &data, &created, &updated, &stale)
	if err != nil {
		return A2ATask{}, wrap("a2a task "+id, err)
	}
	t.Final, t.Data = final != 0, json.RawMessage(data)
	t.CreatedAt, t.UpdatedAt, t.StaleAt = fromMicros(created), fromMicros(updated), fromMicros(stale)
	return t, nil
}

// PruneA2ATasks deletes the tasks last updated before before, and returns
// how many.
func (s *SQL) PruneA2ATasks(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM a2a_tasks WHERE updated_at < ?`, micros(before))
	if err != nil {
		return 0, wrap("prune a2a tasks", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
