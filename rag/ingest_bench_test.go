package rag_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/keyword"
	"github.com/weftlabs/weft/rag/vector"
)

// benchCorpus returns n Markdown documents of about 10 KB each: headings,
// prose paragraphs, a list and a code fence per section.
func benchCorpus(n int) ([]rag.Document, int64) {
	var docs []rag.Document
	var total int64
	for d := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "# Guide %d\n\nAn introduction to the guide, with enough words to be a paragraph of its own.\n\n", d)
		for s := range 12 {
			fmt.Fprintf(&b, "## Section %d.%d\n\n", d, s)
			for p := range 3 {
				fmt.Fprintf(&b, "Paragraph %d of section %d explains how component%d talks to service%d. "+
					"It covers retries, timeouts and the e.g. fallback rules in detail. Values like 3.14 stay whole. "+
					"The last sentence of the paragraph ends here.\n\n", p, s, s*p, d)
			}
			b.WriteString("- first point\n- second point\n- third point\n\n```go\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n```\n\n")
		}
		docs = append(docs, rag.Document{ID: fmt.Sprint("guide-", d), Name: fmt.Sprint("guide-", d, ".md"), MIMEType: "text/markdown", Text: b.String()})
		total += int64(b.Len())
	}
	return docs, total
}

// fastEmbedder returns 384-dimensional vectors derived cheaply from the text,
// standing in for a model so that the benchmark measures the pipeline.
type fastEmbedder struct{}

func (fastEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 384)
		for j := range v {
			v[j] = float32(t[j%len(t)]) + float32(j)
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkIngestMarkdown measures the whole pipeline — Markdown splitting
// (512-token chunks, 64 overlap), embedding with a fast fake embedder, and
// indexing into the exact vector index, the BM25 index and the chunk store —
// over 100 documents of about 10 KB. MB/s is Markdown ingested per second.
func BenchmarkIngestMarkdown(b *testing.B) {
	docs, total := benchCorpus(100)
	ctx := context.Background()
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		ix, err := rag.NewEmbeddedIndex(vector.NewFlat(384), keyword.New())
		if err != nil {
			b.Fatal(err)
		}
		in, err := rag.NewIngester(ix, rag.WithEmbedder(fastEmbedder{}))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := in.IngestDocuments(ctx, docs...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIngestMarkdownKeywordOnly is the same pipeline without an
// embedder.
func BenchmarkIngestMarkdownKeywordOnly(b *testing.B) {
	docs, total := benchCorpus(100)
	ctx := context.Background()
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		ix, _ := rag.NewEmbeddedIndex(nil, keyword.New())
		in, _ := rag.NewIngester(ix)
		if _, err := in.IngestDocuments(ctx, docs...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSplitMarkdown measures the Markdown splitter alone.
func BenchmarkSplitMarkdown(b *testing.B) {
	docs, total := benchCorpus(10)
	s, _ := rag.NewMarkdownSplitter()
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range docs {
			if _, err := s.Split(d); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSplitRecursive measures the recursive splitter alone.
func BenchmarkSplitRecursive(b *testing.B) {
	docs, total := benchCorpus(10)
	s, _ := rag.NewRecursiveSplitter()
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range docs {
			if _, err := s.Split(d); err != nil {
				b.Fatal(err)
			}
		}
	}
}
