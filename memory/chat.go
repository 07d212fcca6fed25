package memory

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tokens"
)

// Chat is the memory of one conversation: a [Store] seen through a
// [Window]. It is what a typed call or a platform turn reads history from
// and writes new messages to. A Chat is safe for concurrent use, but turns
// that read, call a model and write must hold the conversation to keep
// their messages together: with [Chat.Begin], which also loads the window
// and stores the turn's first messages (one round trip on a [TurnStore]),
// or with [Chat.Lock].
//
// The window applies on read (Messages returns what fits) and on write
// (records that fell out of the window are trimmed at once when the store
// implements [Trimmer], so a wider window over the same store does not
// bring them back). The rules are those of [Window]. A chat with a
// [Summarizer] (see [WithSummary]) folds what slides out of its window
// into the conversation's summary instead, and trims a record only once
// it is folded.
type Chat struct {
	store  Store
	key    Key
	window Window
	// windowOf, when set, is the window instead (see PerID).
	windowOf func(id string) Window
	counter  tokens.Counter
	lease    Lease
	keepAll  bool
	// summarizer folds what slides out of the window; nil for none.
	summarizer *Summarizer
	// locks serialises turns in-process when the store has no Locker.
	locks *locks

	// trimmed is the Seq before which the log was last trimmed (message
	// windows).
	trimmed atomic.Int64
}

// ChatOption configures a [Chat] or the chats of a [Chats].
type ChatOption func(*chatConfig)

type chatConfig struct {
	store      Store
	counter    tokens.Counter
	lease      Lease
	keepAll    bool
	summarizer *Summarizer
}

// WithStore sets the store (default: one in-process store per Chats).
func WithStore(s Store) ChatOption { return func(c *chatConfig) { c.store = s } }

// WithCounter sets the counter of Record.Tokens (default tokens.Estimator).
func WithCounter(c tokens.Counter) ChatOption { return func(cc *chatConfig) { cc.counter = c } }

// WithLease sets the lease a turn takes on its conversation (see
// [Chat.Begin] and [Chat.Lock]): its owner, so that a process restarting
// under the same owner can [Locker.Drop] the leases its previous life
// left, its TTL, and how long a turn waits for a busy conversation. The
// default is an anonymous lease of DefaultLeaseTTL, waited for until the
// turn's context ends.
func WithLease(l Lease) ChatOption { return func(c *chatConfig) { c.lease = l } }

// KeepAll keeps every record in the store: records that fell out of the
// window are not trimmed, so that the whole conversation can still be
// listed (a server showing its sessions' messages needs this). By default
// a store that implements [Trimmer] is trimmed on write.
func KeepAll() ChatOption { return func(c *chatConfig) { c.keepAll = true } }

// WithSummary folds what slides out of the window into the conversation's
// running summary with s (see [Summarizer]): a turn held with [Chat.Begin]
// leaves out the records the summary holds, the summary follows the
// system prompt (its tokens count against a token window), and after the
// turn ends the records that slid out are folded once they reach s's
// threshold. The store must be a [SummaryStore] (all of Weft's are); the
// chat then trims a record only once it is folded.
func WithSummary(s *Summarizer) ChatOption { return func(c *chatConfig) { c.summarizer = s } }

// NewChat returns the memory of conversation key in store, bounded by w.
// Turns are serialised with the store's [Locker] when it has one, and with
// an in-process lock otherwise.
func NewChat(store Store, key Key, w Window, opts ...ChatOption) *Chat {
	cfg := chatConfig{store: store}
	for _, o := range opts {
		o(&cfg)
	}
	var tbl *locks
	if _, ok := cfg.store.(Locker); !ok {
		tbl = &locks{prune: true}
	}
	return newChat(&cfg, key, w, tbl)
}

func newChat(cfg *chatConfig, key Key, w Window, tbl *locks) *Chat {
	if _, ok := cfg.store.(SummaryStore); cfg.summarizer != nil && !ok {
		panic(fmt.Sprintf("memory: WithSummary over a store that keeps no summaries (%T is not a SummaryStore)", cfg.store))
	}
	c := &Chat{store: cfg.store, key: key, window: w, counter: cfg.counter, lease: cfg.lease, keepAll: cfg.keepAll,
		summarizer: cfg.summarizer, locks: tbl}
	if c.counter == nil {
		c.counter = tokens.Estimator{}
	}
	return c
}

// Key returns the conversation's key.
func (c *Chat) Key() Key { return c.key }

// Window returns the chat's window: for a chat of [PerID], what its
// window function answers now.
func (c *Chat) Window() Window {
	if c.windowOf != nil {
		return c.windowOf(c.key.Session)
	}
	return c.window
}

// Counter returns the counter of the records' Tokens, the unit of the
// window's MaxTokens.
func (c *Chat) Counter() tokens.Counter { return c.counter }

// Summarizer returns the chat's summarizer (see [WithSummary]), nil for
// none.
func (c *Chat) Summarizer() *Summarizer { return c.summarizer }

// Summary returns the conversation's running summary, the zero Summary
// when it has none or the store keeps none.
func (c *Chat) Summary(ctx context.Context) (Summary, error) {
	ss, ok := c.store.(SummaryStore)
	if !ok {
		return Summary{}, nil
	}
	s, err := ss.LoadSummary(ctx, c.key)
	if err != nil {
		return Summary{}, fmt.Errorf("memory: load the summary of %s: %w", c.key.Session, err)
	}
	return s, nil
}

// Messages appends to dst the messages that fit the window, system message
// first, oldest first, and returns the extended slice.
//
// The messages may share their parts, images and tool calls with the
// store (a [MessageStore] such as [InMemory] is read without copying):
// treat them as read-only, and replace a message's slices rather than
// change their elements.
func (c *Chat) Messages(ctx context.Context, dst []llm.Message) ([]llm.Message, error) {
	if m, ok := c.store.(MessageStore); ok {
		return m.LoadMessages(ctx, c.key, c.Window(), dst)
	}
	recs, err := c.Records(ctx)
	if err != nil {
		return dst, err
	}
	for i := range recs {
		dst = append(dst, recs[i].Message)
	}
	return dst, nil
}

// Records returns the records that fit the window, system record first.
func (c *Chat) Records(ctx context.Context) ([]Record, error) {
	recs, err := c.Window().Load(ctx, c.store, c.key)
	if err != nil {
		return nil, fmt.Errorf("memory: load %s: %w", c.key.Session, err)
	}
	return recs, nil
}

// Add appends messages, counting their tokens. A system message replaces
// the stored one (and is not stored twice when identical). When the store
// implements [Trimmer], records that no longer fit the window are removed
// (unless the chat keeps all, see [KeepAll], or folds them into a summary,
// see [WithSummary]: only turns held with [Chat.Begin] fold).
func (c *Chat) Add(ctx context.Context, msgs ...llm.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	var last int64
	var err error
	if m, ok := c.store.(MessageStore); ok {
		if last, err = m.AppendMessages(ctx, c.key, c.counter, msgs); err != nil {
			return err
		}
	} else if last, err = c.append(ctx, msgs); err != nil {
		return err
	}
	return c.trimTo(ctx, last)
}

// trimTo removes, when the store implements [Trimmer] and the chat does not
// keep all, the records that no longer fit the window after last, the
// greatest Seq just appended. A chat with a summarizer trims after its
// folds instead.
func (c *Chat) trimTo(ctx context.Context, last int64) error {
	t, ok := c.store.(Trimmer)
	if !ok || c.keepAll || c.summarizer != nil {
		return nil
	}
	// Trimming is exact: a record the window no longer keeps is removed at
	// once, so a wider window read over the same store never sees it again.
	switch w := c.Window(); {
	case w.MaxMessages > 0:
		// Seqs have no gaps and a window holds at most MaxMessages log
		// records, so nothing before this is ever read again. (Fit may
		// keep fewer; the records between are tool results whose call is
		// gone, which every window drops.)
		before := last - int64(w.MaxMessages) + 1
		if before > c.trimmed.Load() {
			if err := t.Trim(ctx, c.key, before); err != nil {
				return fmt.Errorf("memory: trim %s: %w", c.key.Session, err)
			}
			c.trimmed.Store(before)
		}
	case w.MaxTokens > 0:
		return c.trim(ctx, t)
	}
	return nil
}

// append appends msgs to the store and returns the greatest Seq stored.
func (c *Chat) append(ctx context.Context, msgs []llm.Message) (int64, error) {
	recs := make([]Record, len(msgs))
	for i, m := range msgs {
		recs[i] = Record{Message: m, Tokens: tokens.MessageTokens(c.counter, m)}
	}
	stored, err := c.store.Append(ctx, c.key, recs...)
	if err != nil {
		return 0, fmt.Errorf("memory: append to %s: %w", c.key.Session, err)
	}
	last := int64(0)
	for _, r := range stored {
		last = max(last, r.Seq)
	}
	return last, nil
}

// trim removes the log records older than the window's oldest.
func (c *Chat) trim(ctx context.Context, t Trimmer) error {
	recs, err := c.Records(ctx)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Message.Role != llm.RoleSystem {
			if r.Seq > 1 {
				if err := t.Trim(ctx, c.key, r.Seq); err != nil {
					return fmt.Errorf("memory: trim %s: %w", c.key.Session, err)
				}
			}
			return nil
		}
	}
	return nil
}

// Clear deletes the conversation.
func (c *Chat) Clear(ctx context.Context) error {
	if err := c.store.Delete(ctx, c.key); err != nil {
		return fmt.Errorf("memory: delete %s: %w", c.key.Session, err)
	}
	return nil
}

// Lock waits until no other turn holds the conversation (or ctx ends) and
// returns the function that releases it: the store's [Locker] with the
// chat's lease (see [WithLease]) when it has one, an in-process lock
// otherwise. [Chat.Begin] takes the lock, loads the window and stores a
// turn's first messages together.
func (c *Chat) Lock(ctx context.Context) (release func(), err error) {
	if l, ok := c.store.(Locker); ok {
		return l.Lock(ctx, c.key, c.lease)
	}
	return c.locks.lock(ctx, c.key, c.lease.Owner)
}
