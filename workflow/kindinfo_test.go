package workflow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/workflow"
)

// sample returns a value of a property's JSON type.
func sample(prop map[string]any) any {
	if prop["format"] == "duration" {
		return "1s"
	}
	switch prop["type"] {
	case "string":
		return "x"
	case "integer", "number":
		return 1
	case "boolean":
		return true
	case "array":
		return []any{"start"}
	}
	return map[string]any{"a": "x"}
}

// samples are values of the fields whose object form is checked.
var samples = map[string]any{
	"output_schema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}},
	"inputs":        map[string]any{"a": map[string]any{"type": "string"}},
	"retry":         map[string]any{"max_attempts": 1},
	"on_error":      map[string]any{"action": "fail"},
	"cases":         []any{map[string]any{"when": "true", "next": []any{}}},
	"nodes":         []any{map[string]any{"id": "sub", "kind": "template", "template": "x"}},
}

// TestKindsMatchValidate pins the served schema to what Validate does: a
// node of each kind with only id and kind is missing exactly the fields
// its schema requires, and every field its schema lists is one Validate
// lets the kind set while every other field of Node is refused.
func TestKindsMatchValidate(t *testing.T) {
	for _, withDefault := range []bool{false, true} {
		var opts []workflow.ValidateOption
		if withDefault {
			opts = append(opts, workflow.WithDefaultModel())
		}
		kinds, err := workflow.Kinds(opts...)
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		props := map[string]map[string]any{}
		for _, k := range kinds {
			var schema struct {
				Properties map[string]map[string]any `json:"properties"`
			}
			json.Unmarshal(k.Schema, &schema)
			for _, f := range k.Fields {
				if !slices.Contains(all, f) {
					all = append(all, f)
					props[f] = schema.Properties[f]
				}
			}
		}
		if len(kinds) != 11 {
			t.Fatalf("%d kinds, want the 11 built-in ones", len(kinds))
		}
		for _, k := range kinds {
			var schema struct {
				Properties map[string]map[string]any `json:"properties"`
				Required   []string                  `json:"required"`
			}
			if err := json.Unmarshal(k.Schema, &schema); err != nil {
				t.Fatal(err)
			}
			if len(schema.Properties) != len(k.Fields) {
				t.Errorf("%s: %d properties for %d fields", k.Kind, len(schema.Properties), len(k.Fields))
			}
			faults := func(node map[string]any) workflow.ValidationErrors {
				def := map[string]any{"name": "t", "nodes": []any{
					map[string]any{"id": "start", "kind": "start"}, node,
					map[string]any{"id": "end", "kind": "end", "depends_on": []any{"n"}},
				}}
				if k.Kind == workflow.KindStart || k.Kind == workflow.KindEnd {
					def["nodes"] = []any{node}
				}
				b, _ := json.Marshal(def)
				d, err := workflow.Parse(b)
				if err != nil {
					t.Fatalf("%s: %v", k.Kind, err)
				}
				var ve workflow.ValidationErrors
				errors.As(d.Validate(opts...), &ve)
				return ve
			}
			var missing []string
			for _, e := range faults(map[string]any{"id": "n", "kind": string(k.Kind)}) {
				if e.Node == "n" && (strings.Contains(e.Msg, "missing") || strings.Contains(e.Msg, "needs") || strings.Contains(e.Msg, "at least one")) {
					missing = append(missing, e.Field)
				}
			}
			want := slices.DeleteFunc(slices.Clone(schema.Required), func(f string) bool { return f == "id" || f == "kind" })
			slices.Sort(missing)
			slices.Sort(want)
			if !slices.Equal(missing, want) {
				t.Errorf("default model %v, %s: Validate finds %q missing, the schema requires %q", withDefault, k.Kind, missing, want)
			}
			for _, f := range all {
				_, listed := schema.Properties[f]
				prop := props[f]
				if f == "id" || f == "kind" {
					continue
				}
				v, ok := samples[f]
				if !ok {
					v = sample(prop)
				}
				node := map[string]any{"id": "n", "kind": string(k.Kind), f: v}
				refused := false
				for _, e := range faults(node) {
					if e.Node == "n" && e.Field == f && strings.Contains(e.Msg, "does not use") {
						refused = true
						if !strings.Contains(e.Msg, strings.Join(k.Fields, ", ")) {
							t.Errorf("%s: %q does not list the kind's fields", k.Kind, e.Msg)
						}
					}
				}
				if refused == listed {
					t.Errorf("%s: field %s listed %v, refused by Validate %v", k.Kind, f, listed, refused)
				}
			}
		}
	}
}

// TestKindsSchemaAcceptsNodes checks the schema is JSON Schema that
// accepts the nodes of a valid definition and refuses a misspelt field.
func TestKindsSchemaAcceptsNodes(t *testing.T) {
	kinds, err := workflow.Kinds(workflow.WithDefaultModel())
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[workflow.Kind]*jsonschema.Schema{}
	for _, k := range kinds {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(k.Schema))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(string(k.Kind)+".json", doc); err != nil {
			t.Fatal(err)
		}
		if schemas[k.Kind], err = c.Compile(string(k.Kind) + ".json"); err != nil {
			t.Fatalf("%s: %v", k.Kind, err)
		}
	}
	d, err := workflow.Parse([]byte(`
name: t
nodes:
  - {id: start, kind: start, inputs: {q: {type: string, description: the question}}}
  - id: classify
    kind: llm
    prompt: "{{inputs.q}}"
    output_schema: {type: object, properties: {label: {type: string, enum: [a, b]}}}
    retry: {max_attempts: 2, backoff: 1s}
    timeout: 30s
  - {id: retrieve, kind: knowledge, knowledge_bases: [docs], query: "{{inputs.q}}", top_k: 3}
  - {id: route, kind: condition, cases: [{id: a, when: "nodes.classify.outputs.label == 'a'", next: [draft]}], else: [draft]}
  - {id: draft, kind: agent, agent: helper, query: "{{nodes.retrieve.outputs.text}}", on_error: {action: continue, default: {answer: sorry}}}
  - {id: end, kind: end, outputs: {answer: "{{nodes.draft.outputs.answer}}"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(workflow.WithDefaultModel()); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(d.Nodes)
	var nodes []map[string]any
	json.Unmarshal(b, &nodes)
	for _, n := range nodes {
		k := workflow.Kind(n["kind"].(string))
		if err := schemas[k].Validate(n); err != nil {
			t.Errorf("%s node %v refused: %v", k, n["id"], err)
		}
	}
	bad := map[string]any{"id": "r", "kind": "knowledge", "knowledge_base": []any{"docs"}, "query": "q"}
	if schemas[workflow.KindKnowledge].Validate(bad) == nil {
		t.Error("the knowledge schema accepts knowledge_base")
	}
}

// TestParseUnknownField: an unknown field names its node and lists the
// fields of the node's kind.
func TestParseUnknownField(t *testing.T) {
	for _, c := range []struct{ def, node, field, msg string }{
		{`{id: classify, kind: knowledge, knowledge_base: [docs], query: q}`, "classify", "knowledge_base",
			"a knowledge node's fields: id, kind, title, knowledge_bases, query, top_k, depends_on"},
		{`{id: x, kind: llm, prompt: p, retry: {attempts: 2}}`, "x", "retry.attempts", "retry's fields: max_attempts, backoff, max_backoff"},
		{`{id: x, kind: condition, cases: [{when: "true", next: [], then: []}]}`, "x", "cases[0].then", "when, next"},
		{`{id: it, kind: iteration, items: [], output: 1, nodes: [{id: y, kind: template, text: t}]}`, "it.y", "text", "a template node's fields: id, kind, title, template,"},
		{`{id: x, kind: nope, colour: red}`, "x", "colour", "a node's fields: id, kind,"},
	} {
		_, err := workflow.Parse([]byte("name: t\nnodes:\n  - " + c.def + "\n"))
		var ve *workflow.ValidationError
		if !errors.As(err, &ve) || ve.Node != c.node || ve.Field != c.field || !strings.Contains(ve.Msg, c.msg) {
			t.Errorf("%s: got %v, want node %s field %s with %q", c.def, err, c.node, c.field, c.msg)
		}
	}
	_, err := workflow.Parse([]byte("name: t\nnode: []\n"))
	var ve *workflow.ValidationError
	if !errors.As(err, &ve) || ve.Field != "node" || !strings.Contains(ve.Msg, "name, description, version, nodes") {
		t.Errorf("definition field: %v", err)
	}
	d, err := workflow.Parse([]byte("name: t\nnodes:\n  - {id: s, kind: strat}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), `unknown kind "strat"; kinds: start, llm, agent, knowledge, tool, http, condition, iteration, template, human, end`) {
		t.Errorf("unknown kind: %v", err)
	}
}

// TestDefaultModel: with WithDefaultModel an llm node may leave its model
// out, and the resolver is asked for "".
func TestDefaultModel(t *testing.T) {
	src := []byte(`
name: t
nodes:
  - {id: start, kind: start, inputs: {q: {type: string}}}
  - {id: classify, kind: llm, prompt: "{{inputs.q}}"}
  - {id: end, kind: end, outputs: {a: "{{nodes.classify.outputs.text}}"}}
`)
	d, _ := workflow.Parse(src)
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "node classify: model: missing") {
		t.Fatalf("without a default: %v", err)
	}
	d, _ = workflow.Parse(src)
	if err := d.Validate(workflow.WithDefaultModel()); err != nil {
		t.Fatal(err)
	}
	var asked []string
	e := workflow.New(workflow.Services{Model: func(ctx context.Context, name string) (llm.ChatModel, error) {
		asked = append(asked, name)
		return scripted.New(), nil
	}})
	var out any
	for ev, err := range e.Run(context.Background(), d, map[string]any{"q": "hi"}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == workflow.WorkflowFinished {
			out = ev.Outputs["a"]
		}
	}
	if !slices.Equal(asked, []string{""}) || out == nil {
		t.Errorf("asked %q, outputs %v", asked, out)
	}
}

// TestKindsCustom lists a Func kind with its arguments' schema.
func TestKindsCustom(t *testing.T) {
	type args struct {
		City string `json:"city"`
	}
	nt, err := workflow.Func("weather", func(ctx context.Context, in args) (map[string]any, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := workflow.Kinds(workflow.WithNodeTypes(nt))
	if err != nil {
		t.Fatal(err)
	}
	last := kinds[len(kinds)-1]
	if last.Kind != "weather" || !slices.Contains(last.Fields, "args") || !strings.Contains(string(last.Schema), `"city"`) {
		t.Errorf("custom kind: %+v %s", last, last.Schema)
	}
}
