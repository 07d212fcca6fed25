package rag

import (
	"cmp"
	"slices"
)

// DefaultRRFK is the constant k of reciprocal rank fusion: the value Cormack,
// Clarke and Büttcher (2009) found robust across collections, and the one
// Elasticsearch, OpenSearch and most hybrid-search engines use.
const DefaultRRFK = 60

// FuseRRF merges ranked lists of sources by reciprocal rank fusion. Sources
// are merged by ID (a source without an ID is merged by its content); each
// list a source appears in adds 1/(k+rank) to its score, with rank counted
// from 1. A source listed twice in one list counts once, at its better rank.
// A k below 1 means [DefaultRRFK].
//
// The fused Source's Score is its RRF score, in (0, n/(k+1)] for n lists; it
// replaces the retrievers' own scores, which are not comparable with each
// other (cosine similarity, BM25). The other fields are taken from the
// occurrence with the best rank (the earlier list on a tie).
//
// The result is ordered by fused score, then by best rank in any list, then
// by ID, so equal inputs always give the same order. Scores are summed in
// ascending rank order, so two sources with the same ranks get bit-identical
// scores whatever the order of the lists.
func FuseRRF(k int, lists ...[]Source) []Source {
	if k < 1 {
		k = DefaultRRFK
	}
	type entry struct {
		src   Source
		key   string
		best  int   // best (smallest) rank, from 1
		ranks []int // one rank per list the source appears in
	}
	var order []*entry
	byKey := make(map[string]*entry)
	for _, list := range lists {
		seen := make(map[string]bool, len(list))
		for i, s := range list {
			key := fusionKey(s)
			if seen[key] {
				continue
			}
			seen[key] = true
			rank := i + 1
			e, ok := byKey[key]
			if !ok {
				e = &entry{src: s, key: key, best: rank}
				byKey[key] = e
				order = append(order, e)
			} else if rank < e.best {
				e.src, e.best = s, rank
			}
			e.ranks = append(e.ranks, rank)
		}
	}
	out := make([]Source, 0, len(order))
	scores := make(map[string]float64, len(order))
	for _, e := range order {
		slices.Sort(e.ranks)
		var score float64
		for _, r := range e.ranks {
			score += 1 / float64(k+r)
		}
		s := e.src
		s.Score = score
		scores[e.key] = score
		out = append(out, s)
	}
	best := make(map[string]int, len(order))
	for _, e := range order {
		best[e.key] = e.best
	}
	slices.SortStableFunc(out, func(a, b Source) int {
		ka, kb := fusionKey(a), fusionKey(b)
		if c := cmp.Compare(scores[kb], scores[ka]); c != 0 {
			return c
		}
		if c := cmp.Compare(best[ka], best[kb]); c != 0 {
			return c
		}
		return cmp.Compare(ka, kb)
	})
	return out
}

// fusionKey is what FuseRRF merges sources by.
func fusionKey(s Source) string {
	if s.ID != "" {
		return s.ID
	}
	return "\x00" + s.Content
}
