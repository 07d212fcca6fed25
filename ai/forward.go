package ai

import (
	"context"
	"sync"
)

type forwardKey struct{}

// forwarder passes events from tools to the consumer of a turn's stream.
// Tools of a round run concurrently; the mutex keeps their events apart
// (the turn's goroutine is waiting for them meanwhile).
type forwarder struct {
	mu      sync.Mutex
	emit    func(Event) bool
	closed  bool
	stopped bool // the consumer stopped reading
}

func (f *forwarder) forward(ev Event) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.stopped {
		return false
	}
	if !f.emit(ev) {
		f.stopped = true
	}
	return !f.stopped
}

// close stops forwarding once the round is over (a tool that kept ctx must
// not reach the consumer later) and reports whether the consumer stopped.
func (f *forwarder) close() (stopped bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return f.stopped
}

// Forward passes ev to the consumer of the stream of the turn that is
// running the calling tool, for example the text of an agent the tool
// delegates to, so that tokens flow through delegation. It reports whether
// the event was delivered: false when the turn is not streamed, the
// consumer stopped reading, or the tool's round is over.
func Forward(ctx context.Context, ev Event) bool {
	f, _ := ctx.Value(forwardKey{}).(*forwarder)
	return f != nil && f.forward(ev)
}
