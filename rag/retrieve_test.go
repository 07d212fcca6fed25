package rag_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/vector"
)

func TestVectorRetriever(t *testing.T) {
	t.Parallel()
	c := newCorpus(t)
	ctx := context.Background()
	x200 := rag.DocumentID("x200.md")
	tests := []struct {
		name  string
		opts  []rag.RetrieveOption
		query string
		k     int
		want  []string // leading contents, in order
		n     int      // exact result count, -1 to skip
	}{
		{"best first", nil, "how much does the X200 cost", 1, []string{"The X200 costs 499 euros including tax."}, 1},
		{"k honoured", nil, "X200 Z9 costs euros", 3, nil, 3},
		{"default top k", []rag.RetrieveOption{rag.TopK(2)}, "X200 Z9 costs euros warranty", 0, nil, 2},
		{"min score drops weak hits", []rag.RetrieveOption{rag.MinScore(0.3)}, "X200 costs", 10, []string{"The X200 costs 499 euros including tax."}, -1},
		{"metadata filter", []rag.RetrieveOption{rag.MatchMetadata(map[string]string{rag.MetaDocumentID: x200})}, "costs euros", 10, nil, 2},
		{"blank query finds nothing", nil, "  ", 5, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.vectorRetriever(t, tt.opts...).Retrieve(ctx, tt.query, tt.k)
			if err != nil {
				t.Fatal(err)
			}
			if tt.n >= 0 && len(got) != tt.n {
				t.Fatalf("got %d sources %q, want %d", len(got), texts(got), tt.n)
			}
			if len(got) < len(tt.want) || !slices.Equal(texts(got)[:len(tt.want)], tt.want) {
				t.Fatalf("got %q, want prefix %q", texts(got), tt.want)
			}
			for i, s := range got {
				if i > 0 && s.Score > got[i-1].Score {
					t.Errorf("not best first: %v", got)
				}
				if s.DocumentName == "" || s.DocumentID == "" || s.Metadata[rag.MetaName] != s.DocumentName {
					t.Errorf("source %d lacks document fields: %+v", i, s)
				}
			}
		})
	}
}

func TestMinScoreIsPerRetrieverScale(t *testing.T) {
	t.Parallel()
	c := newCorpus(t)
	ctx := context.Background()
	got, err := c.vectorRetriever(t, rag.MinScore(0.99)).Retrieve(ctx, "X200 costs", 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("cosine ≥ 0.99: got %q, %v; want none", texts(got), err)
	}
	got, err = c.keywordRetriever(t, rag.MinScore(0.01)).Retrieve(ctx, "X200 costs", 10)
	if err != nil || len(got) == 0 {
		t.Fatalf("BM25 ≥ 0.01: got %q, %v; want hits", texts(got), err)
	}
	for _, s := range got {
		if s.Score < 0.01 {
			t.Errorf("score %v below min", s.Score)
		}
	}
}

func TestKeywordRetriever(t *testing.T) {
	t.Parallel()
	c := newCorpus(t)
	ctx := context.Background()
	tests := []struct {
		name  string
		opts  []rag.RetrieveOption
		query string
		k     int
		want  []string
	}{
		{"terms", nil, "warranty", 5, []string{"Warranty: every Z9 has a two-year warranty."}},
		{"CJK bigrams", nil, "東京の人口", 1, []string{"東京都の人口は約1400万人です。"}},
		{"k honoured", nil, "costs", 1, []string{"The X200 costs 499 euros including tax."}},
		{"collection and filter", []rag.RetrieveOption{rag.InCollection("kb"), rag.MatchMetadata(map[string]string{rag.MetaName: "z9.md"})}, "costs", 5, []string{"The Z9 costs 899 euros and has a larger screen."}},
		{"no terms", nil, "the of", 5, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.keywordRetriever(t, tt.opts...).Retrieve(ctx, tt.query, tt.k)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(texts(got), tt.want) {
				t.Fatalf("got %q, want %q", texts(got), tt.want)
			}
			for _, s := range got {
				if tt.name == "collection and filter" && s.Collection != "kb" {
					t.Errorf("collection = %q", s.Collection)
				}
			}
		})
	}
}

func TestRetrieverDropsHitsWithoutChunks(t *testing.T) {
	t.Parallel()
	c := newCorpus(t)
	empty := chunkMap{}
	r, err := rag.NewKeywordRetriever(c.words, empty)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Retrieve(context.Background(), "costs", 5)
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v; want nothing", got, err)
	}
}

func TestVectorRetrieverErrors(t *testing.T) {
	t.Parallel()
	c := newCorpus(t)
	boom := errors.New("embedding service down")
	tests := []struct {
		name  string
		embed rag.EmbedderFunc
		want  error
	}{
		{"embed fails", func(context.Context, []string) ([][]float32, error) { return nil, boom }, boom},
		{"wrong dimension", func(context.Context, []string) ([][]float32, error) { return [][]float32{{1, 2, 3}}, nil }, vector.ErrDimension},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := rag.NewVectorRetriever(c.vectors, tt.embed, c.chunks)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Retrieve(context.Background(), "x", 3); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := rag.NewVectorRetriever(nil, c.embed, c.chunks); err == nil {
		t.Error("nil index accepted")
	}
	if _, err := rag.NewKeywordRetriever(c.words, nil); err == nil {
		t.Error("nil chunk reader accepted")
	}
}
