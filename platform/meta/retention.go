package meta

import (
	"context"
	"database/sql"
	"time"
)

// Retention is how long a tenant keeps its sessions (from their last
// update) and its turn traces, in days; 0 means the server's setting
// (sessions: kept until deleted; traces: WEFT_TRACE_RETENTION).
type Retention struct {
	TenantID     string    `json:"-"`
	SessionsDays int       `json:"sessions_days"`
	TracesDays   int       `json:"traces_days"`
	UpdatedAt    time.Time `json:"updated_at,omitzero"`
}

const day = int64(24 * time.Hour / time.Second)

// SetRetention stores r for its tenant; a retention of zeros removes the
// tenant's.
func (s *SQL) SetRetention(ctx context.Context, r Retention) error {
	if r.SessionsDays == 0 && r.TracesDays == 0 {
		_, err := s.exec(ctx, `DELETE FROM tenant_retention WHERE tenant_id = ?`, r.TenantID)
		return wrap("set retention", err)
	}
	_, err := s.exec(ctx, `INSERT INTO tenant_retention (tenant_id, sessions_seconds, traces_seconds, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant_id) DO UPDATE SET sessions_seconds = excluded.sessions_seconds, traces_seconds = excluded.traces_seconds, updated_at = excluded.updated_at`,
		r.TenantID, int64(r.SessionsDays)*day, int64(r.TracesDays)*day, micros(r.UpdatedAt))
	return wrap("set retention", err)
}

// Retentions returns the retention of tenant, or of every tenant that set
// one when tenant is empty.
func (s *SQL) Retentions(ctx context.Context, tenant string) ([]Retention, error) {
	q, args := `SELECT tenant_id, sessions_seconds, traces_seconds, updated_at FROM tenant_retention`, []any{}
	if tenant != "" {
		q, args = q+` WHERE tenant_id = ?`, append(args, tenant)
	}
	rows, err := s.query(ctx, q+` ORDER BY tenant_id`, args...)
	if err != nil {
		return nil, wrap("retentions", err)
	}
	defer rows.Close()
	out := []Retention{}
	for rows.Next() {
		var r Retention
		var ss, ts, at int64
		if err := rows.Scan(&r.TenantID, &ss, &ts, &at); err != nil {
			return nil, wrap("retentions", err)
		}
		r.SessionsDays, r.TracesDays, r.UpdatedAt = int(ss/day), int(ts/day), fromMicros(at)
		out = append(out, r)
	}
	return out, wrap("retentions", rows.Err())
}

// ExpiredSessions returns up to limit of tenant's sessions last updated
// before before, oldest first.
func (s *SQL) ExpiredSessions(ctx context.Context, tenant string, before time.Time, limit int) ([]Session, error) {
	rows, err := s.query(ctx, `SELECT id, agent_id, parent_id, user_id, created_at, updated_at, interrupt FROM sessions
		WHERE tenant_id = ? AND updated_at < ? ORDER BY updated_at, id LIMIT ?`, tenant, micros(before), limit)
	if err != nil {
		return nil, wrap("expired sessions", err)
	}
	out, err := scanSessions(tenant, rows, []Session{})
	return out, wrap("expired sessions", err)
}

// DeleteSessions deletes tenant's sessions ids, with their turn traces and
// the A2A tasks whose context they are, in one transaction (their messages
// live in the session store, deleted first by the caller), and returns how
// many sessions it deleted.
func (s *SQL) DeleteSessions(ctx context.Context, tenant string, ids []string) (int, error) {
	n := 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			for _, q := range []string{
				`DELETE FROM turn_traces WHERE tenant_id = ? AND session_id = ?`,
				`DELETE FROM a2a_tasks WHERE tenant_id = ? AND context_id = ?`,
			} {
				if _, err := tx.ExecContext(ctx, s.d.rebind(q), tenant, id); err != nil {
					return err
				}
			}
			res, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM sessions WHERE tenant_id = ? AND id = ?`), tenant, id)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += int(k)
		}
		return nil
	})
	return n, wrap("delete sessions", err)
}

// PruneTenantTraces deletes tenant's traces made before before, and
// returns how many.
func (s *SQL) PruneTenantTraces(ctx context.Context, tenant string, before time.Time) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM turn_traces WHERE tenant_id = ? AND created_at < ?`, tenant, micros(before))
	if err != nil {
		return 0, wrap("prune traces", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
