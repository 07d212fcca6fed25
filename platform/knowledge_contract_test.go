package platform

import (
	"context"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/rag"
)

// The knowledge-store contract: what recall and ingestion may rely on,
// whichever backend keeps the chunks. It runs against the embedded backend
// (chunks in the metadata store, indexes in memory) and the PostgreSQL
// backend (rag/pgstore: full text, and pgvector for the vector cases).
// Tests whose names hold Pgvector need pgvector and fail without it (CI
// installs it).

// contractEnv opens backends over one set of stores: open again is
// another replica (or a restart) over the same data.
type contractEnv struct {
	meta    kbStore
	backend func(t *testing.T) kbBackend
}

func embeddedContract(t *testing.T) contractEnv {
	store, err := meta.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return contractEnv{meta: store, backend: func(*testing.T) kbBackend { return embeddedBackend{store} }}
}

// postgresContract is the PostgreSQL backend in a fresh schema, with the
// metadata store in it too; vectors says whether pgvector must work.
func postgresContract(t *testing.T, vectors bool) contractEnv {
	dsn := pgtest.DSN(t, "platform_kb")
	if vectors {
		ensurePgvector(t)
	}
	store, err := meta.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return contractEnv{meta: store, backend: func(t *testing.T) kbBackend {
		b, err := newPGBackend(context.Background(), dsn, store, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.close)
		return b
	}}
}

// ensurePgvector creates the vector extension in the public schema, as an
// administrator would, so that tests whose search_path is a schema of
// their own (dropped at their end) never own it. pgstore finds its types
// by the extension's schema.
func ensurePgvector(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("WEFT_TEST_POSTGRES_URL"))
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

func TestKnowledgeContract(t *testing.T) {
	runKeywordContract(t, embeddedContract(t))
	runVectorContract(t, embeddedContract(t))
}

func TestKnowledgeContractPostgres(t *testing.T) {
	runKeywordContract(t, postgresContract(t, false))
}

func TestKnowledgeContractPgvector(t *testing.T) {
	runVectorContract(t, postgresContract(t, true))
}

// axes maps words to unit axes: a text's vector is the normalised sum of
// its words' axes, so cosine similarities are exact and hand-checkable.
var contractAxes = map[string]int{"price": 0, "euros": 0, "charger": 1, "battery": 1, "screen": 2, "display": 2}

const contractDims = 4

func axisVec(text string) []float32 {
	v := make([]float32, contractDims)
	for _, w := range strings.Fields(strings.ToLower(text)) {
		if i, ok := contractAxes[strings.Trim(w, ".,?")]; ok {
			v[i]++
		}
	}
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	if n == 0 {
		v[contractDims-1] = 1
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
		out[i] = axisVec(t)
	}
	return out, nil
})

func cchunk(doc string, i int, text string, md map[string]string) rag.Chunk {
	m := map[string]string{rag.MetaName: doc, rag.MetaDocumentID: doc}
	for k, v := range md {
		m[k] = v
	}
	return rag.Chunk{ID: doc + "#" + string(rune('0'+i)), DocumentID: doc, Index: i, Text: text, Tokens: 8, Metadata: m}
}

var contractCorpus = []rag.Chunk{
	cchunk("x200.md", 0, "The X200 costs 499 euros including tax.", map[string]string{"lang": "en"}),
	cchunk("x200.md", 1, "The X200 ships with a charger and a case.", map[string]string{"lang": "en"}),
	cchunk("z9.md", 0, "The Z9 has a larger screen than the X200.", map[string]string{"lang": "en"}),
	cchunk("z9-de.md", 0, "Das Z9 hat einen größeren Bildschirm.", map[string]string{"lang": "de"}),
}

func upsertAll(t *testing.T, ix kbIndex, chunks []rag.Chunk, vectors bool) {
	t.Helper()
	var vecs [][]float32
	if vectors {
		for _, c := range chunks {
			vecs = append(vecs, axisVec(c.Text))
		}
	}
	if err := ix.Upsert(context.Background(), chunks, vecs); err != nil {
		t.Fatal(err)
	}
}

func contractKB(tenant, id string) meta.KnowledgeBase {
	return meta.KnowledgeBase{ID: id, TenantID: tenant, Name: id, ChunkSize: 64, CreatedAt: time.Now().UTC()}
}

func recallIDs(t *testing.T, r rag.Retriever, query string, k int) []string {
	t.Helper()
	src, err := r.Retrieve(context.Background(), query, k)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(src))
	for i, s := range src {
		ids[i] = s.ID
	}
	return ids
}

func openIndex(t *testing.T, b kbBackend, kb meta.KnowledgeBase, dim int) kbIndex {
	t.Helper()
	ix, err := b.open(context.Background(), kb, dim)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func runKeywordContract(t *testing.T, env contractEnv) {
	ctx := context.Background()
	b := env.backend(t)
	t.Run("KeywordRecall", func(t *testing.T) {
		kb := contractKB("acme", "kb_kw")
		ix := openIndex(t, b, kb, 0)
		upsertAll(t, ix, contractCorpus, false)
		h := &kbHandle{kb: kb, index: ix}
		r, err := h.retriever("hybrid", 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		src, err := r.Retrieve(ctx, "does it come with a charger?", 3)
		if err != nil || len(src) == 0 {
			t.Fatalf("recall = %v, %v", src, err)
		}
		s := src[0]
		if s.ID != "x200.md#1" || s.Collection != kb.ID || s.DocumentID != "x200.md" || s.Metadata["lang"] != "en" || !strings.Contains(s.Content, "charger") || s.Score <= 0 {
			t.Fatalf("best source = %+v", s)
		}
		if ids := recallIDs(t, r, "X200", 1); len(ids) != 1 {
			t.Fatalf("k=1 gave %v", ids)
		}
		if ids := recallIDs(t, r, "   ", 3); len(ids) != 0 {
			t.Fatalf("blank query gave %v", ids)
		}
	})
	t.Run("KeywordFilter", func(t *testing.T) {
		kb := contractKB("acme", "kb_filter")
		ix := openIndex(t, b, kb, 0)
		upsertAll(t, ix, contractCorpus, false)
		r, err := ix.keywordRetriever([]rag.RetrieveOption{rag.MatchMetadata(map[string]string{"lang": "de"})})
		if err != nil {
			t.Fatal(err)
		}
		if ids := recallIDs(t, r, "Z9 screen Bildschirm", 5); !slices.Equal(ids, []string{"z9-de.md#0"}) {
			t.Fatalf("filtered recall = %v", ids)
		}
	})
	t.Run("ReplaceAndDelete", func(t *testing.T) {
		kb := contractKB("acme", "kb_replace")
		ix := openIndex(t, b, kb, 0)
		upsertAll(t, ix, contractCorpus, false)
		upsertAll(t, ix, []rag.Chunk{cchunk("x200.md", 1, "The X200 ships with a pouch.", nil)}, false)
		r, _ := ix.keywordRetriever(nil)
		if ids := recallIDs(t, r, "charger", 5); len(ids) != 0 {
			t.Fatalf("replaced text still recalled: %v", ids)
		}
		if ids := recallIDs(t, r, "pouch", 5); !slices.Equal(ids, []string{"x200.md#1"}) {
			t.Fatalf("new text: %v", ids)
		}
		if err := ix.Delete(ctx, "x200.md#1", "no-such-chunk"); err != nil {
			t.Fatal(err)
		}
		if ids := recallIDs(t, r, "pouch", 5); len(ids) != 0 {
			t.Fatalf("deleted chunk recalled: %v", ids)
		}
		got, err := ix.ChunkIDs(ctx, "x200.md")
		if err != nil || !slices.Equal(got, []string{"x200.md#0"}) {
			t.Fatalf("ChunkIDs = %v, %v", got, err)
		}
		if err := ix.DeleteDocument(ctx, "x200.md"); err != nil {
			t.Fatal(err)
		}
		if ids := recallIDs(t, r, "X200 euros", 5); slices.Contains(ids, "x200.md#0") {
			t.Fatalf("deleted document recalled: %v", ids)
		}
		if got, _ := ix.ChunkIDs(ctx, "x200.md"); len(got) != 0 {
			t.Fatalf("ChunkIDs after DeleteDocument = %v", got)
		}
	})
	t.Run("Isolation", func(t *testing.T) {
		// The same chunk IDs in three knowledge bases: two of one tenant,
		// and one of another tenant with the same knowledge-base ID.
		a, other, foreign := contractKB("acme", "kb_iso_a"), contractKB("acme", "kb_iso_b"), contractKB("globex", "kb_iso_a")
		ixA, ixB, ixF := openIndex(t, b, a, 0), openIndex(t, b, other, 0), openIndex(t, b, foreign, 0)
		upsertAll(t, ixA, []rag.Chunk{cchunk("doc.md", 0, "alpha apples", nil)}, false)
		upsertAll(t, ixB, []rag.Chunk{cchunk("doc.md", 0, "beta bananas", nil)}, false)
		upsertAll(t, ixF, []rag.Chunk{cchunk("doc.md", 0, "gamma grapes", nil)}, false)
		for _, c := range []struct {
			ix         kbIndex
			want, miss string
		}{{ixA, "apples", "bananas grapes"}, {ixB, "bananas", "apples grapes"}, {ixF, "grapes", "apples bananas"}} {
			r, _ := c.ix.keywordRetriever(nil)
			if ids := recallIDs(t, r, c.miss, 5); len(ids) != 0 {
				t.Fatalf("recalled another knowledge base's chunk for %q: %v", c.miss, ids)
			}
			if ids := recallIDs(t, r, c.want, 5); len(ids) != 1 {
				t.Fatalf("own chunk %q: %v", c.want, ids)
			}
		}
		if err := ixB.DeleteDocument(ctx, "doc.md"); err != nil {
			t.Fatal(err)
		}
		if got, _ := ixA.ChunkIDs(ctx, "doc.md"); len(got) != 1 {
			t.Fatalf("deleting B's document touched A: %v", got)
		}
	})
	t.Run("ReopenAndDrop", func(t *testing.T) {
		kb := contractKB("acme", "kb_reopen")
		if err := env.meta.CreateKB(ctx, kb); err != nil {
			t.Fatal(err)
		}
		upsertAll(t, openIndex(t, b, kb, 0), contractCorpus, false)
		// Another replica (or a restart) recalls what this one stored.
		ix := openIndex(t, env.backend(t), kb, 0)
		r, _ := ix.keywordRetriever(nil)
		if ids := recallIDs(t, r, "charger", 5); !slices.Equal(ids, []string{"x200.md#1"}) {
			t.Fatalf("after reopen: %v", ids)
		}
		// Deleting the knowledge base, as the API does, leaves nothing.
		if err := env.meta.DeleteKB(ctx, kb.TenantID, kb.ID); err != nil {
			t.Fatal(err)
		}
		if err := b.drop(ctx, kb.TenantID, kb.ID); err != nil {
			t.Fatal(err)
		}
		ix = openIndex(t, env.backend(t), kb, 0)
		r, _ = ix.keywordRetriever(nil)
		if ids := recallIDs(t, r, "charger X200 Z9", 5); len(ids) != 0 {
			t.Fatalf("after delete: %v", ids)
		}
	})
}

func runVectorContract(t *testing.T, env contractEnv) {
	ctx := context.Background()
	b := env.backend(t)
	t.Run("VectorRecall", func(t *testing.T) {
		kb := contractKB("acme", "kb_vec")
		ix := openIndex(t, b, kb, contractDims)
		upsertAll(t, ix, contractCorpus, true)
		h := &kbHandle{kb: kb, index: ix, embedder: axisEmbedder}
		r, err := h.retriever("vector", 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		// "battery" shares no word with any chunk, only the charger axis.
		src, err := r.Retrieve(ctx, "battery", 2)
		if err != nil || len(src) == 0 {
			t.Fatalf("vector recall = %v, %v", src, err)
		}
		if src[0].ID != "x200.md#1" || math.Abs(src[0].Score-1) > 1e-5 || src[0].Collection != kb.ID {
			t.Fatalf("nearest = %+v", src[0])
		}
		if len(src) > 1 && src[1].Score > src[0].Score {
			t.Fatalf("not best first: %+v", src)
		}
	})
	t.Run("HybridRecall", func(t *testing.T) {
		kb := contractKB("acme", "kb_hybrid")
		ix := openIndex(t, b, kb, contractDims)
		upsertAll(t, ix, contractCorpus, true)
		h := &kbHandle{kb: kb, index: ix, embedder: axisEmbedder}
		r, err := h.retriever("hybrid", 4, 0)
		if err != nil {
			t.Fatal(err)
		}
		// "display" finds the Z9 by vector only, "Bildschirm" the German
		// chunk by keyword only; fusion returns both.
		ids := recallIDs(t, r, "display Bildschirm", 4)
		if !slices.Contains(ids, "z9.md#0") || !slices.Contains(ids, "z9-de.md#0") {
			t.Fatalf("hybrid recall = %v", ids)
		}
	})
	t.Run("VectorFilter", func(t *testing.T) {
		kb := contractKB("acme", "kb_vfilter")
		ix := openIndex(t, b, kb, contractDims)
		upsertAll(t, ix, contractCorpus, true)
		r, err := ix.vectorRetriever(axisEmbedder, []rag.RetrieveOption{rag.MatchMetadata(map[string]string{"lang": "de"})})
		if err != nil {
			t.Fatal(err)
		}
		if ids := recallIDs(t, r, "display", 5); !slices.Equal(ids, []string{"z9-de.md#0"}) {
			t.Fatalf("filtered vector recall = %v", ids)
		}
	})
	t.Run("VectorIsolationAndDelete", func(t *testing.T) {
		a, other := contractKB("acme", "kb_viso_a"), contractKB("globex", "kb_viso_a")
		ixA, ixO := openIndex(t, b, a, contractDims), openIndex(t, b, other, contractDims)
		upsertAll(t, ixA, []rag.Chunk{cchunk("doc.md", 0, "price", nil)}, true)
		upsertAll(t, ixO, []rag.Chunk{cchunk("doc.md", 0, "screen", nil), cchunk("doc.md", 1, "charger", nil)}, true)
		r, _ := ixA.vectorRetriever(axisEmbedder, nil)
		if ids := recallIDs(t, r, "screen", 5); !slices.Equal(ids, []string{"doc.md#0"}) {
			t.Fatalf("recall in A = %v", ids)
		}
		src, _ := r.Retrieve(ctx, "screen", 5)
		if src[0].Content != "price" {
			t.Fatalf("recalled another tenant's chunk: %+v", src[0])
		}
		if err := ixA.DeleteDocument(ctx, "doc.md"); err != nil {
			t.Fatal(err)
		}
		if ids := recallIDs(t, r, "price", 5); len(ids) != 0 {
			t.Fatalf("deleted vector recalled: %v", ids)
		}
		ro, _ := ixO.vectorRetriever(axisEmbedder, nil)
		if ids := recallIDs(t, ro, "charger", 1); !slices.Equal(ids, []string{"doc.md#1"}) {
			t.Fatalf("other tenant after A's delete: %v", ids)
		}
	})
	t.Run("DimensionMismatch", func(t *testing.T) {
		kb := contractKB("acme", "kb_dims")
		ix := openIndex(t, b, kb, contractDims)
		err := ix.Upsert(ctx, []rag.Chunk{cchunk("a.md", 0, "price", nil), cchunk("a.md", 1, "screen", nil)}, [][]float32{axisVec("price"), {1, 0}})
		if err == nil || !strings.Contains(err.Error(), "dimensions") {
			t.Fatalf("mismatching vector: %v", err)
		}
		if got, _ := ix.ChunkIDs(ctx, "a.md"); len(got) != 0 {
			t.Fatalf("a failed upsert stored %v", got)
		}
	})
	t.Run("VectorsSurviveReopen", func(t *testing.T) {
		kb := contractKB("acme", "kb_vreopen")
		upsertAll(t, openIndex(t, b, kb, contractDims), contractCorpus, true)
		ix := openIndex(t, env.backend(t), kb, contractDims)
		r, _ := ix.vectorRetriever(axisEmbedder, nil)
		if ids := recallIDs(t, r, "display", 1); !slices.Equal(ids, []string{"z9.md#0"}) {
			t.Fatalf("after reopen: %v", ids)
		}
	})
}

// A --postgres deployment from before the PostgreSQL knowledge store kept
// chunks (with vectors) in the metadata store's chunk table: the first open
// moves them over, recall finds them, and the old rows are gone.
func TestKnowledgePostgresAdoptsLegacyChunksPgvector(t *testing.T) {
	ctx := context.Background()
	env := postgresContract(t, true)
	kb := contractKB("acme", "kb_legacy")
	legacy := env.meta.Chunks(kb.TenantID, kb.ID)
	var vecs [][]float32
	for _, c := range contractCorpus {
		vecs = append(vecs, axisVec(c.Text))
	}
	if err := legacy.Upsert(ctx, contractCorpus, vecs); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, env.backend(t), kb, contractDims)
	r, _ := ix.vectorRetriever(axisEmbedder, nil)
	if ids := recallIDs(t, r, "display", 1); !slices.Equal(ids, []string{"z9.md#0"}) {
		t.Fatalf("adopted vectors: %v", ids)
	}
	k, _ := ix.keywordRetriever(nil)
	if ids := recallIDs(t, k, "charger", 1); !slices.Equal(ids, []string{"x200.md#1"}) {
		t.Fatalf("adopted text: %v", ids)
	}
	left := 0
	legacy.All(ctx, func(rag.Chunk, []float32) error { left++; return nil })
	if left != 0 {
		t.Fatalf("%d chunks left in the metadata store", left)
	}
}

// An embedding model that now makes vectors of another length is an error
// that says to re-ingest, not a knowledge base that silently recalls
// nothing.
func TestKnowledgePostgresDimensionChangePgvector(t *testing.T) {
	env := postgresContract(t, true)
	b := env.backend(t)
	kb := contractKB("acme", "kb_dimchange")
	kb.EmbeddingModel = "scripted/embed"
	upsertAll(t, openIndex(t, b, kb, contractDims), contractCorpus, true)
	if _, err := b.open(context.Background(), kb, 8); err == nil || !strings.Contains(err.Error(), "re-ingest") || !strings.Contains(err.Error(), "4 dimensions") {
		t.Fatalf("open with another dimension: %v", err)
	}
	// A new knowledge base of that dimension is fine.
	openIndex(t, b, contractKB("acme", "kb_dimnew"), 8)
}

// boundedEmbedded is the embedded backend marked cheap to reopen, to test
// the bound on handles without PostgreSQL.
type boundedEmbedded struct{ embeddedBackend }

func (boundedEmbedded) bounded() bool { return true }

// With a backend that holds no index (PostgreSQL), a server keeps a bounded
// number of knowledge-base handles; a dropped one reopens on its next use.
func TestKnowledgeHandlesAreBounded(t *testing.T) {
	env := embeddedContract(t)
	k := &knowledge{store: env.meta, backend: boundedEmbedded{embeddedBackend{env.meta}}, kbs: map[string]*kbLoad{}, maxHandles: 2}
	ctx := context.Background()
	for i := range 5 {
		kb := contractKB("acme", "kb_bound_"+string(rune('a'+i)))
		if _, err := k.open(ctx, kb); err != nil {
			t.Fatal(err)
		}
		if n := len(k.kbs); n > 2 {
			t.Fatalf("%d handles kept, bound 2", n)
		}
	}
	h, err := k.open(ctx, contractKB("acme", "kb_bound_a"))
	if err != nil || h.kb.ID != "kb_bound_a" {
		t.Fatalf("reopen: %+v, %v", h, err)
	}
}
