package vector

import "slices"

// scored is a candidate row with its similarity.
type scored struct {
	score float32
	row   uint32
}

// topK keeps the k best candidates seen so far in a fixed-capacity binary
// min-heap whose root is the worst kept candidate, so a candidate that cannot
// enter costs one comparison. Equal scores are ordered by ID (smaller ID is
// better) so results do not depend on insertion order or worker split.
type topK struct {
	k    int
	h    []scored
	ids  []string // row → ID, for tie-breaks
	full bool
}

func newTopK(k int, ids []string) *topK {
	return &topK{k: k, h: make([]scored, 0, k), ids: ids}
}

// worse reports whether a ranks below b.
func (t *topK) worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return t.ids[a.row] > t.ids[b.row]
}

// threshold returns the score a candidate must reach to be considered, or
// -Inf semantics via ok=false while the heap is not full.
func (t *topK) threshold() (float32, bool) {
	if !t.full {
		return 0, false
	}
	return t.h[0].score, true
}

func (t *topK) push(c scored) {
	if !t.full {
		t.h = append(t.h, c)
		t.up(len(t.h) - 1)
		t.full = len(t.h) == t.k
		return
	}
	if !t.worse(t.h[0], c) {
		return
	}
	t.h[0] = c
	t.down(0)
}

func (t *topK) up(i int) {
	h := t.h
	for i > 0 {
		p := (i - 1) / 2
		if !t.worse(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (t *topK) down(i int) {
	h := t.h
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && t.worse(h[r], h[l]) {
			m = r
		}
		if !t.worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// sorted returns the kept candidates best first. It consumes the heap.
func (t *topK) sorted() []scored {
	out := t.h
	slices.SortFunc(out, func(a, b scored) int {
		switch {
		case t.worse(b, a):
			return -1
		case t.worse(a, b):
			return 1
		}
		return 0
	})
	return out
}
