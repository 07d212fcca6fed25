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
		list  int   // the last list the source was seen in
		ranks []int // one rank per list the source appears in
	}
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	entries := make([]entry, 0, total)
	byKey := make(map[string]int, total)
	for li, list := range lists {
		for i, s := range list {
			key := fusionKey(s)
			rank := i + 1
			idx, ok := byKey[key]
			if !ok {
				byKey[key] = len(entries)
				entries = append(entries, entry{src: s, key: key, best: rank, list: li, ranks: []int{rank}})
				continue
			}
			e := &entries[idx]
			if e.list == li {
				continue // listed twice in one list: the better rank counts
			}
			if rank < e.best {
				e.src, e.best = s, rank
			}
			e.list = li
			e.ranks = append(e.ranks, rank)
		}
	}
	order := make([]*entry, len(entries))
	for i := range entries {
		order[i] = &entries[i]
	}
	for _, e := range order {
		slices.Sort(e.ranks)
		e.src.Score = 0
		for _, r := range e.ranks {
			e.src.Score += 1 / float64(k+r)
		}
	}
	slices.SortStableFunc(order, func(a, b *entry) int {
		if c := cmp.Compare(b.src.Score, a.src.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.best, b.best); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	out := make([]Source, len(order))
	for i, e := range order {
		out[i] = e.src
	}
	return out
}

// fusionKey is what FuseRRF merges sources by.
func fusionKey(s Source) string {
	if s.ID != "" {
		return s.ID
	}
	return "\x00" + s.Content
}
