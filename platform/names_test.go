package platform

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/meta"
)

// An agent refers to knowledge bases, tools and delegates by name or by
// id; names are stored as ids.
func TestAgentReferencesByName(t *testing.T) {
	e := newEnv(t, nil)
	var kb, tool struct{ ID string }
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "handbook"}, &kb)
	e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "weather", "kind": "http",
		"http": map[string]any{"method": "GET", "url": "https://api.example.com/w"}}, &tool)
	helper := e.createAgent(e.admin, map[string]any{"name": "helper"})

	a := e.createAgent(e.admin, map[string]any{"name": "support",
		"knowledge_base_ids": []string{"handbook"}, "tool_ids": []string{"weather"}, "delegate_agent_ids": []string{"helper"}})
	if !slices.Equal(a.KnowledgeBaseIDs, []string{kb.ID}) || !slices.Equal(a.ToolIDs, []string{tool.ID}) || !slices.Equal(a.DelegateAgentIDs, []string{helper.ID}) {
		t.Fatalf("names not resolved to ids: %+v", a)
	}
	// Ids still work, mixed with names.
	var b meta.Agent
	resp := e.do(e.admin, "PUT", "/v1/agents/"+a.ID, map[string]any{"tool_ids": []string{tool.ID}, "knowledge_base_ids": []string{"handbook", kb.ID}}, &b)
	if resp.StatusCode != http.StatusOK || !slices.Equal(b.KnowledgeBaseIDs, []string{kb.ID, kb.ID}) || !slices.Equal(b.ToolIDs, []string{tool.ID}) {
		t.Fatalf("update: %d %+v", resp.StatusCode, b)
	}
	// An unknown name is a 400 naming the field; the agent's own name is
	// self-delegation.
	eb := e.wantError(e.do(e.admin, "POST", "/v1/agents", map[string]any{"name": "x", "tool_ids": []string{"nope"}}, nil), http.StatusBadRequest, CodeInvalidRequest)
	if !strings.Contains(eb.Error.Message, "tool_ids") || !strings.Contains(eb.Error.Message, "nope") {
		t.Fatalf("unknown tool name: %s", eb.Error.Message)
	}
	e.wantError(e.do(e.admin, "PUT", "/v1/agents/"+a.ID, map[string]any{"delegate_agent_ids": []string{"support"}}, nil), http.StatusBadRequest, CodeInvalidRequest)
	// Another tenant's names are not visible.
	var k keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "acme", "tenant": "acme"}, &k)
	e.wantError(e.do(k.Key, "POST", "/v1/agents", map[string]any{"name": "y", "knowledge_base_ids": []string{"handbook"}}, nil), http.StatusBadRequest, CodeInvalidRequest)
}
