package tokens

// Byte-pair merging, as tiktoken's _byte_pair_merge does it: start from one
// part per byte and repeatedly merge the adjacent pair whose concatenation
// has the lowest rank (the leftmost on ties) until no pair is a token. The
// rank of the merged pair is the token of the merged part, so the tokens
// fall out of the merge without a final lookup.

// scanLimit is the piece length up to which a linear scan finds the next
// merge (tiktoken's way, quickest for short pieces); longer pieces, such as
// runs of CJK letters, use a heap so that a piece costs O(n log n) rather
// than O(n²).
const scanLimit = 16

// scratch holds the buffers of the merges of one Count or Encode call, so
// that counting does not allocate once a pooled scratch has grown.
type scratch struct {
	hit   [cacheMaxTokens]uint32
	start []int32
	rank  []uint32
	tok   []uint32
	nodes []node
	heap  []cand
}

// tokens returns the tokens of a piece that is not itself a token, from the
// cache or by merging. The result aliases sc.
func (v *vocab) tokens(p string, sc *scratch) []uint32 {
	if len(p) > cacheMaxBytes {
		return v.merge(p, sc)
	}
	if n, ok := v.cache.get(p, &sc.hit); ok {
		return sc.hit[:n]
	}
	toks := v.merge(p, sc)
	v.cache.put(p, toks)
	return toks
}

// merge returns the tokens of a piece that is not itself a token. The
// result aliases sc.
func (v *vocab) merge(p string, sc *scratch) []uint32 {
	if len(p) > scanLimit {
		return v.mergeHeap(p, sc)
	}
	n := len(p)
	if cap(sc.start) < n+1 {
		sc.start = make([]int32, n+1, scanLimit+1)
		sc.rank = make([]uint32, n, scanLimit)
		sc.tok = make([]uint32, n, scanLimit)
	}
	start, rank, tok := sc.start[:n+1], sc.rank[:n], sc.tok[:n]
	for i := range n {
		start[i] = int32(i)
		tok[i] = v.byteRank[p[i]]
	}
	start[n] = int32(n)
	for i := range n - 1 {
		rank[i] = v.pair(p[i], p[i+1])
	}
	rank[n-1] = noRank
	m := n // parts; part i is p[start[i]:start[i+1]], rank[i] that of parts i and i+1
	for m > 1 {
		best, at := uint32(noRank), -1
		for i, r := range rank[:m-1] {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		tok[at] = best
		copy(start[at+1:m], start[at+2:m+1])
		copy(rank[at+1:m-1], rank[at+2:m])
		copy(tok[at+1:m-1], tok[at+2:m])
		m--
		if at+1 < m {
			rank[at] = v.mergeRank(p[start[at]:start[at+2]])
		} else {
			rank[at] = noRank
		}
		if at > 0 {
			rank[at-1] = v.mergeRank(p[start[at-1]:start[at+1]])
		}
	}
	return tok[:m]
}

// node is a part of a piece in mergeHeap, kept in a list indexed by the
// part's start offset; rank is that of merging it with the next part.
type node struct {
	prev, next int32
	rank, tok  uint32
}

// cand is a possible merge: the part at pos with its successor.
type cand struct {
	rank uint32
	pos  int32
}

// mergeHeap is merge for long pieces. Stale heap entries (for parts that
// have grown or vanished) are skipped when popped: a part's pair only ever
// grows, so its rank never takes an old value again.
func (v *vocab) mergeHeap(p string, sc *scratch) []uint32 {
	n := int32(len(p))
	if cap(sc.nodes) < int(n)+1 {
		sc.nodes = make([]node, n+1)
	}
	nodes := sc.nodes[:n+1]
	for i := range n {
		nodes[i] = node{prev: i - 1, next: i + 1, rank: noRank, tok: v.byteRank[p[i]]}
	}
	nodes[n] = node{prev: n - 1, next: -1, rank: noRank} // end sentinel
	pair := func(i int32) uint32 {
		j := nodes[i].next
		if j >= n {
			return noRank
		}
		return v.mergeRank(p[i:nodes[j].next])
	}
	h := sc.heap[:0]
	for i := range n - 1 {
		if r := v.pair(p[i], p[i+1]); r != noRank {
			nodes[i].rank = r
			h = append(h, cand{r, i})
		}
	}
	heapInit(h)
	for len(h) > 0 {
		top := h[0]
		h = heapPop(h)
		i := top.pos
		if nodes[i].rank != top.rank {
			continue
		}
		j := nodes[i].next
		k := nodes[j].next
		nodes[i].tok = top.rank
		nodes[i].next = k
		nodes[k].prev = i
		nodes[j].rank = noRank
		if r := pair(i); r != noRank {
			nodes[i].rank = r
			h = heapPush(h, cand{r, i})
		} else {
			nodes[i].rank = noRank
		}
		if pi := nodes[i].prev; pi >= 0 {
			if r := pair(pi); r != noRank {
				nodes[pi].rank = r
				h = heapPush(h, cand{r, pi})
			} else {
				nodes[pi].rank = noRank
			}
		}
	}
	sc.heap = h
	out := sc.tok[:0]
	for i := int32(0); i < n; i = nodes[i].next {
		out = append(out, nodes[i].tok)
	}
	sc.tok = out
	return out
}

// The heap orders candidates by rank, then position, so that equal ranks
// merge leftmost first. It is typed, unlike container/heap, so that it
// neither allocates nor calls through an interface.

func candLess(a, b cand) bool { return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos }

func heapInit(h []cand) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		heapDown(h, i)
	}
}

func heapPush(h []cand, c cand) []cand {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !candLess(h[i], h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	return h
}

func heapPop(h []cand) []cand {
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	heapDown(h, 0)
	return h
}

func heapDown(h []cand, i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && candLess(h[r], h[c]) {
			c = r
		}
		if !candLess(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
