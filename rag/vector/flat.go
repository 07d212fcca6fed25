package vector

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// Quantization selects how [Flat] stores the copy of each vector it scans.
type Quantization uint8

const (
	// NoQuantization scans the float32 vectors directly.
	NoQuantization Quantization = iota
	// Int8 scans an int8 copy of each vector (one scale per vector), a
	// quarter of the memory traffic, then rescores the best candidates
	// exactly with float32 so returned scores are exact cosine similarities.
	Int8
)

func (q Quantization) String() string {
	switch q {
	case NoQuantization:
		return "none"
	case Int8:
		return "int8"
	}
	return fmt.Sprintf("Quantization(%d)", uint8(q))
}

// FlatOption configures a [Flat] index.
type FlatOption func(*Flat)

// WithQuantization makes the index scan quantised vectors; see [Int8].
func WithQuantization(q Quantization) FlatOption {
	return func(f *Flat) { f.quant = q }
}

// WithRescore sets how many candidates per requested result the int8 scan
// passes to exact float32 rescoring (default 4: a top-10 search rescores the
// best 40). It has no effect without quantisation; values below 1 are
// treated as 1.
func WithRescore(factor int) FlatOption {
	return func(f *Flat) { f.rescore = max(1, factor) }
}

// WithWorkers caps the goroutines one search scans with (default
// GOMAXPROCS at construction). Small indexes are always scanned by one.
func WithWorkers(n int) FlatOption {
	return func(f *Flat) { f.workers = max(1, n) }
}

// minRowsPerWorker keeps tiny scans on the calling goroutine, where starting
// workers would cost more than the scan.
const minRowsPerWorker = 8192

// Flat is an exact vector index: every search compares the query with every
// stored vector. Vectors live normalised in one contiguous row-major slice,
// which makes the scan a pure streaming read bound by memory bandwidth; it
// is split across workers that each keep their own top-k, merged at the end.
//
// Deleting swaps the last row into the hole (one row copy), so the storage
// stays dense and scans never skip tombstones.
//
// Flat is safe for concurrent use. The zero value is not usable; call
// [NewFlat].
type Flat struct {
	mu      sync.RWMutex
	dim     int
	quant   Quantization
	rescore int
	workers int

	data   []float32 // len(ids)*dim, row-major, unit vectors
	qdata  []int8    // int8 copy of data when quant == Int8
	scales []float32 // per-row int8 scale
	ids    []string
	metas  []map[string]string
	rows   map[string]uint32
}

var _ Index = (*Flat)(nil)

// NewFlat returns an empty exact index for vectors of dimension dim. It
// panics if dim is not positive, as that is a programming error, not input.
func NewFlat(dim int, opts ...FlatOption) *Flat {
	if dim <= 0 || dim > maxDim {
		panic(fmt.Sprintf("vector: NewFlat: dimension %d out of range [1, %d]", dim, maxDim))
	}
	f := &Flat{dim: dim, rescore: 4, workers: runtime.GOMAXPROCS(0), rows: make(map[string]uint32)}
	for _, o := range opts {
		o(f)
	}
	return f
}

// Dim reports the vector dimension.
func (f *Flat) Dim() int { return f.dim }

// Len reports the number of stored vectors.
func (f *Flat) Len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.ids)
}

// Quantization reports how the index scans.
func (f *Flat) Quantization() Quantization { return f.quant }

// Add inserts items, replacing any stored item with the same ID. The batch
// is validated first: on error nothing is added.
func (f *Flat) Add(ctx context.Context, items ...Item) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkItems(items, f.dim); err != nil {
		return err
	}
	unit := make([]float32, 0, len(items)*f.dim)
	for _, it := range items {
		unit, _ = normalized(unit, it.Vector, f.dim) // validated above
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, it := range items {
		f.put(it.ID, unit[i*f.dim:(i+1)*f.dim], copyMeta(it.Meta))
	}
	return nil
}

// put stores a unit vector; the caller holds the write lock.
func (f *Flat) put(id string, unit []float32, meta map[string]string) {
	row, ok := f.rows[id]
	if !ok {
		row = uint32(len(f.ids))
		f.rows[id] = row
		f.ids = append(f.ids, id)
		f.metas = append(f.metas, meta)
		f.data = append(f.data, make([]float32, f.dim)...)
		if f.quant == Int8 {
			f.qdata = append(f.qdata, make([]int8, f.dim)...)
			f.scales = append(f.scales, 0)
		}
	} else {
		f.metas[row] = meta
	}
	dst := f.data[int(row)*f.dim : int(row+1)*f.dim]
	copy(dst, unit)
	if f.quant == Int8 {
		f.scales[row] = quantize(f.qdata[int(row)*f.dim:int(row+1)*f.dim], dst)
	}
}

// Delete removes the items with the given IDs; unknown IDs are ignored.
func (f *Flat) Delete(ctx context.Context, ids ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		row, ok := f.rows[id]
		if !ok {
			continue
		}
		delete(f.rows, id)
		last := uint32(len(f.ids) - 1)
		if row != last {
			moved := f.ids[last]
			f.ids[row] = moved
			f.metas[row] = f.metas[last]
			f.rows[moved] = row
			copy(f.data[int(row)*f.dim:int(row+1)*f.dim], f.data[int(last)*f.dim:])
			if f.quant == Int8 {
				copy(f.qdata[int(row)*f.dim:int(row+1)*f.dim], f.qdata[int(last)*f.dim:])
				f.scales[row] = f.scales[last]
			}
		}
		f.ids[last] = ""
		f.metas[last] = nil
		f.ids = f.ids[:last]
		f.metas = f.metas[:last]
		f.data = f.data[:int(last)*f.dim]
		if f.quant == Int8 {
			f.qdata = f.qdata[:int(last)*f.dim]
			f.scales = f.scales[:last]
		}
	}
	return nil
}

// Search returns the k stored vectors most similar to query that match
// filter, best first. Scores are exact cosine similarities, also with int8
// quantisation (candidates are rescored).
func (f *Flat) Search(ctx context.Context, query []float32, k int, filter Filter) ([]Hit, error) {
	q, err := checkQuery(query, k, f.dim)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	n := len(f.ids)
	if n == 0 {
		return nil, nil
	}
	if len(filter) == 0 {
		filter = nil
	}
	var best []scored
	if f.quant == Int8 {
		qq := make([]int8, f.dim)
		quantize(qq, q)
		cands, err := f.scan(ctx, min(n, k*f.rescore), filter, func(lo, hi int, t *topK) { f.scanInt8(qq, lo, hi, filter, t) })
		if err != nil {
			return nil, err
		}
		t := newTopK(min(k, len(cands)), f.ids)
		for _, c := range cands {
			t.push(scored{dot(q, f.data[int(c.row)*f.dim:int(c.row+1)*f.dim]), c.row})
		}
		best = t.sorted()
	} else {
		best, err = f.scan(ctx, min(n, k), filter, func(lo, hi int, t *topK) { f.scanFloat(q, lo, hi, filter, t) })
		if err != nil {
			return nil, err
		}
	}
	hits := make([]Hit, len(best))
	for i, c := range best {
		hits[i] = Hit{ID: f.ids[c.row], Score: c.score}
	}
	return hits, nil
}

// scanChunk bounds how long a worker runs between context checks.
const scanChunk = 4096

// scan runs kernel over all rows split across workers and merges their
// top-k lists. The caller holds the read lock.
func (f *Flat) scan(ctx context.Context, k int, filter Filter, kernel func(lo, hi int, t *topK)) ([]scored, error) {
	n := len(f.ids)
	workers := min(f.workers, max(1, n/minRowsPerWorker))
	run := func(lo, hi int) (*topK, error) {
		t := newTopK(k, f.ids)
		for s := lo; s < hi; s += scanChunk {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			kernel(s, min(hi, s+scanChunk), t)
		}
		return t, nil
	}
	if workers == 1 {
		t, err := run(0, n)
		if err != nil {
			return nil, err
		}
		return t.sorted(), nil
	}
	tops := make([]*topK, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for w := range workers {
		wg.Go(func() {
			tops[w], errs[w] = run(w*per, min(n, (w+1)*per))
		})
	}
	wg.Wait()
	merged := newTopK(k, f.ids)
	for w := range workers {
		if errs[w] != nil {
			return nil, errs[w]
		}
		for _, c := range tops[w].h {
			merged.push(c)
		}
	}
	return merged.sorted(), nil
}

func (f *Flat) scanFloat(q []float32, lo, hi int, filter Filter, t *topK) {
	dim := f.dim
	data := f.data
	for r := lo; r < hi; r++ {
		if filter != nil && !filter.Match(f.metas[r]) {
			continue
		}
		s := dot(q, data[r*dim:(r+1)*dim:(r+1)*dim])
		if th, full := t.threshold(); full && s < th {
			continue
		}
		t.push(scored{s, uint32(r)})
	}
}

func (f *Flat) scanInt8(q []int8, lo, hi int, filter Filter, t *topK) {
	dim := f.dim
	data := f.qdata
	for r := lo; r < hi; r++ {
		if filter != nil && !filter.Match(f.metas[r]) {
			continue
		}
		s := float32(dotInt8(q, data[r*dim:(r+1)*dim:(r+1)*dim])) * f.scales[r]
		if th, full := t.threshold(); full && s < th {
			continue
		}
		t.push(scored{s, uint32(r)})
	}
}

const flatMagic = "WEFTFLAT"

// Save writes the index to w in Weft's versioned binary format (see
// [LoadFlat]). It holds a read lock, so searches continue meanwhile.
func (f *Flat) Save(w io.Writer) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e := newEncoder(w, flatMagic)
	e.u32(uint32(f.dim))
	e.bytes([]byte{byte(f.quant)})
	e.u32(uint32(f.rescore))
	e.u64(uint64(len(f.ids)))
	for r, id := range f.ids {
		e.str(id)
		e.meta(f.metas[r])
		e.f32s(f.data[r*f.dim : (r+1)*f.dim])
	}
	if err := e.finish(); err != nil {
		return fmt.Errorf("vector: save flat index: %w", err)
	}
	return nil
}

// SaveFile writes the index to path atomically: a crash leaves the previous
// file or the new one, never a partial write.
func (f *Flat) SaveFile(path string) error {
	return writeFileAtomic(path, f.Save)
}

// LoadFlat reads an index written by [Flat.Save]. Options override settings
// stored in the file (for example, loading with [WithQuantization] turns
// quantisation on or off). A damaged input yields an error wrapping
// [ErrCorrupt].
func LoadFlat(r io.Reader, opts ...FlatOption) (*Flat, error) {
	d, err := newDecoder(r, flatMagic)
	if err != nil {
		return nil, err
	}
	dim := d.u32()
	quant := Quantization(d.u8())
	rescore := d.u32()
	n := d.u64()
	if d.err == nil && (dim == 0 || dim > maxDim || quant > Int8 || n > 1<<32-1) {
		return nil, fmt.Errorf("%w: bad header (dim %d, quantization %d, count %d)", ErrCorrupt, dim, quant, n)
	}
	if d.err != nil {
		return nil, d.fail()
	}
	base := []FlatOption{WithQuantization(quant), WithRescore(int(rescore))}
	f := NewFlat(int(dim), append(base, opts...)...)
	row := make([]float32, dim)
	// Rows are appended one at a time, so a corrupt count fails on the
	// truncated data rather than on a giant up-front allocation.
	for range n {
		id := d.str()
		meta := d.meta()
		d.f32s(row)
		if d.err != nil {
			return nil, d.fail()
		}
		if _, err := checkVector(row, int(dim)); err != nil || id == "" {
			return nil, fmt.Errorf("%w: invalid item %q", ErrCorrupt, id)
		}
		f.put(id, row, meta)
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	if len(f.ids) != int(n) {
		return nil, fmt.Errorf("%w: duplicate IDs", ErrCorrupt)
	}
	return f, nil
}

// OpenFlat reads an index saved with [Flat.SaveFile].
func OpenFlat(path string, opts ...FlatOption) (*Flat, error) {
	return openAndLoad(path, func(r io.Reader) (*Flat, error) { return LoadFlat(r, opts...) })
}
