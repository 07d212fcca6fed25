package rag

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/weftlabs/weft/rag/keyword"
	"github.com/weftlabs/weft/rag/vector"
)

// DefaultTopK is how many sources a retriever returns when asked for k ≤ 0.
const DefaultTopK = 5

// ChunkReader gives retrievers the stored chunks behind index hits: the
// embedded indexes keep IDs, vectors and terms, not text. [EmbeddedIndex]
// implements it.
type ChunkReader interface {
	// ReadChunks returns the chunks with the given IDs that exist, in any
	// order; IDs without a chunk are left out, not an error.
	ReadChunks(ctx context.Context, ids []string) ([]Chunk, error)
}

// ChunkReaderFunc adapts a function to the ChunkReader interface.
type ChunkReaderFunc func(ctx context.Context, ids []string) ([]Chunk, error)

// ReadChunks calls f(ctx, ids).
func (f ChunkReaderFunc) ReadChunks(ctx context.Context, ids []string) ([]Chunk, error) {
	return f(ctx, ids)
}

// RetrieveOptions is the configuration every retriever of this package (and
// of stores such as rag/pgstore) shares. Build it with [NewRetrieveOptions].
type RetrieveOptions struct {
	// TopK is used when Retrieve is called with k ≤ 0 (default DefaultTopK).
	TopK int
	// MinScore drops hits whose score, in the retriever's own scale (cosine
	// similarity for vectors, BM25 or ts_rank_cd for keywords), is below it.
	// It is applied by each retriever to its own hits, before any fusion.
	// The default, 0, drops only vector hits pointing away from the query
	// (negative cosine similarity); keyword scores are never negative. Use
	// -1 to keep every vector hit.
	MinScore float64
	// Filter keeps only chunks whose metadata holds every pair.
	Filter map[string]string
	// Collection is copied into every Source's Collection.
	Collection string
}

// RetrieveOption configures a retriever.
type RetrieveOption func(*RetrieveOptions)

// NewRetrieveOptions applies opts over the defaults.
func NewRetrieveOptions(opts ...RetrieveOption) RetrieveOptions {
	o := RetrieveOptions{TopK: DefaultTopK}
	for _, opt := range opts {
		opt(&o)
	}
	if o.TopK < 1 {
		o.TopK = DefaultTopK
	}
	return o
}

// K returns k, or TopK when k ≤ 0.
func (o RetrieveOptions) K(k int) int {
	if k < 1 {
		return o.TopK
	}
	return k
}

// Keep reports whether a hit with the given score passes MinScore.
func (o RetrieveOptions) Keep(score float64) bool { return score >= o.MinScore }

// TopK sets how many sources Retrieve returns when called with k ≤ 0.
func TopK(k int) RetrieveOption { return func(o *RetrieveOptions) { o.TopK = k } }

// MinScore drops hits scoring below s in the retriever's own scale (see
// [RetrieveOptions].MinScore).
func MinScore(s float64) RetrieveOption {
	return func(o *RetrieveOptions) { o.MinScore = s }
}

// MatchMetadata keeps only chunks whose metadata holds every key=value pair
// of f (for example {"document_id": "doc_…"}).
func MatchMetadata(f map[string]string) RetrieveOption {
	return func(o *RetrieveOptions) { o.Filter = maps.Clone(f) }
}

// InCollection names the knowledge base searched; sources carry it.
func InCollection(name string) RetrieveOption {
	return func(o *RetrieveOptions) { o.Collection = name }
}

// SourceFromChunk makes the Source for a chunk found with the given score.
func SourceFromChunk(c Chunk, score float64, collection string) Source {
	return Source{
		ID:           c.ID,
		DocumentID:   c.DocumentID,
		DocumentName: c.Metadata[MetaName],
		Collection:   collection,
		Content:      c.Text,
		Score:        score,
		Metadata:     c.Metadata,
	}
}

// VectorRetriever finds chunks by embedding similarity: it embeds the query,
// searches a [vector.Index] and reads the hits' chunks. Scores are cosine
// similarities in [-1, 1].
type VectorRetriever struct {
	index  vector.Index
	embed  Embedder
	chunks ChunkReader
	opts   RetrieveOptions
}

// NewVectorRetriever returns a retriever over index, embedding queries with
// embedder (the same model that embedded the chunks: a [ModelEmbedder],
// perhaps behind a [CachedEmbedder]) and reading chunk text from chunks
// (an [EmbeddedIndex] is one).
func NewVectorRetriever(index vector.Index, embedder Embedder, chunks ChunkReader, opts ...RetrieveOption) (*VectorRetriever, error) {
	switch {
	case index == nil:
		return nil, errors.New("rag: vector retriever: nil index")
	case embedder == nil:
		return nil, errors.New("rag: vector retriever: nil embedding model")
	case chunks == nil:
		return nil, errors.New("rag: vector retriever: nil chunk reader")
	}
	return &VectorRetriever{index: index, embed: embedder, chunks: chunks, opts: NewRetrieveOptions(opts...)}, nil
}

// Retrieve returns up to k chunks most similar to query (TopK when k ≤ 0),
// best first. A blank query finds nothing without calling the model.
func (r *VectorRetriever) Retrieve(ctx context.Context, query string, k int) ([]Source, error) {
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	k = r.opts.K(k)
	vecs, err := r.embed.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("rag: embed query: %w", err)
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("rag: embed query: embedder returned %d vectors for 1 text", len(vecs))
	}
	hits, err := r.index.Search(ctx, vecs[0], k, vector.Filter(r.opts.Filter))
	if err != nil {
		return nil, fmt.Errorf("rag: vector search: %w", err)
	}
	ids := make([]string, 0, len(hits))
	scores := make([]float64, 0, len(hits))
	for _, h := range hits {
		if r.opts.Keep(float64(h.Score)) {
			ids = append(ids, h.ID)
			scores = append(scores, float64(h.Score))
		}
	}
	return resolve(ctx, r.chunks, ids, scores, r.opts.Collection)
}

// KeywordIndex is the search half of a full-text index; *keyword.Index
// implements it.
type KeywordIndex interface {
	Search(ctx context.Context, query string, k int, f keyword.Filter) ([]keyword.Hit, error)
}

// KeywordRetriever finds chunks by BM25 over a keyword index. Scores are BM25
// scores: positive, unbounded, comparable within one query only.
type KeywordRetriever struct {
	index  KeywordIndex
	chunks ChunkReader
	opts   RetrieveOptions
}

// NewKeywordRetriever returns a retriever over index, reading chunk text from
// chunks.
func NewKeywordRetriever(index KeywordIndex, chunks ChunkReader, opts ...RetrieveOption) (*KeywordRetriever, error) {
	switch {
	case index == nil:
		return nil, errors.New("rag: keyword retriever: nil index")
	case chunks == nil:
		return nil, errors.New("rag: keyword retriever: nil chunk reader")
	}
	return &KeywordRetriever{index: index, chunks: chunks, opts: NewRetrieveOptions(opts...)}, nil
}

// Retrieve returns up to k chunks that best match query's terms (TopK when
// k ≤ 0), best first.
func (r *KeywordRetriever) Retrieve(ctx context.Context, query string, k int) ([]Source, error) {
	hits, err := r.index.Search(ctx, query, r.opts.K(k), keyword.Filter(r.opts.Filter))
	if err != nil {
		return nil, fmt.Errorf("rag: keyword search: %w", err)
	}
	ids := make([]string, 0, len(hits))
	scores := make([]float64, 0, len(hits))
	for _, h := range hits {
		if r.opts.Keep(float64(h.Score)) {
			ids = append(ids, h.ID)
			scores = append(scores, float64(h.Score))
		}
	}
	return resolve(ctx, r.chunks, ids, scores, r.opts.Collection)
}

// resolve reads the chunks of ranked hits and keeps the ranking; hits whose
// chunk is gone (deleted between index and store) are dropped.
func resolve(ctx context.Context, chunks ChunkReader, ids []string, scores []float64, collection string) ([]Source, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	found, err := chunks.ReadChunks(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("rag: read chunks: %w", err)
	}
	byID := make(map[string]Chunk, len(found))
	for _, c := range found {
		byID[c.ID] = c
	}
	out := make([]Source, 0, len(ids))
	for i, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, SourceFromChunk(c, scores[i], collection))
		}
	}
	return out, nil
}
