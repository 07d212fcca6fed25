package meta

import (
	"context"
	"time"
)

// Feedback is a person's rating of an answer: thumbs up (1) or down (-1),
// with an optional comment, by the key that gave it. It is kept by
// session and message id, beside the session store.
type Feedback struct {
	SessionID string    `json:"session_id"`
	MessageID string    `json:"message_id"`
	Rating    int       `json:"rating"`
	Comment   string    `json:"comment,omitempty"`
	KeyID     string    `json:"key_id"`
	At        time.Time `json:"created_at"`
}

// SetSessionTitle stores a session's title; an empty title removes it.
func (s *SQL) SetSessionTitle(ctx context.Context, tenant, session, title string) error {
	if title == "" {
		_, err := s.exec(ctx, `DELETE FROM session_titles WHERE tenant_id = ? AND session_id = ?`, tenant, session)
		return wrap("session title", err)
	}
	_, err := s.exec(ctx, `INSERT INTO session_titles (tenant_id, session_id, title) VALUES (?, ?, ?)
		ON CONFLICT (tenant_id, session_id) DO UPDATE SET title = excluded.title`, tenant, session, title)
	return wrap("session title", err)
}

// SessionTitles returns the titles of tenant's sessions, by session id.
func (s *SQL) SessionTitles(ctx context.Context, tenant string) (map[string]string, error) {
	rows, err := s.query(ctx, `SELECT session_id, title FROM session_titles WHERE tenant_id = ?`, tenant)
	if err != nil {
		return nil, wrap("session titles", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, title string
		if err := rows.Scan(&id, &title); err != nil {
			return nil, wrap("session titles", err)
		}
		out[id] = title
	}
	return out, wrap("session titles", rows.Err())
}

// PutFeedback stores (or replaces) the feedback on an answer.
func (s *SQL) PutFeedback(ctx context.Context, tenant string, f Feedback) error {
	_, err := s.exec(ctx, `INSERT INTO message_feedback (tenant_id, session_id, message_id, rating, comment, key_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, session_id, message_id) DO UPDATE SET rating = excluded.rating, comment = excluded.comment, key_id = excluded.key_id, created_at = excluded.created_at`,
		tenant, f.SessionID, f.MessageID, f.Rating, f.Comment, f.KeyID, micros(f.At))
	return wrap("feedback", err)
}

// DeleteFeedback removes the feedback on an answer ([ErrNotFound] when
// there is none).
func (s *SQL) DeleteFeedback(ctx context.Context, tenant, session, message string) error {
	return s.deleteOne(ctx, "delete feedback", `DELETE FROM message_feedback WHERE tenant_id = ? AND session_id = ? AND message_id = ?`, tenant, session, message)
}

// SessionFeedback returns the feedback on a session's answers, oldest
// first.
func (s *SQL) SessionFeedback(ctx context.Context, tenant, session string) ([]Feedback, error) {
	rows, err := s.query(ctx, `SELECT message_id, rating, comment, key_id, created_at FROM message_feedback WHERE tenant_id = ? AND session_id = ? ORDER BY created_at, message_id`, tenant, session)
	if err != nil {
		return nil, wrap("feedback", err)
	}
	defer rows.Close()
	out := []Feedback{}
	for rows.Next() {
		f := Feedback{SessionID: session}
		var at int64
		if err := rows.Scan(&f.MessageID, &f.Rating, &f.Comment, &f.KeyID, &at); err != nil {
			return nil, wrap("feedback", err)
		}
		f.At = fromMicros(at)
		out = append(out, f)
	}
	return out, wrap("feedback", rows.Err())
}

// deleteSessionNotes removes a session's title and feedback.
func (s *SQL) deleteSessionNotes(ctx context.Context, tenant, session string) error {
	for _, q := range []string{
		`DELETE FROM message_feedback WHERE tenant_id = ? AND session_id = ?`,
		`DELETE FROM session_titles WHERE tenant_id = ? AND session_id = ?`,
	} {
		if _, err := s.exec(ctx, q, tenant, session); err != nil {
			return wrap("delete session "+session, err)
		}
	}
	return nil
}
