package ai_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/tokens"
)

// Running summaries through the engine: the summary follows the system
// prompt, counts against a token window and is shown in the outcome; the
// fold runs after the turn, on what the request let go.

// factSummarizer writes "The user's name is Ada." once the fold request or
// the previous summary says so, "Small talk." otherwise.
func factSummarizer() *scripted.Model {
	return scripted.New(respond(func(req *llm.Request) *llm.Response {
		if strings.Contains(req.Messages[1].Text(), "Ada") {
			return text("The user's name is Ada.")
		}
		return text("Small talk.")
	}))
}

// nameModel answers "Your name is Ada." when its request says so, "ok"
// otherwise.
func nameModel() *scripted.Model {
	return scripted.New(respond(func(req *llm.Request) *llm.Response {
		for _, m := range req.Messages {
			if strings.Contains(m.Text(), "name is Ada") {
				return text("Your name is Ada.")
			}
		}
		return text("ok")
	}))
}

// TestEngineSummaryKeepsFact holds a conversation of 200 turns in a window
// of four messages: the name the user gave in the third turn is answered
// in the last, from the summary the request carries after its system
// prompt.
func TestEngineSummaryKeepsFact(t *testing.T) {
	t.Parallel()
	sum := memory.NewSummarizer(factSummarizer(), memory.SummaryThreshold(4))
	defer sum.Close()
	chats := memory.MessageWindow(4, memory.WithSummary(sum))
	model := nameModel()
	eng, err := ai.NewEngine(model, ai.MemoryPerID(chats))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	say := func(i int, msg string) *ai.Outcome {
		t.Helper()
		out, err := eng.Do(ctx, ai.Turn{ID: fmt.Sprint("t", i), System: "Be brief.", MemoryID: "u1", Message: llm.UserMessage(msg)})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		sum.Wait()
		return out
	}
	for i := 1; i < 200; i++ {
		msg := fmt.Sprint("tell me about the weather, day ", i)
		if i == 3 {
			msg = "my name is Ada"
		}
		if out := say(i, msg); i <= 3 && out.Summary != nil {
			t.Fatalf("turn %d sent a summary: %+v", i, out.Summary)
		}
	}
	out := say(200, "what is my name?")
	if out.Text != "Your name is Ada." {
		t.Fatalf("the last turn answered %q", out.Text)
	}
	if out.Summary == nil || out.Summary.Text != "The user's name is Ada." || out.Summary.Through == 0 {
		t.Fatalf("Outcome.Summary = %+v", out.Summary)
	}
	reqs := model.Requests()
	last := reqs[len(reqs)-1].Messages
	if got := last[0].Text(); !strings.HasPrefix(got, "Be brief.\n\n<conversation_summary>") || !strings.Contains(got, "name is Ada") {
		t.Fatalf("the last request's system message = %q, want the system prompt then the summary", got)
	}
	if len(last) != 1+4+1 {
		t.Fatalf("the last request has %d messages, want the system message, the window of four and the question", len(last))
	}
	// The stored system message is the prompt alone.
	recs, err := chats.Store().Load(ctx, memory.Key{Session: "u1"}, memory.Window{MaxMessages: 1})
	if err != nil || recs[0].Message.Text() != "Be brief." {
		t.Fatalf("stored system record %q, %v", recs[0].Message.Text(), err)
	}
}

// gatedModel answers "folded" once released, telling called first (when
// it has room).
type gatedModel struct {
	called  chan struct{}
	release chan struct{}
}

func (m *gatedModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	select {
	case m.called <- struct{}{}:
	default:
	}
	select {
	case <-m.release:
		return text("folded"), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (m *gatedModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) { yield(llm.Chunk{}, errors.New("not streamed")) }
}

// TestEngineSummaryAfterAnswer checks that a turn returns before its fold
// is done: the summarizer's model is held until the turn has returned.
func TestEngineSummaryAfterAnswer(t *testing.T) {
	t.Parallel()
	gm := &gatedModel{called: make(chan struct{}, 1), release: make(chan struct{})}
	sum := memory.NewSummarizer(gm, memory.SummaryThreshold(1))
	defer sum.Close()
	eng, err := ai.NewEngine(scripted.New(scripted.Reply("ok")), ai.MemoryPerID(memory.MessageWindow(2, memory.WithSummary(sum))))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := eng.Do(t.Context(), ai.Turn{MemoryID: "s", Message: llm.UserMessage(fmt.Sprint("q", i))}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := eng.Do(t.Context(), ai.Turn{MemoryID: "s", Message: llm.UserMessage("q2")})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		close(gm.release)
		t.Fatal("the turn waited for the summarizer's model")
	}
	<-gm.called // the fold started after the turn
	close(gm.release)
	sum.Wait()
	out, err := eng.Do(t.Context(), ai.Turn{MemoryID: "s", Message: llm.UserMessage("q3")})
	if err != nil {
		t.Fatal(err)
	}
	if out.Summary == nil || out.Summary.Text != "folded" {
		t.Fatalf("the next turn's summary = %+v", out.Summary)
	}
}

// TestEngineSummaryDown checks that turns go on with the plain window
// when the summarizer's model fails, and that the failures are reported.
func TestEngineSummaryDown(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var failed []error
	sum := memory.NewSummarizer(scripted.New(scripted.Fail(&llm.Error{Kind: llm.ErrUnavailable, Message: "down"})),
		memory.SummaryThreshold(1), memory.OnSummary(func(ev memory.SummaryEvent) {
			mu.Lock()
			failed = append(failed, ev.Err)
			mu.Unlock()
		}))
	defer sum.Close()
	model := scripted.New(scripted.Reply("ok"))
	eng, err := ai.NewEngine(model, ai.MemoryPerID(memory.MessageWindow(2, memory.WithSummary(sum))))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		out, err := eng.Do(t.Context(), ai.Turn{MemoryID: "s", Message: llm.UserMessage(fmt.Sprint("q", i))})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		sum.Wait()
		if out.Summary != nil {
			t.Fatalf("turn %d sent a summary: %+v", i, out.Summary)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) == 0 || !errors.Is(failed[0], llm.ErrUnavailable) {
		t.Fatalf("reported failures = %v", failed)
	}
	last := model.Requests()[5].Messages
	if got := texts(last); len(got) != 3 || got[0] != "user:q4" {
		t.Fatalf("the last request = %q, want the plain window of two and the question", got)
	}
}

// TestEngineSummaryCounts checks exact counting under a token window: the
// summary's tokens count against the budget, so the request keeps fewer
// history messages, and the records the request let go (more than the
// chat's window would) are what the fold folds.
func TestEngineSummaryCounts(t *testing.T) {
	t.Parallel()
	words := tokens.CounterFunc(func(s string) int { return len(strings.Fields(s)) })
	store := memory.NewInMemory()
	key := memory.Key{Session: "s"}
	for i := range 12 {
		m := llm.UserMessage(fmt.Sprintf("message %d has five words", i))
		if i%2 == 1 {
			m = llm.AssistantMessage(fmt.Sprintf("answer %d has five words", i))
		}
		if _, err := store.Append(t.Context(), key, memory.Record{Message: m, Tokens: tokens.MessageTokens(words, m)}); err != nil {
			t.Fatal(err)
		}
	}
	var folded []memory.Summary
	var mu sync.Mutex
	sum := memory.NewSummarizer(factSummarizer(), memory.SummaryThreshold(40), memory.OnSummary(func(ev memory.SummaryEvent) {
		mu.Lock()
		folded = append(folded, ev.Summary)
		mu.Unlock()
	}))
	defer sum.Close()
	const budget = 60
	chat := memory.NewChat(store, key, memory.Window{MaxTokens: budget}, memory.WithSummary(sum), memory.WithCounter(words), memory.KeepAll())
	model := scripted.New(scripted.Reply("fine"))
	eng, err := ai.NewEngine(model)
	if err != nil {
		t.Fatal(err)
	}
	// Exact: the request's tokens fit the budget, and one more history
	// message would not.
	check := func(req *llm.Request, history []llm.Message) {
		t.Helper()
		n := tokens.ReplyOverhead
		for _, m := range req.Messages {
			n += tokens.MessageTokens(words, m)
		}
		if n > budget {
			t.Fatalf("the request costs %d tokens, over the budget of %d", n, budget)
		}
		sent := len(req.Messages) - 2 // without the system message and the question
		next := history[len(history)-sent-1]
		if n+tokens.MessageTokens(words, next) <= budget {
			t.Fatalf("the request left out %q, which fits (%d of %d tokens)", next.Text(), n, budget)
		}
	}
	var history []llm.Message
	for _, r := range loadAllRecs(t, store, key) {
		history = append(history, r.Message)
	}
	if _, err := eng.Do(t.Context(), ai.Turn{Memory: chat, System: "Be brief.", Message: llm.UserMessage("a question of six words here")}); err != nil {
		t.Fatal(err)
	}
	sum.Wait()
	first := model.Requests()[0]
	check(first, history)
	mu.Lock()
	if len(folded) != 1 {
		t.Fatalf("%d folds after the first turn, want 1", len(folded))
	}
	// The fold took every record before the first one the request kept:
	// the engine's cut, not the chat's window (which has no room for the
	// question, system message and reply).
	kept := len(first.Messages) - 2
	if want := int64(12 - kept); folded[0].Through != want {
		t.Fatalf("the fold went through %d, want %d: the records before the %d the request kept", folded[0].Through, want, kept)
	}
	mu.Unlock()

	history = history[:0]
	for _, r := range loadAllRecs(t, store, key) {
		history = append(history, r.Message)
	}
	out, err := eng.Do(t.Context(), ai.Turn{Memory: chat, System: "Be brief.", Message: llm.UserMessage("a question of six words here")})
	if err != nil {
		t.Fatal(err)
	}
	second := model.Requests()[1]
	check(second, history)
	if out.Summary == nil || !strings.Contains(second.Messages[0].Text(), out.Summary.Text) {
		t.Fatalf("the second request's system message %q lacks the summary %+v", second.Messages[0].Text(), out.Summary)
	}
	if len(second.Messages)-2 >= kept+2 {
		t.Fatalf("with a summary the request kept %d history messages, without %d (and two more since)", len(second.Messages)-2, kept)
	}
}

func loadAllRecs(t *testing.T, s memory.Store, k memory.Key) []memory.Record {
	t.Helper()
	recs, err := s.Load(t.Context(), k, memory.Window{})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
