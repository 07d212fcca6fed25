package platform

import (
	"net/http"
	"strings"
	"testing"
)

// TestRoutesByName: every route that takes an agent, tool, knowledge base
// or workflow id takes its name (an id wins; a name that is neither is the
// handler's 404 naming it; another tenant's names are not found); usage
// rows carry the agent's and workflow's names.
func TestRoutesByName(t *testing.T) {
	e := newEnv(t, nil)
	helper := e.createAgent(e.admin, map[string]any{"name": "helper"})
	var ans struct {
		SessionID string `json:"session_id"`
		Answer    string `json:"answer"`
	}
	if resp := e.do(e.admin, "POST", "/v1/agents/helper/chat", map[string]any{"query": "hello"}, &ans); resp.StatusCode != http.StatusOK || ans.SessionID == "" {
		t.Fatalf("chat by name: %d %s", resp.StatusCode, body(resp))
	}
	var got struct{ ID, Name string }
	if resp := e.do(e.admin, "GET", "/v1/agents/helper", nil, &got); resp.StatusCode != http.StatusOK || got.ID != helper.ID {
		t.Fatalf("get by name: %d %+v", resp.StatusCode, got)
	}
	if resp := e.do(e.admin, "PUT", "/v1/agents/helper", map[string]any{"system_prompt": "Be brief."}, &got); resp.StatusCode != http.StatusOK || got.ID != helper.ID {
		t.Fatalf("update by name: %d %s", resp.StatusCode, body(resp))
	}
	var sessions []struct {
		ID string `json:"id"`
	}
	if resp := e.do(e.admin, "GET", "/v1/sessions?agent_id=helper", nil, &sessions); resp.StatusCode != http.StatusOK || len(sessions) != 1 || sessions[0].ID != ans.SessionID {
		t.Fatalf("sessions by agent name: %d %+v", resp.StatusCode, sessions)
	}
	eb := e.wantError(e.do(e.admin, "POST", "/v1/agents/nope/chat", map[string]any{"query": "hello"}, nil), http.StatusNotFound, CodeNotFound)
	if !strings.Contains(eb.Error.Message, `"nope"`) {
		t.Errorf("unknown name: %q", eb.Error.Message)
	}
	// Another tenant's names are not found.
	other := e.tenantKey("other")
	e.wantError(e.do(other, "POST", "/v1/agents/helper/chat", map[string]any{"query": "hello"}, nil), http.StatusNotFound, CodeNotFound)
	e.wantError(e.do(other, "GET", "/v1/agents/"+helper.ID, nil, nil), http.StatusNotFound, CodeNotFound)

	var tool struct{ ID string }
	if resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "lookup", "kind": "http", "http": map[string]any{"method": "GET", "url": "https://example.com/x"}}, &tool); resp.StatusCode != http.StatusCreated {
		t.Fatalf("tool: %d %s", resp.StatusCode, body(resp))
	}
	if resp := e.do(e.admin, "GET", "/v1/tools/lookup", nil, &got); resp.StatusCode != http.StatusOK || got.ID != tool.ID {
		t.Fatalf("tool by name: %d %+v", resp.StatusCode, got)
	}
	e.wantError(e.do(other, "GET", "/v1/tools/lookup", nil, nil), http.StatusNotFound, CodeNotFound)

	var kb struct{ ID string }
	if resp := e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "handbook"}, &kb); resp.StatusCode != http.StatusCreated {
		t.Fatalf("kb: %d %s", resp.StatusCode, body(resp))
	}
	if resp := e.do(e.admin, "GET", "/v1/knowledge-bases/handbook", nil, &got); resp.StatusCode != http.StatusOK || got.ID != kb.ID {
		t.Fatalf("kb by name: %d %+v", resp.StatusCode, got)
	}
	if resp := e.do(e.admin, "POST", "/v1/knowledge-bases/handbook/search", map[string]any{"query": "x"}, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("search by name: %d %s", resp.StatusCode, body(resp))
	}
	e.wantError(e.do(other, "GET", "/v1/knowledge-bases/handbook", nil, nil), http.StatusNotFound, CodeNotFound)

	e.saveWorkflow(map[string]any{
		"name": "ask",
		"nodes": []any{
			map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"q": map[string]any{"type": "string"}}},
			map[string]any{"id": "think", "kind": "llm", "prompt": "{{ inputs.q }}"},
			map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"a": "{{ nodes.think.outputs.text }}"}},
		},
	})
	e.runWorkflow(e.admin, "ask", map[string]any{"q": "why?"})

	var usage struct {
		Rows []struct {
			AgentID   string `json:"agent_id"`
			AgentName string `json:"agent_name"`
		} `json:"rows"`
	}
	if resp := e.do(e.admin, "GET", "/v1/usage?group_by=agent", nil, &usage); resp.StatusCode != http.StatusOK {
		t.Fatalf("usage: %d %s", resp.StatusCode, body(resp))
	}
	names := map[string]string{}
	for _, r := range usage.Rows {
		names[r.AgentName] = r.AgentID
	}
	if names["helper"] != helper.ID || !strings.HasPrefix(names["workflow:ask"], "workflow:wf_") {
		t.Fatalf("usage rows by name: %+v", usage.Rows)
	}
	if resp := e.do(e.admin, "GET", "/v1/usage?group_by=agent&agent_id=helper", nil, &usage); resp.StatusCode != http.StatusOK || len(usage.Rows) != 1 || usage.Rows[0].AgentName != "helper" {
		t.Fatalf("usage of an agent by name: %+v", usage.Rows)
	}
	if resp := e.do(e.admin, "GET", "/v1/usage?group_by=agent&agent_id=workflow:ask", nil, &usage); resp.StatusCode != http.StatusOK || len(usage.Rows) != 1 || usage.Rows[0].AgentName != "workflow:ask" {
		t.Fatalf("usage of a workflow by name: %+v", usage.Rows)
	}
}

// TestRefKindOf: the routes resolved by name are those whose {id} follows
// an agents, tools, knowledge-bases or workflows path.
func TestRefKindOf(t *testing.T) {
	for pattern, want := range map[string]string{
		"POST /v1/agents/{id}/chat":                       "agent",
		"GET /v1/agents/{id}":                             "agent",
		"DELETE /v1/tools/{id}":                           "tool",
		"POST /v1/knowledge-bases/{id}/documents":         "knowledge base",
		"DELETE /v1/knowledge-bases/{id}/documents/{doc}": "knowledge base",
		"POST /v1/workflows/{id}/runs/{run}/cancel":       "workflow",
		"GET /v1/agents":                                  "",
		"GET /v1/sessions/{id}":                           "",
		"GET /v1/workflow-node-kinds":                     "",
	} {
		k, ok := refKindOf(pattern)
		if ok != (want != "") || k.kind != want {
			t.Errorf("%s: %q %v, want %q", pattern, k.kind, ok, want)
		}
	}
}
