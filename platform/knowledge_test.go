package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// waitDocument polls a document until it leaves queued/indexing.
func (e *testEnv) waitDocument(kb, doc string) meta.Document {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var d meta.Document
		e.do(e.admin, "GET", "/v1/knowledge-bases/"+kb+"/documents/"+doc, nil, &d)
		if d.Status == meta.DocReady || d.Status == meta.DocFailed {
			return d
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("document %s still %s", doc, d.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestKnowledgeBases(t *testing.T) {
	for _, embedding := range []string{"", "scripted/embed"} {
		name := "keyword-only"
		if embedding != "" {
			name = "hybrid"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, scripted.New(scripted.QuoteContext(), scripted.Echo()))
			var kb kbView
			resp := e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "handbook", "embedding_model": embedding, "chunk_size": 64}, &kb)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("create: %d %s", resp.StatusCode, body(resp))
			}
			if embedding == "" && !strings.Contains(kb.Description, "keyword-only") {
				t.Fatalf("description %q does not say keyword-only", kb.Description)
			}
			var doc meta.Document
			resp = e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{
				"name": "returns.md", "content": "# Returns\n\nCustomers may return any product within 30 days of delivery for a full refund.\n\n# Shipping\n\nShipping to Europe takes five working days."}, &doc)
			if resp.StatusCode != http.StatusAccepted || doc.Status != meta.DocQueued {
				t.Fatalf("upload: %d %+v", resp.StatusCode, doc)
			}
			// Multipart upload of a second document.
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			fw, _ := mw.CreateFormFile("file", "warranty.txt")
			fw.Write([]byte("The warranty covers manufacturing defects for two years."))
			mw.Close()
			req, _ := http.NewRequest("POST", e.http.URL+"/v1/knowledge-bases/"+kb.ID+"/documents", &buf)
			req.Header.Set("Authorization", "Bearer "+e.admin)
			req.Header.Set("Content-Type", mw.FormDataContentType())
			mresp, err := http.DefaultClient.Do(req)
			if err != nil || mresp.StatusCode != http.StatusAccepted {
				t.Fatalf("multipart upload: %v %v", mresp, err)
			}
			mresp.Body.Close()

			if d := e.waitDocument(kb.ID, doc.ID); d.Status != meta.DocReady || d.Chunks == 0 {
				t.Fatalf("document = %+v", d)
			}
			var search struct{ Results []api.RagFragment }
			e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/search", map[string]any{"query": "how many days to return a product?", "top_k": 3}, &search)
			if len(search.Results) == 0 || !strings.Contains(search.Results[0].Content, "30 days") ||
				search.Results[0].KnowledgeBaseID != kb.ID || search.Results[0].DocumentName != "returns.md" || search.Results[0].ChunkID == "" {
				t.Fatalf("search = %+v", search.Results)
			}

			// An agent recalls on every turn.
			a := e.createAgent(e.admin, map[string]any{"name": "support", "knowledge_base_ids": []string{kb.ID}})
			r := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "How many days do I have to return a product?", "stream": true}, nil)
			frames, _ := readSSE(t, r.Body)
			var sawRetrieval bool
			for _, f := range frames {
				if f.Event == "retrieval" {
					sawRetrieval = true
				}
			}
			done := frames[len(frames)-1].Data
			if !sawRetrieval || frames[len(frames)-1].Event != "chat.completed" {
				t.Fatalf("frames = %+v", frames)
			}
			frags := done["rag_fragments"].([]any)
			if len(frags) == 0 || frags[0].(map[string]any)["document_name"] != "returns.md" {
				t.Fatalf("rag_fragments = %v", frags)
			}
			if !strings.Contains(done["answer"].(string), "30 days") {
				t.Fatalf("answer %q does not quote the knowledge", done["answer"])
			}
			// The model saw the retrieved text; the stored user message is the original.
			reqs := e.model.Requests()
			last := reqs[len(reqs)-1].Messages
			if !strings.Contains(last[len(last)-1].Text(), "30 days") {
				t.Fatalf("model did not see the knowledge: %q", last[len(last)-1].Text())
			}
			var msgs []api.Message
			e.do(e.admin, "GET", "/v1/sessions/"+done["session_id"].(string)+"/messages", nil, &msgs)
			if msgs[0].Content != "How many days do I have to return a product?" {
				t.Fatalf("stored user message %q", msgs[0].Content)
			}

			// Deleting the document removes it from recall.
			if resp := e.do(e.admin, "DELETE", "/v1/knowledge-bases/"+kb.ID+"/documents/"+doc.ID, nil, nil); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("delete document: %d", resp.StatusCode)
			}
			e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/search", map[string]any{"query": "return within 30 days"}, &search)
			for _, f := range search.Results {
				if strings.Contains(f.Content, "30 days") {
					t.Fatalf("deleted document still recalled: %+v", f)
				}
			}
		})
	}
}

func TestKnowledgeBadDocumentsAndIsolation(t *testing.T) {
	e := newEnv(t, nil)
	var kb kbView
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "kb"}, &kb)
	var bad, empty, good meta.Document
	// Binary text in a JSON body is refused at once (issue M); uploaded as
	// a file it fails alone, asynchronously.
	e.wantError(e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{"name": "blob.txt", "content": "\x00\x01\x02\x03binary\x00\x00"}, nil), http.StatusBadRequest, CodeInvalidRequest)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "blob.txt")
	fw.Write([]byte("\x00\x01\x02\x03binary\x00\x00"))
	mw.Close()
	req, _ := http.NewRequest("POST", e.http.URL+"/v1/knowledge-bases/"+kb.ID+"/documents", &buf)
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&bad)
	resp.Body.Close()
	e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{"name": "empty.md", "content": "   "}, &empty)
	e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{"name": "ok.md", "content": "fine text"}, &good)
	if d := e.waitDocument(kb.ID, bad.ID); d.Status != meta.DocFailed || d.Error == "" {
		t.Fatalf("binary document = %+v", d)
	}
	if d := e.waitDocument(kb.ID, empty.ID); d.Status != meta.DocFailed {
		t.Fatalf("empty document = %+v", d)
	}
	if d := e.waitDocument(kb.ID, good.ID); d.Status != meta.DocReady {
		t.Fatalf("good document after bad ones = %+v", d)
	}
	e.wantError(e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "x", "embedding_model": "nosuch/model"}, nil), http.StatusBadRequest, CodeInvalidRequest)
	e.wantError(e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/search", map[string]any{"query": "x", "mode": "vector"}, nil), http.StatusBadRequest, CodeInvalidRequest)
	e.wantError(e.do(e.admin, "POST", "/v1/agents", map[string]any{"name": "a", "knowledge_base_ids": []string{"kb_missing"}}, nil), http.StatusBadRequest, CodeInvalidRequest)

	var k keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "other", "tenant": "globex"}, &k)
	e.wantError(e.do(k.Key, "GET", "/v1/knowledge-bases/"+kb.ID, nil, nil), http.StatusNotFound, CodeNotFound)
	e.wantError(e.do(k.Key, "POST", "/v1/knowledge-bases/"+kb.ID+"/search", map[string]any{"query": "fine"}, nil), http.StatusNotFound, CodeNotFound)
	e.wantError(e.do(k.Key, "POST", "/v1/agents", map[string]any{"name": "a", "knowledge_base_ids": []string{kb.ID}}, nil), http.StatusBadRequest, CodeInvalidRequest)
}

func TestKnowledgeSurvivesRestart(t *testing.T) {
	e := newEnv(t, nil)
	var kb kbView
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "kb", "embedding_model": "scripted/embed"}, &kb)
	var doc meta.Document
	e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{"name": "a.md", "content": "Penguins live in the southern hemisphere."}, &doc)
	if d := e.waitDocument(kb.ID, doc.ID); d.Status != meta.DocReady {
		t.Fatalf("document = %+v", d)
	}
	// A new server over the same stores rebuilds the indexes.
	srv2, err := New(e.srv.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	e.srv = srv2
	e.http.Config.Handler = srv2
	var search struct{ Results []api.RagFragment }
	e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/search", map[string]any{"query": "where do penguins live", "mode": "vector"}, &search)
	if len(search.Results) != 1 || !strings.Contains(search.Results[0].Content, "Penguins") {
		t.Fatalf("after restart: %+v", search.Results)
	}
}

// gatedEmbedder is a scripted model whose embedding calls block until the
// test releases them; entered is closed at the first call.
type gatedEmbedder struct {
	*scripted.Model
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (g *gatedEmbedder) Embed(ctx context.Context, req *llm.EmbedRequest) (*llm.EmbedResponse, error) {
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Model.Embed(ctx, req)
}

// Recall on one knowledge base does not wait while another is loading
// (issue G item 5): knowledge base B's load is held inside its embedding
// call, and a search on A completes meanwhile; B's callers share one load.
func TestKnowledgeLoadDoesNotBlockOtherKnowledgeBases(t *testing.T) {
	gate := &gatedEmbedder{Model: scripted.New(scripted.Echo()), entered: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, nil, func(c *Config) {
		open := c.OpenModel
		c.OpenModel = func(spec string) (*llm.Model, error) {
			if spec == "scripted/gated" {
				return llm.New(gate, llm.WithName(spec), llm.WithRetries(0)), nil
			}
			return open(spec)
		}
	})
	var a, b kbView
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "a", "embedding_model": ""}, &a)
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "b", "embedding_model": "scripted/gated"}, &b)
	var doc meta.Document
	e.do(e.admin, "POST", "/v1/knowledge-bases/"+a.ID+"/documents", map[string]any{"name": "a.md", "content": "Penguins live in the southern hemisphere."}, &doc)
	if d := e.waitDocument(a.ID, doc.ID); d.Status != meta.DocReady {
		t.Fatalf("document = %+v", d)
	}
	// Two searches on B: both wait for B's one load.
	bDone := make(chan *http.Response, 2)
	for range 2 {
		go func() {
			bDone <- e.do(e.admin, "POST", "/v1/knowledge-bases/"+b.ID+"/search", map[string]any{"query": "penguins"}, nil)
		}()
	}
	<-gate.entered
	var search struct{ Results []api.RagFragment }
	if resp := e.do(e.admin, "POST", "/v1/knowledge-bases/"+a.ID+"/search", map[string]any{"query": "where do penguins live"}, &search); resp.StatusCode != http.StatusOK ||
		len(search.Results) != 1 || !strings.Contains(search.Results[0].Content, "Penguins") {
		t.Fatalf("search on A while B loads: %d %+v", resp.StatusCode, search.Results)
	}
	select {
	case resp := <-bDone:
		t.Fatalf("search on B answered (%d %s) before its load was released", resp.StatusCode, body(resp))
	default:
	}
	close(gate.release)
	for range 2 {
		if resp := <-bDone; resp.StatusCode != http.StatusOK {
			t.Fatalf("search on B: %d %s", resp.StatusCode, body(resp))
		}
	}
	e.srv.knowledge.(*knowledge).mu.Lock()
	loads := len(e.srv.knowledge.(*knowledge).kbs)
	e.srv.knowledge.(*knowledge).mu.Unlock()
	if loads != 2 {
		t.Fatalf("%d knowledge bases loaded, want 2", loads)
	}
}
