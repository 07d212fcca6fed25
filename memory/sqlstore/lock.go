package sqlstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/internal/lease"
)

// Lock implements [memory.Locker] with a lease row in memory_locks: taking
// the lock inserts the row, or takes it over when its lease has expired;
// releasing deletes it if it still holds this holder's token. A waiter polls
// with a backoff from 2 ms up to 100 ms until the lock is free or ctx ends.
// A holder that dies loses the lock after ttl (memory.DefaultLockTTL when
// ttl ≤ 0). Expiry is judged by the clocks of the processes involved. A
// waiter in the process that releases the lock is woken at once.
func (s *Store) Lock(ctx context.Context, key memory.Key, ttl time.Duration) (release func(), err error) {
	if ttl <= 0 {
		ttl = memory.DefaultLockTTL
	}
	token := memory.NewID()
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
	return s.releaser(key, token), nil
}

// releaser returns the release function of one lease. Release has no
// context of its own; it gets 5 s, after which the lease simply expires.
func (s *Store) releaser(key memory.Key, token string) func() {
	var once sync.Once
	return func() { once.Do(func() { s.release(key, token) }) }
}

func (s *Store) release(key memory.Key, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.execContext(ctx, nil, s.queries.lockRelease, key.Tenant, key.Agent, key.Session, token)
	s.wakeups.Wake(key.String())
}
