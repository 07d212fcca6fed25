package sqlstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/weftlabs/weft/memory"
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
	wait := 2 * time.Millisecond
	wk := key.String()
	for {
		woken, done := s.wakeups.add(wk) // before trying: a release in between is not missed
		now := time.Now()
		res, err := s.execContext(ctx, nil, s.queries.lockAcquire, key.Tenant, key.Agent, key.Session,
			token, now.Add(ttl).UnixNano(), now.UnixNano())
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			done()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w: %s: %w", memory.ErrLockTimeout, key, ctx.Err())
			}
			return nil, s.fail("lock", key, err)
		}
		if n == 1 {
			done()
			return s.releaser(key, token), nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			done()
			return nil, fmt.Errorf("%w: %s: %w", memory.ErrLockTimeout, key, ctx.Err())
		case <-woken:
			t.Stop()
		case <-t.C:
		}
		done()
		wait = min(2*wait, 100*time.Millisecond)
	}
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
	s.wakeups.wake(key.String())
}

// wakeups tells waiters in this process at once when a lock they wait for
// is released by this process; waiting on holders in other processes polls.
type wakeups struct {
	mu sync.Mutex
	m  map[string]*waiters
}

type waiters struct {
	c chan struct{} // closed on release
	n int
}

// add registers a waiter for key and returns the channel that a release
// closes and the function that unregisters the waiter.
func (w *wakeups) add(key string) (<-chan struct{}, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*waiters{}
	}
	ws := w.m[key]
	if ws == nil {
		ws = &waiters{c: make(chan struct{})}
		w.m[key] = ws
	}
	ws.n++
	return ws.c, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if ws.n--; ws.n == 0 && w.m[key] == ws {
			delete(w.m, key)
		}
	}
}

// wake wakes the waiters for key.
func (w *wakeups) wake(key string) {
	w.mu.Lock()
	ws := w.m[key]
	delete(w.m, key)
	w.mu.Unlock()
	if ws != nil {
		close(ws.c)
	}
}
