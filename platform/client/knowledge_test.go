package client_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/platform/client"
)

// wait waits for a document's ingestion to end, for at most 30 seconds.
func wait(t *testing.T, c *client.Client, kb, id string) client.Document {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	d, err := c.WaitDocument(ctx, kb, id, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestKnowledgeBases(t *testing.T) {
	t.Parallel()
	url, key := newPlatform(t, nil)
	c := client.New(url, key)
	ctx := t.Context()

	kb, err := c.CreateKnowledgeBase(ctx, client.NewKnowledgeBase{Name: "handbook", ChunkSize: 128, ChunkOverlap: new(0), EmbeddingModel: new("scripted/embed")})
	if err != nil {
		t.Fatal(err)
	}
	if kb.ID == "" || kb.ChunkSize != 128 || kb.ChunkOverlap != 0 || kb.EmbeddingModel != "scripted/embed" || !strings.Contains(kb.Description, "hybrid") {
		t.Fatalf("created %+v", kb)
	}
	kw, err := c.CreateKnowledgeBase(ctx, client.NewKnowledgeBase{Name: "keywords", EmbeddingModel: new("")})
	if err != nil || kw.EmbeddingModel != "" || kw.ChunkOverlap != 64 || !strings.Contains(kw.Description, "keyword-only") {
		t.Fatalf("keyword-only = %+v, %v", kw, err)
	}
	var ce *client.Error
	if _, err := c.CreateKnowledgeBase(ctx, client.NewKnowledgeBase{Name: "handbook"}); !errors.As(err, &ce) || ce.Code != client.CodeConflict {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := c.CreateKnowledgeBase(ctx, client.NewKnowledgeBase{Name: "tiny", ChunkSize: 8}); !errors.As(err, &ce) || !strings.Contains(ce.Message, "chunk_size") {
		t.Fatalf("bad chunk size: %v", err)
	}

	// A rename keeps the id; a new chunking is refused.
	if got, err := c.UpdateKnowledgeBase(ctx, kw.ID, client.NewKnowledgeBase{Name: "keyword-kb", ChunkOverlap: new(64)}); err != nil || got.ID != kw.ID || got.Name != "keyword-kb" {
		t.Fatalf("rename = %+v, %v", got, err)
	}
	if _, err := c.UpdateKnowledgeBase(ctx, kw.ID, client.NewKnowledgeBase{ChunkSize: 1024}); !errors.As(err, &ce) || ce.Code != client.CodeInvalidRequest || !strings.Contains(ce.Message, "new knowledge base") {
		t.Fatalf("new chunk size: %v", err)
	}
	if _, err := c.UpdateKnowledgeBase(ctx, kw.ID, client.NewKnowledgeBase{Name: "handbook"}); !errors.As(err, &ce) || ce.Code != client.CodeConflict {
		t.Fatalf("rename onto a taken name: %v", err)
	}

	// A real reader, streamed: not a bytes.Reader the transport could size.
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, "# Returns\n\nItems may be returned within 30 days of delivery.\n")
		pw.Close()
	}()
	doc, err := c.UploadDocument(ctx, kb.ID, "returns.md", pr)
	if err != nil {
		t.Fatal(err)
	}
	if doc.ID == "" || doc.Name != "returns.md" || doc.KnowledgeBaseID != kb.ID || doc.Status != client.DocumentQueued && doc.Status != client.DocumentIndexing {
		t.Fatalf("uploaded %+v", doc)
	}
	bad, err := c.UploadDocument(ctx, kb.ID, "blob.txt", strings.NewReader("\x00\x01\x02binary\x00\x00"))
	if err != nil {
		t.Fatal(err)
	}
	if d := wait(t, c, kb.ID, doc.ID); d.Status != client.DocumentReady || d.Chunks < 1 || d.Bytes == 0 {
		t.Fatalf("ingested %+v", d)
	}
	if d := wait(t, c, kb.ID, bad.ID); d.Status != client.DocumentFailed || d.Error == "" {
		t.Fatalf("binary document %+v", d)
	}
	docs, err := c.ListDocuments(ctx, kb.ID)
	if err != nil || len(docs) != 2 {
		t.Fatalf("documents = %+v, %v", docs, err)
	}

	for _, mode := range []string{"", "hybrid", "vector", "keyword"} {
		res, err := c.Search(ctx, kb.ID, client.SearchRequest{Query: "how many days to return items", TopK: 3, Mode: mode})
		if err != nil || len(res) == 0 || !strings.Contains(res[0].Content, "30 days") || res[0].DocumentID != doc.ID || res[0].KnowledgeBaseID != kb.ID {
			t.Fatalf("search (%q) = %+v, %v", mode, res, err)
		}
	}
	if _, err := c.Search(ctx, kw.ID, client.SearchRequest{Query: "x", Mode: "vector"}); !errors.As(err, &ce) || !strings.Contains(ce.Message, "keyword-only") {
		t.Fatalf("vector search of a keyword-only base: %v", err)
	}
	if res, err := c.Search(ctx, kw.ID, client.SearchRequest{Query: "anything"}); err != nil || res == nil || len(res) != 0 {
		t.Fatalf("search of an empty base = %#v, %v", res, err)
	}

	if got, err := c.FindKnowledgeBase(ctx, "handbook"); err != nil || got.ID != kb.ID {
		t.Fatalf("FindKnowledgeBase(name) = %+v, %v", got, err)
	}
	if _, err := c.FindKnowledgeBase(ctx, "nothing"); !client.IsNotFound(err) {
		t.Fatalf("FindKnowledgeBase(nothing) = %v", err)
	}
	if all, err := c.ListKnowledgeBases(ctx); err != nil || len(all) != 2 {
		t.Fatalf("list = %+v, %v", all, err)
	}

	if err := c.DeleteDocument(ctx, kb.ID, doc.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetDocument(ctx, kb.ID, doc.ID); !client.IsNotFound(err) {
		t.Fatalf("deleted document: %v", err)
	}
	if res, err := c.Search(ctx, kb.ID, client.SearchRequest{Query: "return within 30 days"}); err != nil || len(res) != 0 {
		t.Fatalf("search after delete = %+v, %v", res, err)
	}
	if err := c.DeleteKnowledgeBase(ctx, kb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetKnowledgeBase(ctx, kb.ID); !client.IsNotFound(err) {
		t.Fatalf("deleted base: %v", err)
	}
	if _, err := c.UploadDocument(ctx, kb.ID, "x.md", strings.NewReader("x")); !client.IsNotFound(err) {
		t.Fatalf("upload to a deleted base: %v", err)
	}
	if _, err := c.UploadDocument(ctx, kw.ID, "", strings.NewReader("x")); err == nil {
		t.Fatal("upload without a name: no error")
	}
}

func TestWaitDocumentFollowsTheContext(t *testing.T) {
	t.Parallel()
	url, key := newPlatform(t, nil)
	c := client.New(url, key)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.WaitDocument(ctx, "kb", "doc", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}
