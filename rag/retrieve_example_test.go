package rag_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weftlabs/weft/rag"
)

// Reciprocal rank fusion merges rankings whose scores are not comparable:
// a source both lists found comes first.
func ExampleFuseRRF() {
	vector := []rag.Source{{ID: "a", Score: 0.91}, {ID: "b", Score: 0.88}}
	keyword := []rag.Source{{ID: "b", Score: 12.5}, {ID: "c", Score: 7.1}}
	for _, s := range rag.FuseRRF(rag.DefaultRRFK, vector, keyword) {
		fmt.Printf("%s %.4f\n", s.ID, s.Score)
	}
	// Output:
	// b 0.0325
	// a 0.0164
	// c 0.0161
}

// A failing member is skipped and reported; the others' results are used.
func ExampleMultiRetriever_Recall() {
	docs := rag.RetrieverFunc(func(context.Context, string, int) ([]rag.Source, error) {
		return []rag.Source{{ID: "faq-3", Content: "Refunds take five days."}}, nil
	})
	wiki := rag.RetrieverFunc(func(context.Context, string, int) ([]rag.Source, error) {
		return nil, errors.New("connection refused")
	})
	m := &rag.MultiRetriever{
		Retrievers: []rag.NamedRetriever{{Name: "docs", Retriever: docs}, {Name: "wiki", Retriever: wiki}},
		Timeout:    2 * time.Second,
	}
	rec := m.Recall(context.Background(), "how long do refunds take?", 3)
	for _, s := range rec.Sources {
		fmt.Println(s.ID, s.Content)
	}
	fmt.Println(rec.Err())
	// Output:
	// faq-3 Refunds take five days.
	// rag: retrieve "wiki" skipped: connection refused
}
