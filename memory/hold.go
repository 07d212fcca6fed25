package memory

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Begin starts a turn on the conversation. It waits until no other turn
// holds the conversation (or ctx ends, or the lease's Wait passes: the
// error then matches [ErrLockTimeout]), takes its lease (see [WithLease]),
// loads the records the window keeps and appends first, the turn's first
// records (its user message, or the results of the caller's tool calls).
// On a [TurnStore] this is one round trip; on other stores it is Lock,
// Load and Append.
//
// The loaded records are what [Store.Load] returns for the window, system
// record first: a superset of what the window keeps, which [Window.Fit]
// cuts exactly (with the Reserve of everything else the model call
// carries). They never include first: a record with the id of one of first
// (stored by an earlier attempt of the same turn) is left out. The records
// may share their message data with the store: treat them as read-only.
//
// The turn must end with [Hold.End], also when it fails: End stores its
// last records and releases the conversation.
func (c *Chat) Begin(ctx context.Context, first ...Record) (*Hold, []Record, error) {
	w := c.Window()
	if _, err := w.budget(); err != nil {
		return nil, nil, err
	}
	if c.lease.Wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.lease.Wait)
		defer cancel()
	}
	h := &Hold{c: c}
	var recs []Record
	var err error
	if ts, ok := c.store.(TurnStore); ok {
		recs, h.end, err = ts.Begin(ctx, c.key, c.lease, w.storeWindow(), first)
	} else {
		recs, err = c.begin(ctx, h, w, first)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("memory: begin a turn on %s: %w", c.key.Session, err)
	}
	return h, exclude(recs, first), nil
}

// begin is Begin over a store that is not a TurnStore.
func (c *Chat) begin(ctx context.Context, h *Hold, w Window, first []Record) ([]Record, error) {
	release, err := c.Lock(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := c.store.Load(ctx, c.key, w.storeWindow())
	if err == nil && len(first) > 0 {
		_, err = c.store.Append(ctx, c.key, first...)
	}
	if err != nil {
		release()
		return nil, err
	}
	h.end = func(ctx context.Context, recs []Record) (int64, error) {
		defer release()
		return appendLast(ctx, c.store, c.key, recs)
	}
	return recs, nil
}

// exclude removes from recs, in place, the records with the id of one of
// first.
func exclude(recs, first []Record) []Record {
	out := recs[:0]
	for _, r := range recs {
		if !hasID(first, r.ID) {
			out = append(out, r)
		}
	}
	return out
}

func hasID(recs []Record, id string) bool {
	for i := range recs {
		if recs[i].ID != "" && recs[i].ID == id {
			return true
		}
	}
	return false
}

// appendLast appends recs and returns the greatest Seq among them.
func appendLast(ctx context.Context, s Store, key Key, recs []Record) (int64, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	out, err := s.Append(ctx, key, recs...)
	if err != nil {
		return 0, err
	}
	last := int64(0)
	for _, r := range out {
		last = max(last, r.Seq)
	}
	return last, nil
}

// Hold is a conversation held by one turn, from [Chat.Begin] to
// [Hold.End]: no other turn's Begin (or [Chat.Lock]) gets it meanwhile,
// and its lease is renewed while it is held. Its methods are safe for
// concurrent use.
type Hold struct {
	c   *Chat
	end func(ctx context.Context, recs []Record) (int64, error)

	mu    sync.Mutex
	ended bool
	last  int64 // the greatest Seq appended by Append
}

// endTimeout bounds the store's work of a [Hold.End] called after its
// context ended.
const endTimeout = 5 * time.Second

// Append appends records while the conversation is held: those of the turn
// that must be stored before it ends, such as a user message stored once
// input guardrails passed it.
func (h *Hold) Append(ctx context.Context, recs ...Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return fmt.Errorf("memory: append to %s: the turn has ended", h.c.key.Session)
	}
	last, err := appendLast(ctx, h.c.store, h.c.key, recs)
	if err != nil {
		return fmt.Errorf("memory: append to %s: %w", h.c.key.Session, err)
	}
	h.last = max(h.last, last)
	return nil
}

// End appends the turn's last records (none is fine) and releases the
// conversation: one round trip on a [TurnStore], whose release does not
// hold the caller up beyond the append. When ctx has already ended (a
// cancelled turn), the records are still stored, within 5 seconds. The
// chat is then trimmed as [Chat.Add] trims it. A second End does nothing.
func (h *Hold) End(ctx context.Context, recs ...Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return nil
	}
	h.ended = true
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), endTimeout)
		defer cancel()
	}
	last, err := h.end(ctx, recs)
	if err != nil {
		return fmt.Errorf("memory: end the turn on %s: %w", h.c.key.Session, err)
	}
	if last = max(last, h.last); last > 0 {
		return h.c.trimTo(ctx, last)
	}
	return nil
}
