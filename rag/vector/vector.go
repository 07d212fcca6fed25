// Package vector holds Weft's embedded vector indexes: an exact index
// ([Flat], optionally int8-quantised) and an approximate one ([HNSW]).
//
// Both implement [Index], the contract retrievers are written against.
// Vectors are normalised on insert, so scores are cosine similarities in
// [-1, 1], higher is better. Results come best first; equal scores are
// ordered by ID so that results are stable across runs and indexes.
//
// Both indexes are safe for concurrent use: any number of searches run in
// parallel, writes are serialised. Both persist to a versioned binary format
// with a CRC-32C checksum ([Flat.Save], [LoadFlat], [HNSW.Save], [LoadHNSW],
// and the SaveFile/OpenFile helpers, which replace files atomically).
package vector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
)

// Item is one vector to index: an ID unique within the index, the vector, and
// optional metadata that [Filter]s match against. The index copies the vector
// and the metadata map; the caller may reuse both after Add returns.
type Item struct {
	ID     string
	Vector []float32
	Meta   map[string]string
}

// Hit is one search result: the ID of a stored item and its cosine similarity
// to the query (higher is better).
type Hit struct {
	ID    string
	Score float32
}

// Filter restricts a search to items whose metadata holds every key=value
// pair of the filter. A nil or empty Filter matches every item.
type Filter map[string]string

// Match reports whether meta satisfies every pair of f.
func (f Filter) Match(meta map[string]string) bool {
	for k, v := range f {
		got, ok := meta[k]
		if !ok || got != v {
			return false
		}
	}
	return true
}

// Index is what retrievers use; [Flat] and [HNSW] implement it.
type Index interface {
	// Add inserts items; an item whose ID is already present replaces it.
	// A batch with any invalid item adds nothing; a batch interrupted by
	// ctx keeps the items inserted before the interruption.
	Add(ctx context.Context, items ...Item) error
	// Delete removes the items with the given IDs; unknown IDs are ignored.
	Delete(ctx context.Context, ids ...string) error
	// Search returns up to k items most similar to query that match f, best
	// first, ties broken by ascending ID.
	Search(ctx context.Context, query []float32, k int, f Filter) ([]Hit, error)
	// Len reports the number of live items.
	Len() int
	// Dim reports the vector dimension the index was created with.
	Dim() int
}

// Saver is implemented by indexes that can write themselves to w in a
// format their package-level loader reads back.
type Saver interface {
	Save(w io.Writer) error
}

var (
	// ErrDimension reports a vector whose length differs from the index's
	// dimension.
	ErrDimension = errors.New("vector: dimension mismatch")
	// ErrInvalidVector reports a vector with a NaN or infinite component, or
	// with zero norm (which has no direction to compare).
	ErrInvalidVector = errors.New("vector: invalid vector")
	// ErrInvalidK reports a non-positive result count.
	ErrInvalidK = errors.New("vector: k must be positive")
	// ErrInvalidID reports an item with an empty ID.
	ErrInvalidID = errors.New("vector: empty item ID")
	// ErrCorrupt reports a persisted index that cannot be read back: bad
	// magic, unsupported version, truncation or checksum mismatch.
	ErrCorrupt = errors.New("vector: corrupt index file")
)

// checkVector validates v against dim and returns its Euclidean norm.
func checkVector(v []float32, dim int) (float32, error) {
	if len(v) != dim {
		return 0, fmt.Errorf("%w: got %d components, index dimension is %d", ErrDimension, len(v), dim)
	}
	var sum float64
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return 0, fmt.Errorf("%w: component %d is %v", ErrInvalidVector, i, x)
		}
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return 0, fmt.Errorf("%w: zero vector has no direction", ErrInvalidVector)
	}
	return float32(math.Sqrt(sum)), nil
}

// normalized validates v and appends its unit-length copy to dst.
func normalized(dst, v []float32, dim int) ([]float32, error) {
	n, err := checkVector(v, dim)
	if err != nil {
		return dst, err
	}
	inv := 1 / n
	for _, x := range v {
		dst = append(dst, x*inv)
	}
	return dst, nil
}

// checkItems validates a batch before any of it is applied, so Add is
// all-or-nothing.
func checkItems(items []Item, dim int) error {
	for i := range items {
		if items[i].ID == "" {
			return fmt.Errorf("item %d: %w", i, ErrInvalidID)
		}
		if _, err := checkVector(items[i].Vector, dim); err != nil {
			return fmt.Errorf("item %q: %w", items[i].ID, err)
		}
	}
	return nil
}

func checkQuery(query []float32, k, dim int) ([]float32, error) {
	if k <= 0 {
		return nil, fmt.Errorf("%w: got %d", ErrInvalidK, k)
	}
	q, err := normalized(make([]float32, 0, dim), query, dim)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	return q, nil
}

func copyMeta(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// dotGo returns the inner product of a and b, which must have equal length.
// It is the portable kernel; dot uses an AVX2 one where the CPU has it.
//
// Go has no portable SIMD (simd/archsimd is behind GOEXPERIMENT in Go 1.26),
// so the loop is unrolled 8-way into four independent accumulators: that
// breaks the floating-point add dependency chain and lets the compiler keep
// everything in registers, roughly 3× faster than the naive loop.
func dotGo(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i <= n-8; i += 8 {
		aa := a[i : i+8 : i+8]
		bb := b[i : i+8 : i+8]
		s0 += aa[0]*bb[0] + aa[4]*bb[4]
		s1 += aa[1]*bb[1] + aa[5]*bb[5]
		s2 += aa[2]*bb[2] + aa[6]*bb[6]
		s3 += aa[3]*bb[3] + aa[7]*bb[7]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotInt8Go returns the inner product of two int8 vectors of equal length,
// unrolled like dotGo; dotInt8 uses an AVX2 kernel where it can. Products fit easily: 127·127·dim stays far below 2³¹
// for any dimension this package accepts.
func dotInt8Go(a, b []int8) int32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i <= n-8; i += 8 {
		aa := a[i : i+8 : i+8]
		bb := b[i : i+8 : i+8]
		s0 += int32(aa[0])*int32(bb[0]) + int32(aa[4])*int32(bb[4])
		s1 += int32(aa[1])*int32(bb[1]) + int32(aa[5])*int32(bb[5])
		s2 += int32(aa[2])*int32(bb[2]) + int32(aa[6])*int32(bb[6])
		s3 += int32(aa[3])*int32(bb[3]) + int32(aa[7])*int32(bb[7])
	}
	for ; i < n; i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// quantize writes the int8 form of the unit vector v into dst and returns
// its scale: v[i] ≈ float32(dst[i]) * scale.
func quantize(dst []int8, v []float32) float32 {
	var maxAbs float32
	for _, x := range v {
		if x < 0 {
			x = -x
		}
		if x > maxAbs {
			maxAbs = x
		}
	}
	if maxAbs == 0 {
		clear(dst)
		return 0
	}
	scale := maxAbs / 127
	inv := 1 / scale
	for i, x := range v {
		q := x * inv
		if q >= 0 {
			q += 0.5
		} else {
			q -= 0.5
		}
		dst[i] = int8(max(-127, min(127, q)))
	}
	return scale
}
