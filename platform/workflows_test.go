package platform

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/config"
)

// echoWorkflow is a small valid definition: start → template → end.
func echoWorkflow(name string) map[string]any {
	return map[string]any{
		"name": name,
		"nodes": []any{
			map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"text": map[string]any{"type": "string"}}},
			map[string]any{"id": "shout", "kind": "template", "template": "You said: {{ inputs.text }}"},
			map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"reply": "{{ nodes.shout.outputs.text }}"}},
		},
	}
}

type wfAnswer struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version int    `json:"version"`
	Nodes   []any  `json:"nodes"`
}

// TestWorkflowCRUD: a workflow is saved checked, versioned on update,
// found by id or name, scoped to its tenant, and deleted.
func TestWorkflowCRUD(t *testing.T) {
	e := newEnv(t, nil)
	var w wfAnswer
	if resp := e.do(e.admin, "POST", "/v1/workflows", echoWorkflow("echo"), &w); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body(resp))
	}
	if w.ID == "" || w.Name != "echo" || w.Version != 1 || len(w.Nodes) != 3 {
		t.Fatalf("created %+v", w)
	}
	e.wantError(e.do(e.admin, "POST", "/v1/workflows", echoWorkflow("echo"), nil), http.StatusConflict, CodeConflict)

	// A typo in a reference is a 400 naming the node and field.
	bad := echoWorkflow("bad")
	bad["nodes"].([]any)[1].(map[string]any)["template"] = "You said: {{ inputs.txet }}"
	var eb struct {
		Error struct{ Code, Message, Param string } `json:"error"`
	}
	resp := e.do(e.admin, "POST", "/v1/workflows", bad, &eb)
	if resp.StatusCode != http.StatusBadRequest || eb.Error.Param != "nodes.shout.template" || !strings.Contains(eb.Error.Message, "txet") {
		t.Fatalf("typo: %d %+v", resp.StatusCode, eb)
	}
	// A type mismatch too: an end output referencing a field the node lacks.
	bad = echoWorkflow("bad")
	bad["nodes"].([]any)[2].(map[string]any)["outputs"] = map[string]any{"reply": "{{ nodes.shout.outputs.missing }}"}
	resp = e.do(e.admin, "POST", "/v1/workflows", bad, &eb)
	if resp.StatusCode != http.StatusBadRequest || eb.Error.Param != "nodes.end.outputs.reply" && !strings.HasPrefix(eb.Error.Param, "nodes.end") {
		t.Fatalf("unknown field: %d %+v", resp.StatusCode, eb)
	}
	e.wantError(e.do(e.admin, "POST", "/v1/workflows", `{"nodes": []}`, nil), http.StatusBadRequest, CodeInvalidRequest)
	e.wantError(e.do(e.admin, "POST", "/v1/workflows", `{"name": "x", "nodes": [], "bogus": 1}`, nil), http.StatusBadRequest, CodeInvalidRequest)

	// YAML.
	yaml := "name: yamly\nnodes:\n  - {id: start, kind: start, inputs: {text: {type: string}}}\n  - {id: end, kind: end, outputs: {reply: \"{{ inputs.text }}\"}}\n"
	var y wfAnswer
	if resp := e.do(e.admin, "POST", "/v1/workflows", yaml, &y, "Content-Type", "application/yaml"); resp.StatusCode != http.StatusCreated || y.Name != "yamly" {
		t.Fatalf("yaml: %d %s", resp.StatusCode, body(resp))
	}

	// Update by name: version 2; what GET answers can be PUT back.
	var got map[string]any
	e.do(e.admin, "GET", "/v1/workflows/echo", nil, &got)
	got["description"] = "says it back"
	var up wfAnswer
	if resp := e.do(e.admin, "PUT", "/v1/workflows/echo", got, &up); resp.StatusCode != http.StatusOK || up.Version != 2 || up.ID != w.ID {
		t.Fatalf("update: %d %s", resp.StatusCode, body(resp))
	}
	var again map[string]any
	e.do(e.admin, "GET", "/v1/workflows/"+w.ID, nil, &again)
	if again["description"] != "says it back" || again["version"] != float64(2) {
		t.Fatalf("after update: %v", again)
	}
	var list []wfAnswer
	e.do(e.admin, "GET", "/v1/workflows", nil, &list)
	if len(list) != 2 || list[0].Name != "echo" || list[1].Name != "yamly" {
		t.Fatalf("list %+v", list)
	}

	// Another tenant sees none of it.
	other := e.tenantKey("other")
	e.wantError(e.do(other, "GET", "/v1/workflows/echo", nil, nil), http.StatusNotFound, CodeNotFound)
	e.wantError(e.do(other, "GET", "/v1/workflows/"+w.ID, nil, nil), http.StatusNotFound, CodeNotFound)
	e.wantError(e.do(other, "POST", "/v1/workflows/"+w.ID+"/runs", map[string]any{"inputs": map[string]any{"text": "hi"}}, nil), http.StatusNotFound, CodeNotFound)
	var otherList []wfAnswer
	e.do(other, "GET", "/v1/workflows", nil, &otherList)
	if len(otherList) != 0 {
		t.Fatalf("another tenant lists %+v", otherList)
	}

	if resp := e.do(e.admin, "DELETE", "/v1/workflows/echo", nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	e.wantError(e.do(e.admin, "GET", "/v1/workflows/echo", nil, nil), http.StatusNotFound, CodeNotFound)
}

// TestWorkflowDefinitionLimit: a definition over the limit is a 413.
func TestWorkflowDefinitionLimit(t *testing.T) {
	e := newEnv(t, nil)
	big := echoWorkflow("big")
	big["description"] = strings.Repeat("x", 1<<20)
	b, _ := json.Marshal(big)
	e.wantError(e.do(e.admin, "POST", "/v1/workflows", string(b), nil), http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
}

// TestApplyWorkflows: weft apply's workflows section creates workflows,
// leaves unchanged ones alone and saves a new version of changed ones.
func TestApplyWorkflows(t *testing.T) {
	e := newEnv(t, nil)
	const y = `
agents:
  - name: helper
    system_prompt: Help.
workflows:
  - name: assist
    nodes:
      - {id: start, kind: start, inputs: {q: {type: string}}}
      - {id: ask, kind: agent, agent: helper, query: "{{ inputs.q }}"}
      - {id: end, kind: end, outputs: {answer: "{{ nodes.ask.outputs.answer }}"}}
`
	ctx := context.Background()
	target := config.Target{BaseURL: e.http.URL, Key: e.admin}
	for i, want := range []string{"workflow assist created; agent helper created", "workflow assist unchanged; agent helper unchanged"} {
		rep, err := config.Apply(ctx, target, parseApply(t, y), config.Env{})
		if err != nil {
			t.Fatal(err)
		}
		if got := actions(rep); got != want {
			t.Fatalf("apply %d: %s", i+1, got)
		}
	}
	rep, err := config.Apply(ctx, target, parseApply(t, strings.Replace(y, `query: "{{ inputs.q }}"`, `query: "Please: {{ inputs.q }}"`, 1)), config.Env{})
	if err != nil || actions(rep) != "workflow assist updated; agent helper unchanged" {
		t.Fatalf("changed: %v, %v", actions(rep), err)
	}
	var w wfAnswer
	e.do(e.admin, "GET", "/v1/workflows/assist", nil, &w)
	if w.Version != 2 {
		t.Fatalf("version %d, want 2", w.Version)
	}
	run := e.runWorkflow(e.admin, "assist", map[string]any{"q": "hello"})
	if run.Status != "succeeded" || !strings.Contains(run.Outputs["answer"].(string), "Please: hello") {
		t.Fatalf("run %+v", run)
	}
	// A bad workflow stops the apply with the server's message, naming the node.
	_, err = config.Apply(ctx, target, parseApply(t, strings.Replace(y, "inputs.q", "inputs.qq", 1)), config.Env{})
	if err == nil || !strings.Contains(err.Error(), "ask") {
		t.Fatalf("bad workflow: %v", err)
	}
}
