package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weftlabs/weft/memory"
)

// LoadSummary implements [memory.SummaryStore].
func (s *Store) LoadSummary(ctx context.Context, key memory.Key) (memory.Summary, error) {
	sum, err := s.loadSummary(ctx, nil, key)
	if err != nil {
		return memory.Summary{}, s.fail("load the summary", key, err)
	}
	return sum, nil
}

// loadSummary reads key's summary, in tx when not nil.
func (s *Store) loadSummary(ctx context.Context, tx *sql.Tx, key memory.Key) (memory.Summary, error) {
	rows, err := s.queryContext(ctx, tx, s.queries.selectSummary, key.Tenant, key.Agent, key.Session)
	if err != nil {
		return memory.Summary{}, err
	}
	defer rows.Close()
	var sum memory.Summary
	if rows.Next() {
		var at int64
		var text string
		if err := rows.Scan(&sum.Through, &sum.Tokens, &at, &text); err != nil {
			return memory.Summary{}, err
		}
		if sum.Text, err = decodeSummary(text); err != nil {
			return memory.Summary{}, err
		}
		sum.UpdatedAt = time.Unix(0, at).UTC()
	}
	return sum, rows.Err()
}

// The summary column holds the text as a JSON string: PostgreSQL's TEXT
// rejects \u0000, which a model may write.

func encodeSummary(text string) string {
	b, _ := json.Marshal(text) // a string always encodes
	return string(b)
}

func decodeSummary(s string) (string, error) {
	var text string
	if err := json.Unmarshal([]byte(s), &text); err != nil {
		return "", fmt.Errorf("decode the summary: %w", err)
	}
	return text, nil
}

// SaveSummary implements [memory.SummaryStore] with one statement: an
// insert when prev is 0, else an update of the row whose through_seq is
// prev; either only while the conversation's session row exists with a
// last Seq of at least s.Through (on PostgreSQL that row is locked against
// a Delete meanwhile).
func (s *Store) SaveSummary(ctx context.Context, key memory.Key, sum memory.Summary, prev int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, s.fail("save the summary", key, err)
	}
	if sum.Through <= prev {
		return false, nil
	}
	if sum.UpdatedAt.IsZero() {
		sum.UpdatedAt = time.Now().UTC().Round(0)
	}
	k := []any{key.Tenant, key.Agent, key.Session}
	var query string
	var args []any
	if prev == 0 {
		query = s.queries.insertSummary
		args = append(append(args, k...), sum.Through, sum.Tokens, sum.UpdatedAt.UnixNano(), encodeSummary(sum.Text))
	} else {
		query = s.queries.updateSummary
		args = append(append(append(args, sum.Through, sum.Tokens, sum.UpdatedAt.UnixNano(), encodeSummary(sum.Text)), k...), prev)
	}
	args = append(append(args, k...), sum.Through)
	ok, err := s.execOne(ctx, func() []any { return args }, query)
	if err != nil {
		return false, s.fail("save the summary", key, err)
	}
	return ok, nil
}

// LoadRange implements [memory.SummaryStore]: one query, read oldest first
// and left as soon as the token bound is reached.
func (s *Store) LoadRange(ctx context.Context, key memory.Key, after, before int64, maxTokens int) ([]memory.Record, error) {
	out, err := s.loadRange(ctx, key, after, before, maxTokens)
	if err != nil {
		return nil, s.fail("load a range", key, err)
	}
	return out, nil
}

func (s *Store) loadRange(ctx context.Context, key memory.Key, after, before int64, maxTokens int) ([]memory.Record, error) {
	rows, err := s.queryContext(ctx, nil, s.queries.loadRange, key.Tenant, key.Agent, key.Session, after, before)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []memory.Record
	sum := 0
	for rows.Next() {
		var r memory.Record
		var created int64
		var msg string
		if err := rows.Scan(&r.Seq, &r.ID, &r.Tokens, &r.Partial, &created, &msg); err != nil {
			return nil, err
		}
		if sum += r.Tokens; maxTokens > 0 && sum > maxTokens && len(out) > 0 {
			break
		}
		r.CreatedAt = time.Unix(0, created).UTC()
		if r.Message, err = decodeMessage(msg); err != nil {
			return nil, fmt.Errorf("decode message seq %d: %w", r.Seq, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
