package memory

import (
	"context"
	"slices"
	"sync"

	"github.com/weftlabs/weft/tokens"
)

// Chats is memory per ID: one [Chat] for each memory ID, created lazily on
// first use, all sharing one store and one window. It is what
// ai.MemoryPerID takes. Safe for concurrent use.
type Chats struct {
	cfg     chatConfig
	window  Window
	locks   *locks
	newChat func(id string) *Chat

	mu    sync.Mutex
	chats map[string]*Chat
}

// MessageWindow returns memory per ID that keeps the n most recent messages
// of each conversation (besides the system message, which is always kept).
// An assistant message that called tools and the tool results that answer
// it are evicted together.
func MessageWindow(n int, opts ...ChatOption) *Chats {
	return newChats(Window{MaxMessages: n}, opts)
}

// TokenWindow returns memory per ID that keeps the most recent messages of
// each conversation whose tokens, as counter counts them, sum to at most n.
// Messages are indivisible; a system message is always kept, even alone and
// larger than the window.
func TokenWindow(n int, counter tokens.Counter, opts ...ChatOption) *Chats {
	return newChats(Window{MaxTokens: n}, append([]ChatOption{WithCounter(counter)}, opts...))
}

// PerID returns memory per ID whose chats newChat creates, on first use of
// each ID: for windows or stores that differ by ID. newChat must not
// return nil. Chats made with [NewChat] over a store without a [Locker]
// serialise turns in-process per Chat value, which PerID keeps one of per
// ID.
func PerID(newChat func(id string) *Chat) *Chats {
	return &Chats{newChat: newChat, chats: map[string]*Chat{}}
}

func newChats(w Window, opts []ChatOption) *Chats {
	c := &Chats{window: w, chats: map[string]*Chat{}}
	for _, o := range opts {
		o(&c.cfg)
	}
	if c.cfg.store == nil {
		c.cfg.store = NewInMemory()
	}
	if c.cfg.counter == nil {
		c.cfg.counter = tokens.Estimator{}
	}
	if _, ok := c.cfg.store.(Locker); !ok {
		c.locks = &locks{prune: true}
	}
	return c
}

// Store returns the store the chats share (nil for PerID).
func (cs *Chats) Store() Store { return cs.cfg.store }

// Chat returns the memory of id, creating it on first use.
func (cs *Chats) Chat(id string) *Chat {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.chats[id]; ok {
		return c
	}
	if cs.newChat != nil {
		c := cs.newChat(id)
		cs.chats[id] = c
		return c
	}
	c := newChat(&cs.cfg, Key{Session: id}, cs.window, cs.locks)
	cs.chats[id] = c
	return c
}

// IDs returns the memory IDs in use in this process, sorted.
func (cs *Chats) IDs() []string {
	cs.mu.Lock()
	ids := make([]string, 0, len(cs.chats))
	for id := range cs.chats {
		ids = append(ids, id)
	}
	cs.mu.Unlock()
	slices.Sort(ids)
	return ids
}

// Evict deletes the conversation of id from the store and forgets it.
func (cs *Chats) Evict(ctx context.Context, id string) error {
	c := cs.Chat(id)
	if err := c.Clear(ctx); err != nil {
		return err
	}
	cs.mu.Lock()
	delete(cs.chats, id)
	cs.mu.Unlock()
	return nil
}
