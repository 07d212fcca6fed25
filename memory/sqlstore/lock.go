package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/internal/lease"
)

// Lock implements [memory.Locker] with a lease row in memory_locks: taking
// the lock inserts the row, or takes it over when its lease has expired;
// a heartbeat pushes expires_at forward every TTL/3 while the lock is held;
// releasing deletes the row if it still holds this holder's token. A
// waiter polls with a backoff from 2 ms up to 100 ms until the lock is free
// or ctx ends. Expiry is judged by the clocks of the processes involved. A
// waiter in the process that releases the lock is woken at once.
func (s *Store) Lock(ctx context.Context, key memory.Key, l memory.Lease) (release func(), err error) {
	ttl := l.TTL
	if ttl <= 0 {
		ttl = memory.DefaultLeaseTTL
	}
	token := lease.Token(l.Owner)
	err = lease.Acquire(ctx, &s.wakeups, key.String(), func() (bool, error) {
		return s.execOne(ctx, func() []any {
			now := time.Now()
			return []any{key.Tenant, key.Agent, key.Session, token, now.Add(ttl).UnixNano(), now.UnixNano()}
		}, s.queries.lockAcquire)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %s: %w", memory.ErrLockTimeout, key, ctx.Err())
		}
		return nil, s.fail("lock", key, err)
	}
	stop := lease.Keep(ttl, func(ctx context.Context) (bool, error) {
		return s.execOne(ctx, func() []any {
			return []any{time.Now().Add(ttl).UnixNano(), key.Tenant, key.Agent, key.Session, token}
		}, s.queries.lockRenew)
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			stop()
			s.release(key, token)
		})
	}, nil
}

// release deletes a lease. On SQLite it does not wait for the commit: the
// deletion joins the next group commit, and this process's waiters are
// woken once it is done (a crash before then leaves the lease to expire or
// to Drop, as a crash before release would). On PostgreSQL it has no
// context of its own; it gets 5 s, after which the lease simply expires.
func (s *Store) release(key memory.Key, token string) {
	if s.group != nil {
		s.group.Async(func(ctx context.Context, tx *sql.Tx) error {
			_, err := s.execContext(ctx, tx, s.queries.lockRelease, key.Tenant, key.Agent, key.Session, token)
			return err
		}, func(error) { s.wakeups.Wake(key.String()) })
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.execContext(ctx, nil, s.queries.lockRelease, key.Tenant, key.Agent, key.Session, token)
	s.wakeups.Wake(key.String())
}

// execOne runs one statement (in a group commit on SQLite, its arguments
// made when it runs) and reports whether it changed exactly one row.
func (s *Store) execOne(ctx context.Context, args func() []any, query string) (bool, error) {
	if s.group == nil {
		res, err := s.execContext(ctx, nil, query, args()...)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n == 1, err
	}
	var one bool
	err := s.group.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.execContext(ctx, tx, query, args()...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		one = n == 1
		return err
	})
	return one, err
}

// Drop implements [memory.Locker]: it deletes the lease rows whose token
// is owner's.
func (s *Store) Drop(ctx context.Context, owner string) error {
	p := lease.Prefix(owner)
	if _, err := s.execOne(ctx, func() []any { return []any{utf8.RuneCountInString(p), p} }, s.queries.lockDrop); err != nil {
		return fmt.Errorf("sqlstore: drop the leases of %q: %w", owner, err)
	}
	return nil
}
