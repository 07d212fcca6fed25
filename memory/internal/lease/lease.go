// Package lease holds what the shared stores' lease locks have in common:
// waiting for a lease with backoff, waking the waiters of this process at
// once when this process releases one, the heartbeat that renews a held
// lease, and tokens that name their owner.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// Token returns a fresh lease token of owner: "<owner>/<random>", so that
// the leases of one owner can be found by prefix.
func Token(owner string) string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return owner + "/" + hex.EncodeToString(b[:])
}

// Prefix is the prefix of owner's tokens.
func Prefix(owner string) string { return owner + "/" }

// Owned reports whether token is one of owner's.
func Owned(token, owner string) bool { return strings.HasPrefix(token, Prefix(owner)) }

// Keep renews a held lease every ttl/3 until stop is called (stop waits for
// a renewal in flight). renew reports whether the lease is still this
// holder's; once it is not (it lapsed and was taken, or was dropped), the
// heartbeat ends. A renewal that fails is tried again at the next beat.
func Keep(ttl time.Duration, renew func(ctx context.Context) (bool, error)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, ttl/3)
			held, err := renew(rctx)
			rcancel()
			if err == nil && !held {
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// Wakeups tells waiters in this process at once when a lock they wait for
// is released by this process; waiting on holders in other processes polls.
// The zero value is ready to use.
type Wakeups struct {
	mu sync.Mutex
	m  map[string]*waiters
}

type waiters struct {
	c chan struct{} // closed on release
	n int
}

// add registers a waiter for key and returns the channel that a release
// closes and the function that unregisters the waiter.
func (w *Wakeups) add(key string) (<-chan struct{}, func()) {
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

// Wake wakes the waiters for key.
func (w *Wakeups) Wake(key string) {
	w.mu.Lock()
	ws := w.m[key]
	delete(w.m, key)
	w.mu.Unlock()
	if ws != nil {
		close(ws.c)
	}
}

// Acquire calls try until it takes the lease (true), fails (an error), or
// ctx ends (ctx.Err()). Between tries it waits with a backoff from 2 ms up to
// 100 ms, or until a release of key in this process wakes it.
func Acquire(ctx context.Context, w *Wakeups, key string, try func() (bool, error)) error {
	wait := 2 * time.Millisecond
	for {
		woken, done := w.add(key) // before trying: a release in between is not missed
		ok, err := try()
		if ok || err != nil {
			done()
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			done()
			return ctx.Err()
		case <-woken:
			t.Stop()
		case <-t.C:
		}
		done()
		wait = min(2*wait, 100*time.Millisecond)
	}
}
