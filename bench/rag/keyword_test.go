package rag

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	bleveindex "github.com/blevesearch/bleve_index_api"

	"github.com/weftlabs/weft/rag/keyword"
)

const (
	corpusDocs  = 50_000
	vocabulary  = 60_000
	zipfS       = 1.07 // English word frequencies follow Zipf with s ≈ 1
	corpusQuery = 1000
)

// syntheticWord turns a vocabulary rank into a pronounceable, stable word
// (consonant-vowel syllables), so both engines tokenise it as one term and
// neither stems it into another.
func syntheticWord(rank int) string {
	const cons, vows = "bcdfghjklmnprtvz", "aeiou"
	var b strings.Builder
	r := rank + 1
	for r > 0 {
		b.WriteByte(cons[r%len(cons)])
		r /= len(cons)
		b.WriteByte(vows[r%len(vows)])
		r /= len(vows)
	}
	b.WriteByte('x') // no word ends in "s", so plural stemming never applies
	return b.String()
}

type corpus struct {
	ids     []string
	texts   []string
	queries []string
}

// keywordCorpus is 50,000 documents of 50–250 words drawn from a 60,000-word
// Zipf vocabulary, and 1,000 queries of two to four distinct words drawn from
// the same distribution restricted to ranks 50–20,000: content words, as
// left after a real query's function words are removed.
var keywordCorpus = sync.OnceValue(func() *corpus {
	r := rand.New(rand.NewPCG(11, 12))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(13, 14)), zipfS, 1, vocabulary-1)
	words := make([]string, vocabulary)
	for i := range words {
		words[i] = syntheticWord(i)
	}
	c := &corpus{}
	var b strings.Builder
	for i := range corpusDocs {
		b.Reset()
		n := 50 + r.IntN(201)
		for j := range n {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[zipf.Uint64()])
		}
		c.ids = append(c.ids, strconv.Itoa(i))
		c.texts = append(c.texts, b.String())
	}
	for range corpusQuery {
		var q []string
		for len(q) < 2+len(c.queries)%3 {
			rank := int(zipf.Uint64())
			if rank < 50 || rank > 20_000 || slices.Contains(q, words[rank]) {
				continue
			}
			q = append(q, words[rank])
		}
		c.queries = append(c.queries, strings.Join(q, " "))
	}
	return c
})

// latencies runs each query once per iteration and reports the mean, p50
// and p99 per-query latency in microseconds.
func latencies(b *testing.B, queries []string, run func(q string) int) {
	var times []time.Duration
	hits := 0
	i := 0
	cpu := startCPU()
	for b.Loop() {
		start := time.Now()
		hits += run(queries[i%len(queries)])
		times = append(times, time.Since(start))
		i++
	}
	cpu.report(b, 1e6, "cpu-µs/query")
	slices.Sort(times)
	pct := func(p float64) float64 {
		return float64(times[int(math.Min(float64(len(times)-1), p*float64(len(times))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(hits)/float64(b.N), "hits/query")
}

// BenchmarkBM25Top10 compares BM25 top-10 search over the same 50k
// documents: Weft's keyword index and bleve's in-memory index with its
// "bm25" scoring model and default (standard) analyzer, both with OR
// semantics over the query terms.
func BenchmarkBM25Top10(b *testing.B) {
	ctx := context.Background()
	c := keywordCorpus()
	b.Run("weft-keyword", func(b *testing.B) {
		ix := keyword.New()
		docs := make([]keyword.Doc, len(c.ids))
		for i := range docs {
			docs[i] = keyword.Doc{ID: c.ids[i], Text: c.texts[i]}
		}
		start, cpu := time.Now(), cpuTime()
		for lo := 0; lo < len(docs); lo += indexBatch {
			if err := ix.Add(ctx, docs[lo:min(len(docs), lo+indexBatch)]...); err != nil {
				b.Fatal(err)
			}
		}
		wall, cpuUsed := time.Since(start), cpuTime()-cpu
		latencies(b, c.queries, func(q string) int {
			hits, err := ix.Search(ctx, q, 10, nil)
			if err != nil {
				b.Fatal(err)
			}
			return len(hits)
		})
		b.ReportMetric(wall.Seconds(), "index-s")
		b.ReportMetric(cpuUsed.Seconds(), "index-cpu-s")
	})
	b.Run("bleve", func(b *testing.B) {
		// bleve's NewMemOnly is the legacy upsidedown index over a gtreap
		// store, which did not finish indexing the 50k documents in 38
		// minutes here; bleve's default index (scorch, the one its
		// documentation recommends) on a tmpfs directory, with unsafe_batch
		// (no fsync per batch), is the fair in-memory comparison.
		m := bleve.NewIndexMapping()
		m.ScoringModel = bleveindex.BM25Scoring
		dir := b.TempDir()
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			if dir, err = os.MkdirTemp("/dev/shm", "bleve-bench"); err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
		}
		idx, err := bleve.NewUsing(filepath.Join(dir, "index"), m, scorch.Name, scorch.Name, map[string]any{"unsafe_batch": true})
		if err != nil {
			b.Fatal(err)
		}
		defer idx.Close()
		start, cpu := time.Now(), cpuTime()
		batch := idx.NewBatch()
		for i := range c.ids {
			if err := batch.Index(c.ids[i], map[string]any{"text": c.texts[i]}); err != nil {
				b.Fatal(err)
			}
			if batch.Size() == indexBatch {
				if err := idx.Batch(batch); err != nil {
					b.Fatal(err)
				}
				batch = idx.NewBatch()
			}
		}
		if err := idx.Batch(batch); err != nil {
			b.Fatal(err)
		}
		wall, cpuUsed := time.Since(start), cpuTime()-cpu
		latencies(b, c.queries, func(q string) int {
			mq := bleve.NewMatchQuery(q)
			mq.SetField("text")
			res, err := idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(mq, 10, 0, false))
			if err != nil {
				b.Fatal(err)
			}
			return len(res.Hits)
		})
		b.ReportMetric(wall.Seconds(), "index-s")
		b.ReportMetric(cpuUsed.Seconds(), "index-cpu-s")
	})
}

// indexBatch is the number of documents both engines index per call.
const indexBatch = 1000
