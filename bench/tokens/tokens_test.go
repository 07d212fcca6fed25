// Package tokens_test compares Weft's token counting with the Go ports of
// tiktoken: github.com/tiktoken-go/tokenizer and github.com/pkoukk/tiktoken-go
// (with its offline loader github.com/pkoukk/tiktoken-go-loader).
//
//	cd bench && go test -run XXX -bench . -benchtime 2s ./tokens
//
// Each benchmark first checks that all three count the same number of
// tokens. MB/s is input bytes per second; allocs/token is heap allocations
// per token counted.
package tokens_test

import (
	"os"
	"runtime"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/tiktoken-go/tokenizer"

	"github.com/weftlabs/weft/tokens"
)

var corpus = []string{"english", "go", "chinese"}

type counter struct {
	name  string
	count func(string) int
}

func counters(b *testing.B, enc string) []counter {
	w := tokens.CL100K()
	te := tokenizer.Cl100kBase
	if enc == "o200k_base" {
		w, te = tokens.O200K(), tokenizer.O200kBase
	}
	codec, err := tokenizer.Get(te)
	if err != nil {
		b.Fatal(err)
	}
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	pk, err := tiktoken.GetEncoding(enc)
	if err != nil {
		b.Fatal(err)
	}
	return []counter{
		{"weft", w.Count},
		{"tiktoken-go-tokenizer", func(s string) int {
			n, err := codec.Count(s)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}},
		{"pkoukk-tiktoken-go", func(s string) int { return len(pk.EncodeOrdinary(s)) }},
	}
}

func BenchmarkCount(b *testing.B) {
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		cs := counters(b, enc)
		for _, name := range corpus {
			raw, err := os.ReadFile("../../tokens/testdata/corpus/" + name + ".txt")
			if err != nil {
				b.Fatal(err)
			}
			text := string(raw)
			want := cs[0].count(text)
			for _, c := range cs[1:] {
				if got := c.count(text); got != want {
					b.Fatalf("%s %s: %s counts %d tokens, weft %d", enc, name, c.name, got, want)
				}
			}
			for _, c := range cs {
				b.Run(enc+"/"+name+"/"+c.name, func(b *testing.B) {
					b.SetBytes(int64(len(text)))
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					for b.Loop() {
						c.count(text)
					}
					runtime.ReadMemStats(&after)
					b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*want), "allocs/token")
				})
			}
		}
	}
}
