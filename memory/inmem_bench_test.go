package memory_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

// benchRecords returns n alternating user and assistant records of about
// 300 bytes and 60 tokens each.
func benchRecords(n int) []memory.Record {
	recs := make([]memory.Record, n)
	for i := range recs {
		text := fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 25))
		m := llm.UserMessage(text)
		if i%2 == 1 {
			m = llm.AssistantMessage(text)
		}
		recs[i] = memory.Record{Message: m, Tokens: 60}
	}
	return recs
}

func BenchmarkInMemory(b *testing.B) {
	s := memory.NewInMemory()
	ctx := b.Context()
	key := memory.Key{Tenant: "t", Agent: "a", Session: "bench"}
	if _, err := s.Append(ctx, key, benchRecords(200)...); err != nil {
		b.Fatal(err)
	}
	b.Run("Load50", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if recs, err := s.Load(ctx, key, memory.Window{MaxMessages: 50}); err != nil || len(recs) != 50 {
				b.Fatal(len(recs), err)
			}
		}
	})
	b.Run("Load3000Tokens", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if recs, err := s.Load(ctx, key, memory.Window{MaxTokens: 3000}); err != nil || len(recs) != 50 {
				b.Fatal(len(recs), err)
			}
		}
	})
	b.Run("Append", func(b *testing.B) {
		rec := benchRecords(1)[0]
		k := memory.Key{Tenant: "t", Agent: "a", Session: "bench-append"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Append(ctx, k, rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
