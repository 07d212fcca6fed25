package rag_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
)

var x200History = []llm.Message{
	llm.SystemMessage("You are a shop assistant."),
	llm.UserMessage("Tell me about the X200."),
	llm.AssistantMessage("The X200 is our mid-range phone with a 6-inch screen."),
}

func TestCompressQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name    string
		reply   string
		history []llm.Message
		want    string
		calls   int
	}{
		{"rewrites a follow-up", "What is the price of the X200?", x200History, "What is the price of the X200?", 1},
		{"strips a label and quotes", "Standalone question: \"What is the price of the X200?\"\n", x200History, "What is the price of the X200?", 1},
		{"first non-empty line", "\n\n  What is the price of the X200?\nI hope this helps.", x200History, "What is the price of the X200?", 1},
		{"no history: unchanged, no model call", "ignored", nil, "what about its price?", 0},
		{"system-only history: unchanged", "ignored", x200History[:1], "what about its price?", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			model := scripted.New(scripted.Reply(tt.reply))
			c, err := rag.CompressQuery(model)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Transform(ctx, rag.Query{Text: "what about its price?", History: tt.history})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, []string{tt.want}) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			reqs := model.Requests()
			if len(reqs) != tt.calls {
				t.Fatalf("%d model calls, want %d", len(reqs), tt.calls)
			}
			if tt.calls > 0 {
				p := reqs[0].Messages[0].Text()
				for _, part := range []string{"User: Tell me about the X200.", "Assistant: The X200 is our mid-range phone", "Follow-up question: what about its price?"} {
					if !strings.Contains(p, part) {
						t.Errorf("prompt lacks %q:\n%s", part, p)
					}
				}
				if strings.Contains(p, "shop assistant") {
					t.Errorf("prompt shows the system message:\n%s", p)
				}
			}
		})
	}
}

func TestCompressQueryHistoryLimit(t *testing.T) {
	t.Parallel()
	model := scripted.New(scripted.Reply("q"))
	c, err := rag.CompressQuery(model, rag.TransformHistory(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Transform(context.Background(), rag.Query{Text: "and it?", History: x200History}); err != nil {
		t.Fatal(err)
	}
	p := model.Requests()[0].Messages[0].Text()
	if strings.Contains(p, "Tell me about") || !strings.Contains(p, "mid-range") {
		t.Errorf("history limit 1 not honoured:\n%s", p)
	}
}

func TestExpandQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		n     int
		reply string
		want  []string
	}{
		{"lines", 3, "X200 price\nX200 cost in euros\nhow expensive is the X200", []string{"price of the X200?", "X200 price", "X200 cost in euros", "how expensive is the X200"}},
		{"markers, quotes, duplicates, cap", 2, "1. \"X200 price\"\n2) x200 PRICE\n- price of the X200?\n* X200 cost\n• third", []string{"price of the X200?", "X200 price", "X200 cost"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			model := scripted.New(scripted.Reply(tt.reply))
			e, err := rag.ExpandQuery(model, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Transform(context.Background(), rag.Query{Text: "price of the X200?"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	e, _ := rag.ExpandQuery(scripted.New(scripted.Reply("  \n")), 3)
	if _, err := e.Transform(context.Background(), rag.Query{Text: "q"}); err == nil {
		t.Error("empty answer: no error")
	}
}

func TestTransformPromptChecked(t *testing.T) {
	t.Parallel()
	if _, err := rag.CompressQuery(scripted.New(), rag.TransformPrompt("{{.Missing}}")); err == nil {
		t.Error("template naming a missing field accepted")
	}
	if _, err := rag.CompressQuery(nil); err == nil {
		t.Error("nil model accepted")
	}
	model := scripted.New(scripted.Reply("standalone"))
	c, err := rag.CompressQuery(model, rag.TransformPrompt("Q={{.Query}} C={{.Conversation}}"))
	if err != nil {
		t.Fatal(err)
	}
	c.Transform(context.Background(), rag.Query{Text: "x", History: x200History})
	if p := model.Requests()[0].Messages[0].Text(); !strings.HasPrefix(p, "Q=x C=User: Tell me") {
		t.Errorf("custom prompt rendered %q", p)
	}
}

// TestTransformFailureKeepsQuery: a failing transform degrades to the
// original query, reported, and retrieval goes on.
func TestTransformFailureKeepsQuery(t *testing.T) {
	t.Parallel()
	failing := scripted.New(scripted.Fail(&llm.Error{Kind: llm.ErrRateLimited, Message: "slow down"}))
	c, err := rag.CompressQuery(failing)
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	r := rag.RetrieverFunc(func(_ context.Context, q string, _ int) ([]rag.Source, error) {
		asked = append(asked, q)
		return []rag.Source{{ID: "1", Content: "The X200 costs 499 euros.", DocumentName: "x200.md"}}, nil
	})
	var degraded []*rag.Degradation
	a := rag.NewAugmentor(r, rag.WithQueryTransforms(c), rag.OnDegraded(func(_ context.Context, d *rag.Degradation) {
		degraded = append(degraded, d)
	}))
	aug, err := a.Augment(context.Background(), rag.Query{Text: "what about its price?", History: x200History})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{"what about its price?"}) {
		t.Errorf("retrieved with %q, want the original query", asked)
	}
	if len(aug.Sources) != 1 {
		t.Errorf("sources = %v", aug.Sources)
	}
	if len(degraded) != 1 || degraded[0].Step != "transform" || degraded[0].Name != "compress" || !errors.Is(degraded[0], llm.ErrRateLimited) {
		t.Errorf("degraded = %v", degraded)
	}
}

// TestCompressThenExpand chains the transforms: the standalone query is
// expanded, each phrasing recalled, and the results fused.
func TestCompressThenExpand(t *testing.T) {
	t.Parallel()
	model := scripted.New(
		scripted.WhenUserSays(regexp.MustCompile(`standalone question`), scripted.Reply("What is the price of the X200?")),
		scripted.WhenUserSays(regexp.MustCompile(`search queries`), scripted.Reply("X200 cost\nX200 euros")),
	)
	c, _ := rag.CompressQuery(model)
	e, _ := rag.ExpandQuery(model, 2)
	corp := newCorpus(t)
	var mu sync.Mutex
	var asked []string
	inner := corp.keywordRetriever(t)
	r := rag.RetrieverFunc(func(ctx context.Context, q string, k int) ([]rag.Source, error) {
		mu.Lock()
		asked = append(asked, q)
		mu.Unlock()
		return inner.Retrieve(ctx, q, k)
	})
	a := rag.NewAugmentor(r, rag.WithQueryTransforms(c, e), rag.WithTopK(2))
	aug, err := a.Augment(context.Background(), rag.Query{Text: "what about its price?", History: x200History})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(asked)
	if want := []string{"What is the price of the X200?", "X200 cost", "X200 euros"}; !slices.Equal(asked, want) {
		t.Errorf("recalled %q, want %q", asked, want)
	}
	if len(aug.Sources) != 2 || aug.Sources[0].Content != "The X200 costs 499 euros including tax." {
		t.Errorf("sources = %q", texts(aug.Sources))
	}
}
