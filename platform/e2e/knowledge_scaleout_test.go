package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform/client"
)

// TestKnowledgeScaleOutPgvector runs two weft serve processes on one
// PostgreSQL, without Redis: knowledge lives in the database (pgvector and
// full text), so a document ingested through one replica is recalled by
// the other at once — also when that replica had already opened the
// knowledge base, with no invalidation to tell it (there is no Redis) and
// no index of its own to rebuild.
func TestKnowledgeScaleOutPgvector(t *testing.T) {
	t.Parallel()
	pgURL := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if pgURL == "" {
		t.Skip("set WEFT_TEST_POSTGRES_URL to run the knowledge scale-out test")
	}
	ensurePgvector(t, pgURL)
	dsn := freshSchema(t, pgURL)
	up := llmtest.NewServer()
	t.Cleanup(up.Close)
	vars := upstreamVars(up)
	vars["WEFT_ADMIN_KEY"] = adminKey
	pa := startServe(t, "", vars, "--addr", "127.0.0.1:0", "--rate-limit", "-1", "--log-format", "json", "--postgres", dsn)
	pb := startServe(t, "", vars, "--addr", "127.0.0.1:0", "--rate-limit", "-1", "--log-format", "json", "--postgres", dsn)
	ca, cb := client.New(pa.url(), adminKey), client.New(pb.url(), adminKey)
	ctx := t.Context()

	model := "scripted/embed"
	kb, err := ca.CreateKnowledgeBase(ctx, client.NewKnowledgeBase{Name: "handbook", EmbeddingModel: &model, ChunkSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	ingest := func(name, text string) {
		t.Helper()
		doc, err := ca.UploadDocument(ctx, kb.ID, name, strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		if d, err := ca.WaitDocument(ctx, kb.ID, doc.ID, 20*time.Millisecond); err != nil || d.Status != "ready" {
			t.Fatalf("document %s = %+v, %v", name, d, err)
		}
	}
	ingest("returns.md", "# Returns\n\nCustomers may return any product within 30 days of delivery for a full refund.\n")
	for _, mode := range []string{"vector", "keyword", "hybrid"} {
		res, err := cb.Search(ctx, kb.ID, client.SearchRequest{Query: "how many days to return a product", Mode: mode})
		if err != nil || len(res) == 0 || !strings.Contains(res[0].Content, "30 days") || res[0].DocumentName != "returns.md" {
			t.Fatalf("%s search on B = %+v, %v", mode, res, err)
		}
	}
	// B has the knowledge base open; A ingests another document.
	ingest("penguins.md", "Penguins live in the southern hemisphere.")
	res, err := cb.Search(ctx, kb.ID, client.SearchRequest{Query: "where do penguins live", Mode: "vector"})
	if err != nil || len(res) == 0 || !strings.Contains(res[0].Content, "Penguins") {
		t.Fatalf("B after A's second ingestion = %+v, %v", res, err)
	}
	// The chunks are in the PostgreSQL knowledge store, with vectors.
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var chunks, vectors int
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM weft_kb_d256_chunks), (SELECT count(*) FROM weft_kb_d256_embeddings)`).Scan(&chunks, &vectors); err != nil || chunks < 2 || vectors != chunks {
		t.Fatalf("knowledge store holds %d chunks, %d vectors (%v)", chunks, vectors, err)
	}
}

// ensurePgvector creates the vector extension in the public schema, as an
// administrator would, so that no test's own schema (dropped at its end)
// owns it.
func ensurePgvector(t *testing.T, pgURL string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('weft pgstore CREATE EXTENSION vector'))`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtext('weft pgstore CREATE EXTENSION vector'))`)
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector SCHEMA public`); err != nil {
		t.Fatalf("pgvector must be installed where WEFT_TEST_POSTGRES_URL points (.ci/run installs it): %v", err)
	}
}
