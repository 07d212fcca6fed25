package sqlstore

import (
	"context"
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
		now := time.Now()
		res, err := s.execContext(ctx, nil, s.queries.lockAcquire, key.Tenant, key.Agent, key.Session,
			token, now.Add(ttl).UnixNano(), now.UnixNano())
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n == 1, err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %s: %w", memory.ErrLockTimeout, key, ctx.Err())
		}
		return nil, s.fail("lock", key, err)
	}
	stop := lease.Keep(ttl, func(ctx context.Context) (bool, error) {
		res, err := s.execContext(ctx, nil, s.queries.lockRenew, time.Now().Add(ttl).UnixNano(), key.Tenant, key.Agent, key.Session, token)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n == 1, err
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			stop()
			s.release(key, token)
		})
	}, nil
}

// release deletes a lease. Release has no context of its own; it gets 5 s,
// after which the lease simply expires.
func (s *Store) release(key memory.Key, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.execContext(ctx, nil, s.queries.lockRelease, key.Tenant, key.Agent, key.Session, token)
	s.wakeups.Wake(key.String())
}

// Drop implements [memory.Locker]: it deletes the lease rows whose token
// is owner's.
func (s *Store) Drop(ctx context.Context, owner string) error {
	p := lease.Prefix(owner)
	if _, err := s.execContext(ctx, nil, s.queries.lockDrop, utf8.RuneCountInString(p), p); err != nil {
		return fmt.Errorf("sqlstore: drop the leases of %q: %w", owner, err)
	}
	return nil
}
