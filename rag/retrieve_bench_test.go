package rag_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/rag"
)

func BenchmarkFuseRRF(b *testing.B) {
	lists := make([][]rag.Source, 2)
	for l := range lists {
		for i := range 20 {
			lists[l] = append(lists[l], rag.Source{ID: fmt.Sprintf("c%d", (i*(l+1))%30)})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		rag.FuseRRF(rag.DefaultRRFK, lists...)
	}
}

// BenchmarkHybridRecall measures the overhead of concurrent recall, fusion
// and injection over the small in-memory corpus (the indexes' own costs are
// benchmarked in their packages).
func BenchmarkHybridRecall(b *testing.B) {
	c := newCorpus(b)
	a := rag.NewAugmentor(rag.NewHybrid(c.keywordRetriever(b), c.vectorRetriever(b)))
	q := rag.Query{Text: "How much does the X200 cost?", Message: llm.UserMessage("How much does the X200 cost?")}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Augment(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
}
