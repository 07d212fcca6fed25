package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestVectorLiteral(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    []float32
		want string
	}{
		{nil, "[]"},
		{[]float32{1}, "[1]"},
		{[]float32{0.1, -2.5, 1e-7, float32(math.Pi)}, "[0.1,-2.5,1e-07,3.1415927]"},
	}
	for _, tt := range tests {
		if got := vectorLiteral(tt.v); got != tt.want {
			t.Errorf("vectorLiteral(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestCleanText(t *testing.T) {
	t.Parallel()
	if got := cleanText("a\x00b\xffc"); got != "a\uFFFDb\uFFFDc" {
		t.Errorf("cleanText = %q", got)
	}
	if got := TSQuery("The X200 prices, 東京!"); got != `'x200' | 'price' | '東京'` {
		t.Errorf("TSQuery = %q", got)
	}
}

// TestPgvectorSearchUsesHNSW checks that the vector search's plan scans the
// HNSW index rather than sorting every embedding.
func TestPgvectorSearchUsesHNSW(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if dsn == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL not set")
	}
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	schema := "weft_kbtest_" + hex.EncodeToString(b[:])
	s, err := Open(ctx, dsn, WithSchema(schema), WithDimensions(3))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer s.pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE") //nolint:errcheck // best effort
	if err := s.VectorSearch(); err != nil {
		t.Fatalf("pgvector must work where WEFT_TEST_POSTGRES_URL points: %v", err)
	}
	// Enough rows, analysed, for the planner to weigh an index against a sort.
	for _, q := range []string{
		`INSERT INTO ` + s.chunks + ` (kb, id, document_id, idx, content, start_byte, end_byte, tokens, terms)
			SELECT 'kb', i::text, 'd', i, 'x', 0, 1, 1, 'x' FROM generate_series(1, 5000) i`,
		`INSERT INTO ` + s.embeddings + ` (kb, id, embedding)
			SELECT 'kb', i::text, ('[' || sin(i) || ',' || cos(i) || ',1]')::vector FROM generate_series(1, 5000) i`,
		`ANALYZE ` + s.chunks, `ANALYZE ` + s.embeddings,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, "EXPLAIN "+s.vectorQuery(), "kb", "[1,0,0]", "{}", 10)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "weft_kb_embeddings_hnsw") {
		t.Errorf("vector search does not use the HNSW index:\n%s", plan)
	}
}

// TestPgvectorSelectiveFilterFindsK: two chunks of 5,000 match a filter,
// and a vector search with a small candidate list (WithEfSearch(10)) still
// returns both: pgvector 0.8's iterative index scan, set per search
// in the same round trip as the search.
func TestPgvectorSelectiveFilterFindsK(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if dsn == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL not set")
	}
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	schema := "weft_kbtest_" + hex.EncodeToString(b[:])
	s, err := Open(ctx, dsn, WithSchema(schema), WithDimensions(3), WithEfSearch(10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer s.pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE") //nolint:errcheck // best effort
	if err := s.VectorSearch(); err != nil {
		t.Fatalf("pgvector must work where WEFT_TEST_POSTGRES_URL points: %v", err)
	}
	if !strings.Contains(s.searchSettings, "iterative_scan") || !strings.Contains(s.searchSettings, "'10'") {
		t.Fatalf("search settings = %q", s.searchSettings)
	}
	for _, q := range []string{
		`INSERT INTO ` + s.chunks + ` (kb, id, document_id, idx, content, start_byte, end_byte, tokens, terms, metadata)
			SELECT 'kb', i::text, 'd', i, 'x', 0, 1, 1, 'x', CASE WHEN i % 1700 = 0 THEN '{"tag":"rare"}' ELSE '{}' END::jsonb FROM generate_series(1, 5000) i`,
		`INSERT INTO ` + s.embeddings + ` (kb, id, embedding)
			SELECT 'kb', i::text, ('[' || sin(i) || ',' || cos(i) || ',1]')::vector FROM generate_series(1, 5000) i`,
		`ANALYZE ` + s.chunks, `ANALYZE ` + s.embeddings,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	chunks, _, err := s.KnowledgeBase("kb").searchVectors(ctx, []float32{1, 0, 0}, 5, map[string]string{"tag": "rare"})
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 2 {
		t.Fatalf("found %d of the 2 rare chunks", len(chunks))
	}
}
