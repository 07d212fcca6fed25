package ai_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/guardrail"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
)

// The turn the engine owns: memory held from the start of the turn to its
// end, the user message stored first, the window cut to leave room for
// the rest of the request, and what a failed turn produced kept.

func loadAll(t *testing.T, s memory.Store, k memory.Key) []memory.Record {
	t.Helper()
	recs, err := s.Load(context.Background(), k, memory.Window{})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// stored returns "id role:text" (and "partial") for each record.
func stored(recs []memory.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID + " " + texts([]llm.Message{r.Message})[0]
		if r.Partial {
			out[i] += " partial"
		}
	}
	return out
}

// cutModel streams pieces of text, then fails with err (or finishes when
// err is nil); hold, when not nil, is waited for (or ctx) before failing.
type cutModel struct {
	pieces []string
	err    error
	hold   chan struct{}
}

func (m *cutModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if m.err != nil {
		return nil, m.err
	}
	return text(strings.Join(m.pieces, "")), nil
}

func (m *cutModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		for _, p := range m.pieces {
			if !yield(llm.TextChunk(p), nil) {
				return
			}
		}
		if m.hold != nil {
			select {
			case <-m.hold:
			case <-ctx.Done():
				yield(llm.Chunk{}, ctx.Err())
				return
			}
		}
		if m.err != nil {
			yield(llm.Chunk{}, m.err)
			return
		}
		yield(llm.FinishChunk(llm.FinishStop), nil)
	}
}

// TestUserMessageStoredFirst checks that the user message is in memory
// before the model is called (with the lease, or once input guardrails
// passed it), and that a retried turn with the same ID stores nothing
// twice.
func TestUserMessageStoredFirst(t *testing.T) {
	t.Parallel()
	noSecrets := guardrail.InputFunc(func(ctx context.Context, r guardrail.InputRequest) guardrail.Verdict {
		if strings.Contains(r.Message.Text(), "password") {
			return guardrail.Failure("no passwords")
		}
		return guardrail.Success()
	})
	for _, tt := range []struct {
		name string
		opts []ai.Option
	}{
		{"with the lease", nil},
		{"after input guardrails", []ai.Option{ai.InputGuardrails(noSecrets)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := memory.NewInMemory()
			key := memory.Key{Session: "s"}
			chat := memory.NewChat(store, key, memory.Window{MaxMessages: 10})
			var seen []string
			m := scripted.New(respond(func(req *llm.Request) *llm.Response {
				seen = stored(loadAll(t, store, key))
				return text("a")
			}))
			e, err := ai.NewEngine(m, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Do(ctx, ai.Turn{ID: "t1", Memory: chat, Message: llm.UserMessage("q")}); err != nil {
				t.Fatal(err)
			}
			if want := []string{"t1-q user:q"}; !slices.Equal(seen, want) {
				t.Errorf("memory during the model call = %q, want %q", seen, want)
			}
			want := []string{"t1-q user:q", "t1 assistant:a"}
			if got := stored(loadAll(t, store, key)); !slices.Equal(got, want) {
				t.Errorf("memory after the turn = %q, want %q", got, want)
			}
			// A retry of the same turn stores nothing twice.
			if _, err := e.Do(ctx, ai.Turn{ID: "t1", Memory: chat, Message: llm.UserMessage("q")}); err != nil {
				t.Fatal(err)
			}
			if got := stored(loadAll(t, store, key)); !slices.Equal(got, want) {
				t.Errorf("memory after a retry = %q, want %q", got, want)
			}
			if tt.opts != nil {
				// A refused message is not stored.
				_, err := e.Do(ctx, ai.Turn{ID: "t2", Memory: chat, Message: llm.UserMessage("my password")})
				var ge *guardrail.Error
				if !errors.As(err, &ge) {
					t.Fatalf("err = %v, want a guardrail error", err)
				}
				if got := stored(loadAll(t, store, key)); !slices.Equal(got, want) {
					t.Errorf("memory after a refused message = %q, want %q", got, want)
				}
			}
		})
	}
}

// TestPartialAnswerStored checks what a turn that fails while the model
// answers keeps: the text said so far, as a partial answer with the turn's
// ID, in memory and in the error's Outcome; nothing partial when no text
// came.
func TestPartialAnswerStored(t *testing.T) {
	t.Parallel()
	down := &llm.Error{Kind: llm.ErrUnavailable, Message: "down"}
	hold := make(chan struct{})
	tests := []struct {
		name    string
		model   *cutModel
		stream  bool
		cancel  bool // cancel the turn's context once text came
		stop    bool // stop reading after the first text
		partial string
		isErr   error
	}{
		{"stream fails", &cutModel{pieces: []string{"Hel", "lo"}, err: down}, true, false, false, "Hello", llm.ErrUnavailable},
		{"consumer stops", &cutModel{pieces: []string{"Hel", "lo"}}, true, false, true, "Hel", nil},
		{"context cancelled", &cutModel{pieces: []string{"Hi"}, hold: hold}, true, true, false, "Hi", context.Canceled},
		{"fails before text", &cutModel{err: down}, true, false, false, "", llm.ErrUnavailable},
		{"blocking call fails", &cutModel{pieces: []string{"x"}, err: down}, false, false, false, "", llm.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := memory.NewInMemory()
			key := memory.Key{Session: "s"}
			chat := memory.NewChat(store, key, memory.Window{MaxMessages: 10})
			e, err := ai.NewEngine(tt.model)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			turn := ai.Turn{ID: "t1", Memory: chat, Message: llm.UserMessage("q")}
			if tt.stream {
				for ev, e := range e.Run(ctx, turn) {
					err = e
					if ev.Kind == ai.EventText && tt.cancel {
						cancel()
					}
					if ev.Kind == ai.EventText && tt.stop {
						break
					}
				}
			} else {
				_, err = e.Do(ctx, turn)
			}
			want := []string{"t1-q user:q"}
			if tt.partial != "" {
				want = append(want, "t1 assistant:"+tt.partial+" partial")
			}
			if got := stored(loadAll(t, store, key)); !slices.Equal(got, want) {
				t.Errorf("memory = %q, want %q", got, want)
			}
			if tt.stop {
				if err != nil {
					t.Errorf("a stopped stream yielded %v", err)
				}
				return
			}
			if !errors.Is(err, tt.isErr) {
				t.Errorf("err = %v, want one matching %v", err, tt.isErr)
			}
			var pe *ai.PartialError
			if got := errors.As(err, &pe); got != (tt.partial != "") {
				t.Fatalf("err %v is a PartialError: %v, want %v", err, got, tt.partial != "")
			}
			if pe != nil && (!pe.Outcome.Partial || pe.Outcome.Text != tt.partial || pe.Error() != pe.Err.Error()) {
				t.Errorf("partial outcome = %+v (%q)", pe.Outcome, pe.Error())
			}
		})
	}
}

// TestTurnRecordIDs checks the records a turn stores and their names:
// the user message ID-q, the tool round named by the store, the answer ID.
func TestTurnRecordIDs(t *testing.T) {
	t.Parallel()
	store := memory.NewInMemory()
	key := memory.Key{Session: "s"}
	chat := memory.NewChat(store, key, memory.Window{MaxMessages: 10})
	m := scripted.New(steps(calls(call("c1", "weather", CityArgs{"Rome"})), text("sunny")))
	e, err := ai.NewEngine(m, ai.Tools(weatherTool()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Do(context.Background(), ai.Turn{ID: "t7", System: "Be brief.", Memory: chat, Message: llm.UserMessage("weather?")}); err != nil {
		t.Fatal(err)
	}
	recs := loadAll(t, store, key)
	if got := texts(messagesOf(recs)); !slices.Equal(got, []string{"system:Be brief.", "user:weather?", "assistant:[calls weather]", `tool:{"city":"Rome","temp_c":21}`, "assistant:sunny"}) {
		t.Fatalf("stored %q", got)
	}
	if recs[1].ID != "t7-q" || recs[4].ID != "t7" || recs[2].ID == "" || strings.HasPrefix(recs[2].ID, "t7") || recs[3].ID == "" {
		t.Errorf("record ids %q", []string{recs[1].ID, recs[2].ID, recs[3].ID, recs[4].ID})
	}
	for _, tt := range []struct {
		id, turn string
		ok       bool
	}{
		{"t7-q", "t7", true},
		{"t7-r0", "t7", true},
		{"t7-r12", "t7", true},
		{"a-r1-q", "a-r1", true},
		{"t7", "", false},
		{"-q", "", false},
		{"-r0", "", false},
		{"t7-r", "", false},
		{"t7-rx", "", false},
	} {
		if turn, ok := ai.TurnOfRecord(tt.id); turn != tt.turn || ok != tt.ok {
			t.Errorf("TurnOfRecord(%q) = %q, %v; want %q, %v", tt.id, turn, ok, tt.turn, tt.ok)
		}
	}
}

// TestWindowLeavesRoom checks that a token window keeps only the history
// that fits beside the rest of the request (system message, the user
// message as sent, the reply's overhead), and that a request that cannot
// fit fails with llm.ErrContextTooLong.
func TestWindowLeavesRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := strings.Repeat("q", 120)          // 3 + 30 tokens (Estimator)
	context40 := strings.Repeat("c", 80)   // 20 more tokens when retrieval adds it
	context400 := strings.Repeat("c", 400) // more than the window
	augment := func(extra string) ai.Option {
		return ai.Augmentor(rag.AugmentorFunc(func(ctx context.Context, q rag.Query) (rag.Augmentation, error) {
			return rag.Augmentation{Message: llm.UserMessage(q.Text + extra)}, nil
		}), true)
	}
	pass := ai.InputGuardrails(guardrail.InputFunc(func(context.Context, guardrail.InputRequest) guardrail.Verdict { return guardrail.Success() }))
	tests := []struct {
		name    string
		msg     string
		opts    []ai.Option
		history []string // the history sent
		tooLong bool
		storedQ bool // the user message is stored
	}{
		// 100 tokens: system 6, message 33, reply 3; 58 left: two records of 20.
		{"history cut", q, nil, []string{"h3", "h4"}, false, true},
		// Retrieval's 20 tokens leave 38: one record.
		{"retrieval counted", q, []ai.Option{augment(context40)}, []string{"h4"}, false, true},
		// The message alone does not fit: refused before memory is touched.
		{"message too long", strings.Repeat("q", 400), nil, nil, true, false},
		// Retrieval makes it too long: the user message was stored with the
		// lease, so it stays.
		{"retrieval too long", q, []ai.Option{augment(context400)}, nil, true, true},
		// With input guardrails it would have been stored after them.
		{"retrieval too long, guarded", q, []ai.Option{augment(context400), pass}, nil, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := memory.NewInMemory()
			key := memory.Key{Session: "s"}
			for _, h := range []string{"h1", "h2", "h3", "h4"} {
				if _, err := store.Append(ctx, key, memory.Record{Message: llm.UserMessage(h), Tokens: 20}); err != nil {
					t.Fatal(err)
				}
			}
			chat := memory.NewChat(store, key, memory.Window{MaxTokens: 100})
			m := scripted.New(scripted.Reply("a"))
			e, err := ai.NewEngine(m, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Do(ctx, ai.Turn{System: "Be brief.", Memory: chat, Message: llm.UserMessage(tt.msg)})
			if tt.tooLong {
				if !errors.Is(err, llm.ErrContextTooLong) {
					t.Fatalf("err = %v, want ErrContextTooLong", err)
				}
				if len(m.Requests()) != 0 {
					t.Error("the model was called")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				sent := m.Requests()[0].Messages
				if got := texts(sent[1 : len(sent)-1]); !slices.Equal(got, prefixed("user:", tt.history)) {
					t.Errorf("history sent %q, want %q", got, tt.history)
				}
			}
			recs := loadAll(t, store, key)
			got := slices.ContainsFunc(recs, func(r memory.Record) bool { return r.Message.Text() == tt.msg })
			if got != tt.storedQ {
				t.Errorf("user message stored: %v, want %v (%q)", got, tt.storedQ, stored(recs))
			}
		})
	}
}

func prefixed(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

// TestHistoryWithMemory checks a turn that brings its history and is
// stored in a memory: the history is the turn's, cut by the memory's
// window, and the memory gets the turn's new messages only.
func TestHistoryWithMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memory.NewInMemory()
	key := memory.Key{Session: "s"}
	if _, err := store.Append(ctx, key, memory.Record{ID: "old", Message: llm.UserMessage("not read"), Tokens: 1}); err != nil {
		t.Fatal(err)
	}
	chat := memory.NewChat(store, key, memory.Window{MaxMessages: 2}, memory.KeepAll())
	m := scripted.New(scripted.Reply("a"))
	e, err := ai.NewEngine(m)
	if err != nil {
		t.Fatal(err)
	}
	history := []llm.Message{llm.UserMessage("u1"), llm.AssistantMessage("a1"), llm.UserMessage("u2"), llm.AssistantMessage("a2")}
	if _, err := e.Do(ctx, ai.Turn{ID: "t", History: history, Memory: chat, Message: llm.UserMessage("q")}); err != nil {
		t.Fatal(err)
	}
	if got := texts(m.Requests()[0].Messages); !slices.Equal(got, []string{"user:u2", "assistant:a2", "user:q"}) {
		t.Errorf("sent %q", got)
	}
	if got := stored(loadAll(t, store, key)); !slices.Equal(got, []string{"old user:not read", "t-q user:q", "t assistant:a"}) {
		t.Errorf("stored %q", got)
	}
}

// TestToolResultsContinue checks a turn continued with the results of the
// caller's tools: checked against the waiting calls (a mismatch names the
// call and stores nothing), stored as ID-r<i>, then the answer.
func TestToolResultsContinue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memory.NewInMemory()
	key := memory.Key{Session: "s"}
	chat := memory.NewChat(store, key, memory.Window{MaxMessages: 20})
	m := scripted.New(steps(calls(call("c1", "lookup", `{"q":"x"}`), call("c2", "lookup", `{"q":"y"}`)), text("x and y found")))
	e, err := ai.NewEngine(m)
	if err != nil {
		t.Fatal(err)
	}
	client := []llm.ToolSpec{lookupSpec}
	out, err := e.Do(ctx, ai.Turn{ID: "t1", Memory: chat, Message: llm.UserMessage("find x and y"), ClientTools: client})
	if err != nil || len(out.Pending) != 2 {
		t.Fatalf("first turn: %v, pending %v", err, out)
	}
	r1 := llm.ToolResultMessage("c1", "lookup", "x found", false)
	r2 := llm.ToolResultMessage("c2", "lookup", "y found", false)
	before := stored(loadAll(t, store, key))
	for _, tt := range []struct {
		results []llm.Message
		want    ai.ToolResultError
	}{
		{[]llm.Message{r1}, ai.ToolResultError{CallID: "c2", Missing: true}},
		{[]llm.Message{r1, r1}, ai.ToolResultError{CallID: "c1"}},
		{[]llm.Message{r1, r2, llm.ToolResultMessage("c3", "lookup", "?", false)}, ai.ToolResultError{CallID: "c3"}},
	} {
		_, err := e.Do(ctx, ai.Turn{ID: "bad", Memory: chat, ToolResults: tt.results, ClientTools: client})
		var te *ai.ToolResultError
		if !errors.As(err, &te) || *te != tt.want || !strings.Contains(err.Error(), `"`+tt.want.CallID+`"`) {
			t.Errorf("results %v: err = %v, want %+v", texts(tt.results), err, tt.want)
		}
	}
	if got := stored(loadAll(t, store, key)); !slices.Equal(got, before) {
		t.Fatalf("refused results were stored: %q", got)
	}
	out, err = e.Do(ctx, ai.Turn{ID: "t2", Memory: chat, ToolResults: []llm.Message{r1, r2}, ClientTools: client})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(out.Messages); !slices.Equal(got, []string{"tool:x found", "tool:y found", "assistant:x and y found"}) {
		t.Errorf("new messages %q", got)
	}
	all := loadAll(t, store, key)
	if got := stored(all[len(all)-3:]); !slices.Equal(got, []string{"t2-r0 tool:x found", "t2-r1 tool:y found", "t2 assistant:x and y found"}) {
		t.Errorf("stored %q", got)
	}
	// Results continue a turn whose history the caller keeps just as well.
	history := messagesOf(all[:len(all)-3])
	if _, err := e.Do(ctx, ai.Turn{History: history, ToolResults: []llm.Message{r2}}); !errors.As(err, new(*ai.ToolResultError)) {
		t.Errorf("a missing result in a History turn: err = %v", err)
	}
	if _, err := e.Do(ctx, ai.Turn{History: history, Message: llm.UserMessage("x"), ToolResults: []llm.Message{r1}}); err == nil {
		t.Error("a Turn with a Message and ToolResults was run")
	}
}
