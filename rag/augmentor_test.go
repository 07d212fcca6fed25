package rag_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/rag"
)

func TestAugmentor(t *testing.T) {
	t.Parallel()
	c := newCorpus(t)
	a := rag.NewAugmentor(rag.NewHybrid(c.keywordRetriever(t), c.vectorRetriever(t)), rag.WithTopK(2))
	user := llm.UserMessage("What does the X200 cost?")
	aug, err := a.Augment(context.Background(), rag.Query{Text: user.Text(), Message: user})
	if err != nil {
		t.Fatal(err)
	}
	if len(aug.Sources) != 2 || aug.Sources[0].Content != "The X200 costs 499 euros including tax." {
		t.Fatalf("sources = %q", texts(aug.Sources))
	}
	got := aug.Message.Text()
	if !strings.HasPrefix(got, "What does the X200 cost?\n\nAnswer using the following information:\n[1] x200.md › Pricing\nThe X200 costs 499 euros") {
		t.Errorf("message:\n%s", got)
	}
	if user.Text() != "What does the X200 cost?" {
		t.Error("input message modified")
	}
}

func TestAugmentorNothingFound(t *testing.T) {
	t.Parallel()
	c := newCorpus(t)
	a := rag.NewAugmentor(c.keywordRetriever(t))
	user := llm.UserMessage("zebra migration")
	aug, err := a.Augment(context.Background(), rag.Query{Text: user.Text(), Message: user})
	if err != nil || len(aug.Sources) != 0 || aug.Message.Text() != "zebra migration" {
		t.Errorf("aug = %+v, %v; want the message unchanged", aug, err)
	}
}

// TestAugmentorNeverFailsTheTurn: every retrieval failure ends in an
// unchanged message, a nil error and a report.
func TestAugmentorNeverFailsTheTurn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		r        rag.Retriever
		degraded int
	}{
		{"plain retriever errors", failing("database down"), 1},
		{"plain retriever panics", rag.RetrieverFunc(func(context.Context, string, int) ([]rag.Source, error) { panic("bug") }), 1},
		{"all members fail", &rag.MultiRetriever{Retrievers: []rag.NamedRetriever{
			{Name: "a", Retriever: failing("a down")},
			{Name: "slow", Retriever: hang(t)},
		}, Timeout: 20 * time.Millisecond}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var got []*rag.Degradation
			a := rag.NewAugmentor(tt.r, rag.OnDegraded(func(_ context.Context, d *rag.Degradation) {
				mu.Lock()
				got = append(got, d)
				mu.Unlock()
			}))
			aug, err := a.Augment(context.Background(), rag.Query{Text: "question"})
			if err != nil {
				t.Fatalf("error fails the turn: %v", err)
			}
			if aug.Message.Text() != "question" || aug.Message.Role != llm.RoleUser || len(aug.Sources) != 0 {
				t.Errorf("aug = %+v", aug)
			}
			if len(got) != tt.degraded {
				t.Errorf("%d degradations reported, want %d: %v", len(got), tt.degraded, got)
			}
		})
	}
}

func TestAugmentorCancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := rag.NewAugmentor(fixed("1"))
	if _, err := a.Augment(ctx, rag.Query{Text: "q"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestAugmentorBlankQuery(t *testing.T) {
	t.Parallel()
	called := false
	a := rag.NewAugmentor(rag.RetrieverFunc(func(context.Context, string, int) ([]rag.Source, error) {
		called = true
		return nil, nil
	}))
	msg := llm.UserParts(llm.ImageURLPart("https://example.com/a.png"))
	aug, err := a.Augment(context.Background(), rag.Query{Message: msg})
	if err != nil || called || len(aug.Message.Parts) != 1 {
		t.Errorf("blank query: called=%v aug=%+v err=%v", called, aug, err)
	}
}

func TestAugmentorCustomInjector(t *testing.T) {
	t.Parallel()
	in := rag.InjectorFunc(func(msg llm.Message, s []rag.Source) (llm.Message, []rag.Source) {
		return llm.UserMessage(msg.Text() + " +" + s[0].ID), s[:1]
	})
	aug, _ := rag.NewAugmentor(fixed("a", "b"), rag.WithInjector(in)).Augment(context.Background(), rag.Query{Text: "q"})
	if aug.Message.Text() != "q +a" || len(aug.Sources) != 1 {
		t.Errorf("aug = %+v", aug)
	}
}
