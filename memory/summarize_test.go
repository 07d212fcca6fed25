package memory_test

import (
	"context"
	"errors"
	"flag"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// gated is a summarizer's model that waits for its context to end and
// reports that it was called.
type gated struct {
	called chan struct{}
	mu     sync.Mutex
	calls  int
}

func (g *gated) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	g.called <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (g *gated) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) { yield(llm.Chunk{}, errors.New("no streams")) }
}

// runTurn runs a turn of a question and an answer on c.
func runTurn(t *testing.T, c *memory.Chat, q, a string) {
	t.Helper()
	h, _, err := c.BeginMessages(t.Context(), nil, memory.Record{Message: user(q), Tokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.End(t.Context(), memory.Record{Message: asst(a), Tokens: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestSummarizerClose checks that Close cancels a fold in flight, reports
// it, waits for it, and starts no fold afterwards: turns keep their plain
// window and nothing is saved.
func TestSummarizerClose(t *testing.T) {
	t.Parallel()
	model := &gated{called: make(chan struct{}, 1)}
	var mu sync.Mutex
	var errs []error
	sum := memory.NewSummarizer(model, memory.SummaryThreshold(1), memory.OnSummary(func(ev memory.SummaryEvent) {
		mu.Lock()
		errs = append(errs, ev.Err)
		mu.Unlock()
	}))
	store := memory.NewInMemory()
	c := memory.NewChat(store, memory.Key{Session: "s"}, memory.Window{MaxMessages: 2}, memory.WithSummary(sum))
	runTurn(t, c, "q1", "a1")
	runTurn(t, c, "q2", "a2")
	runTurn(t, c, "q3", "a3") // q1 and a1 slid out: a fold starts
	<-model.called
	sum.Close()
	mu.Lock()
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("events after Close = %v, want the cancelled fold", errs)
	}
	mu.Unlock()
	runTurn(t, c, "q4", "a4")
	sum.Wait()
	if model.calls != 1 {
		t.Fatalf("the model was called %d times, want once: a closed summarizer starts no fold", model.calls)
	}
	if s, err := c.Summary(t.Context()); err != nil || s.Through != 0 {
		t.Fatalf("summary after Close = %+v, %v", s, err)
	}
	// Nothing folded, nothing trimmed.
	if recs, _ := store.Load(t.Context(), memory.Key{Session: "s"}, memory.Window{}); len(recs) != 8 {
		t.Fatalf("the store holds %d records, want all 8", len(recs))
	}
}

// TestSummarizerRequest checks the request of a fold against
// testdata/fold_request.golden: the prompt (overridden here), the bound on
// the summary, the previous summary and the records, a long tool result
// cut short.
func TestSummarizerRequest(t *testing.T) {
	t.Parallel()
	model := scripted.New(scripted.Reply("  the new summary  "))
	sum := memory.NewSummarizer(model, memory.SummaryThreshold(1), memory.SummaryPrompt("Summarize."), memory.SummaryMaxTokens(77))
	defer sum.Close()
	store := memory.NewInMemory()
	key := memory.Key{Session: "s"}
	if _, err := store.Append(t.Context(), key,
		memory.Record{Message: user("What is the weather in Paris?"), Tokens: 1},
		memory.Record{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: `{"city":"Paris"}`}}}, Tokens: 1},
		memory.Record{Message: llm.ToolResultMessage("c1", "weather", "sunny "+strings.Repeat("é", 3000), false), Tokens: 1},
		memory.Record{Message: asst("It is sunny."), Tokens: 1},
	); err != nil {
		t.Fatal(err)
	}
	if ok, err := store.SaveSummary(t.Context(), key, memory.Summary{Text: "The user lives in Paris.", Through: 1}, 0); err != nil || !ok {
		t.Fatalf("SaveSummary = %v, %v", ok, err)
	}
	c := memory.NewChat(store, key, memory.Window{MaxMessages: 1}, memory.WithSummary(sum))
	runTurn(t, c, "thanks", "welcome")
	sum.Wait()
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d fold requests, want 1", len(reqs))
	}
	req := reqs[0]
	if req.MaxTokens != 77 || len(req.Messages) != 2 || req.Messages[0].Text() != "Summarize." {
		t.Fatalf("fold request: max tokens %d, %d messages, system %q", req.MaxTokens, len(req.Messages), req.Messages[0].Text())
	}
	golden(t, "fold_request.golden", req.Messages[1].Text())
	s, err := c.Summary(t.Context())
	if err != nil || s.Text != "the new summary" || s.Through != 3 {
		t.Fatalf("summary = %+v, %v; want the model's text, trimmed, through 3 (the turn kept \"It is sunny.\")", s, err)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("%s differs (go test -update to rewrite):\n%s", name, got)
	}
}

// TestWithSummaryNeedsSummaryStore checks that a summarizer over a store
// that keeps no summaries is refused when the chats are made.
func TestWithSummaryNeedsSummaryStore(t *testing.T) {
	t.Parallel()
	sum := memory.NewSummarizer(scripted.New())
	defer sum.Close()
	for name, build := range map[string]func(){
		"NewChat": func() {
			memory.NewChat(opaqueStore{memory.NewInMemory()}, memory.Key{}, memory.Window{}, memory.WithSummary(sum))
		},
		"MessageWindow": func() {
			memory.MessageWindow(4, memory.WithStore(opaqueStore{memory.NewInMemory()}), memory.WithSummary(sum))
		},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "not a SummaryStore") {
					t.Errorf("%s with a store that keeps no summaries: panic %v", name, r)
				}
			}()
			build()
		}()
	}
}
