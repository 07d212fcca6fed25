package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/internal/lease"
)

// Lock implements [memory.Locker] with a lease: SET NX PX with a token
// "<owner>/<random>", renewed by a heartbeat every TTL/3 while the lock is
// held, and released by a script that deletes the key only while it still
// holds that token. Taking and releasing are one round trip each, and the
// release does not hold its caller. The lock's key is also added to the owner's set
// (<prefix>:owner:<len>:<owner>) so that [Store.Drop] can find it. A waiter
// retries with a backoff from 2 ms up to 100 ms until the lease is free or
// ctx ends. A waiter in the process that releases the lock is woken at once.
func (s *Store) Lock(ctx context.Context, key memory.Key, l memory.Lease) (release func(), err error) {
	ttl := l.TTL
	if ttl <= 0 {
		ttl = memory.DefaultLeaseTTL
	}
	lk := s.keys(key).lock
	token := lease.Token(l.Owner)
	owners := s.ownerKey(l.Owner)
	err = lease.Acquire(ctx, &s.wakeups, lk, func() (bool, error) {
		if l.Owner == "" {
			return s.client.SetNX(ctx, lk, token, ttl).Result()
		}
		// One round trip: the lease, and its key in the owner's set for
		// Drop (best effort: without it the lease still lapses after ttl;
		// a key added by an attempt that lost is harmless, as Drop deletes
		// only leases whose token is the owner's).
		var set *redis.BoolCmd
		_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			set = p.SetNX(ctx, lk, token, ttl)
			p.SAdd(ctx, owners, lk)
			return nil
		})
		return set.Val(), err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %s: %w", memory.ErrLockTimeout, key, ctx.Err())
		}
		return nil, fail("lock", key, err)
	}
	ms := strconv.FormatInt(ttl.Milliseconds(), 10)
	stop := lease.Keep(ttl, func(ctx context.Context) (bool, error) {
		n, err := renewScript.Run(ctx, s.client, []string{lk}, token, ms).Int()
		return n == 1, err
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			stop()
			s.release(lk, token, owners, l.Owner != "")
		})
	}, nil
}

// release releases a lease without its caller waiting: the turn does not
// wait for the release, one round trip after which this process's waiters
// are woken.
func (s *Store) release(lock, token, owners string, owned bool) {
	s.releases.Add(1)
	go func() {
		defer s.releases.Done()
		s.unlock(lock, token, owners, owned)
	}()
}

func (s *Store) ownerKey(owner string) string {
	return s.prefix + ":owner:" + strconv.Itoa(len(owner)) + ":" + owner
}

// unlock releases a lease. Release has no context of its own; it gets 5 s,
// after which the lease simply expires.
func (s *Store) unlock(lock, token, owners string, owned bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		unlockScript.EvalSha(ctx, p, []string{lock}, token)
		if owned {
			p.SRem(ctx, owners, lock)
		}
		return nil
	})
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		_ = unlockScript.Eval(ctx, s.client, []string{lock}, token).Err() // loads the script
	}
	s.wakeups.Wake(lock)
}

// Drop implements [memory.Locker]: it deletes the locks in owner's set
// whose token is still owner's, then the set.
func (s *Store) Drop(ctx context.Context, owner string) error {
	owners := s.ownerKey(owner)
	locks, err := s.client.SMembers(ctx, owners).Result()
	if err != nil {
		return fmt.Errorf("redisstore: drop the leases of %q: %w", owner, err)
	}
	for _, lk := range locks {
		if err := dropScript.Run(ctx, s.client, []string{lk}, lease.Prefix(owner)).Err(); err != nil {
			return fmt.Errorf("redisstore: drop the leases of %q: %w", owner, err)
		}
		s.wakeups.Wake(lk)
	}
	if err := s.client.Del(ctx, owners).Err(); err != nil {
		return fmt.Errorf("redisstore: drop the leases of %q: %w", owner, err)
	}
	return nil
}
