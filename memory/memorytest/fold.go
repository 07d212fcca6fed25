package memorytest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/tokens"
)

// The contract of running summaries (memory.Summarizer) over a store: what
// slides out of a chat's window is folded after the turn, each record
// once, also when turns in several processes race; a summarizer that is
// down leaves the plain window; the summary counts against a token window.

// foldModel is a summarizer's model that folds by listing: the new summary
// is the previous one followed by the texts of the messages to fold in,
// separated by spaces, so that a test reads back which records were folded
// and in what order. It fails while fail is set, and waits for gate when
// it is not nil, after telling called (when not nil).
type foldModel struct {
	mu     sync.Mutex
	fail   error
	gate   chan struct{}
	called chan struct{}
	calls  int
}

func (m *foldModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	m.calls++
	fail, gate, called := m.fail, m.gate, m.called
	m.mu.Unlock()
	if called != nil {
		called <- struct{}{}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	in := req.Messages[len(req.Messages)-1].Text()
	prev := between(in, "<summary>\n", "\n</summary>")
	words := []string{}
	if prev != "(none yet)" {
		words = strings.Fields(prev)
	}
	for block := range strings.SplitSeq(between(in, "<messages>\n", "</messages>"), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if len(lines) >= 2 {
			words = append(words, lines[1])
		}
	}
	return &llm.Response{Message: llm.AssistantMessage(strings.Join(words, " "))}, nil
}

func (m *foldModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		yield(llm.Chunk{}, errors.New("foldModel does not stream"))
	}
}

func (m *foldModel) set(fail error, gate chan struct{}) {
	m.mu.Lock()
	m.fail, m.gate = fail, gate
	m.mu.Unlock()
}

func msgTexts(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}

func between(s, from, to string) string {
	_, s, _ = strings.Cut(s, from)
	s, _, _ = strings.Cut(s, to)
	return s
}

// turn runs turn i on c with BeginMessages and End: the question "u<i>"
// (id "t<i>-q") and the answer "a<i>", one token each. It returns the
// messages the turn's request would send.
func turn(t *testing.T, c *memory.Chat, i int, question string) []llm.Message {
	t.Helper()
	if question == "" {
		question = fmt.Sprint("u", i)
	}
	h, msgs, err := c.BeginMessages(ctxFor(t), nil, rec(fmt.Sprintf("t%d-q", i), question, 1))
	if err != nil {
		t.Fatalf("turn %d: BeginMessages: %v", i, err)
	}
	mustEnd(t, h, answer(fmt.Sprintf("t%d", i), fmt.Sprint("a", i)))
	return msgs
}

// checkFolded checks that the summary lists, in order and once each, the
// texts of the records up to its Through, that the store still holds
// every record after it, and (over a store that trims, in a chat that does
// not keep all) nothing before.
func checkFolded(t *testing.T, s memory.Store, k memory.Key, want []string, trimmed bool) memory.Summary {
	t.Helper()
	sum := mustLoadSummary(t, summaries(t, s), k)
	if sum.Through == 0 {
		t.Fatal("nothing was folded")
	}
	folded := strings.Fields(sum.Text)
	if !slices.Equal(folded, want[:sum.Through]) {
		t.Fatalf("the summary holds %q, want the records up to %d once each: %q", folded, sum.Through, want[:sum.Through])
	}
	stored := texts(mustLoad(t, s, k, memory.Window{}))
	from := 0
	if _, ok := s.(memory.Trimmer); ok && trimmed {
		from = int(sum.Through)
	}
	if !slices.Equal(stored, want[from:]) {
		t.Fatalf("the store holds %q, want %q", stored, want[from:])
	}
	return sum
}

// testSummaryKeepsFacts holds a long conversation in a message window of
// four: the name given in the first turn reaches the last turn's request
// through the summary, every record slid out is folded once, and folded
// records are trimmed.
func testSummaryKeepsFacts(t *testing.T, s memory.Store) {
	summaries(t, s)
	model := &foldModel{}
	var events []memory.SummaryEvent
	var mu sync.Mutex
	sum := memory.NewSummarizer(model, memory.SummaryThreshold(3), memory.OnSummary(func(ev memory.SummaryEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}))
	defer sum.Close()
	k := newKey("summary-facts")
	c := memory.NewChat(s, k, memory.Window{MaxMessages: 4}, memory.WithSummary(sum))
	var want []string
	const turns = 30
	for i := 1; i <= turns; i++ {
		q := fmt.Sprint("u", i)
		if i == 1 {
			q = "name=Ada"
		}
		msgs := turn(t, c, i, q)
		want = append(want, q, fmt.Sprint("a", i))
		sum.Wait()
		if i == turns {
			if len(msgs) != 5 || msgs[0].Role != llm.RoleSystem || !strings.Contains(msgs[0].Text(), "name=Ada") {
				t.Fatalf("the last turn's request = %q, want the summary with name=Ada and four messages", msgTexts(msgs))
			}
		}
	}
	got := checkFolded(t, s, k, want, true)
	if got.Tokens == 0 {
		t.Error("the summary's Tokens were not counted")
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, ev := range events {
		if ev.Err != nil {
			t.Fatalf("fold failed: %v", ev.Err)
		}
		if ev.Key != k || ev.Summary.Through == 0 {
			t.Fatalf("fold event %+v", ev)
		}
		n += ev.Folded
	}
	if n != int(got.Through) {
		t.Fatalf("fold events count %d records, the summary holds %d", n, got.Through)
	}
	// Three tokens at least per fold: the model was called rarely.
	if model.calls > turns*2/3+1 {
		t.Errorf("%d model calls for %d records folded", model.calls, got.Through)
	}
}

// testSummaryAfterTurn checks that the fold runs after the turn: End
// returns while the summarizer's model is still held, and the summary is
// saved once it answers.
func testSummaryAfterTurn(t *testing.T, s memory.Store) {
	ss := summaries(t, s)
	model := &foldModel{}
	gate := make(chan struct{})
	model.set(nil, gate)
	sum := memory.NewSummarizer(model, memory.SummaryThreshold(1))
	defer sum.Close()
	k := newKey("summary-after")
	c := memory.NewChat(s, k, memory.Window{MaxMessages: 2}, memory.WithSummary(sum))
	turn(t, c, 1, "")
	turn(t, c, 2, "")
	h, _, err := c.BeginMessages(ctxFor(t), nil, rec("t3-q", "u3", 1))
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- h.End(ctxFor(t), answer("t3", "a3")) }()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("End: %v", err)
		}
	case <-time.After(20 * time.Second):
		close(gate)
		t.Fatal("End waited for the summarizer's model")
	}
	if got := mustLoadSummary(t, ss, k); got.Through != 0 {
		t.Fatalf("a summary was saved before the model answered: %+v", got)
	}
	close(gate)
	sum.Wait()
	if got := mustLoadSummary(t, ss, k); got.Through != 2 || got.Text != "u1 a1" {
		t.Fatalf("summary after the fold = %+v, want u1 a1 through 2", got)
	}
}

// testSummaryModelDown folds with a model that fails: every turn goes on
// with the plain window and keeps its records, each failure is reported,
// and once the model is back the backlog is folded, once, in batches.
func testSummaryModelDown(t *testing.T, s memory.Store) {
	ss := summaries(t, s)
	model := &foldModel{}
	model.set(errors.New("model down"), nil)
	var mu sync.Mutex
	var failures int
	sum := memory.NewSummarizer(model, memory.SummaryThreshold(2), memory.OnSummary(func(ev memory.SummaryEvent) {
		if ev.Err != nil {
			mu.Lock()
			failures++
			mu.Unlock()
		}
	}))
	defer sum.Close()
	k := newKey("summary-down")
	c := memory.NewChat(s, k, memory.Window{MaxMessages: 2}, memory.WithSummary(sum))
	var want []string
	for i := 1; i <= 8; i++ {
		msgs := turn(t, c, i, "")
		want = append(want, fmt.Sprint("u", i), fmt.Sprint("a", i))
		sum.Wait()
		if len(msgs) > 0 && msgs[0].Role == llm.RoleSystem {
			t.Fatalf("turn %d sent a summary while the model was down: %q", i, msgs[0].Text())
		}
	}
	mu.Lock()
	if failures == 0 {
		t.Error("no failure was reported")
	}
	mu.Unlock()
	if got := mustLoadSummary(t, ss, k); got.Through != 0 {
		t.Fatalf("summary saved while the model was down: %+v", got)
	}
	if got := texts(mustLoad(t, s, k, memory.Window{})); !slices.Equal(got, want) {
		t.Fatalf("records lost while the model was down: the store holds %q", got)
	}
	model.set(nil, nil)
	calls := model.calls
	msgs := turn(t, c, 9, "")
	want = append(want, "u9", "a9")
	sum.Wait()
	got := checkFolded(t, s, k, want, true)
	if got.Through != 14 {
		t.Fatalf("after the model came back the summary holds %d records, want the 14 out of turn 9's window", got.Through)
	}
	if n := model.calls - calls; n < 2 {
		t.Errorf("the backlog was folded in %d model call(s), want batches of at most four thresholds", n)
	}
	if len(msgs) != 2 {
		t.Fatalf("turn 9's request = %q, want its window of two", msgTexts(msgs))
	}
}

// testSummaryCounts checks exact counting: a summary's tokens count
// against a token window, which then keeps fewer records, and the records
// the summary holds are left out of any window.
func testSummaryCounts(t *testing.T, s memory.Store) {
	ss := summaries(t, s)
	k := newKey("summary-counts")
	var recs []memory.Record
	for i := 1; i <= 10; i++ {
		recs = append(recs, rec(fmt.Sprint("r", i), fmt.Sprint("m", i), 10))
	}
	mustAppend(t, s, k, recs...)
	words := tokens.CounterFunc(func(s string) int { return len(strings.Fields(s)) })
	sum := memory.NewSummarizer(&foldModel{}, memory.SummaryThreshold(1000))
	defer sum.Close()
	window := func(max int) []llm.Message {
		t.Helper()
		c := memory.NewChat(s, k, memory.Window{MaxTokens: max}, memory.WithSummary(sum), memory.WithCounter(words), memory.KeepAll())
		h, msgs, err := c.BeginMessages(ctxFor(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		mustEnd(t, h)
		return msgs
	}
	if got := len(window(60)); got != 6 {
		t.Fatalf("a window of 60 tokens keeps %d records of 10 without a summary, want 6", got)
	}
	text := strings.Repeat("fact ", 20)
	mustSave(t, ss, k, memory.Summary{Text: strings.TrimSpace(text), Through: 2}, 0, true)
	msgs := window(60)
	system := llm.SystemMessage(memory.Summary{Text: strings.TrimSpace(text)}.SystemContext(""))
	st := tokens.MessageTokens(words, system)
	if msgs[0].Text() != system.Text() {
		t.Fatalf("the request's system message = %q, want the summary", msgs[0].Text())
	}
	if want := (60 - st) / 10; len(msgs)-1 != want {
		t.Fatalf("with a summary of %d tokens a window of 60 keeps %d records of 10, want %d", st, len(msgs)-1, want)
	}
	all := window(1000)
	var got []string
	for _, m := range all[1:] {
		got = append(got, m.Text())
	}
	if want := []string{"m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("a wide window with a summary through 2 sends %q, want %q", got, want)
	}
}

// testSummaryRaceTurns runs turns on one conversation from two chats with
// summarizers of their own, as two processes would: their folds race, and
// every record slid out is folded exactly once, in order.
func testSummaryRaceTurns(t *testing.T, s memory.Store) {
	if !holds(s) {
		t.Skip("store is neither a TurnStore nor a Locker")
	}
	summaries(t, s)
	k := newKey("summary-race-turns")
	model := &foldModel{}
	var chats []*memory.Chat
	folded := countFolds()
	for range 2 {
		sum := memory.NewSummarizer(model, memory.SummaryThreshold(1), memory.OnSummary(folded.add))
		defer sum.Close()
		chats = append(chats, memory.NewChat(s, k, memory.Window{MaxMessages: 2}, memory.WithSummary(sum), memory.KeepAll()))
	}
	const workers, each = 4, 6
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				turn(t, chats[w%2], w*100+i, "")
			}
		})
	}
	wg.Wait()
	for _, c := range chats {
		c.Summarizer().Wait()
	}
	// A last turn, alone, folds what the race left: all but its window
	// and its own records.
	turn(t, chats[0], 999, "")
	chats[0].Summarizer().Wait()
	var want []string
	for _, r := range mustLoad(t, s, k, memory.Window{}) {
		want = append(want, r.Message.Text())
	}
	got := checkFolded(t, s, k, want, false)
	if got.Through != int64(len(want))-4 {
		t.Fatalf("the summary holds %d of %d records, want all but the last four", got.Through, len(want))
	}
	folded.check(t, got)
}

// folds counts the records folded into the summaries saved, over any
// number of summarizers.
type folds struct {
	mu     sync.Mutex
	n      int
	failed error
}

func countFolds() *folds { return &folds{} }

func (f *folds) add(ev memory.SummaryEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n += ev.Folded
	if ev.Err != nil {
		f.failed = ev.Err
	}
}

// check fails unless the saved folds added up to sum's records: none was
// folded into a saved summary twice.
func (f *folds) check(t *testing.T, sum memory.Summary) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		t.Fatalf("a fold failed: %v", f.failed)
	}
	if f.n != int(sum.Through) {
		t.Fatalf("saved folds added %d records, the summary holds %d: a record was folded twice", f.n, sum.Through)
	}
}

// testSummaryNoDoubleFold makes two folds of one conversation run at once
// from the same summary, as two processes' would after their turns: one
// saves, the other is refused, and the next fold goes on from the saved
// one.
func testSummaryNoDoubleFold(t *testing.T, s memory.Store) {
	if !holds(s) {
		t.Skip("store is neither a TurnStore nor a Locker")
	}
	summaries(t, s)
	k := newKey("summary-no-double")
	model := &foldModel{}
	folded := countFolds()
	var chats []*memory.Chat
	for range 2 {
		sum := memory.NewSummarizer(model, memory.SummaryThreshold(1), memory.OnSummary(folded.add))
		defer sum.Close()
		chats = append(chats, memory.NewChat(s, k, memory.Window{MaxMessages: 2}, memory.WithSummary(sum), memory.KeepAll()))
	}
	turn(t, chats[0], 1, "")
	turn(t, chats[0], 2, "")
	gate, called := make(chan struct{}), make(chan struct{}, 2)
	model.mu.Lock()
	model.gate, model.called = gate, called
	model.mu.Unlock()
	turn(t, chats[0], 3, "") // folds u1 a1, held
	<-called
	turn(t, chats[1], 4, "") // folds u1 a1 u2 a2 from the same summary, held
	<-called
	close(gate)
	for _, c := range chats {
		c.Summarizer().Wait()
	}
	model.set(nil, nil)
	turn(t, chats[0], 5, "")
	chats[0].Summarizer().Wait()
	want := []string{"u1", "a1", "u2", "a2", "u3", "a3", "u4", "a4", "u5", "a5"}
	folded.check(t, checkFolded(t, s, k, want, false))
}
