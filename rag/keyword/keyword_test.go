package keyword_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/weftlabs/weft/rag/keyword"
)

func TestTokenize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"The quick brown Foxes jumped", []string{"quick", "brown", "foxe", "jumped"}},
		{"Queries, policies & studies", []string{"query", "policy", "study"}},
		{"glass bus status", []string{"glass", "bus", "status"}},
		{"gas was is", []string{"gas"}},
		{"Don't stop: user's guide", []string{"dont", "stop", "user", "guide"}},
		{"Version 2.0 released in 2024, see RFC-9110", []string{"version", "2", "0", "released", "2024", "see", "rfc", "9110"}},
		{"GPT4s and v2s", []string{"gpt4s", "v2s"}},
		{"ÉCOLE Straße ΟΔΟΣ", []string{"école", "straße", "οδοσ"}},
		{"東京都に住む", []string{"東京", "京都", "都に", "に住", "住む"}},
		{"私 は 猫", []string{"私", "は", "猫"}},
		{"Weft使用Go语言", []string{"weft", "使用", "go", "语言"}},
		{"コーヒーを飲む", []string{"コー", "ーヒ", "ヒー", "ーを", "を飲", "飲む"}},
		{"한국어 검색", []string{"한국", "국어", "검색"}},
		{"naïve café", []string{"naïve", "café"}},
		{"bad\xffbytes\xc3", []string{"bad", "byte"}},
		{strings.Repeat("x", 65) + " ok", []string{"ok"}},
	}
	for _, tc := range tests {
		if got := keyword.Tokenize(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"", "Hello, World's 42 tests", "東京タワーへ行く", "한국어", "a\xffb", "’'’", "ΣΊΣΥΦΟΣ", "x\u0301y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range keyword.Tokenize(s) {
			if tok == "" || !utf8.ValidString(tok) || len(tok) > 64 {
				t.Fatalf("Tokenize(%q) produced bad token %q", s, tok)
			}
		}
	})
}

// bm25 is the reference formula (Lucene's IDF) the index must reproduce.
func bm25(tf, docLen, avgLen, n, df float64) float64 {
	const k1, b = 1.2, 0.75
	idf := math.Log(1 + (n-df+0.5)/(df+0.5))
	return idf * tf * (k1 + 1) / (tf + k1*(1-b+b*docLen/avgLen))
}

func newIndex(t *testing.T, docs ...keyword.Doc) *keyword.Index {
	t.Helper()
	ix := keyword.New()
	if err := ix.Add(context.Background(), docs...); err != nil {
		t.Fatal(err)
	}
	return ix
}

func search(t *testing.T, ix *keyword.Index, q string, k int, f keyword.Filter) []keyword.Hit {
	t.Helper()
	hits, err := ix.Search(context.Background(), q, k, f)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func ids(hits []keyword.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func TestScoresMatchBM25(t *testing.T) {
	t.Parallel()
	ix := newIndex(t,
		keyword.Doc{ID: "a", Text: "golang channels golang"},       // len 3
		keyword.Doc{ID: "b", Text: "rust ownership and borrowing"}, // len 3 (and is a stop word)
		keyword.Doc{ID: "c", Text: "golang generics"},              // len 2
		keyword.Doc{ID: "d", Text: "python"},                       // len 1
	)
	avg := (3.0 + 3 + 2 + 1) / 4
	hits := search(t, ix, "golang golang channels", 10, nil)
	want := map[string]float64{
		"a": bm25(2, 3, avg, 4, 2) + bm25(1, 3, avg, 4, 1),
		"c": bm25(1, 2, avg, 4, 2),
	}
	if len(hits) != 2 || hits[0].ID != "a" || hits[1].ID != "c" {
		t.Fatalf("hits = %+v, want a then c", hits)
	}
	for _, h := range hits {
		if math.Abs(float64(h.Score)-want[h.ID]) > 1e-5 {
			t.Errorf("score(%s) = %v, want %v", h.ID, h.Score, want[h.ID])
		}
	}
}

func TestSearchBehaviour(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := newIndex(t,
		keyword.Doc{ID: "1", Text: "Kubernetes pods restart on failure", Meta: map[string]string{"team": "ops"}},
		keyword.Doc{ID: "2", Text: "Restarting pods gracefully", Meta: map[string]string{"team": "dev"}},
		keyword.Doc{ID: "3", Text: "Cooking pasta at home", Meta: map[string]string{"team": "ops"}},
		keyword.Doc{ID: "4", Text: "東京の天気予報", Meta: map[string]string{"team": "jp"}},
	)
	if got := ids(search(t, ix, "pod", 10, nil)); !slices.Equal(got, []string{"2", "1"}) {
		t.Errorf("stemmed query matched %v, want [2 1] (shorter document first)", got)
	}
	if got := ids(search(t, ix, "pods", 10, keyword.Filter{"team": "ops"})); !slices.Equal(got, []string{"1"}) {
		t.Errorf("filtered search = %v, want [1]", got)
	}
	if got := ids(search(t, ix, "天気", 10, nil)); !slices.Equal(got, []string{"4"}) {
		t.Errorf("CJK search = %v, want [4]", got)
	}
	if got := search(t, ix, "the of and", 10, nil); len(got) != 0 {
		t.Errorf("stop-word query matched %v", got)
	}
	if got := search(t, ix, "unknownterm", 10, nil); len(got) != 0 {
		t.Errorf("unknown term matched %v", got)
	}
	if got := search(t, ix, "pods", 1, nil); len(got) != 1 {
		t.Errorf("k=1 returned %d hits", len(got))
	}
	for _, k := range []int{0, -1} {
		if _, err := ix.Search(ctx, "pods", k, nil); !errors.Is(err, keyword.ErrInvalidK) {
			t.Errorf("k=%d: error %v, want ErrInvalidK", k, err)
		}
	}
	if err := ix.Add(ctx, keyword.Doc{ID: "ok", Text: "x"}, keyword.Doc{Text: "no id"}); !errors.Is(err, keyword.ErrInvalidID) {
		t.Errorf("empty ID: error %v, want ErrInvalidID", err)
	}
	if ix.Len() != 4 {
		t.Errorf("failed batch changed Len to %d", ix.Len())
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ix.Search(cctx, "pods", 3, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled search: %v", err)
	}
	if got := search(t, keyword.New(), "pods", 3, nil); len(got) != 0 {
		t.Errorf("empty index returned %v", got)
	}
}

func TestTiesByID(t *testing.T) {
	t.Parallel()
	ix := newIndex(t,
		keyword.Doc{ID: "m", Text: "alpha beta"},
		keyword.Doc{ID: "c", Text: "alpha beta"},
		keyword.Doc{ID: "x", Text: "alpha beta"},
		keyword.Doc{ID: "a", Text: "alpha beta"},
	)
	if got := ids(search(t, ix, "alpha", 3, nil)); !slices.Equal(got, []string{"a", "c", "m"}) {
		t.Fatalf("equal scores ordered %v, want [a c m]", got)
	}
}

func TestReplaceAndDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := newIndex(t,
		keyword.Doc{ID: "a", Text: "red apple"},
		keyword.Doc{ID: "b", Text: "green apple"},
	)
	if err := ix.Add(ctx, keyword.Doc{ID: "a", Text: "yellow banana"}); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, ix, "red", 5, nil)); len(got) != 0 {
		t.Errorf("replaced text still matches: %v", got)
	}
	if got := ids(search(t, ix, "banana", 5, nil)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("new text: %v", got)
	}
	if err := ix.Delete(ctx, "b", "missing"); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, ix, "apple", 5, nil)); len(got) != 0 {
		t.Errorf("deleted document matches: %v", got)
	}
	if ix.Len() != 1 {
		t.Errorf("Len = %d, want 1", ix.Len())
	}
	// Statistics follow deletions: after deleting, the scores equal those
	// of an index that never had the deleted documents.
	fresh := newIndex(t, keyword.Doc{ID: "a", Text: "yellow banana"})
	if got, want := search(t, ix, "banana", 5, nil), search(t, fresh, "banana", 5, nil); !slices.Equal(got, want) {
		t.Errorf("after delete %v, fresh index %v", got, want)
	}
}

func TestCompaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := keyword.New()
	ref := keyword.New()
	var docs []keyword.Doc
	for i := range 3000 {
		d := keyword.Doc{ID: fmt.Sprint(i), Text: fmt.Sprintf("term%d common word%d", i%17, i%5), Meta: map[string]string{"p": fmt.Sprint(i % 2)}}
		docs = append(docs, d)
		if i%3 == 0 {
			if err := ref.Add(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ix.Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		if i%3 != 0 {
			if err := ix.Delete(ctx, fmt.Sprint(i)); err != nil { // compaction triggers part-way
				t.Fatal(err)
			}
		}
	}
	for _, q := range []string{"term3 word1", "common", "term16"} {
		for _, f := range []keyword.Filter{nil, {"p": "1"}} {
			got, want := search(t, ix, q, 20, f), search(t, ref, q, 20, f)
			if !slices.Equal(got, want) {
				t.Fatalf("%q %v: compacted index %v, reference %v", q, f, got, want)
			}
		}
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := newIndex(t, keyword.Doc{ID: "seed", Text: "shared words here"})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 300 {
			if err := ix.Add(ctx, keyword.Doc{ID: fmt.Sprint(i % 50), Text: fmt.Sprintf("shared words doc %d", i)}); err != nil {
				t.Error(err)
				return
			}
			if i%7 == 0 {
				if err := ix.Delete(ctx, fmt.Sprint(i%50)); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	for range 3 {
		wg.Go(func() {
			for range 200 {
				if _, err := ix.Search(ctx, "shared words", 5, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if hits := search(t, ix, "seed shared", 1, nil); len(hits) != 1 || hits[0].ID != "seed" {
		t.Fatalf("after concurrent writes: %v", hits)
	}
}

func TestPersistence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := keyword.New(keyword.WithK1(1.5), keyword.WithB(0.5))
	for i := range 200 {
		d := keyword.Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("alpha%d beta%d 検索%d gamma", i%7, i%11, i%3), Meta: map[string]string{"m": fmt.Sprint(i % 4)}}
		if err := ix.Add(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Delete(ctx, "d005", "d006"); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ix.Save(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	back, err := keyword.Load(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if back.Len() != ix.Len() {
		t.Fatalf("Len %d, want %d", back.Len(), ix.Len())
	}
	for _, q := range []string{"alpha3 beta4", "gamma", "検索", "beta10 alpha1"} {
		for _, f := range []keyword.Filter{nil, {"m": "2"}} {
			if got, want := search(t, back, q, 15, f), search(t, ix, q, 15, f); !slices.Equal(got, want) {
				t.Fatalf("%q: loaded %v, original %v", q, got, want)
			}
		}
	}
	// Writes after loading keep working.
	if err := back.Add(ctx, keyword.Doc{ID: "d000", Text: "fresh"}); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, back, "fresh", 3, nil)); !slices.Equal(got, []string{"d000"}) {
		t.Fatalf("after load and replace: %v", got)
	}
	for _, pos := range []int{0, 10, len(data) / 2, len(data) - 1} {
		bad := slices.Clone(data)
		bad[pos] ^= 0x21
		if _, err := keyword.Load(bytes.NewReader(bad)); !errors.Is(err, keyword.ErrCorrupt) {
			t.Errorf("flipped byte %d: %v, want ErrCorrupt", pos, err)
		}
	}
	for _, n := range []int{0, 7, 20, len(data) - 3} {
		if _, err := keyword.Load(bytes.NewReader(data[:n])); !errors.Is(err, keyword.ErrCorrupt) {
			t.Errorf("truncated to %d: %v, want ErrCorrupt", n, err)
		}
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "kw.bin")
	for range 2 { // the second save replaces the first
		if err := ix.SaveFile(path); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := keyword.Open(path); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}

func FuzzLoad(f *testing.F) {
	ix := keyword.New()
	ix.Add(context.Background(),
		keyword.Doc{ID: "a", Text: "one two three", Meta: map[string]string{"k": "v"}},
		keyword.Doc{ID: "b", Text: "two 三四"})
	var buf bytes.Buffer
	ix.Save(&buf)
	f.Add(buf.Bytes())
	buf.Reset()
	keyword.New().Save(&buf)
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := keyword.Load(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, keyword.ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		ctx := context.Background()
		if _, err := ix.Search(ctx, "one two 三四", 5, keyword.Filter{"k": "v"}); err != nil {
			t.Fatal(err)
		}
		if err := ix.Add(ctx, keyword.Doc{ID: "a", Text: "two"}); err != nil {
			t.Fatal(err)
		}
		if err := ix.Delete(ctx, "b"); err != nil {
			t.Fatal(err)
		}
	})
}

func Example() {
	ctx := context.Background()
	ix := keyword.New()
	ix.Add(ctx,
		keyword.Doc{ID: "faq-1", Text: "How do I reset my password?", Meta: map[string]string{"lang": "en"}},
		keyword.Doc{ID: "faq-2", Text: "Passwords must be at least 12 characters.", Meta: map[string]string{"lang": "en"}},
		keyword.Doc{ID: "faq-3", Text: "パスワードをリセットする方法", Meta: map[string]string{"lang": "ja"}},
	)
	hits, _ := ix.Search(ctx, "reset password", 2, nil)
	for _, h := range hits {
		fmt.Println(h.ID)
	}
	hits, _ = ix.Search(ctx, "パスワード", 2, keyword.Filter{"lang": "ja"})
	fmt.Println(hits[0].ID)
	// Output:
	// faq-1
	// faq-2
	// faq-3
}

// TestMatchesExhaustive checks ranked results, including the pruned
// (probing) path and filters, against BM25 computed exhaustively in
// float64 over a Zipf-distributed corpus.
func TestMatchesExhaustive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, 3000)
	word := func(i uint64) string { return fmt.Sprintf("w%dx", i) }
	const n = 2000
	ix := keyword.New()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("d%04d", i)
	}
	tfs := make([]map[string]int, n)
	lens := make([]int, n)
	total := 0
	for i := range n {
		var words []string
		for range 10 + r.IntN(60) {
			words = append(words, word(zipf.Uint64()))
		}
		tfs[i] = map[string]int{}
		for _, w := range words {
			tfs[i][w]++
		}
		lens[i], total = len(words), total+len(words)
		meta := map[string]string{"shard": fmt.Sprint(i % 3)}
		if err := ix.Add(ctx, keyword.Doc{ID: ids[i], Text: strings.Join(words, " "), Meta: meta}); err != nil {
			t.Fatal(err)
		}
	}
	avg := float64(total) / n
	dfs := map[string]int{}
	for _, m := range tfs {
		for w := range m {
			dfs[w]++
		}
	}
	for qi := range 150 {
		q := []string{word(zipf.Uint64()), word(zipf.Uint64()), word(uint64(r.IntN(40)))}
		var f keyword.Filter
		if qi%4 == 0 {
			f = keyword.Filter{"shard": "1"}
		}
		type ref struct {
			id string
			s  float64
		}
		var want []ref
		uniq := slices.Compact(slices.Sorted(slices.Values(q)))
		for i := range n {
			if f != nil && i%3 != 1 {
				continue
			}
			var s float64
			for _, w := range uniq {
				if tf := tfs[i][w]; tf > 0 {
					s += bm25(float64(tf), float64(lens[i]), avg, n, float64(dfs[w]))
				}
			}
			if s > 0 {
				want = append(want, ref{ids[i], s})
			}
		}
		slices.SortFunc(want, func(a, b ref) int {
			if a.s != b.s {
				return cmpFloat(b.s, a.s)
			}
			return strings.Compare(a.id, b.id)
		})
		got := search(t, ix, strings.Join(q, " "), 10, f)
		if len(got) != min(10, len(want)) {
			t.Fatalf("query %v: %d hits, want %d", q, len(got), min(10, len(want)))
		}
		for i, h := range got {
			if math.Abs(float64(h.Score)-want[i].s) > 1e-4 {
				t.Fatalf("query %v rank %d: %s scored %v, exhaustive rank %d is %s with %v", q, i, h.ID, h.Score, i, want[i].id, want[i].s)
			}
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
