package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/rag"
)

// KeywordRetriever recalls chunks of a knowledge base by PostgreSQL
// full-text search (see the package doc). Scores are ts_rank_cd ranks:
// positive, comparable within one query.
type KeywordRetriever struct {
	kb   *KB
	opts rag.RetrieveOptions
}

// KeywordRetriever returns the knowledge base's keyword retriever. Sources
// carry the knowledge base's ID as Collection unless [rag.InCollection]
// says otherwise.
func (kb *KB) KeywordRetriever(opts ...rag.RetrieveOption) *KeywordRetriever {
	return &KeywordRetriever{kb: kb, opts: kb.options(opts)}
}

func (kb *KB) options(opts []rag.RetrieveOption) rag.RetrieveOptions {
	o := rag.NewRetrieveOptions(append([]rag.RetrieveOption{rag.InCollection(kb.id)}, opts...)...)
	return o
}

// Retrieve returns up to k chunks (the TopK option when k ≤ 0) that best
// match query's terms, best first.
func (r *KeywordRetriever) Retrieve(ctx context.Context, query string, k int) ([]rag.Source, error) {
	chunks, scores, err := r.kb.searchKeywords(ctx, query, r.opts.K(k), r.opts.Filter)
	if err != nil {
		return nil, err
	}
	return sources(chunks, scores, r.opts), nil
}

// VectorRetriever recalls chunks of a knowledge base by pgvector cosine
// distance. Scores are cosine similarities.
type VectorRetriever struct {
	kb    *KB
	embed rag.Embedder
	opts  rag.RetrieveOptions
}

// VectorRetriever returns the knowledge base's vector retriever, embedding
// queries with embedder (the model that embedded the chunks). It fails with
// an error wrapping ErrNoVectorSearch when the store cannot search vectors.
func (kb *KB) VectorRetriever(embedder rag.Embedder, opts ...rag.RetrieveOption) (*VectorRetriever, error) {
	if kb.s.vectorErr != nil {
		return nil, kb.s.vectorErr
	}
	if embedder == nil {
		return nil, errors.New("pgstore: vector retriever: nil embedder")
	}
	return &VectorRetriever{kb: kb, embed: embedder, opts: kb.options(opts)}, nil
}

// Retrieve returns up to k chunks (the TopK option when k ≤ 0) nearest to
// query's embedding, best first.
func (r *VectorRetriever) Retrieve(ctx context.Context, query string, k int) ([]rag.Source, error) {
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	vecs, err := r.embed.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("pgstore: embed query: %w", err)
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("pgstore: embed query: embedder returned %d vectors for 1 text", len(vecs))
	}
	chunks, scores, err := r.kb.searchVectors(ctx, vecs[0], r.opts.K(k), r.opts.Filter)
	if err != nil {
		return nil, err
	}
	return sources(chunks, scores, r.opts), nil
}

func sources(chunks []rag.Chunk, scores []float64, o rag.RetrieveOptions) []rag.Source {
	out := make([]rag.Source, 0, len(chunks))
	for i, c := range chunks {
		if o.Keep(scores[i]) {
			out = append(out, rag.SourceFromChunk(c, scores[i], o.Collection))
		}
	}
	return out
}

// Retriever returns the knowledge base's recall: keyword and vector
// retrievers fused by reciprocal rank fusion. It runs keyword-only, and its
// Describe says why, when embedder is nil ("no embedding model
// configured") or the store cannot search vectors ("vector search
// unavailable: pgvector not installed", …). opts apply to both halves.
func (kb *KB) Retriever(embedder rag.Embedder, opts ...rag.RetrieveOption) *rag.MultiRetriever {
	kw := kb.KeywordRetriever(opts...)
	if embedder == nil {
		return rag.NewHybrid(kw, nil)
	}
	vec, err := kb.VectorRetriever(embedder, opts...)
	if err != nil {
		m := rag.NewHybrid(kw, nil)
		m.Note = err.Error()
		return m
	}
	return rag.NewHybrid(kw, vec)
}
