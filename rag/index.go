package rag

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/weftlabs/weft/rag/keyword"
	"github.com/weftlabs/weft/rag/vector"
)

// ChunkIndex is where the ingestion pipeline writes chunks: the embedded
// indexes ([EmbeddedIndex]) or a database store. Implementations are safe
// for concurrent use.
type ChunkIndex interface {
	// Upsert stores chunks, replacing any with the same IDs. vectors is nil
	// when no embedder is configured (keyword-only indexing); otherwise it
	// holds one vector per chunk.
	Upsert(ctx context.Context, chunks []Chunk, vectors [][]float32) error
	// ChunkIDs returns the IDs of the chunks stored for a document, in any
	// order (none for an unknown document).
	ChunkIDs(ctx context.Context, documentID string) ([]string, error)
	// Delete removes the chunks with the given IDs; unknown IDs are ignored.
	Delete(ctx context.Context, ids ...string) error
	// DeleteDocument removes every chunk of a document.
	DeleteDocument(ctx context.Context, documentID string) error
}

// EmbeddedIndex is the in-process [ChunkIndex]: vectors go to a
// [vector.Index], text to a [keyword.Index] (BM25), and the chunks
// themselves to an in-memory store that retrievers read through
// [EmbeddedIndex.ReadChunks] (it implements [ChunkReader]). Every index
// entry carries the chunk's metadata, document_id included, for filters.
type EmbeddedIndex struct {
	vectors  vector.Index
	keywords *keyword.Index

	mu     sync.RWMutex
	chunks map[string]Chunk
	byDoc  map[string]map[string]struct{}
}

// NewEmbeddedIndex returns an index over vectors and keywords. Either may be
// nil (keyword-only or vector-only search), not both.
func NewEmbeddedIndex(vectors vector.Index, keywords *keyword.Index) (*EmbeddedIndex, error) {
	if vectors == nil && keywords == nil {
		return nil, errors.New("rag: embedded index: needs a vector index, a keyword index or both")
	}
	return &EmbeddedIndex{
		vectors:  vectors,
		keywords: keywords,
		chunks:   map[string]Chunk{},
		byDoc:    map[string]map[string]struct{}{},
	}, nil
}

// Vectors returns the vector index (nil if none).
func (ix *EmbeddedIndex) Vectors() vector.Index { return ix.vectors }

// Keywords returns the keyword index (nil if none).
func (ix *EmbeddedIndex) Keywords() *keyword.Index { return ix.keywords }

// Upsert indexes chunks in both indexes and stores them. Without vectors
// (keyword-only ingestion) the vector index is left alone. If the keyword
// index fails after the vectors were added, the vectors are removed again.
func (ix *EmbeddedIndex) Upsert(ctx context.Context, chunks []Chunk, vectors [][]float32) error {
	if vectors != nil && len(vectors) != len(chunks) {
		return fmt.Errorf("rag: upsert: %d vectors for %d chunks", len(vectors), len(chunks))
	}
	ids := make([]string, len(chunks))
	for i, c := range chunks {
		if c.ID == "" || c.DocumentID == "" {
			return fmt.Errorf("rag: upsert: chunk %d has no ID or document ID", i)
		}
		ids[i] = c.ID
	}
	vectorsAdded := false
	if vectors != nil && ix.vectors != nil {
		items := make([]vector.Item, len(chunks))
		for i, c := range chunks {
			items[i] = vector.Item{ID: c.ID, Vector: vectors[i], Meta: c.Metadata}
		}
		if err := ix.vectors.Add(ctx, items...); err != nil {
			return fmt.Errorf("rag: vector index: %w", err)
		}
		vectorsAdded = true
	}
	if ix.keywords != nil {
		docs := make([]keyword.Doc, len(chunks))
		for i, c := range chunks {
			docs[i] = keyword.Doc{ID: c.ID, Text: c.Text, Meta: c.Metadata}
		}
		if err := ix.keywords.Add(ctx, docs...); err != nil {
			if vectorsAdded {
				// Undo with a context that is not the (perhaps canceled) one
				// that failed, so the two indexes stay consistent.
				_ = ix.vectors.Delete(context.WithoutCancel(ctx), ids...)
			}
			return fmt.Errorf("rag: keyword index: %w", err)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, c := range chunks {
		if old, ok := ix.chunks[c.ID]; ok && old.DocumentID != c.DocumentID {
			ix.forget(old)
		}
		ix.chunks[c.ID] = c
		set := ix.byDoc[c.DocumentID]
		if set == nil {
			set = map[string]struct{}{}
			ix.byDoc[c.DocumentID] = set
		}
		set[c.ID] = struct{}{}
	}
	return nil
}

// forget drops c from the per-document sets; ix.mu is held.
func (ix *EmbeddedIndex) forget(c Chunk) {
	if set := ix.byDoc[c.DocumentID]; set != nil {
		delete(set, c.ID)
		if len(set) == 0 {
			delete(ix.byDoc, c.DocumentID)
		}
	}
}

// ChunkIDs returns the IDs of a document's chunks.
func (ix *EmbeddedIndex) ChunkIDs(_ context.Context, documentID string) ([]string, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	set := ix.byDoc[documentID]
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	return ids, nil
}

// Delete removes chunks from both indexes and the store.
func (ix *EmbeddedIndex) Delete(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	if ix.vectors != nil {
		if err := ix.vectors.Delete(ctx, ids...); err != nil {
			return fmt.Errorf("rag: vector index: %w", err)
		}
	}
	if ix.keywords != nil {
		if err := ix.keywords.Delete(ctx, ids...); err != nil {
			return fmt.Errorf("rag: keyword index: %w", err)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, id := range ids {
		if c, ok := ix.chunks[id]; ok {
			ix.forget(c)
			delete(ix.chunks, id)
		}
	}
	return nil
}

// DeleteDocument removes every chunk of a document.
func (ix *EmbeddedIndex) DeleteDocument(ctx context.Context, documentID string) error {
	ids, _ := ix.ChunkIDs(ctx, documentID)
	return ix.Delete(ctx, ids...)
}

// ReadChunks returns the stored chunks with the given IDs, leaving out IDs
// it does not hold.
func (ix *EmbeddedIndex) ReadChunks(_ context.Context, ids []string) ([]Chunk, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]Chunk, 0, len(ids))
	for _, id := range ids {
		if c, ok := ix.chunks[id]; ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// Len reports how many chunks the index holds.
func (ix *EmbeddedIndex) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.chunks)
}

// Documents reports how many documents have chunks in the index.
func (ix *EmbeddedIndex) Documents() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.byDoc)
}
