package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/pgstore"
)

// testSchema returns the DSN of the test server and a fresh schema name,
// dropped when the test ends.
func testSchema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = os.Getenv("WEFT_TEST_POSTGRES_URL")
	if dsn == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL not set")
	}
	var b [6]byte
	rand.Read(b[:])
	schema = "weft_kbtest_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return dsn, schema
}

func openStore(t testing.TB, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	dsn, schema := testSchema(t)
	s, err := pgstore.Open(context.Background(), dsn, append([]pgstore.Option{pgstore.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func chunk(doc string, i int, text string, meta map[string]string) rag.Chunk {
	docID := rag.DocumentID(doc)
	m := map[string]string{rag.MetaName: doc, rag.MetaDocumentID: docID}
	for k, v := range meta {
		m[k] = v
	}
	return rag.Chunk{ID: rag.ChunkID(docID, i, text), DocumentID: docID, Index: i, Text: text, Start: i * 10, End: i*10 + len(text), Tokens: 7, Metadata: m}
}

var corpus = []rag.Chunk{
	chunk("x200.md", 0, "The X200 costs 499 euros including tax.", map[string]string{rag.MetaHeadings: "Pricing"}),
	chunk("x200.md", 1, "The X200 ships with a charger and a case.", nil),
	chunk("z9.md", 0, "The Z9 costs 899 euros and has a larger screen.", nil),
	chunk("tokyo.md", 0, "東京都の人口は約1400万人です。", nil),
	chunk("tokyo.md", 1, "大阪府は関西地方にあります。", nil),
	chunk("seoul.md", 0, "서울특별시는 대한민국의 수도입니다.", nil),
}

func contents(sources []rag.Source) []string {
	out := make([]string, len(sources))
	for i, s := range sources {
		out[i] = s.Content
	}
	return out
}

func TestStoreUpsertReadDelete(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	kb := s.KnowledgeBase("kb1")
	other := s.KnowledgeBase("kb2")
	if err := kb.Upsert(ctx, corpus, nil); err != nil {
		t.Fatal(err)
	}
	if err := other.Upsert(ctx, corpus[:1], nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := kb.Len(ctx); n != len(corpus) {
		t.Fatalf("Len = %d, want %d", n, len(corpus))
	}

	got, err := kb.ReadChunks(ctx, []string{corpus[0].ID, "missing", corpus[3].ID})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b rag.Chunk) int { return strings.Compare(a.Text, b.Text) })
	want := []rag.Chunk{corpus[0], corpus[3]}
	slices.SortFunc(want, func(a, b rag.Chunk) int { return strings.Compare(a.Text, b.Text) })
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.DocumentID != w.DocumentID || g.Index != w.Index || g.Text != w.Text || g.Start != w.Start || g.End != w.End || g.Tokens != w.Tokens || !maps.Equal(g.Metadata, w.Metadata) {
			t.Errorf("read back %+v, want %+v", g, w)
		}
	}

	// Replacing a chunk updates it in place.
	changed := corpus[0]
	changed.Text = "The X200 now costs 449 euros."
	changed.Metadata = map[string]string{"edited": "yes"}
	if err := kb.Upsert(ctx, []rag.Chunk{changed}, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = kb.ReadChunks(ctx, []string{changed.ID})
	if len(got) != 1 || got[0].Text != changed.Text || got[0].Metadata["edited"] != "yes" {
		t.Errorf("after replace: %+v", got)
	}
	hits, _ := kb.KeywordRetriever().Retrieve(ctx, "449", 5)
	if len(hits) != 1 {
		t.Errorf("replaced text not searchable: %q", contents(hits))
	}

	ids, err := kb.ChunkIDs(ctx, rag.DocumentID("tokyo.md"))
	if err != nil || !slices.Equal(ids, []string{corpus[3].ID, corpus[4].ID}) {
		t.Errorf("ChunkIDs = %v, %v", ids, err)
	}
	if err := kb.DeleteDocument(ctx, rag.DocumentID("tokyo.md")); err != nil {
		t.Fatal(err)
	}
	if err := kb.Delete(ctx, corpus[1].ID, "unknown"); err != nil {
		t.Fatal(err)
	}
	if n, _ := kb.Len(ctx); n != len(corpus)-3 {
		t.Errorf("after deletes Len = %d, want %d", n, len(corpus)-3)
	}
	// The other knowledge base is untouched.
	if n, _ := other.Len(ctx); n != 1 {
		t.Errorf("other knowledge base has %d chunks, want 1", n)
	}
	if err := s.DeleteKnowledgeBase(ctx, "kb1"); err != nil {
		t.Fatal(err)
	}
	if n, _ := kb.Len(ctx); n != 0 {
		t.Errorf("deleted knowledge base has %d chunks", n)
	}
}

func TestStoreRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	kb := s.KnowledgeBase("kb")
	if err := kb.Upsert(ctx, []rag.Chunk{{ID: "x", Text: "no document"}}, nil); err == nil {
		t.Error("chunk without document ID accepted")
	}
	if err := kb.Upsert(ctx, corpus[:2], [][]float32{{1}}); err == nil {
		t.Error("vector count mismatch accepted")
	}
	// NUL and invalid UTF-8 are stored, replaced.
	c := chunk("odd.txt", 0, "nul\x00byte", map[string]string{"bad": "\xff"})
	if err := kb.Upsert(ctx, []rag.Chunk{c}, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := kb.ReadChunks(ctx, []string{c.ID})
	if len(got) != 1 || got[0].Text != "nul\uFFFDbyte" || got[0].Metadata["bad"] != "\uFFFD" {
		t.Errorf("stored %+v", got)
	}
	if _, err := pgstore.New(ctx, nil, pgstore.WithSchema("bad-name")); err == nil {
		t.Error("bad schema name accepted")
	}
	if _, err := pgstore.New(ctx, nil, pgstore.WithTablePrefix("x; DROP")); err == nil {
		t.Error("bad prefix accepted")
	}
}

func TestKeywordRecall(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	kb := s.KnowledgeBase("kb")
	if err := kb.Upsert(ctx, corpus, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.KnowledgeBase("elsewhere").Upsert(ctx, corpus, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		opts  []rag.RetrieveOption
		query string
		k     int
		want  []string
	}{
		{"English terms, best first", nil, "how much does the X200 cost in euros?", 2, []string{corpus[0].Text, corpus[2].Text}},
		{"plural stemming", nil, "chargers", 5, []string{corpus[1].Text}},
		{"k honoured", nil, "costs", 1, []string{corpus[0].Text}},
		{"Chinese bigrams", nil, "东京 東京の人口", 5, []string{corpus[3].Text}},
		{"Japanese", nil, "関西地方", 5, []string{corpus[4].Text}},
		{"Korean", nil, "대한민국 수도", 5, []string{corpus[5].Text}},
		{"metadata filter", []rag.RetrieveOption{rag.MatchMetadata(map[string]string{rag.MetaName: "z9.md"})}, "costs euros", 5, []string{corpus[2].Text}},
		{"min score", []rag.RetrieveOption{rag.MinScore(1000)}, "costs", 5, []string{}},
		{"no terms", nil, "the of and", 5, []string{}},
		{"quotes and operators are text", nil, `'x200' | !& <-> :* \`, 1, []string{corpus[0].Text}},
		{"default top k", []rag.RetrieveOption{rag.TopK(1)}, "euros", 0, []string{corpus[0].Text}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := kb.KeywordRetriever(tt.opts...).Retrieve(ctx, tt.query, tt.k)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(contents(got), tt.want) {
				t.Errorf("got %q, want %q", contents(got), tt.want)
			}
			for _, src := range got {
				if src.Collection != "kb" || src.DocumentName == "" || src.Score <= 0 {
					t.Errorf("source %+v", src)
				}
			}
		})
	}
}

// TestNoPgvectorDegradesToKeywords checks the keyword-only fallback. On a
// server without pgvector it runs as is; on one with pgvector (CI installs
// it) it opens the store as a role that may not create the extension, in a
// fresh database where it is not yet created, so the fallback runs either way.
func TestNoPgvectorDegradesToKeywords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if dsn == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL not set")
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var hasPgvector bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).Scan(&hasPgvector)
	if err != nil {
		conn.Close(ctx)
		t.Fatal(err)
	}
	reason := "pgvector not installed"
	open := func(opts ...pgstore.Option) *pgstore.Store { return openStore(t, opts...) }
	if !hasPgvector {
		conn.Close(ctx)
	} else {
		reason = "pgvector is available but CREATE EXTENSION vector failed"
		var b [6]byte
		rand.Read(b[:])
		name := "weft_novec_" + hex.EncodeToString(b[:])
		for _, stmt := range []string{"CREATE ROLE " + name + " LOGIN", "CREATE DATABASE " + name + " OWNER " + name} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				conn.Close(ctx)
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		t.Cleanup(func() {
			// Registered first, so it runs after the stores are closed.
			defer conn.Close(context.Background())
			for _, stmt := range []string{"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)", "DROP ROLE IF EXISTS " + name} {
				if _, err := conn.Exec(context.Background(), stmt); err != nil {
					t.Errorf("%s: %v", stmt, err)
				}
			}
		})
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.User(name)
		u.Path = "/" + name
		open = func(opts ...pgstore.Option) *pgstore.Store {
			s, err := pgstore.Open(ctx, u.String(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		}
	}

	s := open(pgstore.WithDimensions(scripted.DefaultDimensions))
	err = s.VectorSearch()
	if !errors.Is(err, pgstore.ErrNoVectorSearch) || !strings.HasPrefix(err.Error(), "vector search unavailable: "+reason) {
		t.Fatalf("VectorSearch() = %v", err)
	}
	kb := s.KnowledgeBase("kb")
	vectors := make([][]float32, len(corpus))
	for i, c := range corpus {
		vectors[i] = scripted.Vector(c.Text, 0)
	}
	if err := kb.Upsert(ctx, corpus, vectors); err != nil {
		t.Fatalf("upsert with vectors, no pgvector: %v", err)
	}
	embedder, err := rag.NewModelEmbedder(llm.New(scripted.New()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.VectorRetriever(embedder); !errors.Is(err, pgstore.ErrNoVectorSearch) {
		t.Errorf("VectorRetriever err = %v", err)
	}
	r := kb.Retriever(embedder)
	if got, want := r.Describe(), "keyword-only: vector search unavailable: "+reason; !strings.HasPrefix(got, want) {
		t.Errorf("Describe() = %q, want it to start with %q", got, want)
	}
	got, err := r.Retrieve(ctx, "X200 price in euros", 1)
	if err != nil || len(got) != 1 || got[0].Content != corpus[0].Text {
		t.Errorf("keyword-only recall = %q, %v", contents(got), err)
	}

	if got := kb.Retriever(nil).Describe(); got != "keyword-only: no embedding model configured" {
		t.Errorf("without embedder Describe() = %q", got)
	}
	plain := open()
	if err := plain.VectorSearch(); !errors.Is(err, pgstore.ErrNoVectorSearch) || !strings.Contains(err.Error(), "WithDimensions") {
		t.Errorf("without dimensions VectorSearch() = %v", err)
	}
}

func TestMigrationsConcurrentAndIdempotent(t *testing.T) {
	t.Parallel()
	dsn, schema := testSchema(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := pgstore.Open(ctx, dsn, pgstore.WithSchema(schema), pgstore.WithTablePrefix("kbx_"))
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+".kbx_migrations").Scan(&n); err != nil || n != 1 {
		t.Errorf("migrations recorded: %d, %v; want 1", n, err)
	}
}

// TestIngestAndAugment runs the whole pipeline over PostgreSQL: ingestion
// through rag.Ingester into a knowledge base, then an augmentor over it.
func TestIngestAndAugment(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	kb := s.KnowledgeBase("handbook")
	ing, err := rag.NewIngester(kb)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ing.IngestDocuments(ctx,
		rag.Document{Name: "returns.md", MIMEType: "text/markdown", Text: "# Returns\n\nYou can return any product within 30 days."},
		rag.Document{Name: "配送.md", MIMEType: "text/markdown", Text: "# 配送\n\n注文から三日以内に発送します。"},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil || r.Chunks == 0 {
			t.Fatalf("ingest %s: %+v", r.Name, r)
		}
	}
	// Re-ingesting unchanged documents writes nothing.
	res, err = ing.IngestDocuments(ctx, rag.Document{Name: "returns.md", MIMEType: "text/markdown", Text: "# Returns\n\nYou can return any product within 30 days."})
	if err != nil || !res[0].Unchanged {
		t.Errorf("re-ingest: %+v, %v", res, err)
	}

	a := rag.NewAugmentor(kb.Retriever(nil))
	for _, q := range []struct{ text, want string }{
		{"How many days do I have to return a product?", "30 days"},
		{"何日以内に発送しますか", "三日以内"},
	} {
		aug, err := a.Augment(ctx, rag.Query{Text: q.text})
		if err != nil {
			t.Fatal(err)
		}
		if len(aug.Sources) == 0 || !strings.Contains(aug.Message.Text(), q.want) || aug.Sources[0].Collection != "handbook" {
			t.Errorf("%q: augmented %q with %+v", q.text, aug.Message.Text(), aug.Sources)
		}
	}
}
