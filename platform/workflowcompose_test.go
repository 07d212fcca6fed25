package platform

import (
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// TestWorkflowAsTool: an agent that lists a workflow in workflow_ids (by
// name) calls it as the tool workflow_<name>; the run is one of the
// workflow's runs. An unknown workflow is a 400 naming the field.
func TestWorkflowAsTool(t *testing.T) {
	caller := scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("workflow_echo", `{"text":"ping"}`))
	e := newEnv(t, nil, multiModel(map[string]*scripted.Model{"caller": caller}))
	e.saveWorkflow(echoWorkflow("echo"))
	a := e.createAgent(e.admin, map[string]any{"name": "runner", "model": "scripted/caller", "workflow_ids": []string{"echo"}})
	if len(a.WorkflowIDs) != 1 || !strings.HasPrefix(a.WorkflowIDs[0], "wf_") {
		t.Fatalf("workflow_ids %v: want the id", a.WorkflowIDs)
	}
	var ans api.ChatAnswer
	if resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "go"}, &ans); resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	if !strings.Contains(ans.Answer, "You said: ping") {
		t.Fatalf("answer %q", ans.Answer)
	}
	var runs []runAnswer
	e.do(e.admin, "GET", "/v1/workflows/echo/runs", nil, &runs)
	if len(runs) != 1 || runs[0].Status != meta.RunSucceeded {
		t.Fatalf("runs %+v", runs)
	}
	e.wantError(e.do(e.admin, "POST", "/v1/agents", map[string]any{"name": "x", "workflow_ids": []string{"nope"}}, nil), http.StatusBadRequest, CodeInvalidRequest)
	other := e.tenantKey("other")
	e.wantError(e.do(other, "POST", "/v1/agents", map[string]any{"name": "x", "workflow_ids": []string{"echo"}}, nil), http.StatusBadRequest, CodeInvalidRequest)
}

// TestWorkflowAsModel: "workflow:<name>" is a model of the
// OpenAI-compatible endpoint: the last user message is the input, the
// output the answer; it is listed by /v1/models.
func TestWorkflowAsModel(t *testing.T) {
	e := newEnv(t, nil)
	e.saveWorkflow(echoWorkflow("echo"))
	var cc api.ChatCompletion
	resp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "workflow:echo",
		"messages": []any{map[string]any{"role": "user", "content": "hello"}}}, &cc)
	if resp.StatusCode != http.StatusOK || len(cc.Choices) != 1 || cc.Choices[0].Message.Content == nil || *cc.Choices[0].Message.Content != "You said: hello" {
		t.Fatalf("completion: %d %s", resp.StatusCode, body(resp))
	}
	// Streamed: one chunk of content, then [DONE].
	sresp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "workflow:echo", "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "again"}}}, nil)
	if raw := body(sresp); !strings.Contains(raw, "You said: again") || !strings.HasSuffix(raw, "data: [DONE]\n\n") {
		t.Fatalf("stream %s", raw)
	}
	var models api.ModelList
	e.do(e.admin, "GET", "/v1/models", nil, &models)
	found := false
	for _, m := range models.Data {
		found = found || m.ID == "workflow:echo"
	}
	if !found {
		t.Fatalf("models %+v", models.Data)
	}
	if resp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "workflow:nope",
		"messages": []any{map[string]any{"role": "user", "content": "x"}}}, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown workflow: %d", resp.StatusCode)
	}
}
