package rag_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
)

func TestParseGrades(t *testing.T) {
	t.Parallel()
	tests := []struct {
		answer string
		n      int
		want   []float64
	}{
		{"1: 7\n2: 3\n3: 10", 3, []float64{7, 3, 10}},
		{"[2] - 9\n[1] = 4.5", 2, []float64{4.5, 9}},
		{"Passage 1: 8/10\n**2: 2**", 2, []float64{8, 2}},
		{"Here are the grades:\n1: 5\n", 3, []float64{5, -1, -1}},
		{"1: 5\n1: 9\n7: 3\n0: 4", 2, []float64{5, -1}}, // first grade kept; out-of-range passages ignored
		{"1: 99", 1, []float64{10}},                     // clamped (two digits at most are read)
		{"I think passage one is best.", 2, nil},
		{"", 1, nil},
	}
	for _, tt := range tests {
		if got := rag.ParseGrades(tt.answer, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("ParseGrades(%q) = %v, want %v", tt.answer, got, tt.want)
		}
	}
}

func FuzzParseGrades(f *testing.F) {
	for _, s := range []string{"1: 7\n2: 3", "[2] - 9", "Passage 1: 8/10", "", "1:", "99999: 1", "1: 1.5.5"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, answer string, n int) {
		if n < 0 || n > 1000 {
			return
		}
		g := rag.ParseGrades(answer, n)
		if g == nil {
			return
		}
		if len(g) != n {
			t.Fatalf("%d grades for %d passages", len(g), n)
		}
		for _, x := range g {
			if x != -1 && (x < 0 || x > 10) {
				t.Fatalf("grade %v out of range", x)
			}
		}
	})
}

func TestModelReranker(t *testing.T) {
	t.Parallel()
	model := scripted.New(scripted.Reply("1: 2\n2: 9\n3: 2\n4: 0"))
	r, err := rag.NewModelReranker(model, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("ü", 2000)
	in := []rag.Source{{ID: "a", Content: "first"}, {ID: "b", Content: "second"}, {ID: "c", Content: long}, {ID: "d", Content: "fourth"}}
	out, err := r.Rerank(context.Background(), "which?", in)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(out); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Errorf("order = %v, want [b a c] (ties in input order, d dropped below min)", got)
	}
	if out[0].Score != 0.9 || out[1].Score != 0.2 {
		t.Errorf("scores = %v, %v", out[0].Score, out[1].Score)
	}
	p := model.Requests()[0].Messages[0].Text()
	if !strings.Contains(p, "Question: which?") || !strings.Contains(p, "[2] second") || len(p) > 3000 || !utf8.ValidString(p) {
		t.Errorf("prompt (%d bytes):\n%.500s", len(p), p)
	}
	if in[0].Score != 0 {
		t.Error("input modified")
	}

	bad, _ := rag.NewModelReranker(scripted.New(scripted.Reply("They are all great.")), 0)
	if _, err := bad.Rerank(context.Background(), "q", in); err == nil {
		t.Error("answer without grades: no error")
	}
	failing, _ := rag.NewModelReranker(scripted.New(scripted.Fail(errors.New("down"))), 0)
	m := &rag.MultiRetriever{Retrievers: []rag.NamedRetriever{{Name: "a", Retriever: fixed("x", "y")}, {Name: "b", Retriever: fixed("y")}}, Reranker: failing}
	rec := m.Recall(context.Background(), "q", 5)
	if !slices.Equal(ids(rec.Sources), []string{"y", "x"}) || len(rec.Degraded) != 1 {
		t.Errorf("failing model reranker: %v, %v", ids(rec.Sources), rec.Err())
	}
}
