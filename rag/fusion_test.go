package rag_test

import (
	"math"
	"slices"
	"testing"

	"github.com/weftlabs/weft/rag"
)

func src(ids ...string) []rag.Source {
	out := make([]rag.Source, len(ids))
	for i, id := range ids {
		out[i] = rag.Source{ID: id, Content: id, Score: 100 - float64(i)}
	}
	return out
}

func TestFuseRRF(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		k      int
		lists  [][]rag.Source
		want   []string
		scores map[string]float64
	}{
		{
			name:   "k=60 math",
			k:      60,
			lists:  [][]rag.Source{src("a", "b", "c"), src("b", "c")},
			want:   []string{"b", "c", "a"},
			scores: map[string]float64{"a": 1.0 / 61, "b": 1.0/62 + 1.0/61, "c": 1.0/63 + 1.0/62},
		},
		{
			name:   "default k is 60",
			k:      0,
			lists:  [][]rag.Source{src("a")},
			want:   []string{"a"},
			scores: map[string]float64{"a": 1.0 / 61},
		},
		{
			name:   "small k",
			k:      1,
			lists:  [][]rag.Source{src("a", "b"), src("c")},
			want:   []string{"a", "c", "b"},
			scores: map[string]float64{"a": 0.5, "c": 0.5, "b": 1.0 / 3},
		},
		{
			// a and x tie on score and best rank: ID decides.
			name:  "tie broken by ID",
			k:     60,
			lists: [][]rag.Source{src("x", "m"), src("a", "n")},
			want:  []string{"a", "x", "m", "n"},
		},
		{
			// p: 1/61+1/64 beats q: 1/62+1/63; single hits follow by rank.
			name:  "mixed ranks",
			k:     60,
			lists: [][]rag.Source{src("p", "q", "z1", "z2"), src("z3", "z4", "q", "p")},
			want:  []string{"p", "q", "z3", "z4", "z1", "z2"},
		},
		{
			// b: ranks (2, 1), a: ranks (1, 2): bit-identical scores, equal
			// best rank, so ID decides, whatever the list order.
			name:  "symmetric ranks tie exactly",
			k:     60,
			lists: [][]rag.Source{src("b", "a"), src("a", "b")},
			want:  []string{"a", "b"},
		},
		{
			name:   "duplicates within one list count once, at the better rank",
			k:      60,
			lists:  [][]rag.Source{src("a", "b", "a")},
			want:   []string{"a", "b"},
			scores: map[string]float64{"a": 1.0 / 61, "b": 1.0 / 62},
		},
		{
			name:  "empty lists",
			k:     60,
			lists: [][]rag.Source{nil, {}},
			want:  []string{},
		},
		{
			name: "no lists",
			k:    60,
			want: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := rag.FuseRRF(tt.k, tt.lists...)
			if g := ids(got); !slices.Equal(g, tt.want) {
				t.Fatalf("order = %v, want %v", g, tt.want)
			}
			for _, s := range got {
				if want, ok := tt.scores[s.ID]; ok && math.Abs(s.Score-want) > 1e-15 {
					t.Errorf("score(%s) = %v, want %v", s.ID, s.Score, want)
				}
			}
		})
	}
}

func TestFuseRRFTieOnScoreBrokenByBestRank(t *testing.T) {
	t.Parallel()
	// With k=1: "a" at rank 1 in one list (1/2) against "b" at rank 3 in
	// two lists (1/4 + 1/4): equal scores, a has the better best rank.
	got := rag.FuseRRF(1, src("a", "x", "b"), src("y", "z", "b"))
	var a, b int
	for i, s := range got {
		switch s.ID {
		case "a":
			a = i
		case "b":
			b = i
		}
	}
	if got[a].Score != got[b].Score {
		t.Fatalf("scores differ: %v vs %v", got[a].Score, got[b].Score)
	}
	if a > b {
		t.Errorf("a (best rank 1) after b (best rank 3): %v", ids(got))
	}
}

func TestFuseRRFStableAcrossListOrder(t *testing.T) {
	t.Parallel()
	l1, l2, l3 := src("a", "b", "c", "d"), src("d", "c", "b", "a"), src("b", "a", "d", "c")
	want := ids(rag.FuseRRF(60, l1, l2, l3))
	for _, perm := range [][][]rag.Source{{l1, l3, l2}, {l2, l1, l3}, {l2, l3, l1}, {l3, l1, l2}, {l3, l2, l1}} {
		if got := ids(rag.FuseRRF(60, perm...)); !slices.Equal(got, want) {
			t.Errorf("order depends on list order: %v vs %v", got, want)
		}
	}
}

func TestFuseRRFKeepsBestRankedFields(t *testing.T) {
	t.Parallel()
	l1 := []rag.Source{{ID: "z"}, {ID: "a", Content: "from list 1", Collection: "kb1"}}
	l2 := []rag.Source{{ID: "a", Content: "from list 2", Collection: "kb2"}}
	got := rag.FuseRRF(60, l1, l2)
	if got[0].ID != "a" || got[0].Content != "from list 2" || got[0].Collection != "kb2" {
		t.Errorf("fused a = %+v, want the fields of its best-ranked occurrence", got[0])
	}
}

func TestFuseRRFDoesNotModifyInput(t *testing.T) {
	t.Parallel()
	l := src("a", "b")
	rag.FuseRRF(60, l, src("b"))
	if l[0].Score != 100 || l[1].Score != 99 {
		t.Errorf("input scores changed: %v", l)
	}
}
