// Package vectortest is the contract suite every [vector.Index]
// implementation must pass: call [Run] from a test with a constructor.
package vectortest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/weftlabs/weft/rag/vector"
)

// Option configures [Run].
type Option func(*config)

type config struct {
	load func(io.Reader) (vector.Index, error)
}

// WithLoader enables the persistence round-trip test for indexes that
// implement [vector.Saver]: load must read back what Save wrote.
func WithLoader(load func(io.Reader) (vector.Index, error)) Option {
	return func(c *config) { c.load = load }
}

// Run runs the contract suite against indexes made by newIndex, which must
// return an empty index of the given dimension each time it is called.
func Run(t *testing.T, newIndex func(dim int) vector.Index, opts ...Option) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	tests := []struct {
		name string
		fn   func(*testing.T, func(int) vector.Index)
	}{
		{"Empty", testEmpty},
		{"NearestNeighbours", testNearest},
		{"Replace", testReplace},
		{"Delete", testDelete},
		{"Filter", testFilter},
		{"KLargerThanLen", testKLarge},
		{"TiesByID", testTies},
		{"InvalidInput", testInvalid},
		{"Cancelled", testCancelled},
		{"ConcurrentSearchAndWrite", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newIndex)
		})
	}
	t.Run("Persistence", func(t *testing.T) {
		t.Parallel()
		testPersistence(t, newIndex, cfg.load)
	})
}

// Vectors returns n pseudo-random vectors of dimension dim drawn uniformly
// from [-1, 1)^dim, deterministic for a seed.
func Vectors(seed uint64, n, dim int) [][]float32 {
	r := rand.New(rand.NewPCG(seed, seed+1))
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dim)
		for j := range v {
			v[j] = r.Float32()*2 - 1
		}
		out[i] = v
	}
	return out
}

// Exact returns the IDs of the k vectors most similar (cosine) to q, best
// first with ties by ID: the reference answer indexes are checked against.
func Exact(ids []string, vecs [][]float32, q []float32, k int) []string {
	type c struct {
		id string
		s  float64
	}
	all := make([]c, len(ids))
	for i := range ids {
		all[i] = c{ids[i], cosine(vecs[i], q)}
	}
	slices.SortFunc(all, func(a, b c) int {
		switch {
		case a.s > b.s:
			return -1
		case a.s < b.s:
			return 1
		}
		return cmpString(a.id, b.id)
	})
	out := make([]string, 0, k)
	for _, x := range all[:min(k, len(all))] {
		out = append(out, x.id)
	}
	return out
}

// Recall returns the fraction of want found in got.
func Recall(got []vector.Hit, want []string) float64 {
	if len(want) == 0 {
		return 1
	}
	set := make(map[string]bool, len(got))
	for _, h := range got {
		set[h.ID] = true
	}
	n := 0
	for _, id := range want {
		if set[id] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

func id(i int) string { return fmt.Sprintf("doc-%04d", i) }

// fill adds n random vectors with IDs doc-0000…, each tagged with
// tenant=t<i%4>, and returns the vectors.
func fill(t *testing.T, idx vector.Index, seed uint64, n int) [][]float32 {
	t.Helper()
	vecs := Vectors(seed, n, idx.Dim())
	items := make([]vector.Item, n)
	for i, v := range vecs {
		items[i] = vector.Item{ID: id(i), Vector: v, Meta: map[string]string{"tenant": fmt.Sprintf("t%d", i%4)}}
	}
	if err := idx.Add(context.Background(), items...); err != nil {
		t.Fatalf("Add: %v", err)
	}
	return vecs
}

func search(t *testing.T, idx vector.Index, q []float32, k int, f vector.Filter) []vector.Hit {
	t.Helper()
	hits, err := idx.Search(context.Background(), q, k, f)
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	checkOrder(t, hits)
	return hits
}

// checkOrder asserts hits are best first, ties by ascending ID, no repeats.
func checkOrder(t *testing.T, hits []vector.Hit) {
	t.Helper()
	seen := map[string]bool{}
	for i, h := range hits {
		if seen[h.ID] {
			t.Fatalf("hit %d: ID %q returned twice", i, h.ID)
		}
		seen[h.ID] = true
		if i == 0 {
			continue
		}
		p := hits[i-1]
		if p.Score < h.Score || (p.Score == h.Score && p.ID > h.ID) {
			t.Fatalf("hits out of order at %d: %+v before %+v", i, p, h)
		}
	}
}

func testEmpty(t *testing.T, newIndex func(int) vector.Index) {
	idx := newIndex(8)
	if idx.Len() != 0 || idx.Dim() != 8 {
		t.Fatalf("Len, Dim = %d, %d; want 0, 8", idx.Len(), idx.Dim())
	}
	if hits := search(t, idx, Vectors(1, 1, 8)[0], 5, nil); len(hits) != 0 {
		t.Fatalf("empty index returned %v", hits)
	}
	if err := idx.Delete(context.Background(), "missing"); err != nil {
		t.Fatalf("Delete on empty index: %v", err)
	}
}

func testNearest(t *testing.T, newIndex func(int) vector.Index) {
	const n, dim, k = 300, 16, 10
	idx := newIndex(dim)
	vecs := fill(t, idx, 2, n)
	if idx.Len() != n {
		t.Fatalf("Len = %d, want %d", idx.Len(), n)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = id(i)
	}
	var total float64
	queries := Vectors(3, 20, dim)
	for qi, q := range queries {
		hits := search(t, idx, q, k, nil)
		if len(hits) != k {
			t.Fatalf("query %d: %d hits, want %d", qi, len(hits), k)
		}
		want := Exact(ids, vecs, q, k)
		total += Recall(hits, want)
		for _, h := range hits {
			i := slices.Index(ids, h.ID)
			if c := cosine(vecs[i], q); math.Abs(c-float64(h.Score)) > 1e-4 {
				t.Fatalf("query %d: %s scored %v, cosine is %v", qi, h.ID, h.Score, c)
			}
		}
	}
	if r := total / float64(len(queries)); r < 0.95 {
		t.Fatalf("recall@%d = %.3f on %d points, want ≥ 0.95", k, r, n)
	}
	// A stored vector, scaled, finds itself first with similarity 1.
	q := slices.Clone(vecs[42])
	for i := range q {
		q[i] *= 3
	}
	hits := search(t, idx, q, 1, nil)
	if hits[0].ID != id(42) || math.Abs(float64(hits[0].Score)-1) > 1e-5 {
		t.Fatalf("self query: got %+v, want %s with score 1", hits[0], id(42))
	}
}

func testReplace(t *testing.T, newIndex func(int) vector.Index) {
	ctx := context.Background()
	idx := newIndex(4)
	must(t, idx.Add(ctx,
		vector.Item{ID: "a", Vector: []float32{1, 0, 0, 0}, Meta: map[string]string{"v": "1"}},
		vector.Item{ID: "b", Vector: []float32{0, 1, 0, 0}},
	))
	must(t, idx.Add(ctx, vector.Item{ID: "a", Vector: []float32{0, 0, 1, 0}, Meta: map[string]string{"v": "2"}}))
	if idx.Len() != 2 {
		t.Fatalf("Len after replace = %d, want 2", idx.Len())
	}
	hits := search(t, idx, []float32{0, 0, 1, 0}, 1, nil)
	if hits[0].ID != "a" || hits[0].Score < 0.999 {
		t.Fatalf("replaced vector not found: %+v", hits)
	}
	if hits := search(t, idx, []float32{1, 0, 0, 0}, 2, vector.Filter{"v": "1"}); len(hits) != 0 {
		t.Fatalf("old metadata still matches: %+v", hits)
	}
	if hits := search(t, idx, []float32{1, 0, 0, 0}, 2, vector.Filter{"v": "2"}); len(hits) != 1 || hits[0].ID != "a" {
		t.Fatalf("new metadata does not match: %+v", hits)
	}
	// Replacing within one batch keeps the last one.
	must(t, idx.Add(ctx,
		vector.Item{ID: "c", Vector: []float32{0, 0, 0, 1}},
		vector.Item{ID: "c", Vector: []float32{0, 1, 1, 0}},
	))
	if idx.Len() != 3 {
		t.Fatalf("Len = %d, want 3", idx.Len())
	}
	if hits := search(t, idx, []float32{0, 0, 0, 1}, 3, nil); hits[0].ID == "c" && hits[0].Score > 0.5 {
		t.Fatalf("first of two same-ID items survived: %+v", hits)
	}
}

func testDelete(t *testing.T, newIndex func(int) vector.Index) {
	ctx := context.Background()
	const n = 200
	idx := newIndex(8)
	vecs := fill(t, idx, 4, n)
	var gone []string
	for i := 0; i < n; i += 3 {
		gone = append(gone, id(i))
	}
	must(t, idx.Delete(ctx, append(gone, "never-added")...))
	if want := n - len(gone); idx.Len() != want {
		t.Fatalf("Len = %d, want %d", idx.Len(), want)
	}
	for _, q := range [][]float32{vecs[0], vecs[3], vecs[99]} {
		hits := search(t, idx, q, n, nil)
		if len(hits) != idx.Len() {
			t.Fatalf("k ≥ Len returned %d hits, want %d", len(hits), idx.Len())
		}
		for _, h := range hits {
			if slices.Contains(gone, h.ID) {
				t.Fatalf("deleted %s returned", h.ID)
			}
		}
	}
	// A deleted item's own vector finds something else first.
	if hits := search(t, idx, vecs[0], 1, nil); hits[0].ID == id(0) {
		t.Fatal("deleted item found by its own vector")
	}
	// Deleted IDs can be added again.
	must(t, idx.Add(ctx, vector.Item{ID: id(0), Vector: vecs[0]}))
	if hits := search(t, idx, vecs[0], 1, nil); hits[0].ID != id(0) {
		t.Fatalf("re-added item not found: %+v", hits)
	}
	// Deleting everything leaves a working empty index.
	all := make([]string, n)
	for i := range all {
		all[i] = id(i)
	}
	must(t, idx.Delete(ctx, all...))
	if idx.Len() != 0 {
		t.Fatalf("Len = %d after deleting all", idx.Len())
	}
	if hits := search(t, idx, vecs[1], 3, nil); len(hits) != 0 {
		t.Fatalf("emptied index returned %+v", hits)
	}
}

func testFilter(t *testing.T, newIndex func(int) vector.Index) {
	const n = 400
	idx := newIndex(12)
	vecs := fill(t, idx, 5, n)
	ctx := context.Background()
	// A rare tag on five items exercises selective filters.
	for _, i := range []int{7, 70, 170, 270, 370} {
		must(t, idx.Add(ctx, vector.Item{ID: id(i), Vector: vecs[i], Meta: map[string]string{"tenant": fmt.Sprintf("t%d", i%4), "rare": "yes"}}))
	}
	var ids []string
	var sub [][]float32
	for i := range n {
		if i%4 == 2 {
			ids, sub = append(ids, id(i)), append(sub, vecs[i])
		}
	}
	for qi, q := range Vectors(6, 10, 12) {
		hits := search(t, idx, q, 10, vector.Filter{"tenant": "t2"})
		if len(hits) != 10 {
			t.Fatalf("query %d: %d filtered hits, want 10", qi, len(hits))
		}
		for _, h := range hits {
			if !slices.Contains(ids, h.ID) {
				t.Fatalf("query %d: %s does not match the filter", qi, h.ID)
			}
		}
		if r := Recall(hits, Exact(ids, sub, q, 10)); r < 0.9 {
			t.Fatalf("query %d: filtered recall %.2f, want ≥ 0.9", qi, r)
		}
	}
	hits := search(t, idx, vecs[0], 10, vector.Filter{"rare": "yes", "tenant": "t2"})
	if got := hitIDs(hits); !slices.Equal(sortedCopy(got), []string{id(70), id(170), id(270), id(370)}) {
		t.Fatalf("two-key filter returned %v", got)
	}
	if hits := search(t, idx, vecs[0], 10, vector.Filter{"tenant": "nobody"}); len(hits) != 0 {
		t.Fatalf("filter matching nothing returned %v", hits)
	}
	if hits := search(t, idx, vecs[0], 10, vector.Filter{}); len(hits) != 10 {
		t.Fatalf("empty filter returned %d hits, want 10", len(hits))
	}
}

func testKLarge(t *testing.T, newIndex func(int) vector.Index) {
	idx := newIndex(6)
	fill(t, idx, 7, 25)
	hits := search(t, idx, Vectors(8, 1, 6)[0], 1000, nil)
	if len(hits) != 25 {
		t.Fatalf("k=1000 over 25 items returned %d", len(hits))
	}
}

func testTies(t *testing.T, newIndex func(int) vector.Index) {
	ctx := context.Background()
	idx := newIndex(3)
	v := []float32{0.3, -0.2, 0.9}
	for _, name := range []string{"m", "c", "x", "a"} {
		must(t, idx.Add(ctx, vector.Item{ID: name, Vector: v}))
	}
	must(t, idx.Add(ctx, vector.Item{ID: "far", Vector: []float32{-0.3, 0.2, -0.9}}))
	hits := search(t, idx, v, 3, nil)
	if got := hitIDs(hits); !slices.Equal(got, []string{"a", "c", "m"}) {
		t.Fatalf("equal scores ordered %v, want [a c m]", got)
	}
}

func testInvalid(t *testing.T, newIndex func(int) vector.Index) {
	ctx := context.Background()
	idx := newIndex(4)
	good := vector.Item{ID: "good", Vector: []float32{1, 2, 3, 4}}
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	adds := []struct {
		name string
		item vector.Item
		want error
	}{
		{"short", vector.Item{ID: "x", Vector: []float32{1, 2, 3}}, vector.ErrDimension},
		{"long", vector.Item{ID: "x", Vector: []float32{1, 2, 3, 4, 5}}, vector.ErrDimension},
		{"nil", vector.Item{ID: "x"}, vector.ErrDimension},
		{"NaN", vector.Item{ID: "x", Vector: []float32{1, nan, 3, 4}}, vector.ErrInvalidVector},
		{"Inf", vector.Item{ID: "x", Vector: []float32{1, 2, inf, 4}}, vector.ErrInvalidVector},
		{"zero", vector.Item{ID: "x", Vector: []float32{0, 0, 0, 0}}, vector.ErrInvalidVector},
		{"emptyID", vector.Item{Vector: []float32{1, 2, 3, 4}}, vector.ErrInvalidID},
	}
	for _, tc := range adds {
		err := idx.Add(ctx, good, tc.item)
		if !errors.Is(err, tc.want) {
			t.Errorf("Add %s: error %v, want %v", tc.name, err, tc.want)
		}
	}
	if idx.Len() != 0 {
		t.Fatalf("a failed batch added items: Len = %d", idx.Len())
	}
	must(t, idx.Add(ctx, good))
	searches := []struct {
		name string
		q    []float32
		k    int
		want error
	}{
		{"dim", []float32{1, 2}, 3, vector.ErrDimension},
		{"NaN", []float32{nan, 1, 1, 1}, 3, vector.ErrInvalidVector},
		{"zero", []float32{0, 0, 0, 0}, 3, vector.ErrInvalidVector},
		{"k=0", []float32{1, 1, 1, 1}, 0, vector.ErrInvalidK},
		{"k<0", []float32{1, 1, 1, 1}, -2, vector.ErrInvalidK},
	}
	for _, tc := range searches {
		hits, err := idx.Search(ctx, tc.q, tc.k, nil)
		if !errors.Is(err, tc.want) || hits != nil {
			t.Errorf("Search %s: %v, %v; want error %v", tc.name, hits, err, tc.want)
		}
	}
}

func testCancelled(t *testing.T, newIndex func(int) vector.Index) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	idx := newIndex(2)
	if err := idx.Add(ctx, vector.Item{ID: "a", Vector: []float32{1, 0}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Add with cancelled context: %v", err)
	}
	if _, err := idx.Search(ctx, []float32{1, 0}, 1, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Search with cancelled context: %v", err)
	}
}

func testConcurrent(t *testing.T, newIndex func(int) vector.Index) {
	const dim = 8
	idx := newIndex(dim)
	fill(t, idx, 9, 100)
	ctx := context.Background()
	extra := Vectors(10, 200, dim)
	queries := Vectors(11, 50, dim)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	wg.Go(func() {
		for i, v := range extra {
			if err := idx.Add(ctx, vector.Item{ID: fmt.Sprintf("new-%d", i), Vector: v}); err != nil {
				errs <- err
				return
			}
			if i%5 == 0 {
				if err := idx.Delete(ctx, id(i/5)); err != nil {
					errs <- err
					return
				}
			}
		}
	})
	for range 3 {
		wg.Go(func() {
			for _, q := range queries {
				hits, err := idx.Search(ctx, q, 5, nil)
				if err != nil {
					errs <- err
					return
				}
				if len(hits) != 5 {
					errs <- fmt.Errorf("got %d hits, want 5", len(hits))
					return
				}
				_ = idx.Len()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if want := 100 + 200 - 40; idx.Len() != want {
		t.Fatalf("Len = %d, want %d", idx.Len(), want)
	}
}

func testPersistence(t *testing.T, newIndex func(int) vector.Index, load func(io.Reader) (vector.Index, error)) {
	idx := newIndex(10)
	saver, ok := idx.(vector.Saver)
	if !ok || load == nil {
		t.Skip("index does not implement vector.Saver or no loader was given")
	}
	ctx := context.Background()
	fill(t, idx, 12, 150)
	must(t, idx.Delete(ctx, id(3), id(4)))
	var buf bytes.Buffer
	must(t, saver.Save(&buf))
	data := buf.Bytes()
	back, err := load(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if back.Len() != idx.Len() || back.Dim() != idx.Dim() {
		t.Fatalf("loaded Len, Dim = %d, %d; want %d, %d", back.Len(), back.Dim(), idx.Len(), idx.Dim())
	}
	for _, f := range []vector.Filter{nil, {"tenant": "t1"}} {
		for _, q := range Vectors(13, 5, 10) {
			want := search(t, idx, q, 7, f)
			got := search(t, back, q, 7, f)
			if !slices.Equal(got, want) {
				t.Fatalf("filter %v: loaded index returned %v, original %v", f, got, want)
			}
		}
	}
	// Damage anywhere is reported as ErrCorrupt, never a panic.
	for _, pos := range []int{0, 9, len(data) / 2, len(data) - 1} {
		bad := slices.Clone(data)
		bad[pos] ^= 0x40
		if _, err := load(bytes.NewReader(bad)); !errors.Is(err, vector.ErrCorrupt) {
			t.Errorf("flipped byte %d: error %v, want ErrCorrupt", pos, err)
		}
	}
	for _, n := range []int{0, 5, 13, len(data) / 3, len(data) - 2} {
		if _, err := load(bytes.NewReader(data[:n])); !errors.Is(err, vector.ErrCorrupt) {
			t.Errorf("truncated to %d bytes: error %v, want ErrCorrupt", n, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func hitIDs(hits []vector.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
