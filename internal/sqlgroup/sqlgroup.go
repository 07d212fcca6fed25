// Package sqlgroup group-commits the writes of concurrent callers on one
// database (SQLite, whose single writer makes every commit — its WAL
// frames and the lock handover between writers — the cost of a small
// write): the writes queued while one transaction runs share the next one.
// It is written here because database/sql has no such mechanism and the
// SQLite drivers offer none; the session store (memory/sqlstore) and the
// platform's metadata store (platform/meta) share it.
package sqlgroup

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// Group commits the writes of concurrent callers together: every write is
// a function run inside a transaction, and the functions queued while one
// transaction runs share the next one, so that under load a commit (its
// WAL frames, and the lock handover between writers) is paid once for
// many writes instead of once each. A caller returns once the transaction
// holding its write has committed: durability is that of a lone
// transaction.
//
// There is no writer goroutine: the first caller to find nobody writing
// leads, runs one transaction with everything queued, and hands the lead
// to the first caller queued meanwhile, so that no caller works for
// others longer than one transaction.
//
// A function that fails rolls its transaction back; the functions of that
// transaction are then run again, each in its own transaction, so one
// failure fails one caller. Functions must therefore compute their results
// afresh on every run.
type Group struct {
	db *sql.DB

	mu      sync.Mutex
	queue   []*write
	leading bool
	idle    *sync.Cond // signalled when the lead is given up
}

// write is one queued function. done receives its outcome (or errLead:
// the caller leads now); async writes have no done but after, called with
// the outcome.
type write struct {
	ctx   context.Context
	fn    func(ctx context.Context, tx *sql.Tx) error
	done  chan error
	after func(error)
}

var errLead = errors.New("sqlgroup: lead the group commit")

// New returns a group committing to db.
func New(db *sql.DB) *Group {
	g := &Group{db: db}
	g.idle = sync.NewCond(&g.mu)
	return g
}

// Do runs fn in a transaction shared with concurrent writes and returns
// once it has committed. A write still queued when ctx ends is not run.
func (g *Group) Do(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	w := &write{ctx: ctx, fn: fn, done: make(chan error, 1)}
	if g.enqueue(w) {
		g.lead()
	}
	err := <-w.done
	if err == errLead {
		g.lead()
		err = <-w.done
	}
	return err
}

// Async queues fn and returns at once; after is called with its outcome.
func (g *Group) Async(fn func(ctx context.Context, tx *sql.Tx) error, after func(error)) {
	w := &write{ctx: context.Background(), fn: fn, after: after}
	if g.enqueue(w) {
		go g.lead()
	}
}

// enqueue queues w and reports whether its caller must lead: nobody was
// leading, and from now on the caller is.
func (g *Group) enqueue(w *write) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.queue = append(g.queue, w)
	lead := !g.leading
	g.leading = true
	return lead
}

// lead runs one transaction with every queued write, then hands the lead
// to the next queued synchronous caller, or runs the next transaction
// itself when only asynchronous writes are queued.
func (g *Group) lead() {
	for {
		g.mu.Lock()
		batch := g.queue
		g.queue = nil
		g.mu.Unlock()
		g.run(batch)
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.leading = false
			g.idle.Broadcast()
			g.mu.Unlock()
			return
		}
		for _, w := range g.queue {
			if w.done != nil {
				g.mu.Unlock()
				w.done <- errLead
				return
			}
		}
		g.mu.Unlock()
	}
}

// run runs batch in one transaction, or each write alone when one fails.
func (g *Group) run(batch []*write) {
	live := batch[:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.finish(err)
			continue
		}
		live = append(live, w)
	}
	if len(live) == 0 {
		return
	}
	err := g.tx(live)
	if err == nil || len(live) == 1 {
		for _, w := range live {
			w.finish(err)
		}
		return
	}
	for _, w := range live {
		w.finish(g.tx([]*write{w}))
	}
}

// tx runs ws in one transaction. Statements do not see the callers'
// contexts: a write that started runs to its end (it is short), so that a
// caller leaving cannot fail the others' transaction.
func (g *Group) tx(ws []*write) error {
	ctx := context.Background()
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if err := w.fn(ctx, tx); err != nil {
			tx.Rollback() //nolint:errcheck // the write's error is the one to report
			return err
		}
	}
	return tx.Commit()
}

func (w *write) finish(err error) {
	if w.done != nil {
		w.done <- err
	} else {
		w.after(err)
	}
}

// Wait returns once no write is queued or running.
func (g *Group) Wait() {
	g.mu.Lock()
	for g.leading {
		g.idle.Wait()
	}
	g.mu.Unlock()
}
