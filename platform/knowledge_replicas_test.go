package platform

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// TestKnowledgeTwoReplicasPgvector runs two servers on one PostgreSQL
// database with the knowledge store in it (Config.KnowledgeURL), and no
// Redis: what one replica ingests, the other recalls at once — by vector,
// by keyword and in a turn — with no index of its own to rebuild, also for
// documents ingested after it first opened the knowledge base.
func TestKnowledgeTwoReplicasPgvector(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t, "platform_replicas")
	ensurePgvector(t)
	var envs [2]*testEnv
	var admin string
	for i := range envs {
		store, err := meta.OpenPostgres(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		if i == 0 {
			if admin, err = Bootstrap(ctx, store, ""); err != nil {
				t.Fatal(err)
			}
		}
		model := scripted.New(scripted.QuoteContext(), scripted.Echo())
		srv, err := New(Config{
			Meta: store, Sessions: memory.NewInMemory(), RateLimit: -1, KnowledgeURL: dsn,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			OpenModel: func(spec string) (*llm.Model, error) {
				return llm.New(model, llm.WithName(spec), llm.WithRetries(0)), nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(func() { hs.Close(); srv.Close() })
		envs[i] = &testEnv{t: t, srv: srv, http: hs, admin: admin, model: model}
	}
	a, b := envs[0], envs[1]
	b.admin = admin

	var kb kbView
	if resp := a.do(admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "handbook", "embedding_model": "scripted/embed", "chunk_size": 64}, &kb); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body(resp))
	}
	if !strings.Contains(kb.Description, "pgvector HNSW") {
		t.Fatalf("description %q", kb.Description)
	}
	ingest := func(name, content string) {
		t.Helper()
		var doc meta.Document
		a.do(admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{"name": name, "content": content}, &doc)
		if d := a.waitDocument(kb.ID, doc.ID); d.Status != meta.DocReady || d.Chunks == 0 {
			t.Fatalf("document %s = %+v", name, d)
		}
	}
	search := func(e *testEnv, query, mode string) []api.RagFragment {
		t.Helper()
		var out struct{ Results []api.RagFragment }
		if resp := e.do(admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/search", map[string]any{"query": query, "mode": mode, "top_k": 3}, &out); resp.StatusCode != http.StatusOK {
			t.Fatalf("search: %d %s", resp.StatusCode, body(resp))
		}
		return out.Results
	}
	ingest("returns.md", "Customers may return any product within 30 days of delivery for a full refund.")
	for _, mode := range []string{"vector", "keyword", "hybrid"} {
		got := search(b, "how many days to return a product", mode)
		if len(got) == 0 || !strings.Contains(got[0].Content, "30 days") || got[0].DocumentName != "returns.md" || got[0].KnowledgeBaseID != kb.ID {
			t.Fatalf("%s search on the other replica = %+v", mode, got)
		}
	}
	// B has opened the knowledge base; a document A ingests now is
	// recalled by B at once, though no invalidation reaches it (no Redis).
	ingest("penguins.md", "Penguins live in the southern hemisphere.")
	if got := search(b, "where do penguins live", "hybrid"); len(got) == 0 || !strings.Contains(got[0].Content, "Penguins") {
		t.Fatalf("later document on the other replica = %+v", got)
	}
	// B holds a handle over the database, no index.
	h, err := b.srv.knowledge.(*knowledge).open(ctx, meta.KnowledgeBase{ID: kb.ID, TenantID: kb.TenantID, Name: kb.Name, EmbeddingModel: kb.EmbeddingModel, ChunkSize: kb.ChunkSize})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.index.(*pgIndex); !ok {
		t.Fatalf("replica B's index is %T, want the PostgreSQL store", h.index)
	}

	// A turn on B recalls what A ingested.
	ag := b.createAgent(admin, map[string]any{"name": "support", "knowledge_base_ids": []string{kb.ID}})
	r := b.do(admin, "POST", "/v1/agents/"+ag.ID+"/chat", map[string]any{"query": "How many days do I have to return a product?"}, nil)
	if r.StatusCode != http.StatusOK || !strings.Contains(body(r), "30 days") {
		t.Fatalf("turn on the other replica: %d", r.StatusCode)
	}

	// Deleting the knowledge base on B removes its chunks for both.
	if resp := b.do(admin, "DELETE", "/v1/knowledge-bases/"+kb.ID, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	var n int
	pb := a.srv.knowledge.(*knowledge).backend.(*pgBackend)
	if err := pb.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM weft_kb_d256_chunks) + (SELECT count(*) FROM weft_kb_d256_embeddings)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows left after delete: %d, %v", n, err)
	}
}
