//go:build unix

package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/vector"
)

// BenchmarkPgvectorScale is the knowledge-at-scale measurement of issue I:
// N chunks (default 200,000) of D dimensions (default 384), synthetic and
// seeded, ingested into PostgreSQL through KB.Upsert (HNSW index present,
// batches of 256), then Q queries (default 300) answered by
//
//   - exact search (vector.Flat), the reference of recall@10;
//   - pgvector HNSW through Weft (KB.VectorRetriever) at ef_search 40
//     (pgvector's default) and 100, and the same SQL sent bare through pgx;
//   - keyword (full text) and hybrid (RRF) recall through Weft, and the
//     keyword SQL bare;
//   - the embedded HNSW index (rag/vector, M=16, efConstruction=64 like
//     pgvector's defaults) on the same vectors, at ef 40 and 100.
//
// Weft's overhead is its p50 over the bare query's p50, measured
// interleaved (bare and Weft alternate per query, so load drifts hit both).
// It runs once (-benchtime=1x) and logs a table; CI does not run
// benchmarks. Vectors are clustered (1,000 Gaussian clusters, as real
// embeddings are: a 24-dimensional latent space projected to D
// dimensions, with noise), queries drawn from the same clusters.
//
//	WEFT_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test -run '^$' -bench BenchmarkPgvectorScale -benchtime=1x -timeout 2h ./rag/pgstore/
//
// WEFT_BENCH_KB_CHUNKS, WEFT_BENCH_KB_DIMS and WEFT_BENCH_KB_QUERIES change
// the sizes (a quick look: WEFT_BENCH_KB_CHUNKS=20000).
func BenchmarkPgvectorScale(b *testing.B) {
	dsn := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if dsn == "" {
		b.Skip("WEFT_TEST_POSTGRES_URL not set")
	}
	n, dim, nq := envInt("WEFT_BENCH_KB_CHUNKS", 200_000), envInt("WEFT_BENCH_KB_DIMS", 384), envInt("WEFT_BENCH_KB_QUERIES", 300)
	const k = 10
	ctx := context.Background()
	data := newScaleData(n, nq, dim)

	var sb [6]byte
	rand.Read(sb[:])
	schema := "weft_kbbench_" + hex.EncodeToString(sb[:])
	s40, err := Open(ctx, dsn, WithSchema(schema), WithDimensions(dim))
	if err != nil {
		b.Fatal(err)
	}
	defer s40.Close()
	defer s40.pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE") //nolint:errcheck // best effort
	if err := s40.VectorSearch(); err != nil {
		b.Fatal(err)
	}
	s100, err := Open(ctx, dsn, WithSchema(schema), WithDimensions(dim), WithEfSearch(100))
	if err != nil {
		b.Fatal(err)
	}
	defer s100.Close()

	report := &scaleReport{}
	b.ResetTimer()
	for range b.N {
		// Ingest.
		kb := s40.KnowledgeBase("bench")
		cpu0 := cpuTime()
		start := time.Now()
		for lo := 0; lo < n; lo += 256 {
			hi := min(lo+256, n)
			if err := kb.Upsert(ctx, data.chunks[lo:hi], data.vecs[lo:hi]); err != nil {
				b.Fatal(err)
			}
			if hi%25600 == 0 {
				fmt.Fprintf(os.Stderr, "ingested %d chunks in %.0f s\n", hi, time.Since(start).Seconds())
			}
		}
		ingest := time.Since(start)
		report.add("ingest (KB.Upsert, HNSW present)", fmt.Sprintf("%.0f chunks/s (%.1f s; client CPU %.1f s)", float64(n)/ingest.Seconds(), ingest.Seconds(), (cpuTime()-cpu0).Seconds()))
		b.ReportMetric(float64(n)/ingest.Seconds(), "pg-ingest-chunks/s")
		if _, err := s40.pool.Exec(ctx, "ANALYZE "+s40.chunks+"; ANALYZE "+s40.embeddings); err != nil {
			b.Fatal(err)
		}

		// The reference: exact search.
		flat := vector.NewFlat(dim)
		items := make([]vector.Item, n)
		for i := range items {
			items[i] = vector.Item{ID: data.chunks[i].ID, Vector: data.vecs[i]}
		}
		if err := flat.Add(ctx, items...); err != nil {
			b.Fatal(err)
		}
		exact := make([][]string, nq)
		var flatLat []time.Duration
		for i, q := range data.queries {
			t0 := time.Now()
			hits, err := flat.Search(ctx, q, k, nil)
			flatLat = append(flatLat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			for _, h := range hits {
				exact[i] = append(exact[i], h.ID)
			}
		}
		report.lat("embedded exact (vector.Flat)", flatLat, 1)

		embedder := data.embedder()
		for _, st := range []struct {
			name string
			s    *Store
		}{{"ef_search 40", s40}, {"ef_search 100", s100}} {
			kb := st.s.KnowledgeBase("bench")
			vr, err := kb.VectorRetriever(embedder, rag.TopK(k))
			if err != nil {
				b.Fatal(err)
			}
			var weft, bare []time.Duration
			var weftCPU, bareCPU time.Duration
			var recall float64
			for i, q := range data.queries {
				// Alternate which goes first.
				runBare := func() {
					c0, t0 := cpuTime(), time.Now()
					if err := bareVector(ctx, st.s, q, k); err != nil {
						b.Fatal(err)
					}
					bare = append(bare, time.Since(t0))
					bareCPU += cpuTime() - c0
				}
				runWeft := func() {
					c0, t0 := cpuTime(), time.Now()
					src, err := vr.Retrieve(ctx, data.queryTexts[i], k)
					weft = append(weft, time.Since(t0))
					weftCPU += cpuTime() - c0
					if err != nil {
						b.Fatal(err)
					}
					recall += recallAt(src, exact[i])
				}
				if i%2 == 0 {
					runBare()
					runWeft()
				} else {
					runWeft()
					runBare()
				}
			}
			recall /= float64(nq)
			report.lat("pgvector HNSW, bare SQL, "+st.name, bare, 0)
			report.lat("pgvector HNSW, Weft, "+st.name, weft, recall)
			report.add("Weft overhead, vector, "+st.name, overhead(weft, bare))
			report.add("client CPU per query, vector, "+st.name, fmt.Sprintf("Weft %v, bare %v", (weftCPU/time.Duration(nq)).Round(time.Microsecond), (bareCPU/time.Duration(nq)).Round(time.Microsecond)))
			if st.s == s40 {
				b.ReportMetric(recall, "pg-recall@10")
				b.ReportMetric(float64(pct(weft, 50).Microseconds()), "pg-p50-µs")
				b.ReportMetric(float64(pct(weft, 99).Microseconds()), "pg-p99-µs")
			}
		}

		// Keyword and hybrid.
		kr := kb.KeywordRetriever(rag.TopK(k))
		hy := kb.Retriever(embedder, rag.TopK(k))
		var kwWeft, kwBare, hybrid []time.Duration
		var kwWeftCPU, kwBareCPU time.Duration
		for i := range data.queries {
			runBare := func() {
				c0, t0 := cpuTime(), time.Now()
				if err := bareKeyword(ctx, s40, data.queryTexts[i], k); err != nil {
					b.Fatal(err)
				}
				kwBare = append(kwBare, time.Since(t0))
				kwBareCPU += cpuTime() - c0
			}
			runWeft := func() {
				c0, t0 := cpuTime(), time.Now()
				if _, err := kr.Retrieve(ctx, data.queryTexts[i], k); err != nil {
					b.Fatal(err)
				}
				kwWeft = append(kwWeft, time.Since(t0))
				kwWeftCPU += cpuTime() - c0
			}
			// Alternate which goes first: the first warms the buffers.
			if i%2 == 0 {
				runBare()
				runWeft()
			} else {
				runWeft()
				runBare()
			}
			t0 := time.Now()
			if _, err := hy.Retrieve(ctx, data.queryTexts[i], k); err != nil {
				b.Fatal(err)
			}
			hybrid = append(hybrid, time.Since(t0))
		}
		report.lat("full text, bare SQL", kwBare, 0)
		report.lat("full text, Weft", kwWeft, 0)
		report.add("Weft overhead, keyword", overhead(kwWeft, kwBare))
		report.add("client CPU per query, keyword", fmt.Sprintf("Weft %v, bare %v", (kwWeftCPU/time.Duration(nq)).Round(time.Microsecond), (kwBareCPU/time.Duration(nq)).Round(time.Microsecond)))
		report.lat("hybrid (vector ef 40 + keyword, RRF), Weft", hybrid, 0)

		// The embedded HNSW index on the same vectors.
		hnsw := vector.NewHNSW(dim, vector.WithM(16), vector.WithEfConstruction(64), vector.WithSeed(1))
		cpu0 = cpuTime()
		start = time.Now()
		for lo := 0; lo < n; lo += 4096 {
			if err := hnsw.Add(ctx, items[lo:min(lo+4096, n)]...); err != nil {
				b.Fatal(err)
			}
		}
		build := time.Since(start)
		report.add("embedded HNSW build (M=16, efC=64)", fmt.Sprintf("%.0f vectors/s (%.1f s; CPU %.1f s)", float64(n)/build.Seconds(), build.Seconds(), (cpuTime()-cpu0).Seconds()))
		for _, ef := range []int{40, 100} {
			var lat []time.Duration
			var recall float64
			for i, q := range data.queries {
				t0 := time.Now()
				hits, err := hnsw.SearchEf(ctx, q, k, ef, nil)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				recall += vectorRecall(hits, exact[i])
			}
			report.lat(fmt.Sprintf("embedded HNSW, ef %d", ef), lat, recall/float64(nq))
		}
	}
	b.StopTimer()
	b.Logf("\n%d chunks × %d dimensions, %d queries, k=%d, GOMAXPROCS=%d\n%s", n, dim, nq, k, runtime.GOMAXPROCS(0), report)
}

// scaleData is the benchmark's corpus: clustered unit vectors, and texts
// whose words follow the clusters (so keyword and vector recall agree on
// topics, as in real documents).
type scaleData struct {
	chunks     []rag.Chunk
	vecs       [][]float32
	queries    [][]float32
	queryTexts []string
}

func newScaleData(n, nq, dim int) *scaleData {
	r := mrand.New(mrand.NewPCG(42, 7))
	// Embeddings have a low intrinsic dimension: points are drawn around
	// 1,000 cluster centres in a 24-dimensional latent space, mapped to dim
	// dimensions by a fixed random projection, with a little noise.
	const clusters, latent = 1000, 24
	proj := make([][]float32, latent)
	for i := range proj {
		proj[i] = make([]float32, dim)
		for j := range proj[i] {
			proj[i][j] = float32(r.NormFloat64() / math.Sqrt(latent))
		}
	}
	centres := make([][]float64, clusters)
	for i := range centres {
		centres[i] = make([]float64, latent)
		for j := range centres[i] {
			centres[i][j] = r.NormFloat64()
		}
	}
	point := func(c int) []float32 {
		v := make([]float32, dim)
		for i := range latent {
			z := centres[c][i] + 0.5*r.NormFloat64()
			for j := range v {
				v[j] += float32(z) * proj[i][j]
			}
		}
		var norm float64
		for j := range v {
			v[j] += float32(0.03 * r.NormFloat64())
			norm += float64(v[j]) * float64(v[j])
		}
		norm = math.Sqrt(norm)
		for j := range v {
			v[j] = float32(float64(v[j]) / norm)
		}
		return v
	}
	text := func(c int) string {
		words := []string{"topic" + strconv.Itoa(c)}
		for range 24 {
			words = append(words, "term"+strconv.Itoa(r.IntN(20000)))
		}
		return strings.Join(words, " ")
	}
	d := &scaleData{}
	for i := range n {
		c := r.IntN(clusters)
		doc := "doc" + strconv.Itoa(i/8)
		d.chunks = append(d.chunks, rag.Chunk{ID: fmt.Sprintf("c%07d", i), DocumentID: doc, Index: i % 8, Text: text(c), Tokens: 40,
			Metadata: map[string]string{rag.MetaName: doc + ".md"}})
		d.vecs = append(d.vecs, point(c))
	}
	for range nq {
		c := r.IntN(clusters)
		d.queries = append(d.queries, point(c))
		d.queryTexts = append(d.queryTexts, "topic"+strconv.Itoa(c)+" term"+strconv.Itoa(r.IntN(20000)))
	}
	return d
}

// embedder returns the precomputed vector of each query text, so that
// recall measures the store, not a model.
func (d *scaleData) embedder() rag.Embedder {
	byText := make(map[string][]float32, len(d.queries))
	for i, t := range d.queryTexts {
		byText[t] = d.queries[i]
	}
	return rag.EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			v, ok := byText[t]
			if !ok {
				return nil, fmt.Errorf("no vector for %q", t)
			}
			out[i] = v
		}
		return out, nil
	})
}

// bareVector sends the vector search's SQL as Weft does (settings and query
// in one batch) and reads the rows without turning them into sources.
func bareVector(ctx context.Context, s *Store, q []float32, k int) error {
	var b pgx.Batch
	b.Queue(s.searchSettings)
	b.Queue(s.vectorQuery(), "bench", vectorLiteral(q), "{}", k)
	br := s.pool.SendBatch(ctx, &b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return err
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	for rows.Next() {
		_ = rows.RawValues()
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return br.Close()
}

func bareKeyword(ctx context.Context, s *Store, text string, k int) error {
	rows, err := s.pool.Query(ctx, s.keywordQuery(), pgx.QueryExecModeExec, "bench", TSQuery(text), "{}", k)
	if err != nil {
		return err
	}
	for rows.Next() {
		_ = rows.RawValues()
	}
	rows.Close()
	return rows.Err()
}

func recallAt(got []rag.Source, want []string) float64 {
	n := 0
	for _, s := range got {
		if slices.Contains(want, s.ID) {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

func vectorRecall(got []vector.Hit, want []string) float64 {
	n := 0
	for _, h := range got {
		if slices.Contains(want, h.ID) {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func overhead(weft, bare []time.Duration) string {
	w, b := pct(weft, 50), pct(bare, 50)
	return fmt.Sprintf("%+.1f%% at p50 (%v vs %v), %+.1f%% at p99", 100*(float64(w)/float64(b)-1), w.Round(time.Microsecond), b.Round(time.Microsecond),
		100*(float64(pct(weft, 99))/float64(pct(bare, 99))-1))
}

type scaleReport struct{ lines []string }

func (r *scaleReport) add(name, value string) {
	line := fmt.Sprintf("%-50s %s", name, value)
	r.lines = append(r.lines, line)
	fmt.Fprintln(os.Stderr, line) // progress: a long run that is cut short keeps what it measured
}

// lat adds a latency line; recall > 0 adds recall@10.
func (r *scaleReport) lat(name string, d []time.Duration, recall float64) {
	v := fmt.Sprintf("p50 %v  p99 %v", pct(d, 50).Round(time.Microsecond), pct(d, 99).Round(time.Microsecond))
	if recall > 0 {
		v += fmt.Sprintf("  recall@10 %.3f", recall)
	}
	r.add(name, v)
}

func (r *scaleReport) String() string { return strings.Join(r.lines, "\n") }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
