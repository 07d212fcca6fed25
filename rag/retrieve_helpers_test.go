package rag_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/keyword"
	"github.com/weftlabs/weft/rag/vector"
)

// chunkMap is an in-memory rag.ChunkReader for tests.
type chunkMap map[string]rag.Chunk

func (m chunkMap) ReadChunks(_ context.Context, ids []string) ([]rag.Chunk, error) {
	var out []rag.Chunk
	for _, id := range ids {
		if c, ok := m[id]; ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// corpus is a small knowledge base: every chunk is indexed in a vector
// index (scripted bag-of-words embeddings) and a BM25 index.
type corpus struct {
	chunks  chunkMap
	vectors *vector.Flat
	words   *keyword.Index
	embed   rag.Embedder
}

// scriptedEmbedder embeds with the scripted model's bag of words.
var scriptedEmbedder = rag.EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = scripted.Vector(t, 0)
	}
	return out, nil
})

// testDocs are the documents of newCorpus: name → chunk texts.
var testDocs = []struct {
	name, headings string
	texts          []string
}{
	{"x200.md", "Pricing", []string{"The X200 costs 499 euros including tax.", "The X200 ships with a charger and a case."}},
	{"z9.md", "", []string{"The Z9 costs 899 euros and has a larger screen.", "Warranty: every Z9 has a two-year warranty."}},
	{"tokyo.md", "", []string{"東京都の人口は約1400万人です。", "大阪府は関西地方にあります。"}},
}

func newCorpus(t testing.TB) *corpus {
	t.Helper()
	ctx := context.Background()
	c := &corpus{chunks: chunkMap{}, vectors: vector.NewFlat(scripted.DefaultDimensions), words: keyword.New(), embed: scriptedEmbedder}
	for _, d := range testDocs {
		docID := rag.DocumentID(d.name)
		for i, text := range d.texts {
			meta := map[string]string{rag.MetaName: d.name, rag.MetaDocumentID: docID}
			if d.headings != "" {
				meta[rag.MetaHeadings] = d.headings
			}
			ch := rag.Chunk{ID: rag.ChunkID(docID, i, text), DocumentID: docID, Index: i, Text: text, Metadata: meta}
			c.chunks[ch.ID] = ch
			if err := c.vectors.Add(ctx, vector.Item{ID: ch.ID, Vector: scripted.Vector(text, 0), Meta: meta}); err != nil {
				t.Fatal(err)
			}
			if err := c.words.Add(ctx, keyword.Doc{ID: ch.ID, Text: text, Meta: meta}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c
}

func (c *corpus) vectorRetriever(t testing.TB, opts ...rag.RetrieveOption) *rag.VectorRetriever {
	t.Helper()
	r, err := rag.NewVectorRetriever(c.vectors, c.embed, c.chunks, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (c *corpus) keywordRetriever(t testing.TB, opts ...rag.RetrieveOption) *rag.KeywordRetriever {
	t.Helper()
	r, err := rag.NewKeywordRetriever(c.words, c.chunks, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// texts lists the contents of sources, for compact comparisons.
func texts(sources []rag.Source) []string {
	out := make([]string, len(sources))
	for i, s := range sources {
		out[i] = s.Content
	}
	return out
}

// ids lists the IDs of sources.
func ids(sources []rag.Source) []string {
	out := make([]string, len(sources))
	for i, s := range sources {
		out[i] = s.ID
	}
	return out
}

// fixed is a retriever that returns the given sources, whatever the query.
func fixed(ids ...string) rag.Retriever {
	return rag.RetrieverFunc(func(_ context.Context, _ string, k int) ([]rag.Source, error) {
		var out []rag.Source
		if k < 1 {
			k = len(ids)
		}
		for i, id := range ids {
			if i == k {
				break
			}
			out = append(out, rag.Source{ID: id, Content: "content of " + id, Score: float64(len(ids) - i)})
		}
		return out, nil
	})
}

func failing(msg string) rag.Retriever {
	return rag.RetrieverFunc(func(context.Context, string, int) ([]rag.Source, error) {
		return nil, fmt.Errorf("%s", msg)
	})
}
