package rag_test

import (
	"context"
	"errors"
	"testing"

	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/keyword"
	"github.com/weftlabs/weft/rag/vector"
)

func TestEmbeddedIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := newIndex(t)
	chunk := func(doc string, i int, text string) rag.Chunk {
		return rag.Chunk{ID: rag.ChunkID(doc, i, text), DocumentID: doc, Index: i, Text: text,
			Metadata: map[string]string{rag.MetaDocumentID: doc}}
	}
	a0, a1, b0 := chunk("a", 0, "alpha one"), chunk("a", 1, "alpha two"), chunk("b", 0, "beta")
	vec := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	if err := ix.Upsert(ctx, []rag.Chunk{a0, a1, b0}, [][]float32{vec, vec, vec}); err != nil {
		t.Fatal(err)
	}
	// Vector hits can be filtered by document.
	hits, err := ix.Vectors().Search(ctx, vec, 10, vector.Filter{rag.MetaDocumentID: "b"})
	if err != nil || len(hits) != 1 || hits[0].ID != b0.ID {
		t.Fatalf("filtered vector search: %v %v", hits, err)
	}
	got, _ := ix.ReadChunks(ctx, []string{b0.ID, "missing", a1.ID})
	if len(got) != 2 || got[0].Text != "beta" || got[1].Text != "alpha two" {
		t.Errorf("ReadChunks: %+v", got)
	}
	// Errors leave the index as it was.
	for _, bad := range []struct {
		chunks  []rag.Chunk
		vectors [][]float32
	}{
		{[]rag.Chunk{chunk("c", 0, "x")}, [][]float32{vec, vec}}, // count mismatch
		{[]rag.Chunk{chunk("c", 0, "x")}, [][]float32{{1, 2}}},   // wrong dimension
		{[]rag.Chunk{{Text: "no id"}}, nil},                      // no IDs
	} {
		if err := ix.Upsert(ctx, bad.chunks, bad.vectors); err == nil {
			t.Errorf("Upsert(%v) accepted", bad.chunks)
		}
	}
	if ix.Len() != 3 || ix.Vectors().Len() != 3 || ix.Keywords().Len() != 3 || ix.Documents() != 2 {
		t.Errorf("after failed upserts: %d chunks, %d vectors, %d keyword docs, %d documents", ix.Len(), ix.Vectors().Len(), ix.Keywords().Len(), ix.Documents())
	}
	if err := ix.DeleteDocument(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := ix.ChunkIDs(ctx, "a"); len(ids) != 0 || ix.Len() != 1 || ix.Vectors().Len() != 1 || ix.Keywords().Len() != 1 {
		t.Errorf("after DeleteDocument: ids %v, %d chunks", ids, ix.Len())
	}
	if _, err := rag.NewEmbeddedIndex(nil, nil); err == nil {
		t.Error("index without indexes accepted")
	}
	// Vector-only and keyword-only indexes.
	vo, _ := rag.NewEmbeddedIndex(vector.NewFlat(dim), nil)
	if err := vo.Upsert(ctx, []rag.Chunk{a0}, [][]float32{vec}); err != nil || vo.Len() != 1 {
		t.Errorf("vector-only upsert: %v", err)
	}
	ko, _ := rag.NewEmbeddedIndex(nil, keyword.New())
	if err := ko.Upsert(ctx, []rag.Chunk{a0}, [][]float32{vec}); err != nil || ko.Keywords().Len() != 1 {
		t.Errorf("keyword-only upsert: %v", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := ix.Upsert(canceled, []rag.Chunk{chunk("d", 0, "x")}, [][]float32{vec}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled upsert: %v", err)
	}
	if ids, _ := ix.ChunkIDs(ctx, "d"); len(ids) != 0 || ix.Vectors().Len() != 1 {
		t.Errorf("canceled upsert left %v, %d vectors", ids, ix.Vectors().Len())
	}
}
