package rag_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/rag"
)

// hang is a retriever that ignores its context and answers only when
// release is closed, the worst kind of slow store.
func hang(t *testing.T) rag.Retriever {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return rag.RetrieverFunc(func(context.Context, string, int) ([]rag.Source, error) {
		<-release
		return []rag.Source{{ID: "late"}}, nil
	})
}

func TestMultiRetrieverDegrades(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		members   []rag.NamedRetriever
		timeout   time.Duration
		want      []string
		degraded  []string // names
		deadlines int      // how many degradations wrap DeadlineExceeded
	}{
		{
			name:    "all answer",
			members: []rag.NamedRetriever{{Name: "a", Retriever: fixed("1", "2")}, {Name: "b", Retriever: fixed("2", "3")}},
			want:    []string{"2", "1", "3"},
		},
		{
			name:     "one errors",
			members:  []rag.NamedRetriever{{Name: "a", Retriever: fixed("1", "2")}, {Name: "b", Retriever: failing("index corrupt")}},
			want:     []string{"1", "2"},
			degraded: []string{"b"},
		},
		{
			name:      "one hangs past its timeout",
			members:   []rag.NamedRetriever{{Name: "slow", Retriever: hang(t)}, {Name: "b", Retriever: fixed("3", "4")}},
			timeout:   20 * time.Millisecond,
			want:      []string{"3", "4"},
			degraded:  []string{"slow"},
			deadlines: 1,
		},
		{
			name:      "member timeout overrides",
			members:   []rag.NamedRetriever{{Name: "slow", Retriever: hang(t), Timeout: 10 * time.Millisecond}, {Name: "b", Retriever: fixed("3")}},
			timeout:   -1,
			want:      []string{"3"},
			degraded:  []string{"slow"},
			deadlines: 1,
		},
		{
			name: "one panics",
			members: []rag.NamedRetriever{{Name: "buggy", Retriever: rag.RetrieverFunc(func(context.Context, string, int) ([]rag.Source, error) {
				panic("nil map")
			})}, {Name: "b", Retriever: fixed("5")}},
			want:     []string{"5"},
			degraded: []string{"buggy"},
		},
		{
			name:      "all fail",
			members:   []rag.NamedRetriever{{Name: "a", Retriever: failing("down")}, {Name: "slow", Retriever: hang(t)}},
			timeout:   20 * time.Millisecond,
			want:      []string{},
			degraded:  []string{"a", "slow"},
			deadlines: 1,
		},
		{
			name: "none",
			want: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &rag.MultiRetriever{Retrievers: tt.members, Timeout: tt.timeout}
			rec := m.Recall(context.Background(), "query", 5)
			if got := ids(rec.Sources); !slices.Equal(got, tt.want) {
				t.Errorf("sources = %v, want %v", got, tt.want)
			}
			var names []string
			deadlines := 0
			for _, d := range rec.Degraded {
				names = append(names, d.Name)
				if d.Step != "retrieve" {
					t.Errorf("step = %q", d.Step)
				}
				if errors.Is(d, context.DeadlineExceeded) {
					deadlines++
				}
			}
			if !slices.Equal(names, tt.degraded) {
				t.Errorf("degraded = %v, want %v", names, tt.degraded)
			}
			if deadlines != tt.deadlines {
				t.Errorf("%d degradations wrap DeadlineExceeded, want %d", deadlines, tt.deadlines)
			}
			if (rec.Err() != nil) != (len(tt.degraded) > 0) {
				t.Errorf("Err() = %v", rec.Err())
			}
			// Retrieve never fails, whatever happened.
			got, err := m.Retrieve(context.Background(), "query", 5)
			if err != nil {
				t.Errorf("Retrieve error: %v", err)
			}
			if !slices.Equal(ids(got), tt.want) {
				t.Errorf("Retrieve = %v, want %v", ids(got), tt.want)
			}
		})
	}
}

func TestMultiRetrieverTopKAndCandidates(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []int
	spy := rag.RetrieverFunc(func(_ context.Context, _ string, k int) ([]rag.Source, error) {
		mu.Lock()
		asked = append(asked, k)
		mu.Unlock()
		return src("a", "b", "c", "d"), nil
	})
	m := &rag.MultiRetriever{Retrievers: []rag.NamedRetriever{{Name: "x", Retriever: spy}, {Name: "y", Retriever: fixed("d", "e")}}}
	got := m.Recall(context.Background(), "q", 2)
	if len(got.Sources) != 2 {
		t.Fatalf("got %d sources, want 2", len(got.Sources))
	}
	if !slices.Equal(asked, []int{20}) {
		t.Errorf("member asked for %v, want [20] (max(2k, 20))", asked)
	}
	m.Candidates = 7
	asked = nil
	m.Recall(context.Background(), "q", 0)
	if !slices.Equal(asked, []int{7}) {
		t.Errorf("member asked for %v, want [7]", asked)
	}
}

func TestMultiRetrieverSingleMemberKeepsScores(t *testing.T) {
	t.Parallel()
	m := &rag.MultiRetriever{Retrievers: []rag.NamedRetriever{{Name: "only", Retriever: fixed("a", "b")}}}
	got := m.Recall(context.Background(), "q", 5).Sources
	if len(got) != 2 || got[0].Score != 2 || got[1].Score != 1 {
		t.Errorf("single member's scores not kept: %+v", got)
	}
}

func TestMultiRetrieverRerank(t *testing.T) {
	t.Parallel()
	reverse := rag.RerankerFunc(func(_ context.Context, query string, s []rag.Source) ([]rag.Source, error) {
		if query != "q" {
			t.Errorf("reranker got query %q", query)
		}
		slices.Reverse(s)
		for i := range s {
			s[i].Score = float64(i)
		}
		return s, nil
	})
	members := []rag.NamedRetriever{{Name: "a", Retriever: fixed("1", "2", "3")}, {Name: "b", Retriever: fixed("1")}}
	m := &rag.MultiRetriever{Retrievers: members, Reranker: reverse}
	rec := m.Recall(context.Background(), "q", 2)
	if got := ids(rec.Sources); !slices.Equal(got, []string{"3", "2"}) || len(rec.Degraded) != 0 {
		t.Errorf("reranked = %v (%v), want [3 2]", got, rec.Degraded)
	}

	m.Reranker = rag.RerankerFunc(func(context.Context, string, []rag.Source) ([]rag.Source, error) {
		return nil, errors.New("reranker quota exceeded")
	})
	rec = m.Recall(context.Background(), "q", 2)
	if got := ids(rec.Sources); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("failed rerank: sources = %v, want the fused order [1 2]", got)
	}
	if len(rec.Degraded) != 1 || rec.Degraded[0].Step != "rerank" || !strings.Contains(rec.Err().Error(), "quota") {
		t.Errorf("degraded = %v", rec.Err())
	}
}

func TestMultiRetrieverParentCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := &rag.MultiRetriever{Retrievers: []rag.NamedRetriever{{Name: "slow", Retriever: hang(t)}}}
	rec := m.Recall(ctx, "q", 3)
	if len(rec.Sources) != 0 || len(rec.Degraded) != 1 || !errors.Is(rec.Degraded[0], context.Canceled) {
		t.Errorf("recall = %+v", rec)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	c := newCorpus(t)
	tests := []struct {
		m    *rag.MultiRetriever
		want string
	}{
		{rag.NewHybrid(c.keywordRetriever(t), c.vectorRetriever(t)), "vector + keyword (reciprocal rank fusion, k=60)"},
		{rag.NewHybrid(c.keywordRetriever(t), nil), "keyword-only: no embedding model configured"},
		{rag.NewHybrid(nil, c.vectorRetriever(t)), "vector-only"},
		{&rag.MultiRetriever{Retrievers: []rag.NamedRetriever{{Name: "a"}, {Name: "b"}}, K: 10, Reranker: rag.RerankerFunc(nil)}, "a + b (reciprocal rank fusion, k=10), reranked"},
		{&rag.MultiRetriever{}, "no retrievers"},
	}
	for _, tt := range tests {
		if got := tt.m.Describe(); got != tt.want {
			t.Errorf("Describe() = %q, want %q", got, tt.want)
		}
	}
}

func TestHybridFindsWhatEitherHalfFinds(t *testing.T) {
	t.Parallel()
	c := newCorpus(t)
	h := rag.NewHybrid(c.keywordRetriever(t), c.vectorRetriever(t))
	rec := h.Recall(context.Background(), "X200 price in euros", 3)
	if len(rec.Degraded) != 0 {
		t.Fatal(rec.Err())
	}
	if len(rec.Sources) == 0 || rec.Sources[0].Content != "The X200 costs 499 euros including tax." {
		t.Errorf("hybrid = %q", texts(rec.Sources))
	}
	// CJK: the bag-of-words embedding cannot segment it, BM25 bigrams can.
	rec = h.Recall(context.Background(), "東京の人口", 1)
	if len(rec.Sources) != 1 || !strings.HasPrefix(rec.Sources[0].Content, "東京都") {
		t.Errorf("hybrid CJK = %q", texts(rec.Sources))
	}
}

// TestMultiRetrieverConcurrent runs many recalls at once over shared
// indexes; run with -race.
func TestMultiRetrieverConcurrent(t *testing.T) {
	t.Parallel()
	c := newCorpus(t)
	h := rag.NewHybrid(c.keywordRetriever(t), c.vectorRetriever(t))
	want := ids(h.Recall(context.Background(), "Z9 warranty", 3).Sources)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				got, _ := h.Retrieve(context.Background(), "Z9 warranty", 3)
				if !slices.Equal(ids(got), want) {
					t.Errorf("concurrent recall = %v, want %v", ids(got), want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestMultiRetrieverNested: one MultiRetriever per knowledge base under an
// outer one; inner degradations surface with their path.
func TestMultiRetrieverNested(t *testing.T) {
	t.Parallel()
	kb1 := &rag.MultiRetriever{Retrievers: []rag.NamedRetriever{{Name: "vector", Retriever: failing("no embeddings")}, {Name: "keyword", Retriever: fixed("a", "b")}}}
	kb2 := &rag.MultiRetriever{Retrievers: []rag.NamedRetriever{{Name: "keyword", Retriever: fixed("c")}}}
	outer := &rag.MultiRetriever{Retrievers: []rag.NamedRetriever{{Name: "kb1", Retriever: kb1}, {Name: "kb2", Retriever: kb2}}}
	rec := outer.Recall(context.Background(), "q", 5)
	if got := ids(rec.Sources); !slices.Equal(got, []string{"a", "c", "b"}) {
		t.Errorf("sources = %v", got)
	}
	if len(rec.Degraded) != 1 || rec.Degraded[0].Name != "kb1/vector" || !strings.Contains(rec.Err().Error(), "no embeddings") {
		t.Errorf("degraded = %v", rec.Err())
	}
}
