package platform

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// TestWorkflowNodeKinds: the node kinds are served with their fields'
// JSON Schema; a misspelt field is a 400 naming the node and the field
// and listing the kind's fields; an llm node without a model runs on the
// server's default model.
func TestWorkflowNodeKinds(t *testing.T) {
	e := newEnv(t, scripted.New(scripted.Echo()))
	var kinds []struct {
		Kind    string         `json:"kind"`
		Fields  []string       `json:"fields"`
		Schema  map[string]any `json:"schema"`
		Outputs map[string]any `json:"outputs"`
	}
	if resp := e.do(e.admin, "GET", "/v1/workflow-node-kinds", nil, &kinds); resp.StatusCode != http.StatusOK {
		t.Fatalf("kinds: %d %s", resp.StatusCode, body(resp))
	}
	var names []string
	for _, k := range kinds {
		names = append(names, k.Kind)
		switch k.Kind {
		case "llm":
			if req := k.Schema["required"].([]any); slices.Contains(req, any("model")) || !slices.Contains(req, any("prompt")) {
				t.Errorf("llm required %v: the server has a default model, the prompt is required", req)
			}
		case "knowledge":
			props := k.Schema["properties"].(map[string]any)
			kb, _ := props["knowledge_bases"].(map[string]any)
			if kb["type"] != "array" || kb["x-weft"] != "knowledge_base" || props["knowledge_base"] != nil {
				t.Errorf("knowledge fields: %v", props)
			}
			if _, ok := k.Outputs["properties"].(map[string]any)["fragments"]; !ok {
				t.Errorf("knowledge outputs: %v", k.Outputs)
			}
		}
	}
	if want := []string{"start", "llm", "agent", "knowledge", "tool", "http", "condition", "iteration", "template", "human", "end"}; !slices.Equal(names, want) {
		t.Errorf("kinds %v, want %v", names, want)
	}

	var eb struct {
		Error struct{ Code, Message, Param string } `json:"error"`
	}
	yaml := "name: bad\nnodes:\n  - {id: start, kind: start, inputs: {q: {type: string}}}\n  - {id: classify, kind: knowledge, knowledge_base: [docs], query: \"{{inputs.q}}\"}\n"
	req, _ := http.NewRequest("POST", e.http.URL+"/v1/workflows", strings.NewReader(yaml))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || eb.Error.Param != "nodes.classify.knowledge_base" ||
		!strings.Contains(eb.Error.Message, "node classify: knowledge_base: unknown field; a knowledge node's fields: id, kind, title, knowledge_bases, query, top_k") {
		t.Fatalf("misspelt field: %d %+v", resp.StatusCode, eb)
	}

	def := map[string]any{
		"name": "nomodel",
		"nodes": []any{
			map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"q": map[string]any{"type": "string"}}},
			map[string]any{"id": "classify", "kind": "llm", "prompt": "Question: {{ inputs.q }}"},
			map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"answer": "{{ nodes.classify.outputs.text }}"}},
		},
	}
	e.saveWorkflow(def)
	run := e.runWorkflow(e.admin, "nomodel", map[string]any{"q": "why?"})
	if run.Status != meta.RunSucceeded || !strings.Contains(run.Outputs["answer"].(string), "why?") {
		t.Fatalf("run on the default model: %+v", run)
	}
}
