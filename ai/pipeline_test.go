package ai_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/guardrail"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
)

type Chat struct {
	ID  ai.MemoryID
	Msg string
}

func TestMemoryAcrossCalls(t *testing.T) {
	t.Parallel()
	m := scripted.New(respond(func(req *llm.Request) *llm.Response {
		return text(fmt.Sprintf("seen %d", len(req.Messages)))
	}))
	chats := memory.MessageWindow(4)
	sys := "Be brief."
	f, err := ai.Func[Chat, string](m, ai.MemoryPerID(chats), ai.User("{{.Msg}}"),
		ai.SystemFor(func(ctx context.Context, id string) (string, error) { return sys, nil }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		if _, err := f(ctx, Chat{"a", fmt.Sprint("q", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f(ctx, Chat{"b", "other"}); err != nil {
		t.Fatal(err)
	}
	sys = "Be verbose."
	if _, err := f(ctx, Chat{"a", "q3"}); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	// Call 3 sees system + 2 earlier turns (4 messages) + its question.
	want := []string{"system:Be brief.", "user:q0", "assistant:seen 2", "user:q1", "assistant:seen 4", "user:q2"}
	if got := texts(reqs[2].Messages); !slices.Equal(got, want) {
		t.Errorf("call 3 messages:\n%q\nwant\n%q", got, want)
	}
	if got := texts(reqs[3].Messages); !slices.Equal(got, []string{"system:Be brief.", "user:other"}) {
		t.Errorf("memory b = %q", got)
	}
	// The window holds 4 messages; the new system message replaced the old.
	want = []string{"system:Be verbose.", "user:q1", "assistant:seen 4", "user:q2", "assistant:seen 6", "user:q3"}
	if got := texts(reqs[4].Messages); !slices.Equal(got, want) {
		t.Errorf("call 5 messages:\n%q\nwant\n%q", got, want)
	}
	recs, _ := chats.Chat("a").Records(ctx)
	if got := texts(messagesOf(recs)); !slices.Equal(got, []string{"system:Be verbose.", "user:q2", "assistant:seen 6", "user:q3", "assistant:seen 6"}) {
		t.Errorf("stored = %q", got)
	}
	if ids := chats.IDs(); !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("IDs = %q", ids)
	}
	if err := chats.Evict(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if recs, _ := chats.Chat("a").Records(ctx); len(recs) != 0 {
		t.Errorf("evicted memory still holds %d records", len(recs))
	}
}

func messagesOf(recs []memory.Record) []llm.Message {
	out := make([]llm.Message, len(recs))
	for i, r := range recs {
		out[i] = r.Message
	}
	return out
}

func TestConcurrentTurnsOnOneMemory(t *testing.T) {
	t.Parallel()
	// The model answers with the question it was asked; if turns
	// interleaved, a question and its answer would not be adjacent.
	m := scripted.New(respond(func(req *llm.Request) *llm.Response {
		return text("re:" + req.Messages[len(req.Messages)-1].Text())
	}))
	chats := memory.MessageWindow(1000)
	f, err := ai.Func[Chat, string](m, ai.MemoryPerID(chats), ai.User("{{.Msg}}"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := f(context.Background(), Chat{"shared", fmt.Sprint("m", i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	recs, err := chats.Chat("shared").Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2*n {
		t.Fatalf("%d records, want %d", len(recs), 2*n)
	}
	for i := 0; i < len(recs); i += 2 {
		q, a := recs[i].Message, recs[i+1].Message
		if q.Role != llm.RoleUser || a.Text() != "re:"+q.Text() {
			t.Fatalf("records %d,%d interleaved: %q / %q", i, i+1, q.Text(), a.Text())
		}
	}
}

func TestRetrieval(t *testing.T) {
	t.Parallel()
	src := []rag.Source{{ID: "doc1#0", Content: "Paris is in France."}}
	aug := rag.AugmentorFunc(func(ctx context.Context, q rag.Query) (rag.Augmentation, error) {
		if q.Text == "fail" {
			return rag.Augmentation{}, errors.New("index down")
		}
		return rag.Augmentation{Message: llm.UserMessage(q.Text + "\n\nContext: " + src[0].Content), Sources: src}, nil
	})
	tests := []struct {
		name       string
		msg        string
		opts       []ai.Option
		wantErr    bool
		wantSent   string
		wantStored string
		sources    int
	}{
		{"augmented, original stored", "where?", nil, false, "where?\n\nContext: Paris is in France.", "where?", 1},
		{"store augmented", "where?", []ai.Option{ai.StoreAugmented(true)}, false, "where?\n\nContext: Paris is in France.", "where?\n\nContext: Paris is in France.", 1},
		{"failure degrades", "fail", nil, false, "fail", "fail", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := scripted.New(scripted.Reply("ok"))
			chats := memory.MessageWindow(10)
			var failed []error
			opts := append([]ai.Option{ai.Augmentor(aug, false), ai.MemoryPerID(chats), ai.User("{{.Msg}}"),
				ai.Listen(func(ctx context.Context, n ai.Notice) {
					if n.Kind == ai.NoticeRetrievalFailed {
						failed = append(failed, n.Err)
					}
				})}, tt.opts...)
			f, err := ai.Func[Chat, ai.Result[string]](m, opts...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := f(context.Background(), Chat{"x", tt.msg})
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Requests()[0].Messages[0].Text(); got != tt.wantSent {
				t.Errorf("sent %q, want %q", got, tt.wantSent)
			}
			recs, _ := chats.Chat("x").Records(context.Background())
			if got := recs[0].Message.Text(); got != tt.wantStored {
				t.Errorf("stored %q, want %q", got, tt.wantStored)
			}
			if len(res.Sources) != tt.sources {
				t.Errorf("sources = %v", res.Sources)
			}
			if (tt.msg == "fail") != (len(failed) == 1) {
				t.Errorf("retrieval failure notices = %v", failed)
			}
		})
	}
	f, _ := ai.Func[string, string](scripted.New(), ai.Augmentor(aug, true))
	if _, err := f(context.Background(), "fail"); err == nil || !strings.Contains(err.Error(), "index down") {
		t.Errorf("fatal augmentor: err = %v", err)
	}
}

func TestGuardrails(t *testing.T) {
	t.Parallel()
	noSecrets := guardrail.InputFunc(func(ctx context.Context, r guardrail.InputRequest) guardrail.Verdict {
		switch {
		case strings.Contains(r.Message.Text(), "password"):
			return guardrail.Failure("no passwords")
		case strings.Contains(r.Message.Text(), "darn"):
			return guardrail.Rewritten(strings.ReplaceAll(r.Message.Text(), "darn", "d***"))
		}
		return guardrail.Success()
	})
	polite := guardrail.OutputFunc(func(ctx context.Context, r guardrail.OutputRequest) guardrail.Verdict {
		switch t := r.Message.Text(); {
		case strings.Contains(t, "rude"):
			return guardrail.Retry("rude", "Please answer politely.")
		case strings.Contains(t, "forbidden"):
			return guardrail.Failure("forbidden topic")
		case strings.Contains(t, "lol"):
			return guardrail.Rewritten(strings.ReplaceAll(t, "lol", ""))
		}
		return guardrail.Success()
	})
	tests := []struct {
		name    string
		msg     string
		answers []*llm.Response
		want    string
		wantErr string
		calls   int
	}{
		{"pass", "hi", []*llm.Response{text("hello")}, "hello", "", 1},
		{"input fails", "my password", []*llm.Response{text("x")}, "", "input rejected: no passwords", 0},
		{"input rewritten", "darn it", []*llm.Response{nil}, "d*** it", "", 1},
		{"output reprompted", "hi", []*llm.Response{text("rude"), text("kind")}, "kind", "", 2},
		{"reprompts exhausted", "hi", []*llm.Response{text("rude"), text("rude"), text("rude")}, "", "output rejected after 3 attempts: rude", 3},
		{"output fails", "hi", []*llm.Response{text("forbidden")}, "", "forbidden topic", 1},
		{"output rewritten", "hi", []*llm.Response{text("fine lol")}, "fine ", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rule := scripted.Echo() // a nil answer: echo the message
			if tt.answers[0] != nil {
				rule = steps(tt.answers...)
			}
			m := scripted.New(rule)
			f, err := ai.Func[string, string](m, ai.InputGuardrails(noSecrets), ai.OutputGuardrails(2, polite))
			if err != nil {
				t.Fatal(err)
			}
			got, err := f(context.Background(), tt.msg)
			if tt.wantErr != "" {
				var ge *guardrail.Error
				if !errors.As(err, &ge) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
			if n := len(m.Requests()); n != tt.calls {
				t.Errorf("%d model calls, want %d", n, tt.calls)
			}
		})
	}
}

func TestModeration(t *testing.T) {
	t.Parallel()
	f, err := ai.Func[string, string](scripted.New(scripted.Reply("ok")), ai.Moderation(moderator{"attack"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f(context.Background(), "hello"); err != nil || got != "ok" {
		t.Fatalf("got %q, %v", got, err)
	}
	_, err = f(context.Background(), "plan an attack")
	var me *ai.ModerationError
	if !errors.As(err, &me) || !me.Result.Flagged || me.Error() != "ai: input flagged by moderation: violence" {
		t.Fatalf("err = %v", err)
	}
}

func TestListenersSeeOneInvocation(t *testing.T) {
	t.Parallel()
	m := scripted.New(steps(calls(call("1", "weather", CityArgs{"Rome"})), text("sunny")))
	var kinds []string
	ids := map[string]bool{}
	f, _ := ai.Func[string, string](m, ai.Tools(weatherTool()), ai.Listen(func(ctx context.Context, n ai.Notice) {
		kinds = append(kinds, n.Kind.String())
		ids[n.InvocationID] = true
	}))
	if _, err := f(context.Background(), "weather?"); err != nil {
		t.Fatal(err)
	}
	want := []string{"started", "request", "response", "tool_executed", "request", "response", "completed"}
	if !slices.Equal(kinds, want) || len(ids) != 1 {
		t.Errorf("notices %q (ids %v), want %q", kinds, ids, want)
	}
}

// A request transformer may rewrite messages in place; the history it is
// given is a copy, so memory keeps what was said.
func TestTransformerDoesNotChangeMemory(t *testing.T) {
	t.Parallel()
	m := scripted.New(respond(func(req *llm.Request) *llm.Response { return text("answer") }))
	chats := memory.MessageWindow(10)
	shout := func(ctx context.Context, req *llm.Request, id string) error {
		for i := range req.Messages[:len(req.Messages)-1] { // the history
			for j := range req.Messages[i].Parts {
				req.Messages[i].Parts[j].Text = strings.ToUpper(req.Messages[i].Parts[j].Text)
			}
		}
		return nil
	}
	f, err := ai.Func[Chat, string](m, ai.MemoryPerID(chats), ai.User("{{.Msg}}"), ai.TransformRequest(shout))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{"one", "two", "three"} {
		if _, err := f(ctx, Chat{"a", q}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := chats.Chat("a").Messages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user:one", "assistant:answer", "user:two", "assistant:answer", "user:three", "assistant:answer"}
	if g := texts(got); !slices.Equal(g, want) {
		t.Errorf("memory = %q, want %q", g, want)
	}
	if g := texts(m.Requests()[2].Messages[:4]); !slices.Equal(g, []string{"user:ONE", "assistant:ANSWER", "user:TWO", "assistant:ANSWER"}) {
		t.Errorf("transformed history = %q", g)
	}
}
