package rag

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/textsplitter"

	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tokens"
)

// splitCorpus is ten Markdown guides of about 10 KB (the corpus of
// weft/rag's BenchmarkIngestMarkdown): headings, prose, lists, code fences.
func splitCorpus() ([]string, int64) {
	var docs []string
	var total int64
	for d := range 10 {
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
		docs = append(docs, b.String())
		total += int64(b.Len())
	}
	return docs, total
}

// Both sides count with tokens.Estimate, 512-token chunks, 64 overlap.

func BenchmarkSplitRecursive(b *testing.B) {
	docs, total := splitCorpus()
	b.Run("weft", func(b *testing.B) {
		s, err := rag.NewRecursiveSplitter(rag.WithChunkSize(512), rag.WithOverlap(64))
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range docs {
				if _, err := s.Split(rag.Document{ID: "d", Text: d}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("langchaingo", func(b *testing.B) {
		s := textsplitter.NewRecursiveCharacter(textsplitter.WithChunkSize(512), textsplitter.WithChunkOverlap(64),
			textsplitter.WithLenFunc(tokens.Estimate))
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range docs {
				if _, err := s.SplitText(d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

func BenchmarkSplitMarkdown(b *testing.B) {
	docs, total := splitCorpus()
	b.Run("weft", func(b *testing.B) {
		s, err := rag.NewMarkdownSplitter(rag.WithChunkSize(512), rag.WithOverlap(64))
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range docs {
				if _, err := s.Split(rag.Document{ID: "d", Text: d}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("langchaingo", func(b *testing.B) {
		s := textsplitter.NewMarkdownTextSplitter(textsplitter.WithChunkSize(512), textsplitter.WithChunkOverlap(64),
			textsplitter.WithLenFunc(tokens.Estimate), textsplitter.WithHeadingHierarchy(true), textsplitter.WithCodeBlocks(true))
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range docs {
				if _, err := s.SplitText(d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
