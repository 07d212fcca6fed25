package vector

// distNode is a graph node with its distance to the current query
// (the negated cosine similarity, so smaller is closer).
type distNode struct {
	d    float32
	node uint32
}

// minHeap pops the closest node first; HNSW's candidate queue.
type minHeap []distNode

func (h *minHeap) push(x distNode) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].d <= s[i].d {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *minHeap) pop() distNode {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	*h = s
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].d < s[l].d {
			m = r
		}
		if s[i].d <= s[m].d {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	return top
}

// maxHeap keeps the farthest node on top; HNSW's bounded result set.
type maxHeap []distNode

func (h *maxHeap) push(x distNode) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].d >= s[i].d {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *maxHeap) pop() distNode {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	*h = s
	s.down()
	return top
}

// replaceTop replaces the farthest node with x, which must not be farther:
// a push followed by a pop in one sift.
func (h maxHeap) replaceTop(x distNode) {
	h[0] = x
	h.down()
}

// down sifts the top node down to its place.
func (h maxHeap) down() {
	s, n := h, len(h)
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].d > s[l].d {
			m = r
		}
		if s[i].d >= s[m].d {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
}
