package platform

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/weftlabs/weft/platform/meta"
)

// The ledger writes what turns leave behind — their usage rows and traces —
// off the turns' path: a turn hands them over and answers at once, and one
// goroutine writes whatever has queued in one transaction (usage rows of
// the same day, tenant, agent, key and model summed first). Readers that
// must see a replica's own turns (budget checks of tenants with budgets,
// GET /v1/usage, budgets, traces) flush it first. Close drains it.

// ledgerStore is what the ledger needs of the metadata store.
type ledgerStore interface {
	WriteLedger(ctx context.Context, usage []meta.Usage, traces []meta.TurnTrace) error
}

// maxLedgerBatch bounds one transaction; ledgerLinger is how long a batch
// gathers before it is written (the delay before another replica sees a
// turn's usage; this replica's readers flush).
const (
	maxLedgerBatch = 256
	ledgerLinger   = 10 * time.Millisecond
)

type ledgerItem struct {
	usage   *meta.Usage
	trace   *meta.TurnTrace
	flushed chan struct{} // a flush marker: closed once everything before it is written
}

type ledger struct {
	store ledgerStore
	log   *slog.Logger
	in    chan ledgerItem
	done  chan struct{}

	mu     sync.RWMutex // guards closed against sends
	closed bool
}

func newLedger(store ledgerStore, log *slog.Logger) *ledger {
	l := &ledger{store: store, log: log, in: make(chan ledgerItem, 1024), done: make(chan struct{})}
	go l.run()
	return l
}

// add queues an item; after close it writes at once.
func (l *ledger) add(it ledgerItem) {
	l.mu.RLock()
	if !l.closed {
		l.in <- it
		l.mu.RUnlock()
		return
	}
	l.mu.RUnlock()
	l.write([]ledgerItem{it})
}

// flush waits until everything queued before it is written (or ctx ends).
func (l *ledger) flush(ctx context.Context) {
	if l == nil {
		return
	}
	ch := make(chan struct{})
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return
	}
	l.in <- ledgerItem{flushed: ch}
	l.mu.RUnlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

func (l *ledger) run() {
	defer close(l.done)
	batch := make([]ledgerItem, 0, 16)
	linger := time.NewTimer(ledgerLinger)
	linger.Stop()
	for it := range l.in {
		batch = append(batch[:0], it)
		// Gather for up to ledgerLinger (fewer, larger transactions under
		// load); a flush marker or a full batch writes at once.
		flushing := it.flushed != nil
		linger.Reset(ledgerLinger)
	more:
		for !flushing && len(batch) < maxLedgerBatch {
			select {
			case it, ok := <-l.in:
				if !ok {
					break more
				}
				batch = append(batch, it)
				flushing = it.flushed != nil
			case <-linger.C:
				break more
			}
		}
		linger.Stop()
		l.write(batch)
	}
}

// write writes a batch in one transaction and releases its flush markers.
func (l *ledger) write(batch []ledgerItem) {
	var usage []meta.Usage
	var traces []meta.TurnTrace
	for _, it := range batch {
		switch {
		case it.usage != nil:
			u := *it.usage
			merged := false
			for i := range usage {
				if w := &usage[i]; w.TenantID == u.TenantID && w.Day == u.Day && w.AgentID == u.AgentID && w.KeyID == u.KeyID && w.Model == u.Model {
					w.Turns += u.Turns
					w.PromptTokens += u.PromptTokens
					w.CompletionTokens += u.CompletionTokens
					w.CostNanos += u.CostNanos
					merged = true
					break
				}
			}
			if !merged {
				usage = append(usage, u)
			}
		case it.trace != nil:
			traces = append(traces, *it.trace)
		}
	}
	if err := l.store.WriteLedger(context.Background(), usage, traces); err != nil {
		l.log.Warn("usage and traces of turns not recorded", "usage_rows", len(usage), "traces", len(traces), "err", err)
	}
	for _, it := range batch {
		if it.flushed != nil {
			close(it.flushed)
		}
	}
}

// close writes what is queued and stops the ledger.
func (l *ledger) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.in)
	l.mu.Unlock()
	<-l.done
}
