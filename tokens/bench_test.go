package tokens

import (
	"os"
	"testing"
)

var benchCorpus = []string{"english", "go", "chinese"}

func benchText(b *testing.B, name string) string {
	text, err := os.ReadFile("testdata/corpus/" + name + ".txt")
	if err != nil {
		b.Fatal(err)
	}
	return string(text)
}

// BenchmarkCount measures counting throughput (MB/s of input) and reports
// tokens counted per second.
func BenchmarkCount(b *testing.B) {
	for _, enc := range []*Encoding{CL100K(), O200K()} {
		for _, name := range benchCorpus {
			text := benchText(b, name)
			b.Run(enc.Name()+"/"+name, func(b *testing.B) {
				n := enc.Count(text)
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					enc.Count(text)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, enc := range []*Encoding{CL100K(), O200K()} {
		for _, name := range benchCorpus {
			text := benchText(b, name)
			b.Run(enc.Name()+"/"+name, func(b *testing.B) {
				enc.Count(text)
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					enc.Encode(text)
				}
			})
		}
	}
}

// BenchmarkLoad measures decoding an embedded table, the one-time cost of
// an encoding's first use.
func BenchmarkLoad(b *testing.B) {
	for _, enc := range []*Encoding{CL100K(), O200K()} {
		b.Run(enc.Name(), func(b *testing.B) {
			for b.Loop() {
				if _, err := loadVocab(enc.gz); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEstimate(b *testing.B) {
	for _, name := range benchCorpus {
		text := benchText(b, name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				Estimate(text)
			}
		})
	}
}
