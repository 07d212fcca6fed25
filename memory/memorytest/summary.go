package memorytest

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

// The contract of a memory.SummaryStore: a summary kept beside each
// conversation, saved by compare-and-set on its Through, deleted with the
// conversation and read in Begin's round trip; and the ranges of records
// a fold reads.

func summaries(t *testing.T, s memory.Store) memory.SummaryStore {
	t.Helper()
	ss, ok := s.(memory.SummaryStore)
	if !ok {
		t.Skip("store is not a SummaryStore")
	}
	return ss
}

func mustSave(t *testing.T, ss memory.SummaryStore, k memory.Key, sum memory.Summary, prev int64, want bool) {
	t.Helper()
	ok, err := ss.SaveSummary(ctxFor(t), k, sum, prev)
	if err != nil {
		t.Fatalf("SaveSummary(through %d, prev %d): %v", sum.Through, prev, err)
	}
	if ok != want {
		t.Fatalf("SaveSummary(through %d, prev %d) = %v, want %v", sum.Through, prev, ok, want)
	}
}

func mustLoadSummary(t *testing.T, ss memory.SummaryStore, k memory.Key) memory.Summary {
	t.Helper()
	sum, err := ss.LoadSummary(ctxFor(t), k)
	if err != nil {
		t.Fatalf("LoadSummary: %v", err)
	}
	return sum
}

func checkSummary(t *testing.T, what string, got, want memory.Summary) {
	t.Helper()
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("%s: UpdatedAt %v, want %v", what, got.UpdatedAt, want.UpdatedAt)
	}
	got.UpdatedAt, want.UpdatedAt = time.Time{}, time.Time{}
	if got != want {
		t.Fatalf("%s: %+v, want %+v", what, got, want)
	}
}

func testSummary(t *testing.T, s memory.Store) {
	ss := summaries(t, s)
	k := newKey("summary")
	if got := mustLoadSummary(t, ss, k); got != (memory.Summary{}) {
		t.Fatalf("summary of an absent conversation = %+v", got)
	}
	// No conversation, no summary: a fold that ends after a Delete
	// leaves nothing behind.
	mustSave(t, ss, k, memory.Summary{Text: "orphan", Through: 1}, 0, false)

	var recs []memory.Record
	for i := range 5 {
		recs = append(recs, user(fmt.Sprint("m", i+1), 1))
	}
	mustAppend(t, s, k, append([]memory.Record{{Message: llm.SystemMessage("sys"), Tokens: 1}}, recs...)...)
	before := time.Now().Add(-time.Minute)
	mustSave(t, ss, k, memory.Summary{Text: "first two", Through: 2, Tokens: 7}, 0, true)
	got := mustLoadSummary(t, ss, k)
	if got.UpdatedAt.Before(before) || got.UpdatedAt.After(time.Now().Add(time.Minute)) {
		t.Fatalf("UpdatedAt filled as %v, want about now", got.UpdatedAt)
	}
	checkSummary(t, "saved summary", got, memory.Summary{Text: "first two", Through: 2, Tokens: 7, UpdatedAt: got.UpdatedAt})

	// Compare and set: only a save that names the stored Through wins,
	// and Through only moves forward, never past the log.
	mustSave(t, ss, k, memory.Summary{Text: "again", Through: 3}, 0, false)
	mustSave(t, ss, k, memory.Summary{Text: "stale", Through: 3}, 1, false)
	mustSave(t, ss, k, memory.Summary{Text: "same", Through: 2}, 2, false)
	mustSave(t, ss, k, memory.Summary{Text: "beyond", Through: 6}, 2, false)
	checkSummary(t, "after refused saves", mustLoadSummary(t, ss, k), got)

	at := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)
	next := memory.Summary{Text: "four | pipes |\nand lines ✓ \"quoted\" \\ \u0000 end", Through: 4, Tokens: 12, UpdatedAt: at}
	mustSave(t, ss, k, next, 2, true)
	checkSummary(t, "second summary", mustLoadSummary(t, ss, k), next)

	// Another conversation has none; Trim keeps the summary.
	if got := mustLoadSummary(t, ss, memory.Key{Tenant: k.Tenant, Agent: k.Agent, Session: "other"}); got != (memory.Summary{}) {
		t.Fatalf("summary of another conversation = %+v", got)
	}
	if tr, ok := s.(memory.Trimmer); ok {
		if err := tr.Trim(ctxFor(t), k, 5); err != nil {
			t.Fatal(err)
		}
		checkSummary(t, "after Trim", mustLoadSummary(t, ss, k), next)
	}

	// A TurnStore reads it with the window.
	if ts, ok := s.(memory.TurnStore); ok {
		b, err := ts.Begin(ctxFor(t), k, memory.Lease{}, memory.Window{MaxMessages: 1}, nil)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if _, err := b.End(ctxFor(t), nil); err != nil {
			t.Fatalf("End: %v", err)
		}
		checkSummary(t, "Begin's summary", b.Summary, next)
		if got := texts(b.Records); !reflect.DeepEqual(got, []string{"sys", "m5"}) {
			t.Fatalf("Begin's window = %q, want the system record and m5", got)
		}
	}

	// Delete takes the summary with the conversation.
	if err := s.Delete(ctxFor(t), k); err != nil {
		t.Fatal(err)
	}
	if got := mustLoadSummary(t, ss, k); got != (memory.Summary{}) {
		t.Fatalf("summary after Delete = %+v", got)
	}
	mustAppend(t, s, k, recs...)
	mustSave(t, ss, k, memory.Summary{Text: "old fold", Through: 5}, 4, false)
	if got := mustLoadSummary(t, ss, k); got != (memory.Summary{}) {
		t.Fatalf("summary of a new conversation under a deleted key = %+v", got)
	}
}

// testSummaryRace saves concurrently from one Through: exactly one save
// wins.
func testSummaryRace(t *testing.T, s memory.Store) {
	ss := summaries(t, s)
	k := newKey("summary-race")
	mustAppend(t, s, k, user("a", 1), user("b", 1), user("c", 1))
	const n = 8
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ok, err := ss.SaveSummary(ctxFor(t), k, memory.Summary{Text: fmt.Sprint("fold ", i), Through: 2}, 0)
			if err != nil {
				t.Errorf("SaveSummary: %v", err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d of %d concurrent saves from one Through won, want 1", won.Load(), n)
	}
}

func testLoadRange(t *testing.T, s memory.Store) {
	ss := summaries(t, s)
	k := newKey("range")
	var in []memory.Record
	for i, tok := range []int{5, 3, 8, 2, 4} {
		in = append(in, memory.Record{ID: fmt.Sprint("r", i+1), Message: llm.UserMessage(fmt.Sprint("m", i+1)), Tokens: tok})
	}
	in[1].Message = llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("m2")}, ToolCalls: []llm.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}}
	in[1].Partial = true
	stored := mustAppend(t, s, k, append([]memory.Record{{Message: llm.SystemMessage("sys"), Tokens: 1}}, in...)...)[1:]
	load := func(after, before int64, maxTokens int) []memory.Record {
		t.Helper()
		got, err := ss.LoadRange(ctxFor(t), k, after, before, maxTokens)
		if err != nil {
			t.Fatalf("LoadRange(%d, %d, %d): %v", after, before, maxTokens, err)
		}
		return got
	}
	checkRecords(t, "LoadRange(0, 6)", load(0, 6, 0), stored)
	for _, tt := range []struct {
		after, before int64
		maxTokens     int
		want          []int64
	}{
		{1, 5, 0, []int64{2, 3, 4}},
		{0, 100, 0, []int64{1, 2, 3, 4, 5}},
		{0, 6, 8, []int64{1, 2}},
		{0, 6, 16, []int64{1, 2, 3}},
		{2, 6, 1, []int64{3}}, // at least one record
		{5, 10, 0, []int64{}},
		{3, 3, 0, []int64{}},
		{3, 4, 0, []int64{}},
	} {
		if got := seqs(load(tt.after, tt.before, tt.maxTokens)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("LoadRange(%d, %d, %d) seqs = %v, want %v", tt.after, tt.before, tt.maxTokens, got, tt.want)
		}
	}
	if got, err := ss.LoadRange(ctxFor(t), newKey("absent"), 0, 10, 0); err != nil || len(got) != 0 {
		t.Fatalf("LoadRange of an absent conversation = %v, %v", got, err)
	}
	if tr, ok := s.(memory.Trimmer); ok {
		if err := tr.Trim(ctxFor(t), k, 3); err != nil {
			t.Fatal(err)
		}
		if got := seqs(load(0, 6, 0)); !reflect.DeepEqual(got, []int64{3, 4, 5}) {
			t.Fatalf("LoadRange after Trim(3) seqs = %v, want [3 4 5]", got)
		}
		mustAppend(t, s, k, user("m6", 1))
		if got := seqs(load(4, 7, 0)); !reflect.DeepEqual(got, []int64{5, 6}) {
			t.Fatalf("LoadRange(4, 7) after Trim and Append seqs = %v, want [5 6]", got)
		}
	}
}
