package platform

import (
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// PUT /v1/knowledge-bases/{id} renames a knowledge base in place: its id,
// documents and agents stay. A setting that would mean chunking or
// embedding again is refused unless unchanged.
func TestKnowledgeBaseUpdate(t *testing.T) {
	onEachStore(t, func(t *testing.T, e *testEnv) {
		var kb kbView
		if resp := e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "handbook", "chunk_size": 64}, &kb); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %d %s", resp.StatusCode, body(resp))
		}
		var doc meta.Document
		e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{"name": "returns.md", "content": "Customers may return any product within 30 days."}, &doc)
		if d := e.waitDocument(kb.ID, doc.ID); d.Status != meta.DocReady {
			t.Fatalf("document = %+v", d)
		}
		a := e.createAgent(e.admin, map[string]any{"name": "support", "knowledge_base_ids": []string{kb.ID}})

		var got kbView
		resp := e.do(e.admin, "PUT", "/v1/knowledge-bases/"+kb.ID, map[string]any{"name": " policies ", "chunk_size": 64, "chunk_overlap": kb.ChunkOverlap, "embedding_model": ""}, &got)
		if resp.StatusCode != http.StatusOK || got.ID != kb.ID || got.Name != "policies" || got.ChunkSize != 64 || got.Description == "" {
			t.Fatalf("update: %d %+v", resp.StatusCode, got)
		}
		var listed []kbView
		e.do(e.admin, "GET", "/v1/knowledge-bases", nil, &listed)
		if len(listed) != 1 || listed[0].Name != "policies" || listed[0].ID != kb.ID {
			t.Fatalf("listed = %+v", listed)
		}
		var search struct{ Results []api.RagFragment }
		e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/search", map[string]any{"query": "return a product"}, &search)
		if len(search.Results) == 0 || !strings.Contains(search.Results[0].Content, "30 days") {
			t.Fatalf("search after the rename = %+v", search.Results)
		}
		var ag meta.Agent
		e.do(e.admin, "GET", "/v1/agents/"+a.ID, nil, &ag)
		if len(ag.KnowledgeBaseIDs) != 1 || ag.KnowledgeBaseIDs[0] != kb.ID {
			t.Fatalf("agent knowledge_base_ids = %v", ag.KnowledgeBaseIDs)
		}
		// An empty body changes nothing.
		if resp := e.do(e.admin, "PUT", "/v1/knowledge-bases/"+kb.ID, map[string]any{}, &got); resp.StatusCode != http.StatusOK || got.Name != "policies" {
			t.Fatalf("empty update: %d %+v", resp.StatusCode, got)
		}

		for field, v := range map[string]any{"chunk_size": 128, "chunk_overlap": 0, "embedding_model": "scripted/embed"} {
			eb := e.wantError(e.do(e.admin, "PUT", "/v1/knowledge-bases/"+kb.ID, map[string]any{field: v}, nil), http.StatusBadRequest, CodeInvalidRequest)
			if !strings.Contains(eb.Error.Message, `field "`+field+`"`) || !strings.Contains(eb.Error.Message, "create a new knowledge base") {
				t.Fatalf("%s: message %q", field, eb.Error.Message)
			}
		}
		var other kbView
		e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "other"}, &other)
		e.wantError(e.do(e.admin, "PUT", "/v1/knowledge-bases/"+kb.ID, map[string]any{"name": "other"}, nil), http.StatusConflict, CodeConflict)
		e.wantError(e.do(e.admin, "PUT", "/v1/knowledge-bases/kb_nope", map[string]any{"name": "x"}, nil), http.StatusNotFound, CodeNotFound)
		var globex keyResponse
		e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "other", "tenant": "globex"}, &globex)
		e.wantError(e.do(globex.Key, "PUT", "/v1/knowledge-bases/"+kb.ID, map[string]any{"name": "mine"}, nil), http.StatusNotFound, CodeNotFound)
		e.do(e.admin, "GET", "/v1/knowledge-bases/"+kb.ID, nil, &got)
		if got.Name != "policies" {
			t.Fatalf("after refused updates: %+v", got)
		}
	})
}
