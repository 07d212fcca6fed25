package vector

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// HNSWOption configures an [HNSW] index.
type HNSWOption func(*HNSW)

// WithM sets the number of links per node on the upper layers (layer 0 gets
// 2·M). Higher M raises recall and memory; 8–48 is the useful range.
// Default 16.
func WithM(m int) HNSWOption {
	return func(h *HNSW) { h.m = max(2, min(m, 127)) }
}

// WithEfConstruction sets the candidate list size used while inserting;
// higher builds a better graph, more slowly. Default 200.
func WithEfConstruction(ef int) HNSWOption {
	return func(h *HNSW) { h.efConstruction = max(1, ef) }
}

// WithEfSearch sets the default candidate list size of a search (at least k
// is always used). Higher raises recall and latency. Default 64. It can be
// changed later with [HNSW.SetEfSearch].
func WithEfSearch(ef int) HNSWOption {
	return func(h *HNSW) { h.efSearch = max(1, ef) }
}

// WithSeed seeds the level generator, making builds reproducible
// (the default seed is fixed, so they already are for one insertion order).
func WithSeed(seed uint64) HNSWOption {
	return func(h *HNSW) { h.seed = seed }
}

// filterEfFactor widens the candidate list of filtered searches, since
// non-matching nodes are traversed but not returned.
const filterEfFactor = 4

// maxLevel caps node levels; with the default M a level above 16 needs more
// than 10^19 nodes.
const maxLevel = 16

// HNSW is an approximate vector index: a Hierarchical Navigable Small World
// graph (Malkov & Yashunin, 2016), written here because the Go libraries
// available have either cgo or correctness problems (coder/hnsw v0.6.1
// returns near-zero recall).
//
// Neighbour lists are flat uint32 arrays (layer 0 for all nodes in one
// slice), vectors are normalised in one contiguous slice, links are chosen
// with the paper's neighbour-selection heuristic, and the visited set of a
// search is a generation-stamped slice reused, with the search's heaps,
// through a sync.Pool.
//
// Beside each float32 vector the index keeps its int8 form (one byte per
// dimension and a scale, as [WithQuantization] keeps for [Flat]: a quarter
// more memory), and building the graph compares only those. Construction
// is bound by memory traffic, not arithmetic, and int8 vectors move a
// quarter of the bytes, so inserts cost about a quarter less CPU time at
// the same recall. Searches walk the graph with the float32 vectors, so the
// scores they return are exact.
//
// Deleting or replacing an item marks the old node as a tombstone: it still
// routes searches but is never returned. [HNSW.Compact] rebuilds the graph
// without tombstones. Filtered searches widen the candidate list and fall
// back to an exact scan when the graph yields fewer than k matches, so a
// selective filter never loses results.
//
// HNSW is safe for concurrent use: searches run in parallel, writes are
// serialised. Use [NewHNSW]; the zero value is not usable.
type HNSW struct {
	mu             sync.RWMutex
	dim            int
	m, m0          int
	efConstruction int
	efSearch       int
	ml             float64
	seed           uint64
	rng            *rand.Rand

	vecs    []float32 // node*dim, unit vectors
	vecs8   []int8    // node*dim, the int8 form of vecs the build compares
	scales  []float32 // per node: vecs8[i]·scale ≈ vecs[i]
	ids     []string
	metas   []map[string]string
	dead    []bool
	levels  []uint8
	links0  []uint32   // node*m0 layer-0 neighbours
	count0  []uint8    // layer-0 neighbour counts
	upper   [][]uint32 // per node: for each level ≥ 1, a count then m slots
	nodes   map[string]uint32
	entry   uint32
	top     int // level of entry; -1 when empty
	live    int
	visited sync.Pool
}

var _ Index = (*HNSW)(nil)

// NewHNSW returns an empty approximate index for vectors of dimension dim.
// It panics if dim is not positive, as that is a programming error.
func NewHNSW(dim int, opts ...HNSWOption) *HNSW {
	if dim <= 0 || dim > maxDim {
		panic(fmt.Sprintf("vector: NewHNSW: dimension %d out of range [1, %d]", dim, maxDim))
	}
	h := &HNSW{dim: dim, m: 16, efConstruction: 200, efSearch: 64, seed: 0x5eed, top: -1, nodes: make(map[string]uint32)}
	for _, o := range opts {
		o(h)
	}
	h.m0 = 2 * h.m
	h.ml = 1 / math.Log(float64(h.m))
	h.rng = rand.New(rand.NewPCG(h.seed, h.seed^0x9e3779b97f4a7c15))
	return h
}

// Dim reports the vector dimension.
func (h *HNSW) Dim() int { return h.dim }

// Len reports the number of live items.
func (h *HNSW) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.live
}

// Tombstones reports how many deleted or replaced nodes still occupy the
// graph; when it is a large share of the index, [HNSW.Compact] reclaims them.
func (h *HNSW) Tombstones() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.ids) - h.live
}

// SetEfSearch changes the default candidate list size of searches.
func (h *HNSW) SetEfSearch(ef int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.efSearch = max(1, ef)
}

func (h *HNSW) vec(n uint32) []float32 {
	i := int(n) * h.dim
	return h.vecs[i : i+h.dim : i+h.dim]
}

// probe is what a graph search measures distances from: a unit vector, or
// while building the graph a stored node's int8 form (v8 non-nil, scale s),
// compared with the other nodes' int8 forms.
type probe struct {
	v  []float32
	v8 []int8
	s  float32
}

// nodeQuery is the build's query for stored node n.
func (h *HNSW) nodeQuery(n uint32) probe {
	i := int(n) * h.dim
	return probe{v8: h.vecs8[i : i+h.dim : i+h.dim], s: h.scales[n]}
}

// dist is the distance from q to node n: the negated cosine similarity, so
// smaller is closer.
func (h *HNSW) dist(q probe, n uint32) float32 {
	if q.v8 != nil {
		i := int(n) * h.dim
		return -float32(dotInt8(q.v8, h.vecs8[i:i+h.dim:i+h.dim])) * q.s * h.scales[n]
	}
	return -dot(q.v, h.vec(n))
}

// neighbours returns the links of node n on level l (a view, not a copy).
func (h *HNSW) neighbours(n uint32, l int) []uint32 {
	if l == 0 {
		i := int(n) * h.m0
		return h.links0[i : i+int(h.count0[n])]
	}
	b := h.upper[n][(l-1)*(h.m+1):]
	return b[1 : 1+b[0]]
}

func (h *HNSW) setNeighbours(n uint32, l int, list []distNode) {
	if l == 0 {
		dst := h.links0[int(n)*h.m0:]
		for i, c := range list {
			dst[i] = c.node
		}
		h.count0[n] = uint8(len(list))
		return
	}
	b := h.upper[n][(l-1)*(h.m+1):]
	b[0] = uint32(len(list))
	for i, c := range list {
		b[1+i] = c.node
	}
}

func (h *HNSW) maxLinks(l int) int {
	if l == 0 {
		return h.m0
	}
	return h.m
}

// Add inserts items, replacing any live item with the same ID (the old node
// becomes a tombstone). The batch is validated first: on error nothing is
// added. Large batches (at least [parallelMin] items) are linked into the
// graph by GOMAXPROCS goroutines at once, each locking only the neighbour
// list it changes, as hnswlib does; the graph then depends on scheduling,
// so it is not reproducible, but its quality is the same. Inserting holds
// the write lock for the whole batch, so add large collections in batches
// of a few thousand to let searches run in between. If ctx is cancelled
// part-way, the items inserted so far stay.
func (h *HNSW) Add(ctx context.Context, items ...Item) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkItems(items, h.dim); err != nil {
		return err
	}
	unit := make([]float32, 0, len(items)*h.dim)
	for _, it := range items {
		unit, _ = normalized(unit, it.Vector, h.dim) // validated above
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.insertAll(ctx, items, unit); err != nil {
		return err
	}
	h.maybeCompact(ctx)
	return nil
}

// insertAll inserts items whose unit vectors are laid out in unit, in
// parallel when the batch is large; the caller holds the write lock.
func (h *HNSW) insertAll(ctx context.Context, items []Item, unit []float32) error {
	h.grow(len(items))
	if workers := min(runtime.GOMAXPROCS(0), len(items)/(parallelMin/2)); workers > 1 {
		return h.addParallel(ctx, items, unit, workers)
	}
	for i, it := range items {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("vector: add interrupted after %d of %d items: %w", i, len(items), err)
			}
		}
		h.insert(it.ID, unit[i*h.dim:(i+1)*h.dim], copyMeta(it.Meta))
	}
	return nil
}

// parallelMin is the smallest batch [HNSW.Add] links with several
// goroutines; below it the set-up costs more than it saves.
const parallelMin = 1024

// lockStripes is the number of neighbour-list locks of a parallel insert;
// node n uses stripe n mod lockStripes. A goroutine holds at most one at a
// time, so stripes sharing a lock cannot deadlock.
const lockStripes = 1 << 14

// linkLocks guards the neighbour lists (all levels) and the entry point
// while a batch is linked concurrently.
type linkLocks struct {
	stripes [lockStripes]sync.Mutex
	entry   sync.RWMutex
}

func (k *linkLocks) lock(n uint32)   { k.stripes[n%lockStripes].Lock() }
func (k *linkLocks) unlock(n uint32) { k.stripes[n%lockStripes].Unlock() }

// addParallel inserts items with workers goroutines; the caller holds the
// write lock. All nodes are appended first (so the arrays never move while
// they are linked), their levels drawn in order from the seeded generator;
// then each goroutine takes the next node and links it. Only afterwards do
// the new IDs become visible (replacing older nodes), in input order, so a
// duplicate ID within the batch resolves as in a serial insert. Nodes left
// unlinked by a cancellation become tombstones.
func (h *HNSW) addParallel(ctx context.Context, items []Item, unit []float32, workers int) error {
	start := uint32(len(h.ids))
	levels := make([]int, len(items))
	for i, it := range items {
		levels[i] = h.randomLevel()
		h.appendNode(it.ID, unit[i*h.dim:(i+1)*h.dim], copyMeta(it.Meta), levels[i])
	}
	linked := make([]bool, len(items))
	first := 0
	if h.top < 0 {
		h.link(start, levels[0])
		linked[0], first = true, 1
	}
	locks := new(linkLocks)
	var next atomic.Int64
	next.Store(int64(first))
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for !stopped.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(items) {
					return
				}
				if i%64 == 0 && ctx.Err() != nil {
					stopped.Store(true)
					return
				}
				h.linkConcurrent(start+uint32(i), levels[i], locks)
				linked[i] = true
			}
		})
	}
	wg.Wait()
	done := 0
	for i, it := range items {
		n := start + uint32(i)
		if !linked[i] {
			h.dead[n] = true // unreachable: nothing links to it
			continue
		}
		if old, ok := h.nodes[it.ID]; ok {
			h.dead[old] = true
			h.live--
		}
		h.nodes[it.ID] = n
		h.live++
		done++
	}
	if done < len(items) {
		return fmt.Errorf("vector: add interrupted after %d of %d items: %w", done, len(items), ctx.Err())
	}
	return nil
}

// linkConcurrent is [HNSW.link] for a node of a batch being linked by
// several goroutines: neighbour lists are read and written under their
// stripe lock, the entry point under its own.
func (h *HNSW) linkConcurrent(n uint32, level int, k *linkLocks) {
	k.entry.RLock()
	entry, top := h.entry, h.top
	k.entry.RUnlock()
	q := h.nodeQuery(n)
	ep := distNode{h.dist(q, entry), entry}
	var buf []uint32
	for l := top; l > level; l-- {
		ep, buf = h.greedyLocked(q, ep, l, k, buf)
	}
	vis := h.getVisited()
	defer h.visited.Put(vis)
	eps := []distNode{ep}
	for l := min(level, top); l >= 0; l-- {
		cands := h.searchLayer(q, eps, h.efConstruction, l, vis, nil, k)
		sel := h.selectNeighbours(cands, h.m)
		k.lock(n)
		h.setNeighbours(n, l, sel)
		k.unlock(n)
		for _, s := range sel {
			k.lock(s.node)
			h.addLink(s.node, n, s.d, l)
			k.unlock(s.node)
		}
		eps = cands
	}
	if level > top {
		k.entry.Lock()
		if level > h.top {
			h.entry, h.top = n, level
		}
		k.entry.Unlock()
	}
}

// greedyLocked is [HNSW.greedy] reading neighbour lists under their locks.
func (h *HNSW) greedyLocked(q probe, ep distNode, l int, k *linkLocks, buf []uint32) (distNode, []uint32) {
	for changed := true; changed; {
		changed = false
		k.lock(ep.node)
		buf = append(buf[:0], h.neighbours(ep.node, l)...)
		k.unlock(ep.node)
		for _, nb := range buf {
			if d := h.dist(q, nb); d < ep.d {
				ep, changed = distNode{d, nb}, true
			}
		}
	}
	return ep, buf
}

// randomLevel draws a node level from the exponential distribution of the
// paper, floor(-ln(U)·mL).
func (h *HNSW) randomLevel() int {
	u := 1 - h.rng.Float64() // (0, 1]
	return min(maxLevel, int(-math.Log(u)*h.ml))
}

// insert adds one unit vector; the caller holds the write lock.
func (h *HNSW) insert(id string, v []float32, meta map[string]string) {
	if old, ok := h.nodes[id]; ok {
		h.dead[old] = true
		h.live--
	}
	n := uint32(len(h.ids))
	level := h.randomLevel()
	h.appendNode(id, v, meta, level)
	h.nodes[id] = n
	h.live++
	h.link(n, level)
}

// grow makes room for n more nodes, so that appending them copies each
// array once instead of at every doubling.
func (h *HNSW) grow(n int) {
	h.vecs = slices.Grow(h.vecs, n*h.dim)
	h.vecs8 = slices.Grow(h.vecs8, n*h.dim)
	h.scales = slices.Grow(h.scales, n)
	h.ids = slices.Grow(h.ids, n)
	h.metas = slices.Grow(h.metas, n)
	h.dead = slices.Grow(h.dead, n)
	h.levels = slices.Grow(h.levels, n)
	h.links0 = slices.Grow(h.links0, n*h.m0)
	h.count0 = slices.Grow(h.count0, n)
	h.upper = slices.Grow(h.upper, n)
}

func (h *HNSW) appendNode(id string, v []float32, meta map[string]string, level int) {
	h.vecs = append(h.vecs, v...)
	h.vecs8 = append(h.vecs8, make([]int8, h.dim)...)
	h.scales = append(h.scales, quantize(h.vecs8[len(h.vecs8)-h.dim:], v))
	h.ids = append(h.ids, id)
	h.metas = append(h.metas, meta)
	h.dead = append(h.dead, false)
	h.levels = append(h.levels, uint8(level))
	h.links0 = append(h.links0, make([]uint32, h.m0)...)
	h.count0 = append(h.count0, 0)
	var up []uint32
	if level > 0 {
		up = make([]uint32, level*(h.m+1))
	}
	h.upper = append(h.upper, up)
}

// link connects node n (already appended, at the given level) into the graph.
func (h *HNSW) link(n uint32, level int) {
	if h.top < 0 {
		h.entry, h.top = n, level
		return
	}
	q := h.nodeQuery(n)
	ep := distNode{h.dist(q, h.entry), h.entry}
	for l := h.top; l > level; l-- {
		ep = h.greedy(q, ep, l)
	}
	vis := h.getVisited()
	defer h.visited.Put(vis)
	eps := []distNode{ep}
	for l := min(level, h.top); l >= 0; l-- {
		cands := h.searchLayer(q, eps, h.efConstruction, l, vis, nil, nil)
		sel := h.selectNeighbours(cands, h.m)
		h.setNeighbours(n, l, sel)
		for _, s := range sel {
			h.addLink(s.node, n, s.d, l)
		}
		eps = cands
	}
	if level > h.top {
		h.entry, h.top = n, level
	}
}

// addLink adds a back-link from node to n on level l, pruning node's list
// with the heuristic when it is full.
func (h *HNSW) addLink(node, n uint32, d float32, l int) {
	cur := h.neighbours(node, l)
	maxM := h.maxLinks(l)
	if len(cur) < maxM {
		if l == 0 {
			h.links0[int(node)*h.m0+len(cur)] = n
			h.count0[node]++
		} else {
			b := h.upper[node][(l-1)*(h.m+1):]
			b[1+b[0]] = n
			b[0]++
		}
		return
	}
	v := h.nodeQuery(node)
	cands := make([]distNode, 0, len(cur)+1)
	cands = append(cands, distNode{d, n})
	for _, c := range cur {
		cands = append(cands, distNode{h.dist(v, c), c})
	}
	sortByDist(cands)
	h.setNeighbours(node, l, h.selectNeighbours(cands, maxM))
}

// selectNeighbours implements the paper's neighbour-selection heuristic
// (algorithm 4 without extending candidates or keeping pruned links): walk
// the candidates closest first and keep one only if it is closer to the
// base than to every neighbour already kept. This keeps links pointing in
// diverse directions, which is what lets clustered data stay connected.
// cands must be sorted closest first; the result reuses its storage.
func (h *HNSW) selectNeighbours(cands []distNode, m int) []distNode {
	if len(cands) <= m {
		return cands
	}
	sel := make([]distNode, 0, m)
	for _, c := range cands {
		if len(sel) == m {
			break
		}
		cv := h.nodeQuery(c.node)
		keep := true
		for _, s := range sel {
			if h.dist(cv, s.node) < c.d {
				keep = false
				break
			}
		}
		if keep {
			sel = append(sel, c)
		}
	}
	return sel
}

func sortByDist(s []distNode) {
	// Insertion sort: lists here are at most 2·M+1 long.
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].d < s[j-1].d; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// greedy walks level l from ep to a local minimum.
func (h *HNSW) greedy(q probe, ep distNode, l int) distNode {
	for changed := true; changed; {
		changed = false
		for _, nb := range h.neighbours(ep.node, l) {
			if d := h.dist(q, nb); d < ep.d {
				ep, changed = distNode{d, nb}, true
			}
		}
	}
	return ep
}

// visitedSet marks nodes seen by one search. Instead of clearing it, each
// search bumps the generation; a slot is visited when it holds the current
// generation.
//
// It also carries a search's scratch buffers (candidate and result heaps,
// neighbour lists), so that a search allocates only its result.
type visitedSet struct {
	gen       uint16
	marks     []uint16
	cand      minHeap
	res       maxHeap
	buf, todo []uint32
}

func (h *HNSW) getVisited() *visitedSet {
	v, _ := h.visited.Get().(*visitedSet)
	if v == nil {
		v = &visitedSet{}
	}
	if n := len(h.ids); len(v.marks) < n {
		v.marks = make([]uint16, n+n/4)
		v.gen = 0
	}
	return v
}

// reset starts a new search: nothing is visited afterwards.
func (v *visitedSet) reset() {
	v.gen++
	if v.gen == 0 {
		clear(v.marks)
		v.gen = 1
	}
}

func (v *visitedSet) visit(n uint32) bool {
	if v.marks[n] == v.gen {
		return false
	}
	v.marks[n] = v.gen
	return true
}

// accept decides whether a node may enter the result set; nil accepts all.
type accept func(n uint32) bool

// searchLayer is the paper's algorithm 2 on level l: a best-first search
// from eps keeping the ef closest accepted nodes. Nodes that are not
// accepted (tombstones, filtered out) are still expanded, so they keep
// routing. The result is sorted closest first.
func (h *HNSW) searchLayer(q probe, eps []distNode, ef, l int, vis *visitedSet, ok accept, locks *linkLocks) []distNode {
	vis.reset()
	cand, res, buf, todo := vis.cand[:0], vis.res[:0], vis.buf, vis.todo
	defer func() { vis.cand, vis.res, vis.buf, vis.todo = cand, res, buf, todo }()
	for _, e := range eps {
		if !vis.visit(e.node) {
			continue
		}
		cand.push(e)
		if ok == nil || ok(e.node) {
			res.push(e)
			if len(res) > ef {
				res.pop()
			}
		}
	}
	for len(cand) > 0 {
		c := cand.pop()
		if len(res) >= ef && c.d > res[0].d {
			break
		}
		var nbs []uint32
		if locks != nil {
			locks.lock(c.node)
			buf = append(buf[:0], h.neighbours(c.node, l)...)
			locks.unlock(c.node)
			nbs = buf
		} else {
			nbs = h.neighbours(c.node, l)
		}
		// The unvisited neighbours first, then their distances, each
		// vector prefetched while the one before it is scored.
		todo = todo[:0]
		for _, nb := range nbs {
			if vis.visit(nb) {
				todo = append(todo, nb)
			}
		}
		if q.v8 == nil && len(todo) > 0 {
			prefetch(&h.vecs[int(todo[0])*h.dim])
		}
		for i, nb := range todo {
			if q.v8 == nil && i+1 < len(todo) {
				prefetch(&h.vecs[int(todo[i+1])*h.dim])
			}
			d := h.dist(q, nb)
			if len(res) < ef || d < res[0].d {
				cand.push(distNode{d, nb})
				if ok == nil || ok(nb) {
					if len(res) < ef {
						res.push(distNode{d, nb})
					} else {
						res.replaceTop(distNode{d, nb}) // d beats the farthest
					}
				}
			}
		}
	}
	out := make([]distNode, len(res))
	for i := len(res) - 1; i >= 0; i-- {
		out[i] = res.pop()
	}
	return out
}

// Search returns about the k stored vectors most similar to query that match
// filter, best first, with exact cosine scores. Recall depends on the graph
// and efSearch; see [HNSW.SearchEf] to trade latency for recall per query.
func (h *HNSW) Search(ctx context.Context, query []float32, k int, filter Filter) ([]Hit, error) {
	return h.SearchEf(ctx, query, k, 0, filter)
}

// SearchEf is [HNSW.Search] with an explicit candidate list size ef
// (0 uses the index default; at least k is always used).
func (h *HNSW) SearchEf(ctx context.Context, query []float32, k, ef int, filter Filter) ([]Hit, error) {
	q, err := checkQuery(query, k, h.dim)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.live == 0 {
		return nil, nil
	}
	if len(filter) == 0 {
		filter = nil
	}
	if ef <= 0 {
		ef = h.efSearch
	}
	ef = max(ef, k)
	ok := func(n uint32) bool { return !h.dead[n] }
	if filter != nil {
		ef *= filterEfFactor
		ok = func(n uint32) bool { return !h.dead[n] && filter.Match(h.metas[n]) }
	} else if h.live == len(h.ids) {
		ok = nil
	}
	fq := probe{v: q}
	ep := distNode{h.dist(fq, h.entry), h.entry}
	for l := h.top; l > 0; l-- {
		ep = h.greedy(fq, ep, l)
	}
	vis := h.getVisited()
	found := h.searchLayer(fq, []distNode{ep}, ef, 0, vis, ok, nil)
	h.visited.Put(vis)

	want := min(k, h.live)
	if len(found) < want {
		// The graph yielded too few matches (a selective filter, or
		// tombstones cutting the graph): answer exactly instead.
		return h.exact(ctx, q, k, filter)
	}
	t := newTopK(want, h.ids)
	for _, c := range found {
		t.push(scored{-c.d, c.node})
	}
	return toHits(t.sorted(), h.ids), nil
}

// exact scans every live node; the caller holds the read lock.
func (h *HNSW) exact(ctx context.Context, q []float32, k int, filter Filter) ([]Hit, error) {
	t := newTopK(k, h.ids)
	for n := range h.ids {
		if n%scanChunk == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if h.dead[n] || (filter != nil && !filter.Match(h.metas[n])) {
			continue
		}
		t.push(scored{dot(q, h.vec(uint32(n))), uint32(n)})
	}
	return toHits(t.sorted(), h.ids), nil
}

func toHits(s []scored, ids []string) []Hit {
	hits := make([]Hit, len(s))
	for i, c := range s {
		hits[i] = Hit{ID: ids[c.row], Score: c.score}
	}
	return hits
}

// Delete marks the items with the given IDs deleted; unknown IDs are
// ignored. Their nodes stay in the graph as routing-only tombstones until
// [HNSW.Compact].
func (h *HNSW) Delete(ctx context.Context, ids ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		if n, ok := h.nodes[id]; ok {
			h.dead[n] = true
			delete(h.nodes, id)
			h.live--
		}
	}
	h.maybeCompact(ctx)
	return nil
}

// autoCompactMin is the number of tombstones below which the graph is never
// rebuilt automatically.
const autoCompactMin = 1024

// maybeCompact rebuilds the graph once tombstones outnumber live nodes (and
// there are at least autoCompactMin of them), so that deletes and
// replacements never need a manual [HNSW.Compact] and the rebuild's cost is
// amortised over the deletes that caused it. A cancelled rebuild leaves the
// index as it was; the next write tries again. The caller holds the write
// lock.
func (h *HNSW) maybeCompact(ctx context.Context) {
	if dead := len(h.ids) - h.live; dead >= autoCompactMin && dead >= h.live {
		_ = h.compact(ctx) // only a cancellation fails, leaving the index unchanged
	}
}

// Compact rebuilds the graph from the live items, dropping tombstones. It
// holds the write lock for the whole rebuild, which costs about as much as
// inserting every live item again. Writes also compact on their own once
// tombstones outnumber live items, so calling it is only needed to reclaim
// fewer tombstones than that.
func (h *HNSW) Compact(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.compact(ctx)
}

func (h *HNSW) compact(ctx context.Context) error {
	if h.live == len(h.ids) {
		return nil
	}
	fresh := NewHNSW(h.dim, WithM(h.m), WithEfConstruction(h.efConstruction), WithEfSearch(h.efSearch), WithSeed(h.seed))
	items := make([]Item, 0, h.live)
	unit := make([]float32, 0, h.live*h.dim)
	for n, id := range h.ids {
		if !h.dead[n] {
			items = append(items, Item{ID: id, Meta: h.metas[n]})
			unit = append(unit, h.vec(uint32(n))...)
		}
	}
	if err := fresh.insertAll(ctx, items, unit); err != nil {
		return fmt.Errorf("vector: compact interrupted: %w", err)
	}
	h.vecs, h.ids, h.metas, h.dead = fresh.vecs, fresh.ids, fresh.metas, fresh.dead
	h.vecs8, h.scales = fresh.vecs8, fresh.scales
	h.levels, h.links0, h.count0, h.upper = fresh.levels, fresh.links0, fresh.count0, fresh.upper
	h.nodes, h.entry, h.top, h.live, h.rng = fresh.nodes, fresh.entry, fresh.top, fresh.live, fresh.rng
	return nil
}

const hnswMagic = "WEFTHNSW"

// Save writes the index, graph included, to w in Weft's versioned binary
// format (see [LoadHNSW]). It holds a read lock, so searches continue.
func (h *HNSW) Save(w io.Writer) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e := newEncoder(w, hnswMagic)
	e.u32(uint32(h.dim))
	e.u32(uint32(h.m))
	e.u32(uint32(h.efConstruction))
	e.u32(uint32(h.efSearch))
	e.u64(h.seed)
	e.u64(uint64(len(h.ids)))
	e.u32(h.entry)
	e.u32(uint32(int32(h.top)))
	for n, id := range h.ids {
		e.str(id)
		dead := byte(0)
		if h.dead[n] {
			dead = 1
		}
		e.bytes([]byte{dead, h.levels[n]})
		e.meta(h.metas[n])
		e.f32s(h.vec(uint32(n)))
		for l := 0; l <= int(h.levels[n]); l++ {
			nb := h.neighbours(uint32(n), l)
			e.uvarint(uint64(len(nb)))
			e.u32s(nb)
		}
	}
	if err := e.finish(); err != nil {
		return fmt.Errorf("vector: save hnsw index: %w", err)
	}
	return nil
}

// SaveFile writes the index to path atomically.
func (h *HNSW) SaveFile(path string) error {
	return writeFileAtomic(path, h.Save)
}

// LoadHNSW reads an index written by [HNSW.Save]; the graph is restored, not
// rebuilt. Options may change efSearch; the graph's M is fixed by the file.
// A damaged input yields an error wrapping [ErrCorrupt].
func LoadHNSW(r io.Reader, opts ...HNSWOption) (*HNSW, error) {
	d, err := newDecoder(r, hnswMagic)
	if err != nil {
		return nil, err
	}
	dim, m, efc, efs := d.u32(), d.u32(), d.u32(), d.u32()
	seed := d.u64()
	count := d.u64()
	entry := d.u32()
	top := int32(d.u32())
	if d.err != nil {
		return nil, d.fail()
	}
	if dim == 0 || dim > maxDim || m < 2 || m > 127 || count > 1<<32-1 || top < -1 || top > maxLevel ||
		(count == 0) != (top == -1) || (count > 0 && uint64(entry) >= count) {
		return nil, fmt.Errorf("%w: bad header (dim %d, M %d, count %d, entry %d, top %d)", ErrCorrupt, dim, m, count, entry, top)
	}
	base := []HNSWOption{WithM(int(m)), WithEfConstruction(int(efc)), WithEfSearch(int(efs)), WithSeed(seed)}
	h := NewHNSW(int(dim), append(base, opts...)...)
	h.m, h.m0 = int(m), 2*int(m) // the graph's shape is not an option here
	h.ml = 1 / math.Log(float64(h.m))
	vec := make([]float32, dim)
	links := make([]uint32, h.m0)
	corrupt := func(format string, args ...any) (*HNSW, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	for n := range count {
		id := d.str()
		var flags [2]byte
		d.read(flags[:])
		meta := d.meta()
		d.f32s(vec)
		if d.err != nil {
			return nil, d.fail()
		}
		dead, level := flags[0] == 1, int(flags[1])
		if flags[0] > 1 || level > maxLevel || level > int(top) || id == "" {
			return corrupt("node %d: bad flags", n)
		}
		if _, err := checkVector(vec, int(dim)); err != nil {
			return corrupt("node %d: %v", n, err)
		}
		h.appendNode(id, vec, meta, level)
		h.dead[n] = dead
		for l := 0; l <= level; l++ {
			c := d.uvarint()
			if c > uint64(h.maxLinks(l)) {
				return corrupt("node %d: %d links on level %d", n, c, l)
			}
			d.u32s(links[:c])
			if d.err != nil {
				return nil, d.fail()
			}
			list := make([]distNode, c)
			for i, nb := range links[:c] {
				if uint64(nb) >= count {
					return corrupt("node %d: link to node %d of %d", n, nb, count)
				}
				list[i].node = nb
			}
			h.setNeighbours(uint32(n), l, list)
		}
		if !dead {
			if _, dup := h.nodes[id]; dup {
				return corrupt("duplicate live ID %q", id)
			}
			h.nodes[id] = uint32(n)
			h.live++
		}
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	// Links must point at nodes that exist on the linked level.
	for n := range h.ids {
		for l := 0; l <= int(h.levels[n]); l++ {
			for _, nb := range h.neighbours(uint32(n), l) {
				if int(h.levels[nb]) < l {
					return corrupt("node %d: link to node %d on level %d above its level", n, nb, l)
				}
			}
		}
	}
	if count > 0 {
		if int(h.levels[entry]) != int(top) {
			return corrupt("entry node %d is not on the top level %d", entry, top)
		}
		h.entry, h.top = entry, int(top)
	}
	return h, nil
}

// OpenHNSW reads an index saved with [HNSW.SaveFile].
func OpenHNSW(path string, opts ...HNSWOption) (*HNSW, error) {
	return openAndLoad(path, func(r io.Reader) (*HNSW, error) { return LoadHNSW(r, opts...) })
}
