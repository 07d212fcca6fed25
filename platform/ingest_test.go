package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/internal/bomb"
	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/loader"
)

// serverOn starts a server (no HTTP listener) on store, closed at cleanup.
func serverOn(t *testing.T, store meta.Store, opts ...envOption) *Server {
	t.Helper()
	model := scripted.New(scripted.Echo())
	cfg := Config{
		Meta: store, Sessions: memory.NewInMemory(), RateLimit: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OpenModel: func(spec string) (*llm.Model, error) {
			return llm.New(model, llm.WithName(spec), llm.WithRetries(0)), nil
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// waitStored polls a document in the store until it leaves queued and
// indexing (bounded: a document stuck fails the test).
func waitStored(t *testing.T, store *meta.SQL, tenant, kb, id string) meta.Document {
	t.Helper()
	for range 1500 {
		d, err := store.Document(context.Background(), tenant, kb, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status == meta.DocReady || d.Status == meta.DocFailed {
			return d
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("document %s stuck", id)
	return meta.Document{}
}

// crashedUpload leaves a store as a server killed mid-ingestion does: the
// document indexing, its upload stored and claimed by the dead server
// (until claimedUntil).
func crashedUpload(t *testing.T, store *meta.SQL, claimedUntil time.Time) (meta.KnowledgeBase, meta.Document) {
	t.Helper()
	ctx := context.Background()
	tenant, err := store.EnsureTenant(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	kb := meta.KnowledgeBase{ID: meta.NewID("kb"), TenantID: tenant.ID, Name: "handbook", ChunkSize: 64, ChunkOverlap: 8, CreatedAt: time.Now().UTC()}
	if err := store.CreateKB(ctx, kb); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	d := meta.Document{ID: "returns-md", TenantID: tenant.ID, KBID: kb.ID, Name: "returns.md", Status: meta.DocQueued, CreatedAt: now, UpdatedAt: now}
	if err := store.PutUpload(ctx, d, "upl_dead", []byte("# Returns\n\nCustomers may return any product within 30 days.")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := store.ClaimUpload(ctx, d.TenantID, d.KBID, d.ID, "upl_dead", "ing_dead", claimedUntil.Add(-time.Hour), claimedUntil); !ok || err != nil {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	if got, _ := store.Document(ctx, d.TenantID, d.KBID, d.ID); got.Status != meta.DocIndexing {
		t.Fatalf("status %s", got.Status)
	}
	return kb, d
}

// TestIngestionResumesAfterCrash: a server that died mid-ingestion left a
// document indexing with its upload stored; the next server on the store
// ingests it (the document becomes ready, the upload is deleted), and a
// document left indexing without an upload fails with a reason instead of
// staying stuck.
func TestIngestionResumesAfterCrash(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	// The dead server's claim has not expired: on the embedded store a
	// new server takes it over at once all the same.
	kb, d := crashedUpload(t, store, time.Now().Add(time.Hour))
	lost := meta.Document{ID: "lost-md", TenantID: d.TenantID, KBID: kb.ID, Name: "lost.md", Status: meta.DocIndexing, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
	if err := store.PutDocument(ctx, lost); err != nil {
		t.Fatal(err)
	}

	serverOn(t, store)
	if got := waitStored(t, store, d.TenantID, kb.ID, d.ID); got.Status != meta.DocReady || got.Chunks == 0 {
		t.Fatalf("resumed document = %+v", got)
	}
	if got := waitStored(t, store, d.TenantID, kb.ID, lost.ID); got.Status != meta.DocFailed || got.Error != orphanReason {
		t.Fatalf("document without an upload = %+v", got)
	}
	if p, err := store.PendingUploads(ctx, time.Now().Add(time.Hour), 10); err != nil || len(p) != 0 {
		t.Fatalf("uploads left after ingestion: %+v, %v", p, err)
	}
	n := 0
	store.Chunks(d.TenantID, kb.ID).All(ctx, func(rag.Chunk, []float32) error { n++; return nil })
	if n == 0 {
		t.Fatal("no chunks stored")
	}
}

// TestIngestionTakesOverExpiredClaims is the replicated case (PostgreSQL):
// another replica's claim is honoured while it lasts, and taken over once
// it has expired.
func TestIngestionTakesOverExpiredClaims(t *testing.T) {
	store := openTestPostgres(t)
	kb, d := crashedUpload(t, store, time.Now().Add(-time.Second))
	serverOn(t, store, func(c *Config) { c.Ingestion.Lease = 300 * time.Millisecond })
	if got := waitStored(t, store, d.TenantID, kb.ID, d.ID); got.Status != meta.DocReady || got.Chunks == 0 {
		t.Fatalf("taken-over document = %+v", got)
	}
}

// openTestPostgres opens the metadata store in a schema of its own on the
// test PostgreSQL, dropped after the test.
func openTestPostgres(t *testing.T) *meta.SQL {
	t.Helper()
	pg, err := meta.OpenPostgres(context.Background(), pgtest.DSN(t, "platform_test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	return pg
}

// uploadFile uploads data as a multipart file named name and returns the
// queued document.
func (e *testEnv) uploadFile(kb, name string, data []byte) meta.Document {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write(data)
	mw.Close()
	req, _ := http.NewRequest("POST", e.http.URL+"/v1/knowledge-bases/"+kb+"/documents", &buf)
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		e.t.Fatalf("%s: upload %v %v", name, resp, err)
	}
	defer resp.Body.Close()
	var doc meta.Document
	json.NewDecoder(resp.Body).Decode(&doc)
	return doc
}

// TestIngestionBombs uploads decompression bombs through the API: each
// document fails alone with a limit error in its error field, and the
// server's peak heap, sampled while the upload is read and ingested as
// rag/loader's TestBombsRefused samples it, stays far under the expanded
// sizes (the figures are logged). A PDF that shows 1 MiB of text from 1 KiB,
// within the limits, is ingested for about what its text weighs: laid out
// glyph by glyph and split as one 1 MiB word, it cost +200 MiB (+1 GiB at
// the default text limit). The loader's decompression limit is 2 MiB here,
// a 32nd of the default, so that the test runs fast under the race
// detector.
func TestIngestionBombs(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.Ingestion.Loader = []loader.Option{loader.WithMaxDecompressed(2 << 20)} })
	var kb kbView
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "bombs", "embedding_model": ""}, &kb)
	docs := []struct {
		name  string
		data  []byte
		fails bool
	}{
		{"flate.pdf", bomb.PDFFlate(8 << 20), true},
		{"part.docx", bomb.DOCXPart(8 << 20), true},
		{"deep.docx", bomb.DOCXDeep(100000), true},
		{"glyphs.pdf", bomb.PDFGlyphs(1 << 20), false},
	}
	for _, doc := range docs {
		var d meta.Document
		peak, alloc := bomb.PeakHeap(func() {
			d = e.waitDocument(kb.ID, e.uploadFile(kb.ID, doc.name, doc.data).ID)
		})
		t.Logf("%s: %d KiB, peak heap +%d MiB, %d MiB allocated: %s %d chunks %s", doc.name, len(doc.data)>>10, peak>>20, alloc>>20, d.Status, d.Chunks, d.Error)
		if doc.fails && (d.Status != meta.DocFailed || !strings.Contains(d.Error, "document too large")) {
			t.Fatalf("%s: %+v", doc.name, d)
		}
		if !doc.fails && (d.Status != meta.DocReady || d.Chunks < 100) {
			t.Fatalf("%s: %+v", doc.name, d)
		}
		if peak > 16<<20 {
			t.Errorf("%s: peak heap +%d MiB, over 16 MiB", doc.name, peak>>20)
		}
	}
	// A good document after the bombs is ingested.
	var doc meta.Document
	e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{"name": "ok.md", "content": "# Fine\n\nA normal document."}, &doc)
	if d := e.waitDocument(kb.ID, doc.ID); d.Status != meta.DocReady {
		t.Fatalf("good document after the bombs: %+v", d)
	}
}
