// Package lease holds what the shared stores' lease locks have in common:
// waiting for a lease with backoff, and waking the waiters of this process
// at once when this process releases one.
package lease

import (
	"context"
	"sync"
	"time"
)

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
