package pgstore_test

import (
	"context"
	"fmt"
	"os"

	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/pgstore"
)

// A knowledge base in PostgreSQL: ingest into it, then answer from it. With
// pgvector and an embedder the recall is hybrid; here it is keyword-only.
func Example() {
	ctx := context.Background()
	store, err := pgstore.Open(ctx, os.Getenv("DATABASE_URL"), pgstore.WithDimensions(1536))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	kb := store.KnowledgeBase("handbook")
	ingester, err := rag.NewIngester(kb)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := ingester.IngestDocuments(ctx, rag.Document{Name: "returns.md", Text: "You can return any product within 30 days."}); err != nil {
		fmt.Println(err)
		return
	}
	retriever := kb.Retriever(nil) // pass the embedder used for ingestion for hybrid recall
	fmt.Println(retriever.Describe())
	augmentor := rag.NewAugmentor(retriever, rag.WithTopK(4))
	aug, _ := augmentor.Augment(ctx, rag.Query{Text: "How long can I return things?"})
	fmt.Println(aug.Message.Text())
}
