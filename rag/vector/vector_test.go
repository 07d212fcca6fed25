package vector_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/weftlabs/weft/rag/vector"
	"github.com/weftlabs/weft/rag/vector/vectortest"
)

func TestFlatContract(t *testing.T) {
	t.Parallel()
	vectortest.Run(t, func(dim int) vector.Index { return vector.NewFlat(dim) },
		vectortest.WithLoader(func(r io.Reader) (vector.Index, error) { return vector.LoadFlat(r) }))
}

func TestFlatInt8Contract(t *testing.T) {
	t.Parallel()
	vectortest.Run(t, func(dim int) vector.Index { return vector.NewFlat(dim, vector.WithQuantization(vector.Int8)) },
		vectortest.WithLoader(func(r io.Reader) (vector.Index, error) { return vector.LoadFlat(r) }))
}

func TestFlatParallelScanMatchesSerial(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n, dim = 40000, 8 // large enough for several scan workers
	serial := vector.NewFlat(dim, vector.WithWorkers(1))
	parallel := vector.NewFlat(dim, vector.WithWorkers(3))
	items := make([]vector.Item, n)
	for i, v := range vectortest.Vectors(71, n, dim) {
		items[i] = vector.Item{ID: fmt.Sprint(i), Vector: v, Meta: map[string]string{"m": fmt.Sprint(i % 3)}}
	}
	for _, f := range []*vector.Flat{serial, parallel} {
		if err := f.Add(ctx, items...); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range vectortest.Vectors(72, 10, dim) {
		for _, filter := range []vector.Filter{nil, {"m": "1"}} {
			want, err := serial.Search(ctx, q, 20, filter)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parallel.Search(ctx, q, 20, filter)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("parallel scan %v differs from serial %v", got, want)
			}
		}
	}
}

func TestHNSWContract(t *testing.T) {
	t.Parallel()
	vectortest.Run(t, func(dim int) vector.Index { return vector.NewHNSW(dim) },
		vectortest.WithLoader(func(r io.Reader) (vector.Index, error) { return vector.LoadHNSW(r) }))
}

// gaussianClusters returns n vectors around c random centres with
// per-component standard deviation sigma, shuffled.
func gaussianClusters(seed uint64, n, dim, c int, sigma float64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, seed^7))
	centres := vectortest.Vectors(seed+100, c, dim)
	out := make([][]float32, n)
	for i := range out {
		ctr := centres[r.IntN(c)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = ctr[j] + float32(r.NormFloat64()*sigma)
		}
		out[i] = v
	}
	return out
}

// TestHNSWRecall measures recall@10 of the approximate index against the
// exact one on uniform and on clustered data.
func TestHNSWRecall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		n    int
		dim  int
		data func(n, dim int) [][]float32
	}{
		{"uniform", 6000, 64, func(n, dim int) [][]float32 { return vectortest.Vectors(21, n, dim) }},
		{"clustered", 6000, 96, func(n, dim int) [][]float32 { return gaussianClusters(22, n, dim, 40, 0.15) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			data := tc.data(tc.n+100, tc.dim)
			vecs, queries := data[:tc.n], data[tc.n:]
			flat := vector.NewFlat(tc.dim)
			hnsw := vector.NewHNSW(tc.dim, vector.WithM(16), vector.WithEfConstruction(100), vector.WithEfSearch(128))
			items := make([]vector.Item, tc.n)
			for i, v := range vecs {
				items[i] = vector.Item{ID: fmt.Sprint(i), Vector: v}
			}
			if err := flat.Add(ctx, items...); err != nil {
				t.Fatal(err)
			}
			if err := hnsw.Add(ctx, items...); err != nil {
				t.Fatal(err)
			}
			var sum float64
			for _, q := range queries {
				want, err := flat.Search(ctx, q, 10, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, err := hnsw.Search(ctx, q, 10, nil)
				if err != nil {
					t.Fatal(err)
				}
				sum += vectortest.Recall(got, hitIDs(want))
			}
			recall := sum / float64(len(queries))
			t.Logf("recall@10 = %.4f (n=%d, dim=%d)", recall, tc.n, tc.dim)
			if recall < 0.95 {
				t.Fatalf("recall@10 = %.4f, want ≥ 0.95", recall)
			}
		})
	}
}

// TestFlatInt8MatchesExact checks that int8 scanning with rescoring returns
// the exact answer on data where float32 ranks are well separated.
func TestFlatInt8MatchesExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n, dim = 3000, 48
	exact := vector.NewFlat(dim)
	quant := vector.NewFlat(dim, vector.WithQuantization(vector.Int8))
	vecs := gaussianClusters(31, n, dim, 20, 0.2)
	for i, v := range vecs {
		it := vector.Item{ID: fmt.Sprint(i), Vector: v}
		if err := exact.Add(ctx, it); err != nil {
			t.Fatal(err)
		}
		if err := quant.Add(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	var sum float64
	queries := gaussianClusters(32, 50, dim, 20, 0.2)
	for _, q := range queries {
		want, _ := exact.Search(ctx, q, 10, nil)
		got, err := quant.Search(ctx, q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		sum += vectortest.Recall(got, hitIDs(want))
		for _, h := range got {
			if i := slices.IndexFunc(want, func(w vector.Hit) bool { return w.ID == h.ID }); i >= 0 && want[i].Score != h.Score {
				t.Fatalf("int8 score of %s = %v, exact %v", h.ID, h.Score, want[i].Score)
			}
		}
	}
	if r := sum / float64(len(queries)); r < 0.99 {
		t.Fatalf("int8 recall@10 = %.4f, want ≥ 0.99", r)
	}
}

func TestHNSWCompact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n, dim = 1000, 16
	h := vector.NewHNSW(dim)
	vecs := vectortest.Vectors(41, n, dim)
	for i, v := range vecs {
		if err := h.Add(ctx, vector.Item{ID: fmt.Sprint(i), Vector: v, Meta: map[string]string{"odd": fmt.Sprint(i%2 == 1)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i += 2 {
		if err := h.Delete(ctx, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.Tombstones(); got != n/2 {
		t.Fatalf("Tombstones = %d, want %d", got, n/2)
	}
	before, _ := h.Search(ctx, vecs[1], 10, nil)
	if err := h.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if h.Tombstones() != 0 || h.Len() != n/2 {
		t.Fatalf("after Compact: Tombstones %d, Len %d", h.Tombstones(), h.Len())
	}
	after, _ := h.Search(ctx, vecs[1], 10, vector.Filter{"odd": "true"})
	if !slices.Equal(before, after) {
		t.Fatalf("results changed across Compact:\n%v\n%v", before, after)
	}
}

func TestSaveFileAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "idx.bin")
	f := vector.NewFlat(3)
	if err := f.Add(ctx, vector.Item{ID: "a", Vector: []float32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := f.SaveFile(path); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(ctx, vector.Item{ID: "b", Vector: []float32{3, 2, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := f.SaveFile(path); err != nil { // replaces the first file
		t.Fatal(err)
	}
	back, err := vector.OpenFlat(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Len() != 2 {
		t.Fatalf("reopened Len = %d, want 2", back.Len())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
	h := vector.NewHNSW(3)
	if err := h.Add(ctx, vector.Item{ID: "a", Vector: []float32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	hpath := filepath.Join(dir, "h.bin")
	if err := h.SaveFile(hpath); err != nil {
		t.Fatal(err)
	}
	if _, err := vector.OpenHNSW(hpath); err != nil {
		t.Fatal(err)
	}
	// An HNSW file is not a flat file.
	if _, err := vector.OpenFlat(hpath); !errors.Is(err, vector.ErrCorrupt) {
		t.Fatalf("OpenFlat on an HNSW file: %v, want ErrCorrupt", err)
	}
	if _, err := vector.OpenFlat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenFlat on a missing file: %v", err)
	}
	if err := f.SaveFile(filepath.Join(dir, "no", "such", "dir")); err == nil {
		t.Fatal("SaveFile into a missing directory succeeded")
	}
}

func TestDotAllocs(t *testing.T) {
	ctx := context.Background()
	f := vector.NewFlat(32)
	for i, v := range vectortest.Vectors(51, 500, 32) {
		if err := f.Add(ctx, vector.Item{ID: fmt.Sprint(i), Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	q := vectortest.Vectors(52, 1, 32)[0]
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := f.Search(ctx, q, 10, nil); err != nil {
			t.Fatal(err)
		}
	})
	// Query copy, heap, result slice and sort: a handful, independent of n.
	if allocs > 8 {
		t.Fatalf("Search allocates %.0f times, want ≤ 8", allocs)
	}
}

func FuzzLoad(f *testing.F) {
	ctx := context.Background()
	flat := vector.NewFlat(4)
	hnsw := vector.NewHNSW(4, vector.WithM(4))
	for i, v := range vectortest.Vectors(61, 20, 4) {
		it := vector.Item{ID: fmt.Sprint(i), Vector: v, Meta: map[string]string{"k": "v"}}
		flat.Add(ctx, it)
		hnsw.Add(ctx, it)
	}
	hnsw.Delete(ctx, "3")
	for _, s := range []vector.Saver{flat, hnsw, vector.NewFlat(2), vector.NewHNSW(2)} {
		var buf bytes.Buffer
		if err := s.Save(&buf); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q := []float32{1, 0.5, -0.25, 2}
		if idx, err := vector.LoadFlat(bytes.NewReader(data)); err == nil {
			exercise(t, idx, q)
		} else if !errors.Is(err, vector.ErrCorrupt) {
			t.Fatalf("LoadFlat error does not wrap ErrCorrupt: %v", err)
		}
		if idx, err := vector.LoadHNSW(bytes.NewReader(data)); err == nil {
			exercise(t, idx, q)
		} else if !errors.Is(err, vector.ErrCorrupt) {
			t.Fatalf("LoadHNSW error does not wrap ErrCorrupt: %v", err)
		}
	})
}

// exercise runs a loaded index through its operations; they must not panic.
func exercise(t *testing.T, idx vector.Index, q []float32) {
	ctx := context.Background()
	if idx.Dim() != len(q) {
		q = make([]float32, idx.Dim())
		q[0] = 1
	}
	if _, err := idx.Search(ctx, q, 3, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Search(ctx, q, 3, vector.Filter{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(ctx, vector.Item{ID: "new", Vector: q}); err != nil {
		t.Fatal(err)
	}
	if err := idx.Delete(ctx, "0", "1"); err != nil {
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

// TestHNSWParallelAdd inserts one batch large enough to be linked by several
// goroutines, with IDs repeated inside the batch: the later item wins, as in
// a serial insert, and every live item is found by its own vector.
func TestHNSWParallelAdd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n, dim, repeats = 5000, 32, 100
	vecs := gaussianClusters(51, n, dim, 30, 0.2)
	items := make([]vector.Item, n)
	for i, v := range vecs {
		id := fmt.Sprint(i)
		if i >= n-repeats {
			id = fmt.Sprint(i - (n - repeats)) // replaces item i-(n-repeats)
		}
		items[i] = vector.Item{ID: id, Vector: v}
	}
	h := vector.NewHNSW(dim, vector.WithEfConstruction(100))
	if err := h.Add(ctx, items...); err != nil {
		t.Fatal(err)
	}
	if h.Len() != n-repeats || h.Tombstones() != repeats {
		t.Fatalf("Len %d, Tombstones %d; want %d, %d", h.Len(), h.Tombstones(), n-repeats, repeats)
	}
	// The search is approximate: like any item, a replacement may be missed
	// now and then (the same 1% bound as below). An older vector, though,
	// must never be found under the ID that replaced it.
	replacedMissed := 0
	for i := range repeats {
		id := fmt.Sprint(i)
		hits, err := h.Search(ctx, vecs[n-repeats+i], 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].ID != id || hits[0].Score < 0.9999 {
			replacedMissed++
		}
		old, err := h.Search(ctx, vecs[i], 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(old) == 1 && old[0].ID == id && old[0].Score >= 0.9999 {
			t.Fatalf("item %d's replaced vector is still found: %v", i, old)
		}
	}
	if replacedMissed > repeats/100 {
		t.Fatalf("%d of %d replacements not found by their own vector", replacedMissed, repeats)
	}
	missed := 0
	for i := repeats; i < n-repeats; i++ {
		hits, err := h.Search(ctx, vecs[i], 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].ID != fmt.Sprint(i) {
			missed++
		}
	}
	if missed > (n-2*repeats)/100 {
		t.Fatalf("%d of %d items not found by their own vector", missed, n-2*repeats)
	}
}

// cancelAfter is a context whose Err reports cancellation from its calls'
// limit on, to cancel a parallel insert part-way deterministically.
type cancelAfter struct {
	context.Context
	calls, limit atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.calls.Add(1) > c.limit.Load() {
		return context.Canceled
	}
	return nil
}

// TestHNSWParallelAddCancelled cancels a parallel insert part-way: the items
// linked so far stay searchable, the rest are not in the index.
func TestHNSWParallelAddCancelled(t *testing.T) {
	t.Parallel()
	const n, dim = 8000, 16
	vecs := vectortest.Vectors(52, n, dim)
	items := make([]vector.Item, n)
	for i, v := range vecs {
		items[i] = vector.Item{ID: fmt.Sprint(i), Vector: v}
	}
	ctx := &cancelAfter{Context: context.Background()}
	ctx.limit.Store(20)
	h := vector.NewHNSW(dim)
	err := h.Add(ctx, items...)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Add: %v, want context.Canceled", err)
	}
	live := h.Len()
	if live == 0 || live == n || live+h.Tombstones() != n {
		t.Fatalf("Len %d, Tombstones %d of %d items", live, h.Tombstones(), n)
	}
	bg := context.Background()
	found := 0
	for i, v := range vecs {
		hits, err := h.Search(bg, v, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 1 && hits[0].ID == fmt.Sprint(i) && hits[0].Score > 0.9999 {
			found++
		}
	}
	if found < live*99/100 || found > live {
		t.Fatalf("%d items found by their own vector, %d live", found, live)
	}
}

// TestHNSWAutoCompact deletes most of a large index: the graph is rebuilt
// without its tombstones with no call to Compact.
func TestHNSWAutoCompact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n, dim = 3000, 16
	vecs := vectortest.Vectors(53, n, dim)
	items := make([]vector.Item, n)
	for i, v := range vecs {
		items[i] = vector.Item{ID: fmt.Sprint(i), Vector: v}
	}
	h := vector.NewHNSW(dim)
	if err := h.Add(ctx, items...); err != nil {
		t.Fatal(err)
	}
	var gone []string
	for i := range 2000 {
		gone = append(gone, fmt.Sprint(i))
	}
	if err := h.Delete(ctx, gone...); err != nil {
		t.Fatal(err)
	}
	if h.Tombstones() != 0 || h.Len() != n-2000 {
		t.Fatalf("after deleting 2000 of %d: Tombstones %d, Len %d", n, h.Tombstones(), h.Len())
	}
	hits, err := h.Search(ctx, vecs[2500], 1, nil)
	if err != nil || len(hits) != 1 || hits[0].ID != "2500" {
		t.Fatalf("search after compaction: %v %v", hits, err)
	}
}

// BenchmarkHNSWBuild inserts 50,000 clustered 384-dimension vectors (M=16,
// efConstruction=100) per iteration and reports vectors per second of CPU
// time (the rate on an idle machine, per core) beside the wall-clock rate,
// and the last graph's recall@10 at ef=64 over 200 held-out queries against
// the exact index (outside the timing), so that a faster build cannot hide a
// worse graph.
func BenchmarkHNSWBuild(b *testing.B) {
	const n, dim, nq = 50_000, 384, 200
	all := gaussianClusters(61, n+nq, dim, 500, 0.3)
	vecs, queries := all[:n], all[n:]
	items := make([]vector.Item, n)
	for i, v := range vecs {
		items[i] = vector.Item{ID: fmt.Sprint(i), Vector: v}
	}
	ctx := context.Background()
	var h *vector.HNSW
	cpu := cpuTime()
	for b.Loop() {
		h = vector.NewHNSW(dim, vector.WithM(16), vector.WithEfConstruction(100))
		for lo := 0; lo < n; lo += 10_000 {
			if err := h.Add(ctx, items[lo:lo+10_000]...); err != nil {
				b.Fatal(err)
			}
		}
	}
	used := (cpuTime() - cpu).Seconds()
	elapsed := b.Elapsed().Seconds()
	if used > 0 {
		b.ReportMetric(float64(n*b.N)/used, "vec/cpu-s")
	}
	b.ReportMetric(float64(n*b.N)/elapsed, "vec/s")

	flat := vector.NewFlat(dim)
	if err := flat.Add(ctx, items...); err != nil {
		b.Fatal(err)
	}
	found := 0
	for _, q := range queries {
		want, err := flat.Search(ctx, q, 10, nil)
		if err != nil {
			b.Fatal(err)
		}
		got, err := h.SearchEf(ctx, q, 10, 64, nil)
		if err != nil {
			b.Fatal(err)
		}
		ids := make(map[string]bool, len(got))
		for _, g := range got {
			ids[g.ID] = true
		}
		for _, w := range want {
			if ids[w.ID] {
				found++
			}
		}
	}
	b.ReportMetric(float64(found)/float64(10*nq), "recall@10")
}
