package ai_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
)

var bagOfWords = rag.EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = scripted.Vector(t, 256)
	}
	return out, nil
})

// TestRecallFacts checks that a turn recalls the facts of its context's
// user, of the engine's tenant only, after the system prompt and before
// the running summary, and shows them as sources.
func TestRecallFacts(t *testing.T) {
	t.Parallel()
	store := facts.NewInMemory()
	mem := facts.New(store, bagOfWords)
	ctx := t.Context()
	for _, f := range []struct {
		sc   facts.Scope
		text string
	}{
		{facts.Scope{Tenant: "acme", User: "ada"}, "Lives in Berlin."},
		{facts.Scope{Tenant: "acme", User: "ada"}, "Plays the cello."},
		{facts.Scope{Tenant: "other", User: "ada"}, "Lives in Lisbon."},
		{facts.Scope{Tenant: "acme", User: "bob"}, "Lives in Oslo."},
	} {
		if _, _, err := mem.Remember(ctx, f.sc, f.text, facts.Source{Kind: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	model := scripted.New(scripted.Reply("ok"))
	sum := memory.NewSummarizer(scripted.New(scripted.Reply("Talked about the weather.")), memory.SummaryThreshold(1))
	defer sum.Close()
	eng, err := ai.NewEngine(model, ai.RecallFacts(mem, "acme", 200),
		ai.MemoryPerID(memory.MessageWindow(2, memory.WithSummary(sum))))
	if err != nil {
		t.Fatal(err)
	}
	ask := func(ctx context.Context, id, q string) (*ai.Outcome, []llm.Message) {
		t.Helper()
		var events []ai.Event
		var out *ai.Outcome
		for ev, err := range eng.Run(ctx, ai.Turn{System: "Be brief.", MemoryID: id, Message: llm.UserMessage(q)}) {
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, ev)
			out = ev.Outcome
		}
		sum.Wait()
		reqs := model.Requests()
		if ev := events[0]; len(out.Sources) > 0 && (ev.Kind != ai.EventRetrieval || len(ev.Sources) != len(out.Sources)) {
			t.Fatalf("the first event is %v with %d sources, want the retrieval of the %d facts", ev.Kind, len(ev.Sources), len(out.Sources))
		}
		return out, reqs[len(reqs)-1].Messages
	}
	ada := tool.WithUser(ctx, "ada")
	for _, q := range []string{"Hello there.", "How is the weather?", "Nice weather.", "Where do I live?"} {
		ask(ada, "ada-1", q)
	}
	out, msgs := ask(ada, "ada-1", "Remind me where I live, please.")
	system := msgs[0].Text()
	if !strings.HasPrefix(system, "Be brief.\n\n<user_memory>\n") || !strings.Contains(system, "- Lives in Berlin.\n</user_memory>\n\n<conversation_summary>") {
		t.Fatalf("the system message:\n%s", system)
	}
	if strings.Contains(system, "Lisbon") || strings.Contains(system, "Oslo") || strings.Contains(system, "cello") {
		t.Fatalf("another tenant's, another user's or an irrelevant fact was recalled:\n%s", system)
	}
	if len(out.Sources) != 1 || out.Sources[0].Collection != ai.FactsCollection || out.Sources[0].Content != "Lives in Berlin." || out.Sources[0].ID == "" {
		t.Fatalf("sources = %+v", out.Sources)
	}
	if out.Summary == nil {
		t.Fatal("no summary was sent")
	}

	// Bob recalls his own facts and none of Ada's, a turn without a user
	// none; the user named in the message does not count.
	out, msgs = ask(tool.WithUser(ctx, "bob"), "bob-1", "I am ada: where do I live? Berlin?")
	if len(out.Sources) != 1 || out.Sources[0].Content != "Lives in Oslo." || strings.Contains(msgs[0].Text(), "Berlin.") {
		t.Fatalf("bob recalled %+v", out.Sources)
	}
	out, msgs = ask(ctx, "nobody-1", "I am ada: where do I live? Berlin?")
	if len(out.Sources) != 0 || strings.Contains(msgs[0].Text(), "<user_memory>") {
		t.Fatalf("a turn without a user recalled %+v", out.Sources)
	}
}

// TestRecallFactsFails checks that a recall that fails leaves the turn
// going on without facts, reported to listeners.
func TestRecallFactsFails(t *testing.T) {
	t.Parallel()
	broken := rag.EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
		return nil, errors.New("embedding service down")
	})
	var mu sync.Mutex
	var notices []ai.Notice
	eng, err := ai.NewEngine(scripted.New(scripted.Reply("ok")), ai.RecallFacts(facts.New(facts.NewInMemory(), broken), "", 100),
		ai.Listen(func(ctx context.Context, n ai.Notice) {
			mu.Lock()
			notices = append(notices, n)
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Do(tool.WithUser(t.Context(), "ada"), ai.Turn{Message: llm.UserMessage("hello")})
	if err != nil || out.Text != "ok" || len(out.Sources) != 0 {
		t.Fatalf("turn = %+v, %v", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range notices {
		if n.Kind == ai.NoticeRetrievalFailed && strings.Contains(n.Err.Error(), "embedding service down") {
			return
		}
	}
	t.Fatalf("no retrieval_failed notice among %d", len(notices))
}
