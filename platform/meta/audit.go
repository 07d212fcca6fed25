package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// AuditRecord is one change made through the API: who made it, when, to
// what, and the object before and after (secret values redacted before
// they get here: see platform/audit.go).
type AuditRecord struct {
	ID       string    `json:"id"`
	TenantID string    `json:"-"`
	At       time.Time `json:"at"`
	// ActorID and ActorName are the key's id and name (or, for a member
	// signed in, the user's); ActorRole the role it acted with.
	ActorID   string `json:"actor_id"`
	ActorName string `json:"actor_name"`
	ActorRole Role   `json:"actor_role"`
	// Method and Route are the request's method and route pattern
	// ("PUT /v1/agents/{id}"), Path the path it was sent to.
	Method string `json:"method"`
	Route  string `json:"route"`
	Path   string `json:"path"`
	// ResourceType is the collection ("agents", "tools", …), ResourceID
	// the object's id (a secret's name), ResourceName its name if known.
	ResourceType string `json:"resource_type"`
	ResourceID   string `json:"resource_id"`
	ResourceName string `json:"resource_name,omitempty"`
	Status       int    `json:"status"`
	// Before and After are the object as the API shows it (null when it
	// did not exist, was not shown, or is gone).
	Before    json.RawMessage `json:"before"`
	After     json.RawMessage `json:"after"`
	RequestID string          `json:"request_id"`
}

// AuditQuery selects audit records of one tenant, newest first.
type AuditQuery struct {
	Tenant string
	// Resource matches the resource's id or name; Type its collection;
	// Actor the actor's id or name. Empty matches all.
	Resource, Type, Actor string
	// Since and Until bound the time (inclusive, exclusive); zero is
	// open.
	Since, Until time.Time
	// After is the cursor of the last record of the previous page: the
	// records older than it.
	After *AuditCursor
	// Limit caps the records (1 to 1000; default 100).
	Limit int
}

// AuditCursor marks a record's place in the newest-first order.
type AuditCursor struct {
	At time.Time
	ID string
}

func nullJSON(b json.RawMessage) string {
	if len(b) == 0 {
		return "null"
	}
	return string(b)
}

// AddAudit stores a record.
func (s *SQL) AddAudit(ctx context.Context, r AuditRecord) error {
	_, err := s.exec(ctx, `INSERT INTO audit_log (tenant_id, id, at, actor_id, actor_name, actor_role, method, route, path, resource_type, resource_id, resource_name, status, before_json, after_json, request_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.TenantID, r.ID, micros(r.At), r.ActorID, r.ActorName, string(r.ActorRole), r.Method, r.Route, r.Path,
		r.ResourceType, r.ResourceID, r.ResourceName, r.Status, nullJSON(r.Before), nullJSON(r.After), r.RequestID)
	return wrap("add audit record", err)
}

// Audit returns the records q selects, newest first.
func (s *SQL) Audit(ctx context.Context, q AuditQuery) ([]AuditRecord, error) {
	where := `tenant_id = ?`
	args := []any{q.Tenant}
	if q.Resource != "" {
		where += ` AND (resource_id = ? OR resource_name = ?)`
		args = append(args, q.Resource, q.Resource)
	}
	if q.Type != "" {
		where += ` AND resource_type = ?`
		args = append(args, q.Type)
	}
	if q.Actor != "" {
		where += ` AND (actor_id = ? OR actor_name = ?)`
		args = append(args, q.Actor, q.Actor)
	}
	if !q.Since.IsZero() {
		where += ` AND at >= ?`
		args = append(args, micros(q.Since))
	}
	if !q.Until.IsZero() {
		where += ` AND at < ?`
		args = append(args, micros(q.Until))
	}
	if c := q.After; c != nil {
		where += ` AND (at < ? OR (at = ? AND id < ?))`
		args = append(args, micros(c.At), micros(c.At), c.ID)
	}
	limit := q.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	rows, err := s.query(ctx, `SELECT id, at, actor_id, actor_name, actor_role, method, route, path, resource_type, resource_id, resource_name, status, before_json, after_json, request_id
		FROM audit_log WHERE `+where+fmt.Sprintf(` ORDER BY at DESC, id DESC LIMIT %d`, limit), args...)
	if err != nil {
		return nil, wrap("audit", err)
	}
	defer rows.Close()
	out := []AuditRecord{}
	for rows.Next() {
		r := AuditRecord{TenantID: q.Tenant}
		var at int64
		var role, before, after string
		if err := rows.Scan(&r.ID, &at, &r.ActorID, &r.ActorName, &role, &r.Method, &r.Route, &r.Path, &r.ResourceType, &r.ResourceID, &r.ResourceName, &r.Status, &before, &after, &r.RequestID); err != nil {
			return nil, wrap("audit", err)
		}
		r.At, r.ActorRole, r.Before, r.After = fromMicros(at), Role(role), json.RawMessage(before), json.RawMessage(after)
		out = append(out, r)
	}
	return out, wrap("audit", rows.Err())
}
