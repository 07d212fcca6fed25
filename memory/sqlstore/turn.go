package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/internal/lease"
)

var _ memory.TurnStore = (*Store)(nil)

// Begin implements [memory.TurnStore]. On SQLite it is one group-committed
// transaction that takes the lease row (as Lock does), reads the window
// (as Load does) and the summary, and appends first; on PostgreSQL one
// statement, a call of the memory_begin_summary function, which does the
// same. While another holder
// has the lease nothing changes, and Begin tries again with Lock's
// backoff. The lease is renewed by a heartbeat until end, which is one
// transaction (SQLite) or statement (PostgreSQL, memory_end) too: the last
// records appended and the lease row deleted if it still holds this
// holder's token. With no records to append, end releases as Lock's
// release does.
func (s *Store) Begin(ctx context.Context, key memory.Key, l memory.Lease, w memory.Window, first []memory.Record) (memory.Begun, error) {
	ttl := l.TTL
	if ttl <= 0 {
		ttl = memory.DefaultLeaseTTL
	}
	token := lease.Token(l.Owner)
	now := time.Now().UTC().Round(0)
	in, err := encodeRecords(first, now)
	if err != nil {
		return memory.Begun{}, s.fail("begin", key, err)
	}
	var b memory.Begun
	err = lease.Acquire(ctx, &s.wakeups, key.String(), func() (bool, error) {
		var ok bool
		var err error
		if s.dialect == postgres {
			b, ok, err = s.beginCall(ctx, key, token, ttl, w, in, now)
		} else {
			b, ok, err = s.beginTx(ctx, key, token, ttl, w, in, now)
		}
		return ok, err
	})
	if err != nil {
		if ctx.Err() != nil {
			return memory.Begun{}, fmt.Errorf("%w: %s: %w", memory.ErrLockTimeout, key, ctx.Err())
		}
		return memory.Begun{}, s.fail("begin", key, err)
	}
	stop := lease.Keep(ttl, func(ctx context.Context) (bool, error) {
		return s.execOne(ctx, func() []any {
			return []any{time.Now().Add(ttl).UnixNano(), key.Tenant, key.Agent, key.Session, token}
		}, s.queries.lockRenew)
	})
	b.End = func(ctx context.Context, recs []memory.Record) (int64, error) {
		stop()
		if len(recs) == 0 {
			s.release(key, token)
			return 0, nil
		}
		last, err := s.end(ctx, key, token, recs)
		if err != nil {
			// The lease may still be ours: release it apart; otherwise it
			// lapses after its TTL.
			s.release(key, token)
			return 0, s.fail("end", key, err)
		}
		s.wakeups.Wake(key.String())
		return last, nil
	}
	return b, nil
}

// beginTx is Begin's transaction on SQLite. ok is false when another
// holder has the lease.
func (s *Store) beginTx(ctx context.Context, key memory.Key, token string, ttl time.Duration, w memory.Window, in []encoded, now time.Time) (b memory.Begun, ok bool, err error) {
	err = s.group.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		b, ok = memory.Begun{}, false // a group commit may run this again
		at := time.Now()
		res, err := s.execContext(ctx, tx, s.queries.lockAcquire, key.Tenant, key.Agent, key.Session, token, at.Add(ttl).UnixNano(), at.UnixNano())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return err
		}
		if b.Records, err = s.loadWalk(ctx, tx, key, w); err != nil {
			return err
		}
		if b.Summary, err = s.loadSummary(ctx, tx, key); err != nil {
			return err
		}
		if len(in) > 0 {
			if _, err := s.appendIn(ctx, tx, key, in, now); err != nil {
				return err
			}
		}
		ok = true
		return nil
	})
	return b, ok, err
}

// beginCall is Begin's statement on PostgreSQL.
func (s *Store) beginCall(ctx context.Context, key memory.Key, token string, ttl time.Duration, w memory.Window, in []encoded, now time.Time) (memory.Begun, bool, error) {
	var limit any // NULL: no bound
	if w.MaxMessages > 0 {
		limit = w.MaxMessages
	}
	maxTokens := int64(w.MaxTokens)
	if w.MaxTokens <= 0 {
		maxTokens = math.MaxInt64 // no running sum exceeds it
	}
	at := time.Now()
	args := append([]any{key.Tenant, key.Agent, key.Session, token, at.Add(ttl).UnixNano(), at.UnixNano(), maxTokens, limit, now.UnixNano()},
		pgArrays(in)...)
	rows, err := s.db.QueryContext(ctx, `SELECT r_seq, r_id, r_tokens, r_partial, r_created, r_message, r_through
		FROM memory_begin_summary($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`, args...)
	if err != nil {
		return memory.Begun{}, false, err
	}
	defer rows.Close()
	var b memory.Begun
	for rows.Next() {
		var r memory.Record
		var created, through int64
		var msg string
		if err := rows.Scan(&r.Seq, &r.ID, &r.Tokens, &r.Partial, &created, &msg, &through); err != nil {
			return memory.Begun{}, false, err
		}
		switch r.Seq {
		case -1:
			return memory.Begun{}, false, rows.Err() // busy
		case -2:
			b.Summary = memory.Summary{Through: through, Tokens: r.Tokens, UpdatedAt: time.Unix(0, created).UTC()}
			if b.Summary.Text, err = decodeSummary(msg); err != nil {
				return memory.Begun{}, false, err
			}
			continue
		}
		r.CreatedAt = time.Unix(0, created).UTC()
		if r.Message, err = decodeMessage(msg); err != nil {
			return memory.Begun{}, false, fmt.Errorf("decode message seq %d: %w", r.Seq, err)
		}
		b.Records = append(b.Records, r)
	}
	if err := rows.Err(); err != nil {
		return memory.Begun{}, false, err
	}
	return b, true, nil
}

// end appends a turn's last records and deletes its lease row, in one
// transaction (SQLite) or statement (PostgreSQL), and returns the greatest
// Seq among the records.
func (s *Store) end(ctx context.Context, key memory.Key, token string, recs []memory.Record) (int64, error) {
	now := time.Now().UTC().Round(0)
	in, err := encodeRecords(recs, now)
	if err != nil {
		return 0, err
	}
	if s.dialect == postgres {
		var last int64
		err := s.db.QueryRowContext(ctx, `SELECT memory_end($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			append([]any{key.Tenant, key.Agent, key.Session, token, now.UnixNano()}, pgArrays(in)...)...).Scan(&last)
		return last, err
	}
	var last int64
	err = s.group.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		out, err := s.appendIn(ctx, tx, key, in, now)
		if err != nil {
			return err
		}
		last = 0
		for _, r := range out {
			last = max(last, r.Seq)
		}
		_, err = s.execContext(ctx, tx, s.queries.lockRelease, key.Tenant, key.Agent, key.Session, token)
		return err
	})
	return last, err
}
