// Command rag-folder answers questions from a folder of documents
// (Markdown, text, HTML, PDF, DOCX, CSV, JSON): it loads and splits every
// file, embeds the chunks into an in-process vector index beside a BM25
// keyword index, and lets a typed function recall from both before each
// model call, citing its sources.
//
//	go run ./examples/rag-folder ./examples/rag-folder/docs "How long does the X200 battery last?"
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/all"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/keyword"
	"github.com/weftlabs/weft/rag/loader"
	"github.com/weftlabs/weft/rag/vector"
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, args []string) error {
	dir, question := "docs", "How long does the X200 battery last?"
	if len(args) > 0 {
		dir = args[0]
	}
	if len(args) > 1 {
		question = strings.Join(args[1:], " ")
	}
	model, err := provider.Open(cmp.Or(os.Getenv("WEFT_DEFAULT_MODEL"), "scripted/demo"))
	if err != nil {
		return err
	}
	embedModel, err := provider.Open(cmp.Or(os.Getenv("WEFT_EMBED_MODEL"), "scripted/embed"))
	if err != nil {
		return err
	}
	embedder, err := rag.NewModelEmbedder(embedModel)
	if err != nil {
		return err
	}

	// Ingest every file of the folder.
	var inputs []rag.Input
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			inputs = append(inputs, rag.FileInput(path))
		}
		return err
	})
	if err != nil {
		return err
	}
	probe, err := embedder.Embed(ctx, []string{"dimensions"})
	if err != nil {
		return err
	}
	index, err := rag.NewEmbeddedIndex(vector.NewFlat(len(probe[0])), keyword.New())
	if err != nil {
		return err
	}
	ingester, err := rag.NewIngester(index, rag.WithLoader(loader.New()), rag.WithEmbedder(embedder))
	if err != nil {
		return err
	}
	results, err := ingester.Ingest(ctx, inputs...)
	if err != nil {
		return err
	}
	for _, r := range results {
		fmt.Fprintf(w, "ingested %s: %d chunk(s)\n", filepath.Base(r.Name), r.Chunks)
	}

	// Recall from both indexes, fused, and inject the best chunks.
	vectors, err := rag.NewVectorRetriever(index.Vectors(), embedder, index)
	if err != nil {
		return err
	}
	keywords, err := rag.NewKeywordRetriever(index.Keywords(), index)
	if err != nil {
		return err
	}
	augmentor := rag.NewAugmentor(rag.NewHybrid(keywords, vectors), rag.WithTopK(2))
	ask, err := ai.Func[string, ai.Result[string]](model, ai.Augmentor(augmentor, false))
	if err != nil {
		return err
	}
	res, err := ask(ctx, question)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, res.Value)
	for i, s := range res.Sources {
		fmt.Fprintln(w, rag.SourceLabel(i+1, s))
	}
	return nil
}
