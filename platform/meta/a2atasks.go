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
	t, err := scanA2ATask(s.queryRow(ctx, `SELECT id, `+a2aTaskCols+` FROM a2a_tasks WHERE tenant_id = ? AND id = ?`, tenant, id), tenant)
	if err != nil {
		return A2ATask{}, wrap("a2a task "+id, err)
	}
	return t, nil
}

// scanA2ATask reads a row of id and a2aTaskCols.
func scanA2ATask(row interface{ Scan(...any) error }, tenant string) (A2ATask, error) {
	t := A2ATask{TenantID: tenant}
	var final int
	var data string
	var created, updated, stale int64
	if err := row.Scan(&t.ID, &t.AgentID, &t.ContextID, &t.State, &final, &t.Owner, &data, &created, &updated, &stale); err != nil {
		return A2ATask{}, err
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

// A2ATaskQuery selects an agent's tasks for ListA2ATasks.
type A2ATaskQuery struct {
	TenantID, AgentID string
	// ContextID, when set, keeps the tasks of this context.
	ContextID string
	// State, when set, keeps the tasks in this state. An unfinished task
	// past its StaleAt (at Now) is in state Lost, whatever its stored one.
	State, Lost string
	Now         time.Time
	// UpdatedSince, when set, keeps the tasks last updated at or after it.
	UpdatedSince time.Time
	// AfterUpdated and AfterID, when AfterID is set, are the last task of
	// the previous page: the tasks that come after it in the list's order.
	AfterUpdated time.Time
	AfterID      string
	// Limit is the most tasks returned.
	Limit int
}

// ListA2ATasks returns the tasks q selects, most recently updated first
// (then by id, descending), and how many q selects in all pages.
func (s *SQL) ListA2ATasks(ctx context.Context, q A2ATaskQuery) ([]A2ATask, int, error) {
	where := `tenant_id = ? AND agent_id = ?`
	args := []any{q.TenantID, q.AgentID}
	if q.ContextID != "" {
		where += ` AND context_id = ?`
		args = append(args, q.ContextID)
	}
	if q.State != "" {
		if q.State == q.Lost {
			where += ` AND ((final = 1 AND state = ?) OR (final = 0 AND stale_at < ?))`
		} else {
			where += ` AND state = ? AND (final = 1 OR stale_at >= ?)`
		}
		args = append(args, q.State, micros(q.Now))
	}
	if !q.UpdatedSince.IsZero() {
		where += ` AND updated_at >= ?`
		args = append(args, micros(q.UpdatedSince))
	}
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM a2a_tasks WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, wrap("count a2a tasks", err)
	}
	if q.AfterID != "" {
		after := micros(q.AfterUpdated)
		where += ` AND (updated_at < ? OR (updated_at = ? AND id < ?))`
		args = append(args, after, after, q.AfterID)
	}
	rows, err := s.query(ctx, `SELECT id, `+a2aTaskCols+` FROM a2a_tasks WHERE `+where+` ORDER BY updated_at DESC, id DESC LIMIT ?`,
		append(args, q.Limit)...)
	if err != nil {
		return nil, 0, wrap("list a2a tasks", err)
	}
	defer rows.Close()
	var out []A2ATask
	for rows.Next() {
		t, err := scanA2ATask(rows, q.TenantID)
		if err != nil {
			return nil, 0, wrap("list a2a tasks", err)
		}
		out = append(out, t)
	}
	return out, total, wrap("list a2a tasks", rows.Err())
}
