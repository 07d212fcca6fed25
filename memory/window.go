package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/weftlabs/weft/tokens"
)

// Chats is memory per ID: one [Chat] for each memory ID, created lazily on
// first use, all sharing one store, and one window or a window per ID. It
// is what ai.MemoryPerID takes (LangChain4j's ChatMemoryProvider). Safe
// for concurrent use.
type Chats struct {
	cfg      chatConfig
	window   Window
	windowOf func(id string) Window
	locks    *locks

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

// PerID returns memory per ID whose window is window(id), over one store:
// a premium user's conversation can keep more than a basic one's
// (LangChain4j's dynamicMaxMessages). window is asked each time a
// conversation is read, written or begun, so a changed answer (an upgrade)
// applies from the next turn on; it must be fast and safe for concurrent
// use. Give token windows their counter with [WithCounter]. Over a store
// that trims (a [Trimmer]), what a smaller window lets go is deleted: a
// window that grows later does not bring it back.
func PerID(window func(id string) Window, opts ...ChatOption) *Chats {
	c := newChats(Window{}, opts)
	c.windowOf = window
	return c
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
	if _, ok := c.cfg.store.(SummaryStore); c.cfg.summarizer != nil && !ok {
		panic(fmt.Sprintf("memory: WithSummary over a store that keeps no summaries (%T is not a SummaryStore)", c.cfg.store))
	}
	if _, ok := c.cfg.store.(Locker); !ok {
		c.locks = &locks{prune: true}
	}
	return c
}

// Store returns the store the chats share.
func (cs *Chats) Store() Store { return cs.cfg.store }

// Chat returns the memory of id, creating it on first use.
func (cs *Chats) Chat(id string) *Chat {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.chats[id]; ok {
		return c
	}
	c := newChat(&cs.cfg, Key{Session: id}, cs.window, cs.locks)
	c.windowOf = cs.windowOf
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
