package memorytest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

// The contract of a turn held through a Chat (Chat.Begin, Hold.Append,
// Hold.End): one round trip each on a TurnStore, Lock, Load and Append on
// other stores; the suite checks both the same way.

func rec(id, text string, tokens int) memory.Record {
	return memory.Record{ID: id, Message: llm.UserMessage(text), Tokens: tokens}
}

func answer(id, text string) memory.Record {
	return memory.Record{ID: id, Message: llm.AssistantMessage(text), Tokens: 1}
}

func mustBegin(t *testing.T, c *memory.Chat, first ...memory.Record) (*memory.Hold, []memory.Record) {
	t.Helper()
	h, recs, err := c.Begin(ctxFor(t), first...)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	return h, recs
}

func mustEnd(t *testing.T, h *memory.Hold, recs ...memory.Record) {
	t.Helper()
	if err := h.End(ctxFor(t), recs...); err != nil {
		t.Fatalf("End: %v", err)
	}
}

// holds reports whether turns on s exclude each other across Chat values.
func holds(s memory.Store) bool {
	_, turns := s.(memory.TurnStore)
	_, locks := s.(memory.Locker)
	return turns || locks
}

// testBegin checks what Begin loads and stores, and what Append and End
// store, with ids that make a retried turn store nothing twice.
func testBegin(t *testing.T, s memory.Store) {
	k := newKey("begin")
	sys := memory.Record{Message: llm.SystemMessage("sys"), Tokens: 2}
	var hist []memory.Record
	for i, tok := range []int{5, 3, 8, 2, 4} {
		hist = append(hist, user("m"+string(rune('1'+i)), tok))
	}
	mustAppend(t, s, k, append([]memory.Record{sys}, hist...)...)

	c := memory.NewChat(s, k, memory.Window{MaxMessages: 2}, memory.KeepAll())
	want := mustLoad(t, s, k, memory.Window{MaxMessages: 2})
	h, recs := mustBegin(t, c, rec("t1-q", "q", 1))
	checkRecords(t, "Begin's window (MaxMessages 2)", recs, want)
	// The first records are stored at Begin, before the turn ends.
	all := mustLoad(t, s, k, memory.Window{})
	if last := all[len(all)-1]; last.ID != "t1-q" || last.Seq != 6 || last.Message.Text() != "q" {
		t.Fatalf("after Begin the last record is %+v, want t1-q with Seq 6", last)
	}
	if err := h.Append(ctxFor(t), answer("", "thinking")); err != nil {
		t.Fatalf("Append: %v", err)
	}
	mustEnd(t, h, answer("t1", "a"))
	mustEnd(t, h, answer("t1-again", "b")) // a second End does nothing
	if err := h.Append(ctxFor(t), answer("", "late")); err == nil {
		t.Error("Append after End succeeded")
	}
	all = mustLoad(t, s, k, memory.Window{})
	if got, want := texts(all), []string{"sys", "m1", "m2", "m3", "m4", "m5", "q", "thinking", "a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the turn Load = %q, want %q", got, want)
	}
	if got := seqs(all[6:]); !reflect.DeepEqual(got, []int64{6, 7, 8}) {
		t.Fatalf("the turn's seqs = %v, want [6 7 8]", got)
	}

	// The same turn again (a retry with the same ids) stores nothing twice,
	// and its first records are not part of its window.
	c = memory.NewChat(s, k, memory.Window{}, memory.KeepAll())
	h, recs = mustBegin(t, c, rec("t1-q", "q", 1))
	if got, want := texts(recs), []string{"sys", "m1", "m2", "m3", "m4", "m5", "thinking", "a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("retried Begin's window = %q, want %q (without its own first record)", got, want)
	}
	mustEnd(t, h, answer("t1", "a"))
	if got := mustLoad(t, s, k, memory.Window{}); len(got) != len(all) {
		t.Fatalf("a retried turn stored %d records more", len(got)-len(all))
	}

	// A token window with a Reserve loads the superset that leaves room for
	// the Reserve: MaxTokens−Reserve.
	k2 := newKey("begin-tokens")
	mustAppend(t, s, k2, append([]memory.Record{sys}, hist...)...)
	want = mustLoad(t, s, k2, memory.Window{MaxTokens: 14})
	c = memory.NewChat(s, k2, memory.Window{MaxTokens: 20, Reserve: 6}, memory.KeepAll())
	h, recs = mustBegin(t, c)
	checkRecords(t, "Begin's window (MaxTokens 20, Reserve 6)", recs, want)
	mustEnd(t, h)
	// A Reserve the budget cannot hold fails before the store is touched.
	c = memory.NewChat(s, k2, memory.Window{MaxTokens: 10, Reserve: 11})
	if _, _, err := c.Begin(ctxFor(t), rec("", "never", 1)); !errors.Is(err, llm.ErrContextTooLong) {
		t.Fatalf("Begin with a Reserve over MaxTokens: err = %v, want ErrContextTooLong", err)
	}
	if n := len(mustLoad(t, s, k2, memory.Window{})); n != 6 {
		t.Fatalf("a refused Begin left %d records, want 6", n)
	}

	// Without KeepAll, End trims what fell out of a message window from a
	// store that can trim.
	if _, ok := s.(memory.Trimmer); ok {
		k3 := newKey("begin-trim")
		mustAppend(t, s, k3, hist...)
		c = memory.NewChat(s, k3, memory.Window{MaxMessages: 3})
		h, _ = mustBegin(t, c, rec("", "q", 1))
		mustEnd(t, h, answer("", "a"))
		if got, want := texts(mustLoad(t, s, k3, memory.Window{})), []string{"m5", "q", "a"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("after a trimmed turn the store holds %q, want %q", got, want)
		}
	}
}

// testBeginMessages checks that BeginMessages appends the messages the
// window keeps, cut exactly, and stores the first records as Begin does.
func testBeginMessages(t *testing.T, s memory.Store) {
	recs := []memory.Record{{Message: llm.SystemMessage("sys"), Tokens: 2}}
	for i, tok := range []int{5, 3, 8, 2, 4} {
		recs = append(recs, user("m"+string(rune('1'+i)), tok))
	}
	// A tool round whose call the window drops: its result goes too.
	recs = append(recs,
		memory.Record{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}}, Tokens: 3},
		memory.Record{Message: llm.ToolResultMessage("c", "f", "ok", false), Tokens: 1},
		user("m6", 1))
	for _, tt := range []struct {
		w    memory.Window
		want []string
	}{
		{memory.Window{MaxMessages: 2}, []string{"sys", "m6"}},
		{memory.Window{MaxMessages: 3}, []string{"sys", "", "ok", "m6"}},
		{memory.Window{MaxTokens: 12}, []string{"sys", "m5", "", "ok", "m6"}},
		{memory.Window{MaxTokens: 20, Reserve: 10}, []string{"sys", "", "ok", "m6"}},
	} {
		k := newKey("begin-messages")
		mustAppend(t, s, k, recs...)
		c := memory.NewChat(s, k, tt.w, memory.KeepAll())
		dst := []llm.Message{llm.UserMessage("kept")}
		h, got, err := c.BeginMessages(ctxFor(t), dst, rec("", "q", 1))
		if err != nil {
			t.Fatalf("BeginMessages(%+v): %v", tt.w, err)
		}
		mustEnd(t, h)
		var texts []string
		for _, m := range got[1:] {
			texts = append(texts, m.Text())
		}
		if got[0].Text() != "kept" || !reflect.DeepEqual(texts, tt.want) {
			t.Errorf("BeginMessages(%+v) = %q after %q, want %q", tt.w, texts, got[0].Text(), tt.want)
		}
		all := mustLoad(t, s, k, memory.Window{})
		if last := all[len(all)-1]; last.Message.Text() != "q" {
			t.Fatalf("BeginMessages did not store its first record: the last is %q", last.Message.Text())
		}
	}
	k := newKey("begin-messages")
	mustAppend(t, s, k, recs...)
	c := memory.NewChat(s, k, memory.Window{MaxTokens: 10, Reserve: 9})
	if _, _, err := c.BeginMessages(ctxFor(t), nil); !errors.Is(err, llm.ErrContextTooLong) {
		t.Fatalf("BeginMessages with a stored system record over the budget: err = %v, want ErrContextTooLong", err)
	}
	next, _ := mustBegin(t, c) // the refused turn released the conversation
	mustEnd(t, next)
}

// testBeginBusy checks that a held conversation makes other turns wait:
// until Lease.Wait (storing nothing), or until the holder ends, after which
// the waiter sees the holder's last records.
func testBeginBusy(t *testing.T, s memory.Store) {
	if !holds(s) {
		t.Skip("store is neither a TurnStore nor a Locker")
	}
	k := newKey("begin-busy")
	c := memory.NewChat(s, k, memory.Window{}, memory.WithLease(memory.Lease{Owner: "memorytest"}), memory.KeepAll())
	h, _ := mustBegin(t, c, rec("t1-q", "first", 1))

	// Another conversation is not held.
	other, _ := mustBegin(t, memory.NewChat(s, newKey("begin-busy-other"), memory.Window{}))
	mustEnd(t, other)

	impatient := memory.NewChat(s, k, memory.Window{}, memory.WithLease(memory.Lease{Wait: 150 * time.Millisecond}))
	if _, _, err := impatient.Begin(ctxFor(t), rec("t2-q", "second", 1)); !errors.Is(err, memory.ErrLockTimeout) {
		t.Fatalf("Begin of a held conversation: err = %v, want ErrLockTimeout", err)
	}
	if got := texts(mustLoad(t, s, k, memory.Window{})); !reflect.DeepEqual(got, []string{"first"}) {
		t.Fatalf("a Begin that gave up stored its records: %q", got)
	}

	type begun struct {
		h    *memory.Hold
		recs []memory.Record
		err  error
	}
	got := make(chan begun, 1)
	go func() {
		h, recs, err := c.Begin(ctxFor(t), rec("t3-q", "third", 1))
		got <- begun{h, recs, err}
	}()
	select {
	case b := <-got:
		if b.h != nil {
			mustEnd(t, b.h)
		}
		t.Fatalf("a waiter began while the conversation was held (err %v)", b.err)
	default:
	}
	mustEnd(t, h, answer("t1", "one"))
	b := <-got
	if b.err != nil {
		t.Fatalf("waiter after End: %v", b.err)
	}
	if got, want := texts(b.recs), []string{"first", "one"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the waiter's window = %q, want %q: the holder's last records first", got, want)
	}
	mustEnd(t, b.h)
}

// testBeginDropped checks that a holder whose process died (its leases
// dropped) blocks no one, and that its late End stores its records but
// frees nothing.
func testBeginDropped(t *testing.T, s memory.Store) {
	lk, ok := s.(memory.Locker)
	if !ok {
		t.Skip("store is not a Locker")
	}
	k := newKey("begin-dropped")
	owner, other := "owner-"+random(), "owner-"+random()
	dead, _ := mustBegin(t, memory.NewChat(s, k, memory.Window{}, memory.WithLease(memory.Lease{Owner: owner}), memory.KeepAll()), rec("d-q", "dead", 1))
	if err := lk.Drop(ctxFor(t), owner); err != nil {
		t.Fatalf("Drop: %v", err)
	}
	next, recs := mustBegin(t, memory.NewChat(s, k, memory.Window{},
		memory.WithLease(memory.Lease{Owner: other, Wait: memory.DefaultLeaseTTL / 2}), memory.KeepAll()), rec("n-q", "next", 1))
	if got := texts(recs); !reflect.DeepEqual(got, []string{"dead"}) {
		t.Fatalf("window after the holder was dropped = %q", got)
	}
	mustEnd(t, dead, answer("d", "late answer"))
	impatient := memory.NewChat(s, k, memory.Window{}, memory.WithLease(memory.Lease{Wait: 150 * time.Millisecond}))
	if _, _, err := impatient.Begin(ctxFor(t)); !errors.Is(err, memory.ErrLockTimeout) {
		t.Fatalf("Begin after a dropped holder's End: err = %v, want ErrLockTimeout", err)
	}
	mustEnd(t, next)
	if got, want := texts(mustLoad(t, s, k, memory.Window{})), []string{"dead", "next", "late answer"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
}

// testBeginRenewed holds a conversation for several lease TTLs: the
// heartbeat keeps the lease.
func testBeginRenewed(t *testing.T, s memory.Store) {
	if !holds(s) {
		t.Skip("store is neither a TurnStore nor a Locker")
	}
	k := newKey("begin-renewed")
	const ttl = time.Second
	h, _ := mustBegin(t, memory.NewChat(s, k, memory.Window{}, memory.WithLease(memory.Lease{Owner: "memorytest", TTL: ttl})))
	impatient := memory.NewChat(s, k, memory.Window{}, memory.WithLease(memory.Lease{Wait: 3 * ttl}))
	if _, _, err := impatient.Begin(ctxFor(t)); !errors.Is(err, memory.ErrLockTimeout) {
		t.Fatalf("Begin while the holder lives, after 3 TTLs: err = %v, want ErrLockTimeout", err)
	}
	mustEnd(t, h)
	next, _ := mustBegin(t, impatient)
	mustEnd(t, next)
}

// testEndAfterCancel ends a turn whose context was cancelled: its records
// are stored and the conversation is released.
func testEndAfterCancel(t *testing.T, s memory.Store) {
	k := newKey("end-cancelled")
	c := memory.NewChat(s, k, memory.Window{}, memory.KeepAll())
	ctx, cancel := context.WithCancel(ctxFor(t))
	h, _, err := c.Begin(ctx, rec("c-q", "question", 1))
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	cancel()
	if err := h.End(ctx, memory.Record{ID: "c", Message: llm.AssistantMessage("cut sh"), Tokens: 2, Partial: true}); err != nil {
		t.Fatalf("End after cancel: %v", err)
	}
	got := mustLoad(t, s, k, memory.Window{})
	if !reflect.DeepEqual(texts(got), []string{"question", "cut sh"}) || !got[1].Partial || got[1].ID != "c" {
		t.Fatalf("stored after a cancelled turn: %s", show(got))
	}
	next, _ := mustBegin(t, memory.NewChat(s, k, memory.Window{}, memory.WithLease(memory.Lease{Wait: memory.DefaultLeaseTTL / 2})))
	mustEnd(t, next)
}
