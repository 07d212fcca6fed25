package platform

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform/meta"
)

// uploadReply is the answer to an upload as a client reads it.
type uploadReply struct {
	meta.Document
	ContentHash    string `json:"content_hash"`
	SourceURL      string `json:"source_url"`
	Outcome        string `json:"outcome"`
	ReplacedChunks int    `json:"replaced_chunks"`
}

// searchTexts returns the contents of a keyword search's results.
func (e *testEnv) searchTexts(kb, query string) []string {
	e.t.Helper()
	var res struct {
		Results []struct {
			Content      string `json:"content"`
			DocumentName string `json:"document_name"`
		} `json:"results"`
	}
	e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb+"/search", map[string]any{"query": query, "mode": "keyword"}, &res)
	var out []string
	for _, r := range res.Results {
		out = append(out, r.Content)
	}
	return out
}

// TestUploadOutcomes: an upload says whether it added a document, replaced
// one (and how many chunks the old version had) or changed nothing because
// the content is the same; an unchanged upload is not ingested again.
func TestUploadOutcomes(t *testing.T) {
	e := newEnv(t, nil)
	var kb kbView
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "kb", "embedding_model": "", "chunk_size": 32, "chunk_overlap": 0}, &kb)
	path := "/v1/knowledge-bases/" + kb.ID + "/documents"
	v1 := "# Returns\n\nCustomers may return a product within thirty days.\n\n# Shipping\n\nParcels to Europe take five working days by road."

	var up uploadReply
	resp := e.do(e.admin, "POST", path, map[string]any{"name": "policy.md", "content": v1}, &up)
	if resp.StatusCode != http.StatusAccepted || up.Outcome != outcomeAdded || up.ContentHash == "" {
		t.Fatalf("first upload: %d %+v", resp.StatusCode, up)
	}
	first := e.waitDocument(kb.ID, up.ID)
	if first.Status != meta.DocReady || first.Chunks < 2 {
		t.Fatalf("first version: %+v", first)
	}

	var same uploadReply
	resp = e.do(e.admin, "POST", path, map[string]any{"name": "policy.md", "content": v1}, &same)
	if resp.StatusCode != http.StatusOK || same.Outcome != outcomeUnchanged || same.ID != up.ID || same.Status != meta.DocReady || same.Chunks != first.Chunks {
		t.Fatalf("same content again: %d %+v", resp.StatusCode, same)
	}
	if d := e.waitDocument(kb.ID, up.ID); !d.UpdatedAt.Equal(first.UpdatedAt) {
		t.Fatalf("an unchanged upload was ingested again: updated %v, was %v", d.UpdatedAt, first.UpdatedAt)
	}

	var repl uploadReply
	resp = e.do(e.admin, "POST", path, map[string]any{"name": "policy.md", "content": "# Returns\n\nNo returns after ninety days."}, &repl)
	if resp.StatusCode != http.StatusAccepted || repl.Outcome != outcomeReplaced || repl.ReplacedChunks != first.Chunks || repl.ID != up.ID {
		t.Fatalf("new version: %d %+v (first had %d chunks)", resp.StatusCode, repl, first.Chunks)
	}
	if d := e.waitDocument(kb.ID, up.ID); d.Status != meta.DocReady || d.Chunks != 1 {
		t.Fatalf("new version: %+v", d)
	}
	if got := e.searchTexts(kb.ID, "parcels europe"); len(got) != 0 {
		t.Fatalf("old chunks still found: %q", got)
	}
	if got := e.searchTexts(kb.ID, "ninety"); len(got) != 1 {
		t.Fatalf("new chunk not found: %q", got)
	}

	// A failed document is ingested again even with the same content.
	e.do(e.admin, "POST", path, map[string]any{"name": "empty.md", "content": "   "}, &up)
	if d := e.waitDocument(kb.ID, up.ID); d.Status != meta.DocFailed {
		t.Fatalf("blank document: %+v", d)
	}
	resp = e.do(e.admin, "POST", path, map[string]any{"name": "empty.md", "content": "   "}, &up)
	if resp.StatusCode != http.StatusAccepted || up.Outcome != outcomeReplaced {
		t.Fatalf("failed document again: %d %+v", resp.StatusCode, up)
	}
}

// allowLoopback lets the outbound guard reach the test's loopback servers.
func allowLoopback(c *Config) {
	c.Getenv = func(k string) string {
		if k == netguard.AllowEnv {
			return "127.0.0.1"
		}
		return ""
	}
}

// TestIngestURL fetches a web page through the outbound guard: it is stored
// as Markdown (scripts and navigation dropped, the title a heading), named
// by its URL, and fetching it again unchanged is a no-op.
func TestIngestURL(t *testing.T) {
	var page atomic.Value
	page.Store(`<!DOCTYPE html><html><head><title>Shipping guide</title><script>var secret = "tracking pixel";</script></head>
<body><nav><a href="/">Home</a> navigation menu</nav><h2>Zones</h2><p>Parcels to <b>Norway</b> take six days.</p>
<ul><li>Express available</li><li>Insurance included</li></ul></body></html>`)
	var hits atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page.Load())
	}))
	defer site.Close()
	e := newEnv(t, nil, allowLoopback)
	var kb kbView
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "web", "embedding_model": ""}, &kb)
	path := "/v1/knowledge-bases/" + kb.ID + "/documents"

	var up uploadReply
	resp := e.do(e.admin, "POST", path, map[string]any{"url": site.URL + "/guide#zones"}, &up)
	if resp.StatusCode != http.StatusAccepted || up.Outcome != outcomeAdded {
		t.Fatalf("ingest URL: %d %s", resp.StatusCode, body(resp))
	}
	if up.Name != site.URL+"/guide" || up.SourceURL != site.URL+"/guide" {
		t.Fatalf("name %q, source %q; want the URL without its fragment", up.Name, up.SourceURL)
	}
	if d := e.waitDocument(kb.ID, up.ID); d.Status != meta.DocReady {
		t.Fatalf("web page: %+v", d)
	}
	got := e.searchTexts(kb.ID, "norway parcels")
	if len(got) != 1 {
		t.Fatalf("search: %q", got)
	}
	for _, want := range []string{"# Shipping guide", "## Zones", "Parcels to Norway take six days.", "- Express available"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("stored text lacks %q:\n%s", want, got[0])
		}
	}
	for _, unwanted := range []string{"tracking pixel", "navigation menu", "<p>"} {
		if strings.Contains(got[0], unwanted) {
			t.Errorf("stored text has %q:\n%s", unwanted, got[0])
		}
	}

	resp = e.do(e.admin, "POST", path, map[string]any{"url": site.URL + "/guide"}, &up)
	if resp.StatusCode != http.StatusOK || up.Outcome != outcomeUnchanged {
		t.Fatalf("same page again: %d %+v", resp.StatusCode, up)
	}
	page.Store(`<html><body><p>Parcels to Norway now take four days.</p></body></html>`)
	resp = e.do(e.admin, "POST", path, map[string]any{"url": site.URL + "/guide", "name": "norway-shipping"}, &up)
	if resp.StatusCode != http.StatusAccepted || up.Outcome != outcomeAdded || up.Name != "norway-shipping" {
		t.Fatalf("page under another name: %d %+v", resp.StatusCode, up)
	}
	resp = e.do(e.admin, "POST", path, map[string]any{"url": site.URL + "/guide"}, &up)
	if resp.StatusCode != http.StatusAccepted || up.Outcome != outcomeReplaced || up.ReplacedChunks != 1 {
		t.Fatalf("changed page: %d %+v", resp.StatusCode, up)
	}
	if hits.Load() != 4 {
		t.Fatalf("%d fetches, want 4", hits.Load())
	}
}

// TestIngestURLRefused: addresses the outbound guard refuses are never
// fetched, malformed URLs are refused, and a document over the upload limit
// is cut off while it is read, whether or not it declares its length.
func TestIngestURLRefused(t *testing.T) {
	var hits atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		switch r.URL.Path {
		case "/declared":
			w.Header().Set("Content-Length", fmt.Sprint(MaxUploadBytes+1))
		case "/missing":
			http.NotFound(w, r)
			return
		}
		chunk := []byte(strings.Repeat("word ", 8<<10))
		for n := 0; n <= MaxUploadBytes; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer site.Close()

	guarded := newEnv(t, nil)
	var kb kbView
	guarded.do(guarded.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "web", "embedding_model": ""}, &kb)
	path := "/v1/knowledge-bases/" + kb.ID + "/documents"
	eb := guarded.wantError(guarded.do(guarded.admin, "POST", path, map[string]any{"url": site.URL + "/"}, nil), http.StatusBadRequest, CodeInvalidRequest)
	if !strings.Contains(eb.Error.Message, "refused") || hits.Load() != 0 {
		t.Fatalf("loopback URL: %q, %d fetches", eb.Error.Message, hits.Load())
	}
	for _, u := range []string{"ftp://example.com/a.txt", "http://user:pw@example.com/", "/relative", "http://"} {
		guarded.wantError(guarded.do(guarded.admin, "POST", path, map[string]any{"url": u}, nil), http.StatusBadRequest, CodeInvalidRequest)
	}
	guarded.wantError(guarded.do(guarded.admin, "POST", path, map[string]any{"url": "https://example.com/", "content": "x"}, nil), http.StatusBadRequest, CodeInvalidRequest)

	e := newEnv(t, nil, allowLoopback)
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "web", "embedding_model": ""}, &kb)
	path = "/v1/knowledge-bases/" + kb.ID + "/documents"
	for _, p := range []string{"/declared", "/streamed"} {
		e.wantError(e.do(e.admin, "POST", path, map[string]any{"url": site.URL + p}, nil), http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
	}
	eb = e.wantError(e.do(e.admin, "POST", path, map[string]any{"url": site.URL + "/missing"}, nil), http.StatusBadRequest, CodeInvalidRequest)
	if !strings.Contains(eb.Error.Message, "404") {
		t.Fatalf("missing page: %q", eb.Error.Message)
	}
	var docs []meta.Document
	e.do(e.admin, "GET", path, nil, &docs)
	if len(docs) != 0 {
		t.Fatalf("refused fetches left documents: %+v", docs)
	}
}
