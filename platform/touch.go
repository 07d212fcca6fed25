package platform

import (
	"context"
	"sync"
	"time"

	"github.com/weftlabs/weft/platform/meta"
)

// touches writes the update times of sessions after their turns, off the
// turn's path and gathered: a turn records its session's time and goes on;
// one writer stores every time recorded meanwhile in one transaction
// (TouchSessions), so a thousand turns a second make a few commits a second
// instead of a thousand. While a batch is written the next one gathers,
// which is the group commit. Reads that show update times (session list and
// lookup) first wait for the touches recorded before them, so this replica
// reads its own writes; another replica sees them once written, a few
// milliseconds later. A crash loses at most the update times of the last
// turns, never a message (those are in the session store).
type touches struct {
	meta meta.Store
	log  func(ctx context.Context, msg string, args ...any)

	mu sync.Mutex
	// pending holds the times recorded since the batch in flight started,
	// one per session; pendingDone is closed when they are written.
	pending     map[[2]string]time.Time
	pendingDone chan struct{}
	// writing is closed when the batch being written is; running says the
	// writer goroutine is on.
	writing chan struct{}
	running bool
	closed  bool
	stopped chan struct{} // closed when the writer has exited after close
}

func newTouches(m meta.Store, log func(ctx context.Context, msg string, args ...any)) *touches {
	return &touches{meta: m, log: log}
}

// add records that session (tenant, id) was updated at at.
func (t *touches) add(tenant, id string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		// After close: write it directly, so that nothing is lost.
		go t.write([]meta.SessionTouch{{TenantID: tenant, ID: id, At: at}})
		return
	}
	if t.pending == nil {
		t.pending = map[[2]string]time.Time{}
		t.pendingDone = make(chan struct{})
	}
	k := [2]string{tenant, id}
	if prev, ok := t.pending[k]; !ok || at.After(prev) {
		t.pending[k] = at
	}
	if !t.running {
		t.running = true // the writer runs until nothing is pending
		go t.run()
	}
}

// run writes batches until none is pending.
func (t *touches) run() {
	for {
		t.mu.Lock()
		if len(t.pending) == 0 {
			t.running, t.writing = false, nil
			if t.closed && t.stopped != nil {
				close(t.stopped)
				t.stopped = nil
			}
			t.mu.Unlock()
			return
		}
		batch := make([]meta.SessionTouch, 0, len(t.pending))
		for k, at := range t.pending {
			batch = append(batch, meta.SessionTouch{TenantID: k[0], ID: k[1], At: at})
		}
		done := t.pendingDone
		t.pending, t.pendingDone, t.writing = nil, nil, done
		t.mu.Unlock()
		t.write(batch)
		close(done)
	}
}

func (t *touches) write(batch []meta.SessionTouch) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := t.meta.TouchSessions(ctx, batch); err != nil {
		t.log(ctx, "session update times not stored", "sessions", len(batch), "err", err)
	}
}

// flush waits until the touches recorded before it are written, or ctx ends.
func (t *touches) flush(ctx context.Context) {
	t.mu.Lock()
	wait := t.pendingDone // closed after the batch in flight
	if wait == nil {
		wait = t.writing
	}
	t.mu.Unlock()
	if wait == nil {
		return
	}
	select {
	case <-wait:
	case <-ctx.Done():
	}
}

// close writes what is pending and waits for the writer to exit (at most
// 10 s); later touches are written one by one.
func (t *touches) close() {
	t.mu.Lock()
	t.closed = true
	var stopped chan struct{}
	if t.running {
		stopped = make(chan struct{})
		t.stopped = stopped
	}
	t.mu.Unlock()
	if stopped != nil {
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
		}
	}
}
