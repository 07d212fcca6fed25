// Package memorytest is the contract suite every [memory.Store] must pass.
//
// A backend's test calls [Run] with a constructor; the suite checks the
// Store contract (sequence numbers, idempotent appends, system records,
// windows, round trips, tenant isolation, deletion, concurrency), the turns
// a [memory.Chat] holds over it (Begin, Append, End: one round trip each on
// a [memory.TurnStore]) and, when the store implements them, the optional
// [memory.Lister], [memory.Locker], [memory.Trimmer] and
// [memory.SummaryStore] abilities:
//
//	func TestContract(t *testing.T) {
//		memorytest.Run(t, func(t *testing.T) memory.Store { return memory.NewInMemory() })
//	}
//
// Every subtest uses keys under a fresh random tenant, so stores backed by a
// shared server need no cleanup between subtests.
package memorytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

// Run runs the contract suite against the stores newStore returns. newStore
// is called once per subtest; it may return a fresh store or a shared one.
// Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s memory.Store)
	}{
		{"AppendAssignsSeq", testAppendAssignsSeq},
		{"IdempotentAppend", testIdempotentAppend},
		{"EmptyIDsAreUnique", testEmptyIDs},
		{"SystemRecord", testSystemRecord},
		{"Windows", testWindows},
		{"RecordFieldsRoundTrip", testRecordFields},
		{"MessageRoundTrip", testMessageRoundTrip},
		{"TenantIsolation", testIsolation},
		{"Delete", testDelete},
		{"CancelledContext", testCancelled},
		{"ConcurrentAppends", testConcurrentAppends},
		{"List", testList},
		{"Trim", testTrim},
		{"Lock", testLock},
		{"LockDrop", testLockDrop},
		{"LeaseRenewed", testLeaseRenewed},
		{"Begin", testBegin},
		{"BeginMessages", testBeginMessages},
		{"BeginBusy", testBeginBusy},
		{"BeginDropped", testBeginDropped},
		{"BeginRenewed", testBeginRenewed},
		{"EndAfterCancel", testEndAfterCancel},
		{"Summary", testSummary},
		{"SummaryRace", testSummaryRace},
		{"LoadRange", testLoadRange},
		{"SummaryKeepsFacts", testSummaryKeepsFacts},
		{"SummaryAfterTurn", testSummaryAfterTurn},
		{"SummaryModelDown", testSummaryModelDown},
		{"SummaryCounts", testSummaryCounts},
		{"SummaryRaceTurns", testSummaryRaceTurns},
		{"SummaryNoDoubleFold", testSummaryNoDoubleFold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func random() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newKey returns a key under a tenant no other test uses.
func newKey(session string) memory.Key {
	return memory.Key{Tenant: "memorytest-" + random(), Agent: "agent", Session: session}
}

func user(text string, tokens int) memory.Record {
	return memory.Record{Message: llm.UserMessage(text), Tokens: tokens}
}

func mustAppend(t *testing.T, s memory.Store, k memory.Key, recs ...memory.Record) []memory.Record {
	t.Helper()
	out, err := s.Append(ctxFor(t), k, recs...)
	if err != nil {
		t.Fatalf("Append(%v): %v", k, err)
	}
	if len(out) != len(recs) {
		t.Fatalf("Append(%v) returned %d records for %d", k, len(out), len(recs))
	}
	return out
}

func mustLoad(t *testing.T, s memory.Store, k memory.Key, w memory.Window) []memory.Record {
	t.Helper()
	out, err := s.Load(ctxFor(t), k, w)
	if err != nil {
		t.Fatalf("Load(%v, %+v): %v", k, w, err)
	}
	return out
}

// equalRecords compares records field by field, times with time.Equal.
func equalRecords(a, b []memory.Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.CreatedAt.Equal(y.CreatedAt) {
			return false
		}
		x.CreatedAt, y.CreatedAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

func show(recs []memory.Record) string {
	b, _ := json.MarshalIndent(recs, "", "  ")
	return string(b)
}

func checkRecords(t *testing.T, what string, got, want []memory.Record) {
	t.Helper()
	if !equalRecords(got, want) {
		t.Fatalf("%s:\ngot  %s\nwant %s", what, show(got), show(want))
	}
}

func seqs(recs []memory.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.Seq
	}
	return out
}

func texts(recs []memory.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Message.Text()
	}
	return out
}

func testAppendAssignsSeq(t *testing.T, s memory.Store) {
	k := newKey("seq")
	first := mustAppend(t, s, k, user("a", 1), user("b", 2), user("c", 3))
	second := mustAppend(t, s, k, user("d", 4))
	third := mustAppend(t, s, k, user("e", 5), user("f", 6))
	all := append(append(first, second...), third...)
	if got, want := seqs(all), []int64{1, 2, 3, 4, 5, 6}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Append seqs = %v, want %v", got, want)
	}
	for _, r := range all {
		if r.ID == "" || r.CreatedAt.IsZero() {
			t.Fatalf("Append returned %+v without ID or CreatedAt", r)
		}
	}
	checkRecords(t, "Load after appends", mustLoad(t, s, k, memory.Window{}), all)
}

func testIdempotentAppend(t *testing.T, s memory.Store) {
	k := newKey("idem")
	a := user("first", 3)
	a.ID = "client-1"
	dup := user("retried with other text", 9)
	dup.ID = "client-1"
	got := mustAppend(t, s, k, a, user("x", 1), dup)
	if got[0].Seq != 1 || got[1].Seq != 2 {
		t.Fatalf("seqs = %v, want 1, 2 for the first two records", seqs(got))
	}
	checkRecords(t, "duplicate in the same call", got[2:], got[:1])

	// A retry in a later call, e.g. after a lost acknowledgement.
	again := mustAppend(t, s, k, dup, user("y", 1))
	checkRecords(t, "duplicate in a later call", again[:1], got[:1])
	if again[1].Seq != 3 {
		t.Fatalf("next record after a duplicate got Seq %d, want 3", again[1].Seq)
	}
	loaded := mustLoad(t, s, k, memory.Window{})
	if got, want := texts(loaded), []string{"first", "x", "y"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Load texts = %q, want %q", got, want)
	}

	// The same id in another conversation is another message.
	other := mustAppend(t, s, memory.Key{Tenant: k.Tenant, Agent: k.Agent, Session: "other"}, dup)
	if other[0].Seq != 1 || other[0].Message.Text() != dup.Message.Text() {
		t.Fatalf("same id in another session: got %+v", other[0])
	}
}

func testEmptyIDs(t *testing.T, s memory.Store) {
	k := newKey("ids")
	recs := make([]memory.Record, 20)
	for i := range recs {
		recs[i] = user(fmt.Sprint(i), 1)
	}
	got := append(mustAppend(t, s, k, recs...), mustAppend(t, s, k, recs...)...)
	seen := map[string]bool{}
	for _, r := range got {
		if r.ID == "" || seen[r.ID] {
			t.Fatalf("id %q empty or repeated", r.ID)
		}
		seen[r.ID] = true
	}
	if n := len(mustLoad(t, s, k, memory.Window{})); n != 40 {
		t.Fatalf("Load returned %d records, want 40", n)
	}
}

func testSystemRecord(t *testing.T, s memory.Store) {
	k := newKey("sys")
	sys := memory.Record{Message: llm.SystemMessage("be brief"), Tokens: 1000}
	got := mustAppend(t, s, k, user("q1", 10), sys, user("q2", 10))
	if got[1].Message.Role != llm.RoleSystem || got[1].ID == "" {
		t.Fatalf("system record returned as %+v", got[1])
	}
	if got[0].Seq != 1 || got[2].Seq != 2 {
		t.Fatalf("log seqs around a system record = %d, %d; want 1, 2", got[0].Seq, got[2].Seq)
	}
	stored := got[1]

	// Identical text: a no-op that returns the stored record.
	same := mustAppend(t, s, k, memory.Record{Message: llm.SystemMessage("be brief"), Tokens: 7})
	checkRecords(t, "identical system record", same, []memory.Record{stored})

	loaded := mustLoad(t, s, k, memory.Window{})
	checkRecords(t, "Load with a system record", loaded, []memory.Record{stored, got[0], got[2]})

	// The system record counts against neither bound.
	if w := mustLoad(t, s, k, memory.Window{MaxTokens: 10}); !reflect.DeepEqual(texts(w), []string{"be brief", "q2"}) {
		t.Fatalf("Load(MaxTokens 10) = %q, want the system record and q2", texts(w))
	}
	if w := mustLoad(t, s, k, memory.Window{MaxMessages: 1}); !reflect.DeepEqual(texts(w), []string{"be brief", "q2"}) {
		t.Fatalf("Load(MaxMessages 1) = %q, want the system record and q2", texts(w))
	}

	// Other text replaces it; there is never more than one.
	repl := mustAppend(t, s, k, memory.Record{Message: llm.SystemMessage("be verbose"), Tokens: 5})
	loaded = mustLoad(t, s, k, memory.Window{})
	if got, want := texts(loaded), []string{"be verbose", "q1", "q2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after replacing the system record Load = %q, want %q", got, want)
	}
	checkRecords(t, "replaced system record", loaded[:1], repl)

	// A system record alone is a conversation too.
	k2 := newKey("sys-only")
	only := mustAppend(t, s, k2, sys)
	checkRecords(t, "system-only conversation", mustLoad(t, s, k2, memory.Window{MaxMessages: 3}), only)
	// And the log goes on from Seq 1.
	if next := mustAppend(t, s, k2, user("q", 1)); next[0].Seq != 1 {
		t.Fatalf("first log record after a system record got Seq %d", next[0].Seq)
	}
}

func testWindows(t *testing.T, s memory.Store) {
	k := newKey("window")
	var recs []memory.Record
	for i, tok := range []int{5, 3, 8, 2, 4} {
		recs = append(recs, user(fmt.Sprint("m", i+1), tok))
	}
	mustAppend(t, s, k, recs...)
	tests := []struct {
		w    memory.Window
		want []int64
	}{
		{memory.Window{}, []int64{1, 2, 3, 4, 5}},
		{memory.Window{MaxMessages: 2}, []int64{4, 5}},
		{memory.Window{MaxMessages: 5}, []int64{1, 2, 3, 4, 5}},
		{memory.Window{MaxMessages: 50}, []int64{1, 2, 3, 4, 5}},
		{memory.Window{MaxTokens: 6}, []int64{4, 5}},
		{memory.Window{MaxTokens: 14}, []int64{3, 4, 5}},
		// 3+… would fit after 8 fails, but the walk stops at the first miss.
		{memory.Window{MaxTokens: 13}, []int64{4, 5}},
		{memory.Window{MaxTokens: 22}, []int64{1, 2, 3, 4, 5}},
		{memory.Window{MaxTokens: 1000}, []int64{1, 2, 3, 4, 5}},
		{memory.Window{MaxTokens: 3}, []int64{}},
		{memory.Window{MaxTokens: 17, MaxMessages: 2}, []int64{4, 5}},
		{memory.Window{MaxTokens: 6, MaxMessages: 4}, []int64{4, 5}},
	}
	for _, tt := range tests {
		got := seqs(mustLoad(t, s, k, tt.w))
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Load(%+v) seqs = %v, want %v", tt.w, got, tt.want)
		}
	}
	if got := mustLoad(t, s, newKey("absent"), memory.Window{MaxMessages: 3}); len(got) != 0 {
		t.Errorf("Load of an absent conversation = %d records, want none", len(got))
	}
}

func testRecordFields(t *testing.T, s memory.Store) {
	k := newKey("fields")
	at := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.UTC)
	in := []memory.Record{
		{ID: "u-1", Message: llm.UserMessage("hello"), Tokens: 12, CreatedAt: at},
		{ID: "a-1", Message: llm.AssistantMessage("cut sh"), Tokens: 3, CreatedAt: at.Add(time.Second), Partial: true},
		{Message: llm.UserMessage("now"), Tokens: 0},
	}
	before := time.Now().Add(-time.Minute)
	got := mustAppend(t, s, k, in...)
	for i, r := range got[:2] {
		want := in[i]
		want.Seq = int64(i + 1)
		checkRecords(t, "Append result", []memory.Record{r}, []memory.Record{want})
	}
	if got[2].CreatedAt.Before(before) || got[2].CreatedAt.After(time.Now().Add(time.Minute)) {
		t.Errorf("CreatedAt filled as %v, want about now", got[2].CreatedAt)
	}
	checkRecords(t, "Load", mustLoad(t, s, k, memory.Window{}), got)
}

func testMessageRoundTrip(t *testing.T, s memory.Store) {
	k := newKey("messages")
	msgs := []llm.Message{
		llm.UserParts(
			llm.TextPart("what is in these?"),
			llm.ImageURLPart("https://example.com/cat.png"),
			llm.ImageDataPart("image/png", []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 255}),
			llm.Part{Kind: llm.PartImage, Image: &llm.Image{URL: "data:image/gif;base64,R0lG", Detail: "low"}},
		),
		{Role: llm.RoleUser, Name: "alice", Parts: []llm.Part{llm.TextPart("unicode ✓ \"quotes\" \\ \n\t\u0000 end")}},
		{
			Role:      llm.RoleAssistant,
			Parts:     []llm.Part{llm.TextPart("let me check"), llm.TextPart(" twice")},
			Reasoning: "the user wants weather",
			ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_2", Name: "time", Arguments: `{not json`},
			},
		},
		llm.ToolResultMessage("call_1", "weather", "sunny", false),
		llm.ToolResultMessage("call_2", "time", "bad arguments", true),
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c3", Name: "noop", Arguments: "{}"}}},
	}
	in := make([]memory.Record, len(msgs))
	for i, m := range msgs {
		in[i] = memory.Record{Message: m, Tokens: i + 1}
	}
	got := mustAppend(t, s, k, in...)
	for i := range got {
		if !reflect.DeepEqual(got[i].Message, msgs[i]) {
			t.Errorf("Append returned message %d as %+v, want %+v", i, got[i].Message, msgs[i])
		}
	}
	loaded := mustLoad(t, s, k, memory.Window{})
	checkRecords(t, "Load", loaded, got)

	// The store keeps its own copy: changing what was appended or loaded
	// changes nothing stored.
	msgs[0].Parts[2].Image.Data[0] = 'X'
	loaded[0].Message.Parts[0].Text = "changed"
	loaded[2].Message.ToolCalls[0].Name = "changed"
	checkRecords(t, "Load after mutating caller copies", mustLoad(t, s, k, memory.Window{}), got)
}

func testIsolation(t *testing.T, s memory.Store) {
	base := "iso-" + random()
	keys := []memory.Key{
		{Tenant: base + "-1", Agent: "a", Session: "s"},
		{Tenant: base + "-2", Agent: "a", Session: "s"},
		{Tenant: base + "-1", Agent: "b", Session: "s"},
		// Separators inside names must not make two keys one.
		{Tenant: base + "-1:a", Agent: "b", Session: "s"},
		{Tenant: base + "-1", Agent: "a:b", Session: "s"},
		{Tenant: base + "-1", Agent: "a", Session: "s}:{x"},
		{Tenant: base + "-1", Agent: "a/b", Session: "s"},
		{Tenant: base + "-1/a", Agent: "b", Session: "s"},
		{Tenant: base + "-1", Agent: "", Session: "a:s"},
		{Tenant: "", Agent: "", Session: base + "-1:a:s"},
	}
	for i, k := range keys {
		recs := make([]memory.Record, i+1)
		for j := range recs {
			recs[j] = user(fmt.Sprintf("%d-%d", i, j), 1)
			recs[j].ID = fmt.Sprint("same-", j) // the same ids everywhere
		}
		mustAppend(t, s, k, recs...)
	}
	for i, k := range keys {
		got := mustLoad(t, s, k, memory.Window{})
		if len(got) != i+1 || got[0].Message.Text() != fmt.Sprintf("%d-0", i) {
			t.Errorf("Load(%+v) = %q, want %d records of conversation %d", k, texts(got), i+1, i)
		}
	}
	if err := s.Delete(ctxFor(t), keys[0]); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys[1:] {
		if got := mustLoad(t, s, k, memory.Window{}); len(got) != i+2 {
			t.Errorf("after deleting another key, Load(%+v) has %d records, want %d", k, len(got), i+2)
		}
	}
	if l, ok := s.(memory.Lister); ok {
		infos, err := l.List(ctxFor(t), base+"-2", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 1 || infos[0].Key != keys[1] {
			t.Errorf("List(%q) = %+v, want only %+v", base+"-2", infos, keys[1])
		}
	}
}

func testDelete(t *testing.T, s memory.Store) {
	k := newKey("delete")
	sys := memory.Record{Message: llm.SystemMessage("sys"), Tokens: 1}
	r := user("a", 1)
	r.ID = "m1"
	mustAppend(t, s, k, sys, r, user("b", 1))
	if err := s.Delete(ctxFor(t), k); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got := mustLoad(t, s, k, memory.Window{}); len(got) != 0 {
		t.Fatalf("Load after Delete = %q, want nothing", texts(got))
	}
	if err := s.Delete(ctxFor(t), k); err != nil {
		t.Fatalf("Delete of an absent conversation: %v", err)
	}
	// A new conversation under the same key starts afresh.
	again := mustAppend(t, s, k, r)
	if again[0].Seq != 1 {
		t.Fatalf("first record after Delete got Seq %d, want 1", again[0].Seq)
	}
	// Appending nothing creates no conversation.
	empty := memory.Key{Tenant: k.Tenant, Agent: k.Agent, Session: "empty"}
	if got, err := s.Append(ctxFor(t), empty); err != nil || len(got) != 0 {
		t.Fatalf("Append of no records = %v, %v", got, err)
	}
	if l, ok := s.(memory.Lister); ok {
		if err := s.Delete(ctxFor(t), k); err != nil {
			t.Fatal(err)
		}
		infos, err := l.List(ctxFor(t), k.Tenant, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 0 {
			t.Fatalf("List after Delete = %+v, want nothing", infos)
		}
	}
}

func testCancelled(t *testing.T, s memory.Store) {
	k := newKey("cancel")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Append(ctx, k, user("a", 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := s.Load(ctx, k, memory.Window{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with a cancelled context: err = %v, want context.Canceled", err)
	}
	if got := mustLoad(t, s, k, memory.Window{}); len(got) != 0 {
		t.Errorf("a cancelled Append stored %q", texts(got))
	}
}

func testConcurrentAppends(t *testing.T, s memory.Store) {
	k := newKey("concurrent")
	const writers, each = 8, 12
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := 0; i < each; {
				n := 1 + i%2 // batches of one and two
				if i+n > each {
					n = each - i
				}
				recs := make([]memory.Record, n)
				for j := range recs {
					recs[j] = user(fmt.Sprintf("w%d-%d", w, i+j), 1)
					recs[j].ID = fmt.Sprintf("w%d-%d", w, i+j)
				}
				if _, err := s.Append(ctxFor(t), k, recs...); err != nil {
					errs <- err
					return
				}
				i += n
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Append: %v", err)
	}
	CheckLog(t, mustLoad(t, s, k, memory.Window{}), writers, each)
}

// CheckLog checks a log written by writers that each appended each records
// with ids "w<writer>-<i>", i counting from 0: every record is there exactly
// once, sequence numbers are 1..n with no gap, and each writer's records are
// in its own order. The cross-process tests of the backends use it too.
func CheckLog(t testing.TB, log []memory.Record, writers, each int) {
	t.Helper()
	if len(log) != writers*each {
		t.Fatalf("log has %d records, want %d", len(log), writers*each)
	}
	next := make([]int, writers)
	for i, r := range log {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d has Seq %d: the order has a gap or a repeat", i, r.Seq)
		}
		var w, n int
		if _, err := fmt.Sscanf(r.ID, "w%d-%d", &w, &n); err != nil || w < 0 || w >= writers {
			t.Fatalf("record %d has unexpected id %q", i, r.ID)
		}
		if n != next[w] {
			t.Fatalf("writer %d: record %q at Seq %d, want w%d-%d next", w, r.ID, r.Seq, w, next[w])
		}
		if r.Message.Text() != r.ID {
			t.Fatalf("record %q holds text %q", r.ID, r.Message.Text())
		}
		next[w]++
	}
}

func testList(t *testing.T, s memory.Store) {
	l, ok := s.(memory.Lister)
	if !ok {
		t.Skip("store is not a Lister")
	}
	tenant := "list-" + random()
	key := func(agent, session string) memory.Key {
		return memory.Key{Tenant: tenant, Agent: agent, Session: session}
	}
	steps := []struct {
		k memory.Key
		n int
	}{
		{key("a", "s1"), 2},
		{key("a", "s2"), 1},
		{key("b", "s3"), 1},
		{key("a", "s4"), 3},
		{key("a", "s1"), 1}, // s1 becomes the most recently updated
		{memory.Key{Tenant: tenant + "-other", Agent: "a", Session: "s9"}, 1},
	}
	start := time.Now()
	for _, st := range steps {
		tick()
		recs := make([]memory.Record, st.n)
		for i := range recs {
			recs[i] = user("x", 1)
		}
		mustAppend(t, s, st.k, recs...)
	}
	tests := []struct {
		agent string
		want  []memory.Key
		count []int
	}{
		{"a", []memory.Key{key("a", "s1"), key("a", "s4"), key("a", "s2")}, []int{3, 3, 1}},
		{"b", []memory.Key{key("b", "s3")}, []int{1}},
		{"", []memory.Key{key("a", "s1"), key("a", "s4"), key("b", "s3"), key("a", "s2")}, []int{3, 3, 1, 1}},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		infos, err := l.List(ctxFor(t), tenant, tt.agent)
		if err != nil {
			t.Fatalf("List(%q): %v", tt.agent, err)
		}
		var keys []memory.Key
		var counts []int
		for _, in := range infos {
			keys = append(keys, in.Key)
			counts = append(counts, in.MessageCount)
			if in.CreatedAt.Before(start.Add(-time.Minute)) || in.UpdatedAt.Before(in.CreatedAt) {
				t.Errorf("List(%q): %v created %v, updated %v", tt.agent, in.Key, in.CreatedAt, in.UpdatedAt)
			}
		}
		if !reflect.DeepEqual(keys, tt.want) || !reflect.DeepEqual(counts, tt.count) {
			t.Errorf("List(%q) = %v counts %v, want %v counts %v", tt.agent, keys, counts, tt.want, tt.count)
		}
	}
}

// tick lets the wall clock move on, so that updates get distinct times even
// in stores that keep milliseconds.
func tick() {
	t0 := time.Now()
	for time.Since(t0) < 3*time.Millisecond {
		time.Sleep(time.Millisecond)
	}
}

func testTrim(t *testing.T, s memory.Store) {
	tr, ok := s.(memory.Trimmer)
	if !ok {
		t.Skip("store is not a Trimmer")
	}
	k := newKey("trim")
	var recs []memory.Record
	for i := range 5 {
		recs = append(recs, user(fmt.Sprint("m", i+1), 1))
		recs[i].ID = fmt.Sprint("id-", i+1)
	}
	recs[1].Message = llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}, Parts: []llm.Part{llm.TextPart("m2")}}
	mustAppend(t, s, k, append([]memory.Record{{Message: llm.SystemMessage("sys"), Tokens: 1}}, recs...)...)
	if err := tr.Trim(ctxFor(t), k, 3); err != nil {
		t.Fatalf("Trim: %v", err)
	}
	got := mustLoad(t, s, k, memory.Window{})
	if want := []string{"sys", "m3", "m4", "m5"}; !reflect.DeepEqual(texts(got), want) {
		t.Fatalf("Load after Trim(3) = %q, want %q", texts(got), want)
	}
	if want := []int64{0, 3, 4, 5}; !reflect.DeepEqual(seqs(got), want) {
		t.Fatalf("seqs after Trim(3) = %v, want %v", seqs(got), want)
	}
	next := mustAppend(t, s, k, user("m6", 1))
	if next[0].Seq != 6 {
		t.Fatalf("Append after Trim got Seq %d, want 6", next[0].Seq)
	}
	if err := tr.Trim(ctxFor(t), k, 1); err != nil { // nothing to trim
		t.Fatal(err)
	}
	if err := tr.Trim(ctxFor(t), newKey("absent"), 10); err != nil {
		t.Fatalf("Trim of an absent conversation: %v", err)
	}
	if l, ok := s.(memory.Lister); ok {
		infos, err := l.List(ctxFor(t), k.Tenant, k.Agent)
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 1 || infos[0].MessageCount != 4 {
			t.Fatalf("List after Trim = %+v, want one session with 4 messages", infos)
		}
	}
	if err := tr.Trim(ctxFor(t), k, 100); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, s, k, memory.Window{}); !reflect.DeepEqual(texts(got), []string{"sys"}) {
		t.Fatalf("Load after trimming everything = %q, want only the system record", texts(got))
	}
	if next := mustAppend(t, s, k, user("m7", 1)); next[0].Seq != 7 {
		t.Fatalf("Append after trimming everything got Seq %d, want 7", next[0].Seq)
	}
	// The ids of trimmed records are forgotten: appending them again adds
	// new records.
	again := mustAppend(t, s, k, recs[0], recs[1])
	if got := seqs(again); !reflect.DeepEqual(got, []int64{8, 9}) {
		t.Fatalf("re-appending trimmed ids got seqs %v, want [8 9]", got)
	}
}

func testLock(t *testing.T, s memory.Store) {
	lk, ok := s.(memory.Locker)
	if !ok {
		t.Skip("store is not a Locker")
	}
	k := newKey("lock")
	release, err := lk.Lock(ctxFor(t), k, memory.Lease{Owner: "memorytest"})
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}

	// Another conversation is not blocked.
	other, err := lk.Lock(ctxFor(t), newKey("lock-other"), memory.Lease{Owner: "memorytest"})
	if err != nil {
		t.Fatalf("Lock of another conversation: %v", err)
	}
	other()

	// A second locker waits until its deadline.
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	_, err = lk.Lock(ctx, k, memory.Lease{})
	cancel()
	if !errors.Is(err, memory.ErrLockTimeout) {
		t.Fatalf("Lock of a held conversation: err = %v, want ErrLockTimeout", err)
	}

	// A waiter gets in once the holder releases.
	got := make(chan func(), 1)
	errc := make(chan error, 1)
	go func() {
		r, err := lk.Lock(ctxFor(t), k, memory.Lease{Owner: "memorytest"})
		if err != nil {
			errc <- err
			return
		}
		got <- r
	}()
	select {
	case r := <-got:
		r()
		t.Fatal("a waiter got the lock while it was held")
	case err := <-errc:
		t.Fatalf("waiter: %v", err)
	default:
	}
	release()
	release() // releasing twice is harmless
	select {
	case r := <-got:
		r()
	case err := <-errc:
		t.Fatalf("waiter after release: %v", err)
	}
}

func testLockDrop(t *testing.T, s memory.Store) {
	lk, ok := s.(memory.Locker)
	if !ok {
		t.Skip("store is not a Locker")
	}
	k := newKey("lock-drop")
	owner, other := "owner-"+random(), "owner-"+random()
	// The previous life of owner left a lease; another owner holds another
	// conversation.
	dead, err := lk.Lock(ctxFor(t), k, memory.Lease{Owner: owner})
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	k2 := newKey("lock-drop-other")
	kept, err := lk.Lock(ctxFor(t), k2, memory.Lease{Owner: other})
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	defer kept()
	if err := lk.Drop(ctxFor(t), owner); err != nil {
		t.Fatalf("Drop: %v", err)
	}
	// The dropped conversation is free at once (well within the default
	// TTL the lease had left).
	ctx, cancel := context.WithTimeout(t.Context(), memory.DefaultLeaseTTL/2)
	next, err := lk.Lock(ctx, k, memory.Lease{Owner: other})
	cancel()
	if err != nil {
		t.Fatalf("Lock after Drop of its holder: %v", err)
	}
	// The other owner's lease was not dropped.
	ctx, cancel = context.WithTimeout(t.Context(), 150*time.Millisecond)
	_, err = lk.Lock(ctx, k2, memory.Lease{})
	cancel()
	if !errors.Is(err, memory.ErrLockTimeout) {
		t.Fatalf("Lock of another owner's conversation after Drop: err = %v, want ErrLockTimeout", err)
	}
	// The dropped holder's late release must not free the new holder.
	dead()
	ctx, cancel = context.WithTimeout(t.Context(), 150*time.Millisecond)
	_, err = lk.Lock(ctx, k, memory.Lease{})
	cancel()
	if !errors.Is(err, memory.ErrLockTimeout) {
		t.Fatalf("Lock after a dropped holder's release: err = %v, want ErrLockTimeout", err)
	}
	next()
	if err := lk.Drop(ctxFor(t), "owner-"+random()); err != nil {
		t.Fatalf("Drop of an owner with no lease: %v", err)
	}
}

// testLeaseRenewed holds a lock for several of its TTLs: the heartbeat
// keeps it.
func testLeaseRenewed(t *testing.T, s memory.Store) {
	lk, ok := s.(memory.Locker)
	if !ok {
		t.Skip("store is not a Locker")
	}
	k := newKey("lock-renewed")
	const ttl = time.Second
	release, err := lk.Lock(ctxFor(t), k, memory.Lease{Owner: "memorytest", TTL: ttl})
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*ttl)
	_, err = lk.Lock(ctx, k, memory.Lease{})
	cancel()
	if !errors.Is(err, memory.ErrLockTimeout) {
		t.Fatalf("Lock while the holder lives, after 3 TTLs: err = %v, want ErrLockTimeout", err)
	}
	release()
	next, err := lk.Lock(ctxFor(t), k, memory.Lease{})
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	next()
}
