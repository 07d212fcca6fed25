package redisstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/internal/lease"
)

// Lock implements [memory.Locker] with a lease: SET NX PX with a random
// token, released by a script that deletes the key only while it still
// holds that token. A waiter retries with a backoff from 2 ms up to 100 ms
// until the lease is free or ctx ends. A holder that dies loses the lock
// after ttl (memory.DefaultLockTTL when ttl ≤ 0). A waiter in the process
// that releases the lock is woken at once.
func (s *Store) Lock(ctx context.Context, key memory.Key, ttl time.Duration) (release func(), err error) {
	if ttl <= 0 {
		ttl = memory.DefaultLockTTL
	}
	lk := s.keys(key).lock
	token := memory.NewID()
	err = lease.Acquire(ctx, &s.wakeups, lk, func() (bool, error) {
		return s.client.SetNX(ctx, lk, token, ttl).Result()
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %s: %w", memory.ErrLockTimeout, key, ctx.Err())
		}
		return nil, fail("lock", key, err)
	}
	var once sync.Once
	return func() { once.Do(func() { s.unlock(lk, token) }) }, nil
}

// unlock releases a lease. Release has no context of its own; it gets 5 s,
// after which the lease simply expires.
func (s *Store) unlock(lock, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = unlockScript.Run(ctx, s.client, []string{lock}, token).Err()
	s.wakeups.Wake(lock)
}
