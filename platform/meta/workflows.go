package meta

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// Workflows: a workflow is a named, versioned definition (JSON, parsed by
// package workflow); every saved version is kept so that a run reads the
// version it started with. A run is owned by one server instance through a
// lease (owner and expiry) that the owner renews while it runs; once the
// lease has expired, any replica may claim the run and resume it from its
// checkpoints: one row per finished node, written only by the run's
// current owner, never overwritten.

// Workflow run statuses.
const (
	RunQueued    = "queued"
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
	// RunWaiting is a run that waits for a person's answers: no replica
	// holds it; an answer (or its WakeAt) makes it running again.
	RunWaiting = "waiting"
)

// Workflow is a stored workflow at one version.
type Workflow struct {
	ID         string          `json:"id"`
	TenantID   string          `json:"-"`
	Name       string          `json:"name"`
	Version    int             `json:"version"`
	Definition json.RawMessage `json:"definition"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// WorkflowRun is one run of a workflow version.
type WorkflowRun struct {
	ID         string
	TenantID   string
	WorkflowID string
	Version    int
	// KeyID is the API key that started the run; a resumed run acts for it.
	KeyID  string
	Status string
	// Inputs and Outputs are JSON objects; Outputs is empty until the run
	// succeeded.
	Inputs, Outputs json.RawMessage
	Error           string
	// CancelRequested is set by a cancel; the owner sees it when it renews
	// its lease.
	CancelRequested bool
	// Owner is the server instance holding the lease, until LeaseUntil.
	Owner      string
	LeaseUntil time.Time
	CreatedAt  time.Time
	// StartedAt and FinishedAt are zero until the run started or finished.
	StartedAt, FinishedAt time.Time
	// WakeAt is, for a waiting run, the earliest deadline of its open
	// questions (zero: none), when a replica runs it again.
	WakeAt time.Time
}

// Active reports whether the run has not finished.
func (r WorkflowRun) Active() bool { return r.Status == RunQueued || r.Status == RunRunning }

// WorkflowCheckpoint is the stored result of one finished node of a run
// (or of one item of an iteration, under a key of its own).
type WorkflowCheckpoint struct {
	// Key identifies the checkpoint within the run (the node id, or the
	// node id and item index inside an iteration).
	Key    string
	NodeID string
	// Inputs, Outputs and Usage are JSON; Inputs as the node saw them,
	// with secrets redacted by the caller.
	Inputs, Outputs, Usage json.RawMessage
	Error                  string
	StartedAt, FinishedAt  time.Time
	// Waiting is the open question of a node that waits for a person, or
	// on an answer's checkpoint the question it answers (JSON; empty for
	// none).
	Waiting json.RawMessage
}

func rawOr(b json.RawMessage, def string) string {
	if len(b) == 0 {
		return def
	}
	return string(b)
}

// CreateWorkflow stores a new workflow at version 1 (w.Version is
// ignored). A name taken in the tenant is ErrConflict.
func (s *SQL) CreateWorkflow(ctx context.Context, w Workflow) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO workflows (tenant_id, id, name, version, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)`),
			w.TenantID, w.ID, w.Name, micros(w.CreatedAt), micros(w.UpdatedAt)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO workflow_versions (tenant_id, workflow_id, version, definition, created_at) VALUES (?, ?, 1, ?, ?)`),
			w.TenantID, w.ID, rawOr(w.Definition, "{}"), micros(w.UpdatedAt))
		return err
	})
	return wrap("create workflow "+w.Name, err)
}

// UpdateWorkflow stores w's name and definition as the workflow's next
// version and returns the workflow at that version. When w.Version is
// not zero it must be the current version (else ErrConflict), so that two
// editors do not overwrite each other unknowingly.
func (s *SQL) UpdateWorkflow(ctx context.Context, w Workflow) (Workflow, error) {
	var out Workflow
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var version int
		var created int64
		if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT version, created_at FROM workflows WHERE tenant_id = ? AND id = ?`), w.TenantID, w.ID).Scan(&version, &created); err != nil {
			return err
		}
		if w.Version != 0 && w.Version != version {
			return ErrConflict
		}
		next := version + 1
		res, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE workflows SET name = ?, version = ?, updated_at = ? WHERE tenant_id = ? AND id = ? AND version = ?`),
			w.Name, next, micros(w.UpdatedAt), w.TenantID, w.ID, version)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			if err == nil {
				err = ErrConflict
			}
			return err
		}
		if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO workflow_versions (tenant_id, workflow_id, version, definition, created_at) VALUES (?, ?, ?, ?, ?)`),
			w.TenantID, w.ID, next, rawOr(w.Definition, "{}"), micros(w.UpdatedAt)); err != nil {
			return err
		}
		out = w
		out.Version, out.CreatedAt = next, fromMicros(created)
		return nil
	})
	return out, wrap("update workflow "+w.ID, err)
}

const qWorkflow = `SELECT w.id, w.name, w.version, v.definition, w.created_at, w.updated_at
	FROM workflows w JOIN workflow_versions v ON v.tenant_id = w.tenant_id AND v.workflow_id = w.id AND v.version = w.version`

func scanWorkflow(tenant string, sc interface{ Scan(...any) error }) (Workflow, error) {
	w := Workflow{TenantID: tenant}
	var def string
	var created, updated int64
	if err := sc.Scan(&w.ID, &w.Name, &w.Version, &def, &created, &updated); err != nil {
		return Workflow{}, err
	}
	w.Definition = json.RawMessage(def)
	w.CreatedAt, w.UpdatedAt = fromMicros(created), fromMicros(updated)
	return w, nil
}

// Workflow returns a workflow at its current version.
func (s *SQL) Workflow(ctx context.Context, tenant, id string) (Workflow, error) {
	w, err := scanWorkflow(tenant, s.queryRow(ctx, qWorkflow+` WHERE w.tenant_id = ? AND w.id = ?`, tenant, id))
	return w, wrap("workflow "+id, err)
}

// WorkflowByName returns the tenant's workflow named name, at its current
// version.
func (s *SQL) WorkflowByName(ctx context.Context, tenant, name string) (Workflow, error) {
	w, err := scanWorkflow(tenant, s.queryRow(ctx, qWorkflow+` WHERE w.tenant_id = ? AND w.name = ?`, tenant, name))
	return w, wrap("workflow "+name, err)
}

// WorkflowVersion returns a workflow as it was at version (with its
// current name and times).
func (s *SQL) WorkflowVersion(ctx context.Context, tenant, id string, version int) (Workflow, error) {
	w, err := scanWorkflow(tenant, s.queryRow(ctx, `SELECT w.id, w.name, v.version, v.definition, w.created_at, v.created_at
		FROM workflows w JOIN workflow_versions v ON v.tenant_id = w.tenant_id AND v.workflow_id = w.id
		WHERE w.tenant_id = ? AND w.id = ? AND v.version = ?`, tenant, id, version))
	return w, wrap("workflow "+id, err)
}

// ListWorkflows returns the tenant's workflows at their current versions,
// by name.
func (s *SQL) ListWorkflows(ctx context.Context, tenant string) ([]Workflow, error) {
	rows, err := s.query(ctx, qWorkflow+` WHERE w.tenant_id = ? ORDER BY w.name`, tenant)
	if err != nil {
		return nil, wrap("list workflows", err)
	}
	defer rows.Close()
	out := []Workflow{}
	for rows.Next() {
		w, err := scanWorkflow(tenant, rows)
		if err != nil {
			return nil, wrap("list workflows", err)
		}
		out = append(out, w)
	}
	return out, wrap("list workflows", rows.Err())
}

// DeleteWorkflow deletes a workflow with its versions, runs and
// checkpoints. The owner of a run still going loses its lease (its next
// renewal fails) and stops.
func (s *SQL) DeleteWorkflow(ctx context.Context, tenant, id string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM workflows WHERE tenant_id = ? AND id = ?`), tenant, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = sql.ErrNoRows
			}
			return err
		}
		for _, q := range []struct {
			stmt string
			args []any
		}{
			{`DELETE FROM workflow_versions WHERE tenant_id = ? AND workflow_id = ?`, []any{tenant, id}},
			{`DELETE FROM workflow_checkpoints WHERE tenant_id = ? AND run_id IN (SELECT id FROM workflow_runs WHERE tenant_id = ? AND workflow_id = ?)`, []any{tenant, tenant, id}},
			{`DELETE FROM workflow_runs WHERE tenant_id = ? AND workflow_id = ?`, []any{tenant, id}},
		} {
			if _, err := tx.ExecContext(ctx, s.d.rebind(q.stmt), q.args...); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("delete workflow "+id, err)
}

const qRunCols = `id, workflow_id, version, key_id, status, inputs, outputs, error, cancel_requested, owner, lease_until, created_at, started_at, finished_at, wake_at`

func scanRun(tenant string, sc interface{ Scan(...any) error }) (WorkflowRun, error) {
	r := WorkflowRun{TenantID: tenant}
	var in, out string
	var cancel int
	var lease, created, started, finished, wake int64
	if err := sc.Scan(&r.ID, &r.WorkflowID, &r.Version, &r.KeyID, &r.Status, &in, &out, &r.Error, &cancel, &r.Owner, &lease, &created, &started, &finished, &wake); err != nil {
		return WorkflowRun{}, err
	}
	r.Inputs = json.RawMessage(in)
	if out != "" {
		r.Outputs = json.RawMessage(out)
	}
	r.CancelRequested = cancel != 0
	r.LeaseUntil, r.CreatedAt = fromMicros(lease), fromMicros(created)
	if started != 0 {
		r.StartedAt = fromMicros(started)
	}
	if finished != 0 {
		r.FinishedAt = fromMicros(finished)
	}
	if wake != 0 {
		r.WakeAt = fromMicros(wake)
	}
	return r, nil
}

func microsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}

// CreateWorkflowRun stores a new run, owned by r.Owner until r.LeaseUntil
// (an owner-less queued run has an empty Owner).
func (s *SQL) CreateWorkflowRun(ctx context.Context, r WorkflowRun) error {
	_, err := s.exec(ctx, `INSERT INTO workflow_runs (tenant_id, `+qRunCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.TenantID, r.ID, r.WorkflowID, r.Version, r.KeyID, r.Status, rawOr(r.Inputs, "{}"), string(r.Outputs), r.Error, boolInt(r.CancelRequested),
		r.Owner, microsOrZero(r.LeaseUntil), micros(r.CreatedAt), microsOrZero(r.StartedAt), microsOrZero(r.FinishedAt), microsOrZero(r.WakeAt))
	return wrap("create workflow run "+r.ID, err)
}

// WorkflowRun returns one run of the tenant.
func (s *SQL) WorkflowRun(ctx context.Context, tenant, id string) (WorkflowRun, error) {
	r, err := scanRun(tenant, s.queryRow(ctx, `SELECT `+qRunCols+` FROM workflow_runs WHERE tenant_id = ? AND id = ?`, tenant, id))
	return r, wrap("workflow run "+id, err)
}

// ListWorkflowRuns returns a workflow's runs, newest first, at most limit.
func (s *SQL) ListWorkflowRuns(ctx context.Context, tenant, workflowID string, limit int) ([]WorkflowRun, error) {
	rows, err := s.query(ctx, `SELECT `+qRunCols+` FROM workflow_runs WHERE tenant_id = ? AND workflow_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, tenant, workflowID, limit)
	if err != nil {
		return nil, wrap("list workflow runs", err)
	}
	defer rows.Close()
	out := []WorkflowRun{}
	for rows.Next() {
		r, err := scanRun(tenant, rows)
		if err != nil {
			return nil, wrap("list workflow runs", err)
		}
		out = append(out, r)
	}
	return out, wrap("list workflow runs", rows.Err())
}

// ClaimWorkflowRun makes owner the owner of an unfinished run until the
// given time, when the run has no owner, is owner's already, or its
// lease expired before now; the run becomes running. It returns the
// claimed run, or false (and no error) when another owner holds it or the
// run has finished or is gone.
func (s *SQL) ClaimWorkflowRun(ctx context.Context, tenant, id, owner string, now, until time.Time) (WorkflowRun, bool, error) {
	res, err := s.exec(ctx, `UPDATE workflow_runs SET owner = ?, lease_until = ?, status = ?,
		started_at = CASE WHEN started_at = 0 THEN ? ELSE started_at END
		WHERE tenant_id = ? AND id = ? AND status IN (?, ?) AND (owner = '' OR owner = ? OR lease_until < ?)`,
		owner, micros(until), RunRunning, micros(now), tenant, id, RunQueued, RunRunning, owner, micros(now))
	if err != nil {
		return WorkflowRun{}, false, wrap("claim workflow run "+id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return WorkflowRun{}, false, wrap("claim workflow run "+id, err)
	}
	r, err := s.WorkflowRun(ctx, tenant, id)
	if err != nil {
		return WorkflowRun{}, false, err
	}
	return r, r.Owner == owner, nil
}

// RenewWorkflowRun extends owner's lease on a run. It reports whether
// owner still holds it, and whether a cancel was requested.
func (s *SQL) RenewWorkflowRun(ctx context.Context, tenant, id, owner string, until time.Time) (held, cancel bool, err error) {
	res, err := s.exec(ctx, `UPDATE workflow_runs SET lease_until = ? WHERE tenant_id = ? AND id = ? AND owner = ? AND status IN (?, ?)`,
		micros(until), tenant, id, owner, RunQueued, RunRunning)
	if err != nil {
		return false, false, wrap("renew workflow run "+id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return false, false, wrap("renew workflow run "+id, err)
	}
	var c int
	err = s.queryRow(ctx, `SELECT cancel_requested FROM workflow_runs WHERE tenant_id = ? AND id = ?`, tenant, id).Scan(&c)
	return true, c != 0, wrap("renew workflow run "+id, err)
}

// FinishWorkflowRun records the end of a run (r.Status, Outputs, Error,
// FinishedAt) when owner still holds it; it reports false otherwise.
func (s *SQL) FinishWorkflowRun(ctx context.Context, r WorkflowRun, owner string) (bool, error) {
	res, err := s.exec(ctx, `UPDATE workflow_runs SET status = ?, outputs = ?, error = ?, finished_at = ?, owner = '', lease_until = 0
		WHERE tenant_id = ? AND id = ? AND owner = ? AND status IN (?, ?)`,
		r.Status, string(r.Outputs), r.Error, micros(r.FinishedAt), r.TenantID, r.ID, owner, RunQueued, RunRunning)
	if err != nil {
		return false, wrap("finish workflow run "+r.ID, err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap("finish workflow run "+r.ID, err)
}

// CancelWorkflowRun asks for an unfinished run to stop: its owner sees the
// request when it next renews its lease. A run nobody holds (its owner
// died, or it waits for answers) is cancelled at once. It returns the run as it is after.
func (s *SQL) CancelWorkflowRun(ctx context.Context, tenant, id string, now time.Time) (WorkflowRun, error) {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE workflow_runs SET status = ?, error = ?, finished_at = ?, cancel_requested = 1, owner = '', lease_until = 0, wake_at = 0
			WHERE tenant_id = ? AND id = ? AND status IN (?, ?, ?) AND (owner = '' OR lease_until < ?)`),
			RunCancelled, "cancelled", micros(now), tenant, id, RunQueued, RunRunning, RunWaiting, micros(now)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE workflow_runs SET cancel_requested = 1 WHERE tenant_id = ? AND id = ? AND status IN (?, ?)`),
			tenant, id, RunQueued, RunRunning)
		return err
	})
	if err != nil {
		return WorkflowRun{}, wrap("cancel workflow run "+id, err)
	}
	return s.WorkflowRun(ctx, tenant, id)
}

// ExpiredWorkflowRuns lists, oldest first and at most limit, the
// unfinished runs whose lease expired before now (their owner died or
// stopped): the runs a replica may claim and resume.
func (s *SQL) ExpiredWorkflowRuns(ctx context.Context, now time.Time, limit int) ([]WorkflowRun, error) {
	rows, err := s.query(ctx, `SELECT tenant_id, `+qRunCols+` FROM workflow_runs WHERE status IN (?, ?) AND lease_until < ? ORDER BY created_at, id LIMIT ?`,
		RunQueued, RunRunning, micros(now), limit)
	if err != nil {
		return nil, wrap("expired workflow runs", err)
	}
	defer rows.Close()
	var out []WorkflowRun
	for rows.Next() {
		var tenant string
		r, err := scanRun("", scanPrefix{rows, &tenant})
		if err != nil {
			return nil, wrap("expired workflow runs", err)
		}
		r.TenantID = tenant
		out = append(out, r)
	}
	return out, wrap("expired workflow runs", rows.Err())
}

// WaitWorkflowRun records that a run owner holds waits for answers: the
// lease is dropped, and wake (zero: never) is when a replica runs it again
// (see DueWorkflowRuns). It reports false when owner no longer holds it.
func (s *SQL) WaitWorkflowRun(ctx context.Context, tenant, id, owner string, wake time.Time) (bool, error) {
	res, err := s.exec(ctx, `UPDATE workflow_runs SET status = ?, owner = '', lease_until = 0, wake_at = ?
		WHERE tenant_id = ? AND id = ? AND owner = ? AND status IN (?, ?)`,
		RunWaiting, microsOrZero(wake), tenant, id, owner, RunQueued, RunRunning)
	if err != nil {
		return false, wrap("wait workflow run "+id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap("wait workflow run "+id, err)
}

// ResumeWorkflowRun makes owner the owner of a waiting run until the given
// time; the run becomes running. Of concurrent callers one gets the run;
// the others get false (and no error), as do callers for a run that does
// not wait.
func (s *SQL) ResumeWorkflowRun(ctx context.Context, tenant, id, owner string, until time.Time) (WorkflowRun, bool, error) {
	res, err := s.exec(ctx, `UPDATE workflow_runs SET status = ?, owner = ?, lease_until = ?, wake_at = 0
		WHERE tenant_id = ? AND id = ? AND status = ?`, RunRunning, owner, micros(until), tenant, id, RunWaiting)
	if err != nil {
		return WorkflowRun{}, false, wrap("resume workflow run "+id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return WorkflowRun{}, false, wrap("resume workflow run "+id, err)
	}
	r, err := s.WorkflowRun(ctx, tenant, id)
	if err != nil {
		return WorkflowRun{}, false, err
	}
	return r, r.Owner == owner && r.Status == RunRunning, nil
}

// DueWorkflowRuns lists, at most limit, the waiting runs whose WakeAt
// passed before now: a replica resumes them to take their timeout
// branches.
func (s *SQL) DueWorkflowRuns(ctx context.Context, now time.Time, limit int) ([]WorkflowRun, error) {
	rows, err := s.query(ctx, `SELECT tenant_id, `+qRunCols+` FROM workflow_runs WHERE status = ? AND wake_at > 0 AND wake_at < ? ORDER BY wake_at, id LIMIT ?`,
		RunWaiting, micros(now), limit)
	if err != nil {
		return nil, wrap("due workflow runs", err)
	}
	defer rows.Close()
	var out []WorkflowRun
	for rows.Next() {
		var tenant string
		r, err := scanRun("", scanPrefix{rows, &tenant})
		if err != nil {
			return nil, wrap("due workflow runs", err)
		}
		r.TenantID = tenant
		out = append(out, r)
	}
	return out, wrap("due workflow runs", rows.Err())
}

// OpenInterrupt is the open question of a waiting run's node.
type OpenInterrupt struct {
	RunID, WorkflowID string
	// Waiting is the question, as the checkpoint holds it (JSON).
	Waiting json.RawMessage
}

// OpenInterrupts returns the open questions of the tenant's waiting runs
// (those of workflow workflowID only, when not empty), oldest first, at
// most limit.
func (s *SQL) OpenInterrupts(ctx context.Context, tenant, workflowID string, limit int) ([]OpenInterrupt, error) {
	q := `SELECT r.id, r.workflow_id, c.waiting FROM workflow_runs r JOIN workflow_checkpoints c ON c.tenant_id = r.tenant_id AND c.run_id = r.id
		WHERE r.tenant_id = ? AND r.status = ? AND c.waiting <> '' AND c.finished_at = 0 AND c.error = ''`
	args := []any{tenant, RunWaiting}
	if workflowID != "" {
		q += ` AND r.workflow_id = ?`
		args = append(args, workflowID)
	}
	rows, err := s.query(ctx, q+` ORDER BY c.started_at, r.id, c.key LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, wrap("open interrupts", err)
	}
	defer rows.Close()
	out := []OpenInterrupt{}
	for rows.Next() {
		var oi OpenInterrupt
		var w string
		if err := rows.Scan(&oi.RunID, &oi.WorkflowID, &w); err != nil {
			return nil, wrap("open interrupts", err)
		}
		oi.Waiting = json.RawMessage(w)
		out = append(out, oi)
	}
	return out, wrap("open interrupts", rows.Err())
}

// ResetWorkflowLeases drops every lease on runs held by owner: a server on
// an embedded store calls it at start, for the runs its previous process
// left, so that it resumes them at once.
func (s *SQL) ResetWorkflowLeases(ctx context.Context, owner string) error {
	_, err := s.exec(ctx, `UPDATE workflow_runs SET lease_until = 0 WHERE owner = ? AND status IN (?, ?)`, owner, RunQueued, RunRunning)
	return wrap("reset workflow leases", err)
}

// scanPrefix scans a leading column into first, then the rest with sc.
type scanPrefix struct {
	sc    interface{ Scan(...any) error }
	first *string
}

func (p scanPrefix) Scan(dst ...any) error {
	return p.sc.Scan(append([]any{p.first}, dst...)...)
}

// Statements of a run's checkpoints, prepared at open on SQLite.
const (
	qCheckpointSeq  = `SELECT COALESCE(MAX(seq), 0) FROM workflow_checkpoints WHERE tenant_id = ? AND run_id = ?`
	qSaveCheckpoint = `INSERT INTO workflow_checkpoints (tenant_id, run_id, key, node_id, inputs, outputs, error, usage, started_at, finished_at, seq, waiting)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM workflow_runs WHERE tenant_id = ? AND id = ? AND owner = ? AND status IN (?, ?))
			ON CONFLICT (tenant_id, run_id, key) DO UPDATE SET node_id = excluded.node_id, outputs = excluded.outputs, error = excluded.error,
				usage = excluded.usage, started_at = excluded.started_at, finished_at = excluded.finished_at, waiting = excluded.waiting`
	qCheckpointInputs = `UPDATE workflow_checkpoints SET inputs = ? WHERE tenant_id = ? AND run_id = ? AND key = ?`
)

// txRow queries one row of q in tx, through its statement prepared at
// open when there is one (SQLite).
func (s *SQL) txRow(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	if p := s.stmts[q]; p != nil {
		return tx.StmtContext(ctx, p).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, s.d.rebind(q), args...)
}

// txExecResult executes q in tx, through its statement prepared at open
// when there is one (SQLite).
func (s *SQL) txExecResult(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if p := s.stmts[q]; p != nil {
		return tx.StmtContext(ctx, p).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, s.d.rebind(q), args...)
}

// SaveWorkflowCheckpoint stores a node's checkpoint when owner holds the
// run's lease (ErrConflict otherwise: the run was taken over or
// finished). It replaces the checkpoint stored under cp.Key (a node's
// start marker, then its result), keeping the inputs recorded with
// SetWorkflowCheckpointInputs and the order of first saves.
//
// Checkpoints are group-committed: the saves of concurrent nodes (of any
// run) share a transaction, and all of them hold one connection at a time.
func (s *SQL) SaveWorkflowCheckpoint(ctx context.Context, tenant, runID, owner string, cp WorkflowCheckpoint) error {
	err := s.runWrites.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var seq int64
		if err := s.txRow(ctx, tx, qCheckpointSeq, tenant, runID).Scan(&seq); err != nil {
			return err
		}
		res, err := s.txExecResult(ctx, tx, qSaveCheckpoint,
			tenant, runID, cp.Key, cp.NodeID, rawOr(cp.Inputs, "null"), rawOr(cp.Outputs, "null"), cp.Error, rawOr(cp.Usage, "null"),
			microsOrZero(cp.StartedAt), microsOrZero(cp.FinishedAt), seq+1, string(cp.Waiting),
			tenant, runID, owner, RunQueued, RunRunning)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return ErrConflict
	})
	return wrap("save checkpoint "+cp.Key, err)
}

// SetWorkflowCheckpointInputs records the inputs a checkpointed node was
// given (JSON, secrets already redacted), for the run's history.
// It is group-committed with the checkpoints.
func (s *SQL) SetWorkflowCheckpointInputs(ctx context.Context, tenant, runID, key string, inputs json.RawMessage) error {
	err := s.runWrites.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := s.txExecResult(ctx, tx, qCheckpointInputs, rawOr(inputs, "null"), tenant, runID, key)
		return err
	})
	return wrap("checkpoint inputs "+key, err)
}

// WorkflowCheckpoints returns a run's checkpoints in the order they were
// saved.
func (s *SQL) WorkflowCheckpoints(ctx context.Context, tenant, runID string) ([]WorkflowCheckpoint, error) {
	rows, err := s.query(ctx, `SELECT key, node_id, inputs, outputs, error, usage, started_at, finished_at, waiting FROM workflow_checkpoints
		WHERE tenant_id = ? AND run_id = ? ORDER BY seq`, tenant, runID)
	if err != nil {
		return nil, wrap("workflow checkpoints", err)
	}
	defer rows.Close()
	out := []WorkflowCheckpoint{}
	for rows.Next() {
		var cp WorkflowCheckpoint
		var in, o, u, wait string
		var started, finished int64
		if err := rows.Scan(&cp.Key, &cp.NodeID, &in, &o, &cp.Error, &u, &started, &finished, &wait); err != nil {
			return nil, wrap("workflow checkpoints", err)
		}
		cp.Inputs, cp.Outputs, cp.Usage = json.RawMessage(in), json.RawMessage(o), json.RawMessage(u)
		if wait != "" {
			cp.Waiting = json.RawMessage(wait)
		}
		if started != 0 {
			cp.StartedAt = fromMicros(started)
		}
		if finished != 0 {
			cp.FinishedAt = fromMicros(finished)
		}
		out = append(out, cp)
	}
	return out, wrap("workflow checkpoints", rows.Err())
}
