package rag

import "context"

// Reranker reorders retrieved sources by their relevance to the query, the
// job of a cross-encoder or a scoring model (Cohere, Jina, bge-reranker, an
// LLM asked to grade passages). It returns the sources it keeps, best first,
// with Score set to its own relevance score; it may drop sources but should
// not invent any.
type Reranker interface {
	Rerank(ctx context.Context, query string, sources []Source) ([]Source, error)
}

// RerankerFunc adapts a function to the Reranker interface.
type RerankerFunc func(ctx context.Context, query string, sources []Source) ([]Source, error)

// Rerank calls f(ctx, query, sources).
func (f RerankerFunc) Rerank(ctx context.Context, query string, sources []Source) ([]Source, error) {
	return f(ctx, query, sources)
}
