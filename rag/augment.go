package rag

import (
	"context"

	"github.com/weftlabs/weft/llm"
)

// Source is one retrieved piece of content: a chunk of a document, with
// where it came from and how well it matched.
type Source struct {
	// ID identifies the chunk.
	ID string `json:"id"`
	// DocumentID and DocumentName identify the document the chunk belongs to.
	DocumentID   string `json:"document_id,omitempty"`
	DocumentName string `json:"document_name,omitempty"`
	// Collection identifies the knowledge base (collection) searched.
	Collection string `json:"collection,omitempty"`
	// Content is the chunk's text.
	Content string `json:"content"`
	// Score is the retriever's (or the fusion's, or the reranker's) score;
	// higher is better.
	Score float64 `json:"score"`
	// Metadata carries the chunk's metadata (source, title, headings, page, …).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Query is what retrieval gets: the user's text, the whole user message and
// the conversation before it.
type Query struct {
	Text    string
	Message llm.Message
	History []llm.Message
}

// Augmentation is the result of retrieval augmentation: the user message
// with the retrieved content injected, and the sources used.
type Augmentation struct {
	Message llm.Message
	Sources []Source
}

// Augmentor is the retrieval hook of Weft's pipeline (see package ai): it
// turns a user message into an augmented one. An Augmentor should degrade
// rather than fail; the pipeline treats its error as "no augmentation" unless
// configured otherwise.
type Augmentor interface {
	Augment(ctx context.Context, q Query) (Augmentation, error)
}

// AugmentorFunc adapts a function to the Augmentor interface.
type AugmentorFunc func(ctx context.Context, q Query) (Augmentation, error)

// Augment calls f(ctx, q).
func (f AugmentorFunc) Augment(ctx context.Context, q Query) (Augmentation, error) { return f(ctx, q) }

// Retriever finds the sources most relevant to a query, best first.
type Retriever interface {
	Retrieve(ctx context.Context, query string, k int) ([]Source, error)
}

// RetrieverFunc adapts a function to the Retriever interface.
type RetrieverFunc func(ctx context.Context, query string, k int) ([]Source, error)

// Retrieve calls f(ctx, query, k).
func (f RetrieverFunc) Retrieve(ctx context.Context, query string, k int) ([]Source, error) {
	return f(ctx, query, k)
}
