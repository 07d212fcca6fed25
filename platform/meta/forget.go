package meta

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"time"
)

// UserSessions returns the sessions of tenant's end user user (those a chat
// request naming the user started) and the sessions their delegations made,
// at any depth, parents before their children.
func (s *SQL) UserSessions(ctx context.Context, tenant, user string) ([]Session, error) {
	out := []Session{}
	if user == "" {
		return out, nil
	}
	rows, err := s.query(ctx, `SELECT id, agent_id, parent_id, user_id, created_at, updated_at, interrupt FROM sessions WHERE tenant_id = ? AND user_id = ? ORDER BY created_at, id`, tenant, user)
	if err != nil {
		return nil, wrap("user sessions", err)
	}
	if out, err = scanSessions(tenant, rows, out); err != nil {
		return nil, wrap("user sessions", err)
	}
	seen := map[string]bool{}
	for _, ss := range out {
		seen[ss.ID] = true
	}
	for i := 0; i < len(out); i++ {
		rows, err := s.query(ctx, `SELECT id, agent_id, parent_id, user_id, created_at, updated_at, interrupt FROM sessions WHERE tenant_id = ? AND parent_id = ? ORDER BY created_at, id`, tenant, out[i].ID)
		if err != nil {
			return nil, wrap("user sessions", err)
		}
		kids, err := scanSessions(tenant, rows, nil)
		if err != nil {
			return nil, wrap("user sessions", err)
		}
		for _, k := range kids {
			if !seen[k.ID] {
				seen[k.ID] = true
				out = append(out, k)
			}
		}
	}
	return out, nil
}

func scanSessions(tenant string, rows *sql.Rows, out []Session) ([]Session, error) {
	defer rows.Close()
	for rows.Next() {
		ss, err := scanSession(tenant, rows)
		if err != nil {
			return nil, err
		}
		out = append(out, ss)
	}
	return out, rows.Err()
}

// UserForget is the record of forgetting an end user: who asked (the API
// key) and what was deleted, without the user's id (UserHash is the
// SHA-256 of tenant, a zero byte and the user's id, so that an operator
// given the id can show it was forgotten) and without any content.
type UserForget struct {
	ID       string         `json:"id"`
	TenantID string         `json:"-"`
	UserHash string         `json:"user_hash"`
	KeyID    string         `json:"key_id"`
	Counts   map[string]int `json:"counts"`
	At       time.Time      `json:"created_at"`
}

// UserHash is the hash a [UserForget] keeps of tenant's end user user.
func UserHash(tenant, user string) string {
	h := sha256.Sum256([]byte(tenant + "\x00" + user))
	return hex.EncodeToString(h[:])
}

// ForgetUser deletes, in one transaction, the metadata of an end user of
// f's tenant whose sessions are sessions (from [SQL.UserSessions]; their
// messages live in the session store, deleted first by the caller): the
// sessions' rows, their turn traces, the A2A tasks whose context is one of
// them, the stored replies of idempotent requests that name one, and the
// sessions' titles and feedback. It adds to f.Counts how many of each it
// deleted ("sessions", "traces", "a2a_tasks", "idempotent_replies",
// "feedback", "titles") and stores f as the audit record.
func (s *SQL) ForgetUser(ctx context.Context, f UserForget, sessions []string) error {
	if f.Counts == nil {
		f.Counts = map[string]int{}
	}
	find := `instr(body, ?) > 0`
	if s.d.name == "postgres" {
		find = `position(CAST(? AS bytea) IN body) > 0`
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		del := func(count, q string, args ...any) error {
			res, err := tx.ExecContext(ctx, s.d.rebind(q), args...)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			f.Counts[count] += int(n)
			return nil
		}
		for _, k := range []string{"sessions", "traces", "a2a_tasks", "idempotent_replies", "feedback", "titles", "audit_redacted"} {
			f.Counts[k] += 0
		}
		for _, id := range sessions {
			for _, step := range []struct{ count, q string }{
				{"traces", `DELETE FROM turn_traces WHERE tenant_id = ? AND session_id = ?`},
				{"feedback", `DELETE FROM message_feedback WHERE tenant_id = ? AND session_id = ?`},
				{"titles", `DELETE FROM session_titles WHERE tenant_id = ? AND session_id = ?`},
				{"a2a_tasks", `DELETE FROM a2a_tasks WHERE tenant_id = ? AND context_id = ?`},
				{"sessions", `DELETE FROM sessions WHERE tenant_id = ? AND id = ?`},
			} {
				if err := del(step.count, step.q, f.TenantID, id); err != nil {
					return err
				}
			}
			if err := del("idempotent_replies", `DELETE FROM idempotency WHERE tenant_id = ? AND body IS NOT NULL AND `+find, f.TenantID, []byte(`"`+id+`"`)); err != nil {
				return err
			}
			// The audit log keeps who changed the sessions and when, not
			// what they held (their user, title, messages' feedback).
			if err := del("audit_redacted", `UPDATE audit_log SET before_json = 'null', after_json = 'null', resource_name = ''
				WHERE tenant_id = ? AND (resource_id = ? OR path = ? OR path LIKE ?) AND (before_json <> 'null' OR after_json <> 'null' OR resource_name <> '')`,
				f.TenantID, id, "/v1/sessions/"+id, "/v1/sessions/"+id+"/%"); err != nil {
				return err
			}
		}
		counts, err := json.Marshal(f.Counts)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO user_forgets (tenant_id, id, user_hash, key_id, counts, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
			f.TenantID, f.ID, f.UserHash, f.KeyID, string(counts), micros(f.At))
		return err
	})
	return wrap("forget user", err)
}

// UserForgets returns the audit records of tenant's forgotten users, newest
// first.
func (s *SQL) UserForgets(ctx context.Context, tenant string) ([]UserForget, error) {
	rows, err := s.query(ctx, `SELECT id, user_hash, key_id, counts, created_at FROM user_forgets WHERE tenant_id = ? ORDER BY created_at DESC, id`, tenant)
	if err != nil {
		return nil, wrap("user forgets", err)
	}
	defer rows.Close()
	out := []UserForget{}
	for rows.Next() {
		f := UserForget{TenantID: tenant}
		var counts string
		var at int64
		if err := rows.Scan(&f.ID, &f.UserHash, &f.KeyID, &counts, &at); err != nil {
			return nil, wrap("user forgets", err)
		}
		if err := json.Unmarshal([]byte(counts), &f.Counts); err != nil {
			return nil, wrap("user forgets", err)
		}
		f.At = fromMicros(at)
		out = append(out, f)
	}
	return out, wrap("user forgets", rows.Err())
}
