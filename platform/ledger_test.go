package platform

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/weftlabs/weft/platform/meta"
)

// fakeLedgerStore records the batches written.
type fakeLedgerStore struct {
	mu      sync.Mutex
	gate    chan struct{} // when set, each write waits for it
	batches [][]meta.Usage
	traces  int
}

func (f *fakeLedgerStore) WriteLedger(_ context.Context, usage []meta.Usage, traces []meta.TurnTrace) error {
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, usage)
	f.traces += len(traces)
	return nil
}

func (f *fakeLedgerStore) rows() (n int, turns int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.batches {
		n += len(b)
		for _, u := range b {
			turns += u.Turns
		}
	}
	return n, turns
}

// TestLedger: queued turns are written in batches, rows of the same key
// summed (the ten "b" rows queued behind a blocked write become at most
// two rows); flush waits for what was queued before it; close drains, and an
// item added after close is written at once.
func TestLedger(t *testing.T) {
	st := &fakeLedgerStore{gate: make(chan struct{})}
	l := newLedger(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	u := func(agent string) ledgerItem {
		return ledgerItem{usage: &meta.Usage{TenantID: "t", Day: "2026-12-02", AgentID: agent, Model: "m", Turns: 1, PromptTokens: 2}}
	}
	l.add(u("a")) // the writer waits at the gate: the rest queue behind
	for range 10 {
		l.add(u("b"))
	}
	l.add(ledgerItem{trace: &meta.TurnTrace{TenantID: "t", MessageID: "m1"}})
	flushed := make(chan struct{})
	go func() { l.flush(context.Background()); close(flushed) }()
	close(st.gate) // let every write through
	<-flushed
	if n, turns := st.rows(); n < 2 || n > 3 || turns != 11 || st.traces != 1 {
		t.Fatalf("rows %d, turns %d, traces %d; want \"a\" and the ten \"b\" summed, 11 turns, 1 trace (batches %v)", n, turns, st.traces, st.batches)
	}
	l.add(u("c"))
	l.close()
	l.add(u("d")) // after close: written at once
	l.flush(context.Background())
	if _, turns := st.rows(); turns != 13 {
		t.Fatalf("after close: turns %d; want 13", turns)
	}
}
