// Package keyword is Weft's embedded full-text index: BM25 ranking over an
// in-memory inverted index, with the same metadata filters as package
// vector, persisted to a versioned, checksummed binary file.
//
// Text is split by [Tokenize] (English words with stop words and light
// stemming, CJK as character bigrams). An [Index] is safe for concurrent
// use: searches run in parallel, writes are serialised.
package keyword

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/weftlabs/weft/rag/vector"
)

// Doc is one document to index: an ID unique within the index, its text,
// and optional metadata for filters. The index keeps the terms and a copy of
// the metadata, not the text.
type Doc struct {
	ID   string
	Text string
	Meta map[string]string
}

// Hit is one search result: a document ID and its BM25 score (higher is
// better; scores are comparable within one query only).
type Hit struct {
	ID    string
	Score float32
}

// Filter restricts a search to documents whose metadata holds every
// key=value pair; it is the same type as [vector.Filter], so one filter
// serves both halves of a hybrid search.
type Filter = vector.Filter

// Option configures an [Index].
type Option func(*Index)

// WithK1 sets BM25's term-frequency saturation (default 1.2).
func WithK1(k1 float64) Option {
	return func(ix *Index) { ix.k1 = float32(k1) }
}

// WithB sets BM25's length normalisation, from 0 (none) to 1 (full);
// default 0.75.
func WithB(b float64) Option {
	return func(ix *Index) { ix.b = float32(b) }
}

var (
	// ErrInvalidK reports a non-positive result count.
	ErrInvalidK = errors.New("keyword: k must be positive")
	// ErrInvalidID reports a document with an empty ID.
	ErrInvalidID = errors.New("keyword: empty document ID")
	// ErrCorrupt reports a persisted index that cannot be read back: bad
	// magic, unsupported version, truncation or checksum mismatch.
	ErrCorrupt = errors.New("keyword: corrupt index file")
)

// posting records that a document contains a term tf times. It also
// carries the document's length so that scoring reads postings sequentially
// instead of looking lengths up at random; both saturate at 65535, far
// beyond where BM25's saturation and length normalisation change a ranking
// (a retrieval chunk is a few hundred terms). The struct is 8 bytes either
// way: the length fills what would be padding.
type posting struct {
	doc uint32
	tf  uint16
	dl  uint16
}

func sat16[T uint32 | uint64 | int](v T) uint16 { return uint16(min(v, math.MaxUint16)) }

// Index is a BM25 inverted index. Deleted and replaced documents become
// tombstones that searches skip; once they outnumber live documents the
// postings are compacted in place.
type Index struct {
	mu    sync.RWMutex
	k1, b float32

	terms    map[string]uint32 // term → term number
	postings [][]posting       // by term number, ascending doc
	df       []uint32          // live documents per term

	ids      []string
	metas    []map[string]string
	lens     []uint32   // terms per document
	docTerms [][]uint32 // distinct term numbers per document, for deletes
	dead     []bool
	docs     map[string]uint32 // live ID → document number
	live     int
	totalLen uint64 // over live documents

	scratch sync.Pool // *accumulator
}

// New returns an empty index with BM25 parameters k1=1.2, b=0.75 unless
// overridden.
func New(opts ...Option) *Index {
	ix := &Index{k1: 1.2, b: 0.75, terms: make(map[string]uint32), docs: make(map[string]uint32)}
	for _, o := range opts {
		o(ix)
	}
	if !(ix.k1 >= 0) || math.IsInf(float64(ix.k1), 0) {
		ix.k1 = 1.2
	}
	if !(ix.b >= 0 && ix.b <= 1) {
		ix.b = 0.75
	}
	return ix
}

// Len reports the number of live documents.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.live
}

// Add indexes docs, replacing any document with the same ID. The batch is
// validated and tokenised before the index is locked; on error nothing is
// added.
func (ix *Index) Add(ctx context.Context, docs ...Doc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	toks := make([][]string, len(docs))
	for i, d := range docs {
		if d.ID == "" {
			return fmt.Errorf("document %d: %w", i, ErrInvalidID)
		}
		toks[i] = Tokenize(d.Text)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for i, d := range docs {
		ix.remove(d.ID)
		ix.insert(d.ID, toks[i], copyMeta(d.Meta))
	}
	ix.maybeCompact()
	return nil
}

func (ix *Index) insert(id string, toks []string, meta map[string]string) {
	n := uint32(len(ix.ids))
	counts := make(map[uint32]uint32, len(toks))
	for _, tok := range toks {
		t, ok := ix.terms[tok]
		if !ok {
			t = uint32(len(ix.postings))
			ix.terms[tok] = t
			ix.postings = append(ix.postings, nil)
			ix.df = append(ix.df, 0)
		}
		counts[t]++
	}
	distinct := make([]uint32, 0, len(counts))
	for t, c := range counts {
		ix.postings[t] = append(ix.postings[t], posting{n, sat16(c), sat16(len(toks))})
		ix.df[t]++
		distinct = append(distinct, t)
	}
	ix.ids = append(ix.ids, id)
	ix.metas = append(ix.metas, meta)
	ix.lens = append(ix.lens, uint32(len(toks)))
	ix.docTerms = append(ix.docTerms, distinct)
	ix.dead = append(ix.dead, false)
	ix.docs[id] = n
	ix.live++
	ix.totalLen += uint64(len(toks))
}

// remove tombstones the live document id, if any.
func (ix *Index) remove(id string) {
	n, ok := ix.docs[id]
	if !ok {
		return
	}
	delete(ix.docs, id)
	ix.dead[n] = true
	ix.live--
	ix.totalLen -= uint64(ix.lens[n])
	for _, t := range ix.docTerms[n] {
		ix.df[t]--
	}
	ix.docTerms[n] = nil
	ix.metas[n] = nil
}

// Delete removes the documents with the given IDs; unknown IDs are ignored.
func (ix *Index) Delete(ctx context.Context, ids ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, id := range ids {
		ix.remove(id)
	}
	ix.maybeCompact()
	return nil
}

// maybeCompact rewrites the postings without tombstones once they are the
// majority, so the cost is amortised over the deletes that caused it.
func (ix *Index) maybeCompact() {
	deadCount := len(ix.ids) - ix.live
	if deadCount < 1024 || deadCount < ix.live {
		return
	}
	remap := make([]uint32, len(ix.ids))
	var next uint32
	for n := range ix.ids {
		if !ix.dead[n] {
			remap[n] = next
			next++
		}
	}
	for t, ps := range ix.postings {
		out := ps[:0]
		for _, p := range ps {
			if !ix.dead[p.doc] {
				out = append(out, posting{remap[p.doc], p.tf, p.dl})
			}
		}
		ix.postings[t] = slices.Clip(out)
	}
	keep := func(n int) bool { return !ix.dead[n] }
	ix.ids = compact(ix.ids, keep)
	ix.metas = compact(ix.metas, keep)
	ix.lens = compact(ix.lens, keep)
	ix.docTerms = compact(ix.docTerms, keep)
	ix.dead = make([]bool, len(ix.ids))
	for n, id := range ix.ids {
		ix.docs[id] = uint32(n)
	}
}

func compact[T any](s []T, keep func(int) bool) []T {
	out := s[:0]
	for i := range s {
		if keep(i) {
			out = append(out, s[i])
		}
	}
	clear(s[len(out):])
	return slices.Clip(out)
}

// accumulator holds per-document scores for one search; only touched
// entries are non-zero, and they are reset before it is pooled again.
type accumulator struct {
	score   []float32
	touched []uint32
}

// Search returns up to k documents that best match query under BM25 and
// satisfy filter, best first, ties broken by ascending ID. Repeated query
// terms count once. A query with no indexable terms returns no hits.
func (ix *Index) Search(ctx context.Context, query string, k int, filter Filter) ([]Hit, error) {
	if k <= 0 {
		return nil, fmt.Errorf("%w: got %d", ErrInvalidK, k)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	toks := Tokenize(query)
	slices.Sort(toks)
	toks = slices.Compact(toks)
	if len(filter) == 0 {
		filter = nil
	}

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.live == 0 {
		return nil, nil
	}
	acc, _ := ix.scratch.Get().(*accumulator)
	if acc == nil || len(acc.score) < len(ix.ids) {
		acc = &accumulator{score: make([]float32, len(ix.ids)+len(ix.ids)/4)}
	}
	defer func() {
		for _, d := range acc.touched {
			acc.score[d] = 0
		}
		acc.touched = acc.touched[:0]
		ix.scratch.Put(acc)
	}()

	// BM25 with Lucene's non-negative IDF:
	//   idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))
	//   score  = Σ idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))
	// The denominator's length part is A + B·len, computed per posting.
	n := float64(ix.live)
	avg := float32(float64(ix.totalLen) / n)
	if avg == 0 {
		avg = 1
	}
	normA := ix.k1 * (1 - ix.b)
	normB := ix.k1 * ix.b / avg
	k1p1 := ix.k1 + 1

	// Terms are scored rarest first. Each term contributes less than its
	// bound idf·(k1+1), so once the k-th best partial score exceeds the sum
	// of the bounds of the terms still to come, no document that has not
	// matched yet can reach the top k: the remaining (long, common-word)
	// postings are then only probed for documents already scored, by binary
	// search, instead of being walked (MaxScore, Turtle & Flood 1995).
	qts := make([]qterm, 0, len(toks))
	for _, tok := range toks {
		t, ok := ix.terms[tok]
		if !ok || ix.df[t] == 0 {
			continue
		}
		df := float64(ix.df[t])
		w := float32(math.Log(1+(n-df+0.5)/(df+0.5))) * k1p1
		qts = append(qts, qterm{w: w, ps: ix.postings[t]})
	}
	slices.SortStableFunc(qts, func(a, b qterm) int { return len(a.ps) - len(b.ps) })
	var rest float32 // sum of the bounds of terms not yet scored
	var restPostings int
	for _, qt := range qts {
		rest += qt.w
		restPostings += len(qt.ps)
	}
	score, dead := acc.score, ix.dead
	tombstones := ix.live != len(ix.ids)
	probing := false
	for _, qt := range qts {
		if !probing && len(acc.touched) >= k && 4*len(acc.touched) < restPostings &&
			ix.kth(acc, k, filter) > rest {
			probing = true
			slices.Sort(acc.touched)
		}
		rest -= qt.w
		restPostings -= len(qt.ps)
		w := qt.w
		if probing {
			ps := qt.ps
			for _, d := range acc.touched {
				i, found := slices.BinarySearchFunc(ps, d, func(p posting, d uint32) int { return int(p.doc) - int(d) })
				ps = ps[i:]
				if found {
					tf := float32(ps[0].tf)
					score[d] += w * tf / (tf + normA + normB*float32(ps[0].dl))
				}
			}
			continue
		}
		for _, p := range qt.ps {
			if tombstones && dead[p.doc] {
				continue
			}
			tf := float32(p.tf)
			s := w * tf / (tf + normA + normB*float32(p.dl))
			if score[p.doc] == 0 {
				acc.touched = append(acc.touched, p.doc)
			}
			score[p.doc] += s
		}
	}

	top := topK{k: k, ids: ix.ids}
	for _, d := range acc.touched {
		s := score[d]
		if top.full() && s < top.h[0].score {
			continue
		}
		if filter != nil && !filter.Match(ix.metas[d]) {
			continue
		}
		top.push(cand{s, d})
	}
	best := top.sorted()
	hits := make([]Hit, len(best))
	for i, c := range best {
		hits[i] = Hit{ID: ix.ids[c.doc], Score: c.score}
	}
	return hits, nil
}

// qterm is one query term: its score bound idf·(k1+1) and postings.
type qterm struct {
	w  float32
	ps []posting
}

// kth returns the k-th best partial score among scored documents that match
// filter, or 0 when fewer than k do.
func (ix *Index) kth(acc *accumulator, k int, filter Filter) float32 {
	h := make([]float32, 0, k) // min-heap of the k best
	for _, d := range acc.touched {
		s := acc.score[d]
		if len(h) == k && s <= h[0] {
			continue
		}
		if filter != nil && !filter.Match(ix.metas[d]) {
			continue
		}
		if len(h) < k {
			h = append(h, s)
			for i := len(h) - 1; i > 0 && h[(i-1)/2] > h[i]; i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
			continue
		}
		h[0] = s
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < k && h[l] < h[m] {
				m = l
			}
			if l+1 < k && h[l+1] < h[m] {
				m = l + 1
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	if len(h) < k {
		return 0
	}
	return h[0]
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

type cand struct {
	score float32
	doc   uint32
}

// topK keeps the k best candidates in a min-heap whose root is the worst
// kept; equal scores rank by ascending ID.
type topK struct {
	k   int
	h   []cand
	ids []string
}

func (t *topK) full() bool { return len(t.h) == t.k }

func (t *topK) worse(a, b cand) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return t.ids[a.doc] > t.ids[b.doc]
}

func (t *topK) push(c cand) {
	if !t.full() {
		t.h = append(t.h, c)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !t.worse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if !t.worse(t.h[0], c) {
		return
	}
	t.h[0] = c
	for i, n := 0, len(t.h); ; {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && t.worse(t.h[r], t.h[l]) {
			m = r
		}
		if !t.worse(t.h[m], t.h[i]) {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

func (t *topK) sorted() []cand {
	slices.SortFunc(t.h, func(a, b cand) int {
		switch {
		case t.worse(b, a):
			return -1
		case t.worse(a, b):
			return 1
		}
		return 0
	})
	return t.h
}
