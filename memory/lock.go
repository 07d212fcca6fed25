package memory

import (
	"context"
	"fmt"
	"sync"
)

// locks is the one in-process lock table: the [Locker] of [InMemory], and
// the lock of chats over a store that has no Locker. The zero value is
// ready to use.
type locks struct {
	mu sync.Mutex
	m  map[Key]*grant
	// prune drops a conversation's entry when its lock is released and
	// nobody waits; without it the entry is reused by the next turn and
	// dropped by forget (InMemory forgets a conversation it deletes).
	prune bool
}

// grant is the lock of one conversation; gen tells one holding from the
// next, so that a late release frees nothing.
type grant struct {
	held  bool
	gen   uint64
	owner string
	// ended is made by the first waiter and closed when the holding ends.
	ended chan struct{}
}

// lock waits until key is free or ctx ends, takes it for owner, and
// returns the function that releases it.
func (l *locks) lock(ctx context.Context, key Key, owner string) (func(), error) {
	g, gen, err := l.take(ctx, key, owner)
	if err != nil {
		return nil, err
	}
	return func() { l.end(key, g, gen) }, nil
}

// take waits until key is free or ctx ends, and takes it for owner:
// l.end(key, g, gen) releases it.
func (l *locks) take(ctx context.Context, key Key, owner string) (g *grant, gen uint64, err error) {
	for {
		l.mu.Lock()
		g := l.m[key]
		if g == nil {
			if l.m == nil {
				l.m = map[Key]*grant{}
			}
			g = &grant{}
			l.m[key] = g
		}
		if !g.held {
			g.held, g.owner = true, owner
			g.gen++
			gen := g.gen
			l.mu.Unlock()
			return g, gen, nil
		}
		if g.ended == nil {
			g.ended = make(chan struct{})
		}
		ended := g.ended
		l.mu.Unlock()
		select {
		case <-ended:
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("%w: %s: %w", ErrLockTimeout, key.String(), ctx.Err())
		}
	}
}

// end ends holding gen of key's grant g, if it is still current.
func (l *locks) end(key Key, g *grant, gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g.held && g.gen == gen {
		l.endLocked(key, g)
	}
}

func (l *locks) endLocked(key Key, g *grant) {
	g.held = false
	waited := g.ended != nil
	if waited {
		close(g.ended)
		g.ended = nil
	}
	if l.prune && !waited && l.m[key] == g {
		delete(l.m, key)
	}
}

// drop ends every holding of owner.
func (l *locks) drop(owner string) {
	if owner == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, g := range l.m {
		if g.held && g.owner == owner {
			l.endLocked(k, g)
		}
	}
}

// forget drops key's entry unless its lock is held.
func (l *locks) forget(key Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g := l.m[key]; g != nil && !g.held {
		delete(l.m, key)
	}
}
