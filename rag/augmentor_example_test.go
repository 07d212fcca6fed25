package rag_test

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/keyword"
	"github.com/weftlabs/weft/rag/vector"
)

// A typed function answers from a knowledge base: documents are ingested
// into the embedded vector and keyword indexes, a hybrid retriever recalls
// from both, and the augmentor injects what it found into the user message.
func ExampleNewAugmentor() {
	ctx := context.Background()
	// The scripted model stands in for real ones: it embeds texts as bags of
	// words and answers by quoting the line of the context that best matches
	// the question.
	model := llm.New(scripted.New(scripted.QuoteContext(), scripted.Echo()))
	embedder, err := rag.NewModelEmbedder(model)
	if err != nil {
		fmt.Println(err)
		return
	}

	// Ingest two documents.
	index, err := rag.NewEmbeddedIndex(vector.NewFlat(scripted.DefaultDimensions), keyword.New())
	if err != nil {
		fmt.Println(err)
		return
	}
	ingester, err := rag.NewIngester(index, rag.WithEmbedder(embedder))
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := ingester.IngestDocuments(ctx,
		rag.Document{Name: "x200.md", MIMEType: "text/markdown", Text: "# X200\n\nThe X200 costs 499 euros.\n\n## Battery\n\nThe X200 battery lasts two days."},
		rag.Document{Name: "returns.md", MIMEType: "text/markdown", Text: "# Returns\n\nYou can return any product within 30 days."},
	); err != nil {
		fmt.Println(err)
		return
	}

	// Recall from both indexes, fused; inject the best two chunks.
	vectors, _ := rag.NewVectorRetriever(index.Vectors(), embedder, index)
	keywords, _ := rag.NewKeywordRetriever(index.Keywords(), index)
	hybrid := rag.NewHybrid(keywords, vectors)
	augmentor := rag.NewAugmentor(hybrid, rag.WithTopK(2))
	fmt.Println(hybrid.Describe())

	ask, err := ai.Func[string, ai.Result[string]](model, ai.Augmentor(augmentor, false))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := ask(ctx, "How many days does the X200 battery last?")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Value)
	for i, s := range res.Sources {
		fmt.Println(rag.SourceLabel(i+1, s))
	}
	// Output:
	// vector + keyword (reciprocal rank fusion, k=60)
	// According to the provided context [1]: "The X200 battery lasts two days."
	// [1] x200.md › X200 > Battery
	// [2] x200.md › X200
}
