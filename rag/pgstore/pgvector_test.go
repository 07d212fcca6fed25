package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/pgstore"
)

// The tests in this file need pgvector. With WEFT_TEST_POSTGRES_URL set they
// FAIL, not skip, when the store cannot search vectors: CI installs pgvector
// (.ci/run), so a skipped vector path would be an untested one.

const pgvDims = 4

// openVectorStore opens a store in a fresh schema with vector search, and
// fails the test when pgvector does not work.
func openVectorStore(t testing.TB, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	s := openStore(t, append([]pgstore.Option{pgstore.WithDimensions(pgvDims)}, opts...)...)
	if err := s.VectorSearch(); err != nil {
		t.Fatalf("pgvector must work where WEFT_TEST_POSTGRES_URL points (.ci/run installs it): %v", err)
	}
	return s
}

// axes maps words to unit axes, so that a text's vector is the normalised
// sum of its words' axes: exact, hand-checkable cosine similarities.
var axes = map[string]int{"price": 0, "euros": 0, "charger": 1, "battery": 1, "screen": 2, "display": 2, "tokyo": 3}

func axisVector(text string) []float32 {
	v := make([]float32, pgvDims)
	for _, w := range strings.Fields(strings.ToLower(text)) {
		if i, ok := axes[strings.Trim(w, ".,?")]; ok {
			v[i]++
		}
	}
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	if n == 0 {
		v[pgvDims-1] = 1
		return v
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(n))
	}
	return v
}

var axisEmbedder = rag.EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = axisVector(t)
	}
	return out, nil
})

func vectorsOf(chunks []rag.Chunk) [][]float32 {
	out := make([][]float32, len(chunks))
	for i, c := range chunks {
		out[i] = axisVector(c.Text)
	}
	return out
}

var vcorpus = []rag.Chunk{
	chunk("a.md", 0, "The price is 499 euros.", map[string]string{"lang": "en"}),
	chunk("a.md", 1, "A charger is in the box.", map[string]string{"lang": "en"}),
	chunk("b.md", 0, "Battery and screen specs.", map[string]string{"lang": "en"}),
	chunk("c.md", 0, "Der Display ist groß.", map[string]string{"lang": "de"}),
}

func countRows(t testing.TB, dsn, query string, args ...any) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestPgvectorSetUp(t *testing.T) {
	t.Parallel()
	dsn, schema := testSchema(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, dsn, pgstore.WithSchema(schema), pgstore.WithDimensions(pgvDims))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.VectorSearch(); err != nil {
		t.Fatalf("VectorSearch() = %v", err)
	}
	if n := countRows(t, dsn, `SELECT count(*) FROM pg_extension WHERE extname = 'vector'`); n != 1 {
		t.Errorf("extension vector not created")
	}
	// The embeddings table has a vector(dims) column and an HNSW cosine index.
	if n := countRows(t, dsn, `SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND tablename = 'weft_kb_embeddings'
		AND indexdef LIKE '%USING hnsw (embedding vector_cosine_ops)%'`, schema); n != 1 {
		t.Errorf("HNSW cosine index: %d found, want 1", n)
	}
	if n := countRows(t, dsn, `SELECT count(*) FROM pg_attribute WHERE attrelid = $1::regclass
		AND attname = 'embedding' AND format_type(atttypid, atttypmod) = $2`,
		schema+".weft_kb_embeddings", fmt.Sprintf("vector(%d)", pgvDims)); n != 1 {
		t.Errorf("embedding column is not vector(%d)", pgvDims)
	}
	// Reopening with the same dimension works; with another it is a clear error.
	again, err := pgstore.Open(ctx, dsn, pgstore.WithSchema(schema), pgstore.WithDimensions(pgvDims))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	again.Close()
	_, err = pgstore.Open(ctx, dsn, pgstore.WithSchema(schema), pgstore.WithDimensions(pgvDims+1))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("vector(%d)", pgvDims)) || !strings.Contains(err.Error(), "re-embed") {
		t.Errorf("reopen with another dimension: %v", err)
	}
}

// TestPgvectorConcurrentFirstOpen opens stores in several schemas of a fresh
// database at once: each must end up with vector search, although only one
// of them can create the extension.
func TestPgvectorConcurrentFirstOpen(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if dsn == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL not set")
	}
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	db := "weft_pgvtest_" + hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		admin.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer admin.Close(context.Background())
		if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database: %v", err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			s, err := pgstore.Open(ctx, u.String(), pgstore.WithSchema(fmt.Sprintf("s%d", i)), pgstore.WithDimensions(pgvDims))
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			errs[i] = s.VectorSearch()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("store %d: %v", i, err)
		}
	}
}

func TestPgvectorSearch(t *testing.T) {
	t.Parallel()
	s := openVectorStore(t)
	ctx := context.Background()
	kb := s.KnowledgeBase("kb")
	if err := kb.Upsert(ctx, vcorpus, vectorsOf(vcorpus)); err != nil {
		t.Fatal(err)
	}
	// Another knowledge base with the same chunks, pointing elsewhere.
	other := s.KnowledgeBase("other")
	moved := slices.Clone(vcorpus)
	if err := other.Upsert(ctx, moved, [][]float32{{0, 0, 0, 1}, {0, 0, 0, 1}, {0, 0, 0, 1}, {0, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	r, err := kb.VectorRetriever(axisEmbedder)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Retrieve(ctx, "what about the battery?", 2)
	if err != nil {
		t.Fatal(err)
	}
	// charger (axis 1): cosine 1; battery+screen: 1/√2.
	want := []struct {
		text  string
		score float64
	}{{vcorpus[1].Text, 1}, {vcorpus[2].Text, 1 / math.Sqrt2}}
	if len(got) != len(want) {
		t.Fatalf("got %q, want 2 sources", contents(got))
	}
	for i, w := range want {
		if got[i].Content != w.text || math.Abs(got[i].Score-w.score) > 1e-5 || got[i].Collection != "kb" {
			t.Errorf("source %d = %q score %v (%s), want %q score %v", i, got[i].Content, got[i].Score, got[i].Collection, w.text, w.score)
		}
	}

	// Metadata filter, and per-knowledge-base isolation.
	r, _ = kb.VectorRetriever(axisEmbedder, rag.MatchMetadata(map[string]string{"lang": "de"}))
	got, err = r.Retrieve(ctx, "screen", 5)
	if err != nil || !slices.Equal(contents(got), []string{vcorpus[3].Text}) {
		t.Errorf("filtered: %q, %v", contents(got), err)
	}
	r, _ = other.VectorRetriever(axisEmbedder)
	got, err = r.Retrieve(ctx, "tokyo", 10)
	if err != nil || len(got) != len(vcorpus) {
		t.Fatalf("other knowledge base: %q, %v", contents(got), err)
	}
	for _, src := range got {
		if src.Collection != "other" || math.Abs(src.Score-1) > 1e-5 {
			t.Errorf("other knowledge base returned %+v", src)
		}
	}

	// Replacing a chunk replaces its vector; deleting a document removes
	// its vectors.
	changed := vcorpus[0]
	if err := kb.Upsert(ctx, []rag.Chunk{changed}, [][]float32{axisVector("tokyo")}); err != nil {
		t.Fatal(err)
	}
	r, _ = kb.VectorRetriever(axisEmbedder)
	got, _ = r.Retrieve(ctx, "tokyo", 1)
	if len(got) != 1 || got[0].Content != changed.Text || math.Abs(got[0].Score-1) > 1e-5 {
		t.Errorf("after replacing the vector: %+v", got)
	}
	if err := kb.DeleteDocument(ctx, changed.DocumentID); err != nil {
		t.Fatal(err)
	}
	got, _ = r.Retrieve(ctx, "tokyo", 10)
	for _, src := range got {
		if src.DocumentID == changed.DocumentID {
			t.Errorf("deleted document still recalled: %+v", src)
		}
	}
	if len(got) != 2 {
		t.Errorf("after delete: %q, want the 2 other chunks", contents(got))
	}
}

func TestPgvectorHybridRecall(t *testing.T) {
	t.Parallel()
	s := openVectorStore(t)
	ctx := context.Background()
	kb := s.KnowledgeBase("kb")
	if err := kb.Upsert(ctx, vcorpus, vectorsOf(vcorpus)); err != nil {
		t.Fatal(err)
	}
	r := kb.Retriever(axisEmbedder)
	if got, want := r.Describe(), "vector + keyword (reciprocal rank fusion, k=60)"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	// "display" finds "Der Display ist groß." by both halves, and
	// "Battery and screen specs." only by vector (screen and display share
	// an axis): fusion ranks the first above the second.
	got, err := r.Retrieve(ctx, "display", 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{vcorpus[3].Text, vcorpus[2].Text}; !slices.Equal(contents(got), want) {
		t.Errorf("hybrid recall = %q, want %q", contents(got), want)
	}
	// With a filter, both halves honour it.
	r = kb.Retriever(axisEmbedder, rag.MatchMetadata(map[string]string{"lang": "en"}))
	got, err = r.Retrieve(ctx, "display", 5)
	if err != nil || len(got) == 0 || got[0].Content != vcorpus[2].Text {
		t.Fatalf("filtered hybrid recall = %q, %v", contents(got), err)
	}
	for _, src := range got {
		if src.Content == vcorpus[3].Text {
			t.Errorf("filtered hybrid recall returned a lang=de chunk: %q", contents(got))
		}
	}
}

func TestPgvectorDimensionMismatch(t *testing.T) {
	t.Parallel()
	s := openVectorStore(t)
	ctx := context.Background()
	kb := s.KnowledgeBase("kb")
	vecs := vectorsOf(vcorpus)
	vecs[2] = vecs[2][:pgvDims-1]
	err := kb.Upsert(ctx, vcorpus, vecs)
	if err == nil || !strings.Contains(err.Error(), "3 dimensions") {
		t.Errorf("short vector: %v", err)
	}
	if n, _ := kb.Len(ctx); n != 0 {
		t.Errorf("a rejected upsert stored %d chunks", n)
	}
	short := rag.EmbedderFunc(func(context.Context, []string) ([][]float32, error) { return [][]float32{{1, 0}}, nil })
	r, err := kb.VectorRetriever(short)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Retrieve(ctx, "price", 3); err == nil || !strings.Contains(err.Error(), "2 dimensions") {
		t.Errorf("query of the wrong dimension: %v", err)
	}
}

// TestPgvectorIngest runs rag.Ingester with an embedder into the store and
// recalls by vector alone.
func TestPgvectorIngest(t *testing.T) {
	t.Parallel()
	s := openVectorStore(t)
	ctx := context.Background()
	kb := s.KnowledgeBase("kb")
	ing, err := rag.NewIngester(kb, rag.WithEmbedder(axisEmbedder))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ing.IngestDocuments(ctx,
		rag.Document{Name: "p.md", Text: "The price is 499 euros."},
		rag.Document{Name: "t.md", Text: "Tokyo."})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Name, r.Err)
		}
	}
	vr, _ := kb.VectorRetriever(axisEmbedder)
	got, err := vr.Retrieve(ctx, "tokyo", 1)
	if err != nil || len(got) != 1 || got[0].DocumentName != "t.md" {
		t.Errorf("recall after ingest: %+v, %v", got, err)
	}
}
