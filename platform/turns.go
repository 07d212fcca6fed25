package platform

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The running turns of this replica: why a turn's context ended, and the
// registry that cancels turns (POST /v1/chat/cancel, shutdown).

// turnTimeoutError ends a turn that overran its agent's timeouts.turn_ms.
type turnTimeoutError struct{ d time.Duration }

func (e *turnTimeoutError) Error() string {
	return fmt.Sprintf("the turn did not finish within %v (the agent's timeouts.turn_ms)", e.d)
}

// Errors that say why a turn's context ended.
var (
	errShuttingDown      = errors.New("server shutting down")
	errCancelledByClient = errors.New("cancelled by POST /v1/chat/cancel")
)

// turnRegistry tracks the running turns of this replica so that
// POST /v1/chat/cancel and shutdown can stop them.
type turnRegistry struct {
	mu      sync.Mutex
	byKey   map[string]map[*turnHandle]struct{}
	all     map[*turnHandle]struct{}
	closing bool
}

type turnHandle struct {
	cancel context.CancelCauseFunc
	keys   []string
}

func newTurnRegistry() *turnRegistry {
	return &turnRegistry{byKey: map[string]map[*turnHandle]struct{}{}, all: map[*turnHandle]struct{}{}}
}

// start registers a turn under its keys (session id, message id) and
// returns its context and the function that unregisters it.
func (tr *turnRegistry) start(parent context.Context, keys ...string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	h := &turnHandle{cancel: cancel, keys: keys}
	tr.mu.Lock()
	if tr.closing {
		cancel(errShuttingDown)
	}
	tr.all[h] = struct{}{}
	for _, k := range keys {
		m := tr.byKey[k]
		if m == nil {
			m = map[*turnHandle]struct{}{}
			tr.byKey[k] = m
		}
		m[h] = struct{}{}
	}
	tr.mu.Unlock()
	return ctx, func() {
		tr.mu.Lock()
		delete(tr.all, h)
		for _, k := range h.keys {
			delete(tr.byKey[k], h)
			if len(tr.byKey[k]) == 0 {
				delete(tr.byKey, k)
			}
		}
		tr.mu.Unlock()
		cancel(nil)
	}
}

// cancel stops the turns registered under key; it reports how many.
func (tr *turnRegistry) cancel(key string, cause error) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for h := range tr.byKey[key] {
		h.cancel(cause)
		n++
	}
	return n
}

// shutdown stops every running turn and refuses new ones.
func (tr *turnRegistry) shutdown() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.closing = true
	for h := range tr.all {
		h.cancel(errShuttingDown)
	}
	return len(tr.all)
}

// active reports how many turns are running.
func (tr *turnRegistry) active() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.all)
}
