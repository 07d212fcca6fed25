package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tokens"
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
// A chat with a summarizer (see [WithSummary]) also reads the
// conversation's summary, in the same round trip on a TurnStore
// ([Hold.Summary]), and leaves out the records it holds; the superset is
// larger, to hold what a fold may need. The request sends the summary
// after the system prompt ([Summary.SystemContext]), its tokens counted
// against a token window, and tells the hold which records it kept
// ([Hold.Kept]); [Chat.BeginMessages] does all of this.
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
	sw := w.storeWindow()
	if c.summarizer != nil {
		sw = c.summarizer.window(sw)
	}
	h := &Hold{c: c}
	var recs []Record
	var sum Summary
	var err error
	if m, ok := c.store.(*InMemory); ok {
		// In process: the hold ends the lock itself, without a closure.
		if err = ctx.Err(); err == nil {
			h.mem = m
			if h.grant, h.gen, err = m.locks.take(ctx, c.key, c.lease.Owner); err == nil {
				m.begin(c.key, first, func(cv *conversation) error {
					if cv != nil {
						recs = m.loadLocked(c.key, sw)
						sum = cv.summary
					}
					return nil
				})
			}
		}
	} else if ts, ok := c.store.(TurnStore); ok {
		var b Begun
		b, err = ts.Begin(ctx, c.key, c.lease, sw, first)
		recs, sum, h.end = b.Records, b.Summary, b.End
	} else {
		recs, sum, err = c.begin(ctx, h, sw, first)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("memory: begin a turn on %s: %w", c.key.Session, err)
	}
	recs = exclude(recs, first)
	if c.summarizer != nil {
		recs = h.summarized(recs, sum, w)
	}
	return h, recs, nil
}

// summarized leaves out of recs the records sum holds, and notes for End
// the summary, the log records loaded after it, and which of them the
// chat's window keeps with the summary counted (until [Hold.Kept] says
// otherwise).
func (h *Hold) summarized(recs []Record, sum Summary, w Window) []Record {
	out := recs[:0]
	for _, r := range recs {
		if r.Message.Role == llm.RoleSystem || r.Seq > sum.Through {
			out = append(out, r)
		}
	}
	h.sum, h.folds = sum, true
	h.log = out
	if len(out) > 0 && out[0].Message.Role == llm.RoleSystem {
		h.log = out[1:]
	}
	kept, err := w.Fit(joinSummary(out, sum, h.c.counter))
	if err != nil {
		kept = h.log // the turn cannot run; End folds nothing
	}
	h.kept(kept)
	return out
}

// joinSummary returns recs with sum after the system record's text (a
// system record of its own when there is none), counted by counter.
func joinSummary(recs []Record, sum Summary, counter tokens.Counter) []Record {
	if sum.Text == "" {
		return recs
	}
	log, system := recs, ""
	if len(recs) > 0 && recs[0].Message.Role == llm.RoleSystem {
		log, system = recs[1:], recs[0].Message.Text()
	}
	m := llm.SystemMessage(sum.SystemContext(system))
	out := make([]Record, 0, len(log)+1)
	out = append(out, Record{Message: m, Tokens: tokens.MessageTokens(counter, m)})
	return append(out, log...)
}

// BeginMessages is [Chat.Begin] for a caller that needs the window's
// messages and no room in it beyond its own Reserve: it appends to dst the
// messages the window keeps, cut exactly by [Window.Fit], system message
// first, and returns the extended slice. With a summarizer the system
// message carries the summary ([Summary.SystemContext]; a system message
// of its own when none is stored), counted against a token window. Over
// an [InMemory] store without a summarizer it copies no record: the
// messages share their data with the store, and must be treated as
// read-only. The turn ends with [Hold.End].
func (c *Chat) BeginMessages(ctx context.Context, dst []llm.Message, first ...Record) (*Hold, []llm.Message, error) {
	m, ok := c.store.(*InMemory)
	if !ok || c.summarizer != nil {
		h, recs, err := c.Begin(ctx, first...)
		if err != nil {
			return nil, dst, err
		}
		if c.summarizer != nil {
			recs = joinSummary(recs, h.sum, c.counter)
		}
		kept, err := c.Window().Fit(recs)
		if err != nil {
			// Nothing of the turn was stored but first; the turn ends here.
			return nil, dst, errors.Join(err, h.End(ctx))
		}
		h.Kept(kept)
		for i := range kept {
			dst = append(dst, kept[i].Message)
		}
		return h, dst, nil
	}
	w := c.Window()
	if _, err := w.budget(); err != nil {
		return nil, dst, err
	}
	if err := ctx.Err(); err != nil {
		return nil, dst, fmt.Errorf("memory: begin a turn on %s: %w", c.key.Session, err)
	}
	if c.lease.Wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.lease.Wait)
		defer cancel()
	}
	g, gen, err := m.locks.take(ctx, c.key, c.lease.Owner)
	if err != nil {
		return nil, dst, fmt.Errorf("memory: begin a turn on %s: %w", c.key.Session, err)
	}
	n := len(dst)
	if dst, err = m.beginMessages(c.key, w, first, dst); err != nil {
		m.locks.end(c.key, g, gen)
		return nil, dst[:n], err
	}
	return &Hold{c: c, mem: m, grant: g, gen: gen}, dst, nil
}

// begin is Begin over a store that is not a TurnStore: Lock, Load (and
// LoadSummary, for a chat with a summarizer) and Append.
func (c *Chat) begin(ctx context.Context, h *Hold, sw Window, first []Record) ([]Record, Summary, error) {
	release, err := c.Lock(ctx)
	if err != nil {
		return nil, Summary{}, err
	}
	var sum Summary
	recs, err := c.store.Load(ctx, c.key, sw)
	if err == nil && c.summarizer != nil {
		sum, err = c.store.(SummaryStore).LoadSummary(ctx, c.key)
	}
	if err == nil && len(first) > 0 {
		_, err = c.store.Append(ctx, c.key, first...)
	}
	if err != nil {
		release()
		return nil, Summary{}, err
	}
	h.end = func(ctx context.Context, recs []Record) (int64, error) {
		defer release()
		return appendLast(ctx, c.store, c.key, recs)
	}
	return recs, sum, nil
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
	c *Chat
	// end ends the turn on a shared store; an InMemory's turn is ended by
	// mem, with the lock's grant and holding.
	end   func(ctx context.Context, recs []Record) (int64, error)
	mem   *InMemory
	grant *grant
	gen   uint64

	// With a summarizer: the conversation's summary when the turn began,
	// the log records loaded after it (oldest first), and the Seq of the
	// oldest the turn's request keeps (0: none loaded).
	folds bool
	sum   Summary
	log   []Record

	mu    sync.Mutex
	ended bool
	last  int64 // the greatest Seq appended by Append
	keep  int64
}

// Summary returns the conversation's running summary as the turn began
// (zero without a summarizer, see [WithSummary], or before the first
// fold): what a request sends after its system prompt.
func (h *Hold) Summary() Summary { return h.sum }

// Kept tells the hold which of the records [Chat.Begin] returned the
// turn's request keeps: the newest, as [Window.Fit] cuts them (a system
// record among them is ignored). After End, the records before them that
// the summary does not hold yet are folded into it, once they reach the
// summarizer's threshold. Without a call the hold assumes the chat's
// window, with the summary counted against it. Without a summarizer Kept
// does nothing.
func (h *Hold) Kept(recs []Record) {
	if !h.folds {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kept(recs)
}

func (h *Hold) kept(recs []Record) {
	for _, r := range recs {
		if r.Message.Role != llm.RoleSystem {
			h.keep = r.Seq
			return
		}
	}
	// None kept: everything loaded slid out.
	h.keep = 0
	if n := len(h.log); n > 0 {
		h.keep = h.log[n-1].Seq + 1
	}
}

// fold returns the fold the turn leaves to do, nil for none: the records
// between the summary and the oldest the request kept, when they are
// known to reach the threshold or may (some were not loaded).
func (h *Hold) fold() *fold {
	s := h.c.summarizer
	after := h.sum.Through
	if h.keep <= after+1 {
		return nil
	}
	var out []Record
	for _, r := range h.log {
		if r.Seq >= h.keep {
			break
		}
		out = append(out, r)
	}
	complete := len(h.log) > 0 && h.log[0].Seq == after+1
	sure := Tokens(out) >= s.threshold
	if complete && !sure {
		return nil
	}
	f := &fold{store: h.c.store.(SummaryStore), key: h.c.key, counter: h.c.counter, prev: h.sum,
		before: h.keep, recs: out, complete: complete, sure: sure}
	if t, ok := h.c.store.(Trimmer); ok && !h.c.keepAll {
		f.trim = t
	}
	return f
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
// chat is then trimmed as [Chat.Add] trims it; a chat with a summarizer
// starts the turn's fold instead, on the summarizer's goroutine (End does
// not wait for it). A second End does nothing.
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
	var last int64
	if h.mem != nil {
		last = h.mem.end(h.c.key, h.grant, h.gen, recs)
	} else {
		var err error
		if last, err = h.end(ctx, recs); err != nil {
			return fmt.Errorf("memory: end the turn on %s: %w", h.c.key.Session, err)
		}
	}
	if h.folds {
		if f := h.fold(); f != nil {
			h.c.summarizer.start(f)
		}
		return nil
	}
	if last = max(last, h.last); last > 0 {
		return h.c.trimTo(ctx, last)
	}
	return nil
}
