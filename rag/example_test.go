package rag_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/keyword"
	"github.com/weftlabs/weft/rag/loader"
	"github.com/weftlabs/weft/rag/vector"
)

// Load a Markdown file and cut it into chunks that carry their heading path.
func Example_loadAndSplit() {
	ctx := context.Background()
	md := `# Install

## Linux

Download the archive and unpack it.

## macOS

Use Homebrew: brew install weft.
`
	doc, err := loader.Load(ctx, "docs/install.md", strings.NewReader(md))
	if err != nil {
		fmt.Println(err)
		return
	}
	splitter, err := rag.NewSplitter(rag.WithChunkSize(64), rag.WithOverlap(8))
	if err != nil {
		fmt.Println(err)
		return
	}
	chunks, err := splitter.Split(doc)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("title:", doc.Metadata[rag.MetaTitle])
	for _, c := range chunks {
		fmt.Printf("[%s] %q\n", c.Metadata[rag.MetaHeadings], c.Text)
	}
	// Output:
	// title: Install
	// [Install > Linux] "# Install\n\n## Linux\n\nDownload the archive and unpack it."
	// [Install > macOS] "## macOS\n\nUse Homebrew: brew install weft."
}

// Ingest documents into the embedded indexes, then search them. A real
// application embeds with rag.NewModelEmbedder(model); this one uses a
// stand-in.
func ExampleIngester() {
	ctx := context.Background()
	index, err := rag.NewEmbeddedIndex(vector.NewFlat(2), keyword.New())
	if err != nil {
		fmt.Println(err)
		return
	}
	embedder := rag.EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			out[i] = []float32{float32(len(t)), 1}
		}
		return out, nil
	})
	ingester, err := rag.NewIngester(index,
		rag.WithLoader(loader.New()),
		rag.WithEmbedder(rag.NewCachedEmbedder(embedder, "example", rag.NewMemoryCache(1<<20))),
		rag.WithWorkers(2),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	inputs := []rag.Input{
		rag.ReaderInput("faq.md", strings.NewReader("# FAQ\n\nRefunds take five working days.")),
		rag.ReaderInput("broken.pdf", strings.NewReader("%PDF-1.4 not really")),
	}
	results, err := ingester.Ingest(ctx, inputs...)
	for _, r := range results {
		if r.Err != nil {
			fmt.Printf("%s: failed\n", r.Name)
			continue
		}
		fmt.Printf("%s: %d chunk(s)\n", r.Name, r.Chunks)
	}
	fmt.Println("batch error:", err != nil)

	// Ingesting the same content again changes nothing.
	again, _ := ingester.Ingest(ctx, rag.ReaderInput("faq.md", strings.NewReader("# FAQ\n\nRefunds take five working days.")))
	fmt.Println("unchanged:", again[0].Unchanged)

	hits, _ := index.Keywords().Search(ctx, "refunds", 3, nil)
	found, _ := index.ReadChunks(ctx, []string{hits[0].ID})
	fmt.Printf("found %q in %s\n", found[0].Text, found[0].Metadata[rag.MetaName])
	// Output:
	// faq.md: 1 chunk(s)
	// broken.pdf: failed
	// batch error: true
	// unchanged: true
	// found "# FAQ\n\nRefunds take five working days." in faq.md
}
