package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/weftlabs/weft/workflow"
)

// base is a valid workflow; each case of TestValidate appends nodes to it
// or replaces it.
const base = `
name: t
nodes:
  - id: start
    kind: start
    inputs:
      ticket: {type: string}
      tags: {type: array, items: {type: string}}
      n: {type: integer, default: 3}
  - id: classify
    kind: llm
    model: m
    prompt: "{{inputs.ticket}}"
    output_schema:
      type: object
      properties:
        label: {type: string}
        score: {type: number}
        meta: {type: object, properties: {lang: {type: string}}}
`

func TestValidateAccepts(t *testing.T) {
	d, err := workflow.Parse([]byte(base + `
  - id: loop
    kind: iteration
    items: "{{inputs.tags}}"
    concurrency: 2
    output: "{{nodes.up.outputs.text}}"
    nodes:
      - {id: up, kind: template, template: "{{item}} #{{index}} of {{nodes.classify.outputs.meta.lang}}"}
      - id: inner
        kind: condition
        cases: [{when: 'item == "x" && index > 0 && nodes.up.outputs.text != ""', next: [x]}]
      - {id: x, kind: template, template: "x"}
  - id: route
    kind: condition
    cases:
      - {id: high, when: 'nodes.classify.outputs.score > 0.5 && inputs.n > 2', next: [a]}
      - {when: 'len(nodes.loop.outputs.results) > 1 && nodes.loop.outputs.results[0] startsWith "a"', next: [b]}
    else: [b]
  - {id: a, kind: template, template: "a"}
  - {id: b, kind: template, template: "b", depends_on: [route]}
  - id: end
    kind: end
    depends_on: [a, b]
    outputs: {label: "{{nodes.classify.outputs.label}}", results: "{{nodes.loop.outputs.results}}", lit: [1, "{{inputs.n}}"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRejects(t *testing.T) {
	upper, err := workflow.Func("upper", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (struct {
		Text string `json:"text"`
	}, error) {
		return in, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	end := "\n  - {id: end, kind: end, depends_on: [classify], outputs: {}}\n"
	cases := []struct {
		name, yaml  string
		node, field string
		msg         string
	}{
		{"typo in a field", base + `
  - {id: end, kind: end, outputs: {x: "{{nodes.classify.outputs.lable}}"}}`, "end", "outputs", `no field "lable" (have label, meta, score, text)`},
		{"typo in a node", base + `
  - {id: end, kind: end, outputs: {x: "{{nodes.clasify.outputs.label}}"}}`, "end", "outputs", `no node "clasify"`},
		{"typo in a nested field", base + `
  - {id: end, kind: end, outputs: {x: "{{nodes.classify.outputs.meta.lnag}}"}}`, "end", "outputs", `no field "lnag"`},
		{"field of a scalar", base + `
  - {id: end, kind: end, outputs: {x: "{{nodes.classify.outputs.label.x}}"}}`, "end", "outputs", `label is a string, it has no field "x"`},
		{"unknown input", base + `
  - {id: end, kind: end, outputs: {x: "{{inputs.tiket}}"}}`, "end", "outputs", `no input "tiket"`},
		{"type mismatch in a condition", base + `
  - {id: c, kind: condition, cases: [{when: 'nodes.classify.outputs.label > 3', next: [end]}]}` + end, "c", "cases[0].when", "mismatched types string and int"},
		{"typo in a condition", base + `
  - {id: c, kind: condition, cases: [{when: 'nodes.classify.outputs.scor > 3', next: [end]}]}` + end, "c", "cases[0].when", `no field "scor"`},
		{"condition not boolean", base + `
  - {id: c, kind: condition, cases: [{when: 'nodes.classify.outputs.score + 1', next: [end]}]}` + end, "c", "cases[0].when", "bool"},
		{"condition syntax", base + `
  - {id: c, kind: condition, cases: [{when: 'nodes.classify.outputs.score >', next: [end]}]}` + end, "c", "cases[0].when", "unexpected"},
		{"dynamic node access", base + `
  - {id: c, kind: condition, cases: [{when: 'nodes["cl" + "assify"] != nil', next: [end]}]}` + end, "c", "cases[0].when", "nodes.ID.outputs.FIELD"},
		{"cycle", base + `
  - {id: a, kind: template, template: "{{nodes.b.outputs.text}}", depends_on: [classify]}
  - {id: b, kind: template, template: "{{nodes.a.outputs.text}}"}` + end, "a", "", "a cycle runs through a, b"},
		{"self reference", base + `
  - {id: a, kind: template, template: "{{nodes.a.outputs.text}}"}` + end, "a", "template", "its own outputs"},
		{"unreachable end", base + `
  - {id: end, kind: end, outputs: {}}`, "end", "", "end node is unreachable"},
		{"unreachable node", base + `
  - {id: lone, kind: template, template: "x"}` + end, "lone", "", "unreachable from the start"},
		{"no end", base, "", "nodes", "no end node"},
		{"no start", "name: t\nnodes:\n  - {id: end, kind: end}", "", "nodes", "no start node"},
		{"two starts", base + `
  - {id: s2, kind: start}` + end, "s2", "kind", "one start node"},
		{"unknown depends_on", base + `
  - {id: end, kind: end, depends_on: [clasify]}`, "end", "depends_on[0]", `no node "clasify"`},
		{"unknown next", base + `
  - {id: c, kind: condition, cases: [{when: 'true', next: [nowhere]}], depends_on: [classify]}` + end, "c", "cases[0].next[0]", `no node "nowhere"`},
		{"duplicate id", base + `
  - {id: classify, kind: template, template: "x"}` + end, "classify", "id", "duplicate id"},
		{"bad id", base + `
  - {id: 2x, kind: template, template: "x"}` + end, "2x", "id", "letters"},
		{"unknown kind", base + `
  - {id: x, kind: frobnicate}` + end, "x", "kind", `unknown kind "frobnicate"`},
		{"field of another kind", base + `
  - {id: x, kind: template, template: "x", model: m, depends_on: [start]}` + end, "x", "model", "a template node does not use model"},
		{"missing prompt", base + `
  - {id: x, kind: llm, model: m, depends_on: [start]}` + end, "x", "prompt", "missing"},
		{"item outside an iteration", base + `
  - {id: x, kind: template, template: "{{item}}"}` + end, "x", "template", "only defined inside an iteration"},
		{"iteration over a scalar", base + `
  - {id: loop, kind: iteration, items: "{{inputs.ticket}}", output: "{{item}}", nodes: [{id: t, kind: template, template: "{{item}}"}]}` + end, "loop", "items", "want a list, got string"},
		{"node inside an iteration read from outside", base + `
  - {id: loop, kind: iteration, items: "{{inputs.tags}}", output: "{{item}}", nodes: [{id: t, kind: template, template: "{{item}}"}]}
  - {id: end, kind: end, outputs: {x: "{{nodes.t.outputs.text}}"}}`, "end", "outputs", "inside an iteration"},
		{"item field typo", base + `
  - {id: loop, kind: iteration, items: "{{inputs.tags}}", output: "{{item.x}}", nodes: [{id: t, kind: template, template: "{{item}}"}]}` + end, "loop", "output", `it has no field "x"`},
		{"bad template", base + `
  - {id: x, kind: template, template: "{{inputs.ticket", depends_on: [start]}` + end, "x", "template", "unclosed {{"},
		{"unknown default output", base + `
  - {id: x, kind: template, template: "t", depends_on: [start], on_error: {action: continue, default: {txt: "x"}}}` + end, "x", "on_error.default.txt", "not an output"},
		{"default of the wrong type", base + `
  - {id: x, kind: template, template: "t", depends_on: [start], on_error: {action: continue, default: {text: 3}}}` + end, "x", "on_error.default.text", "want string, got integer"},
		{"branch without next", base + `
  - {id: x, kind: template, template: "t", depends_on: [start], on_error: {action: branch}}` + end, "x", "on_error.next", "needs nodes"},
		{"unknown action", base + `
  - {id: x, kind: template, template: "t", depends_on: [start], on_error: {action: shrug}}` + end, "x", "on_error.action", "shrug"},
		{"too many attempts", base + `
  - {id: x, kind: template, template: "t", depends_on: [start], retry: {max_attempts: 100}}` + end, "x", "retry.max_attempts", "want 0 to 10"},
		{"func argument type", base + `
  - {id: x, kind: upper, args: {text: "{{inputs.n}}"}}` + end, "x", "args.text", "want string, got integer"},
		{"func unknown argument", base + `
  - {id: x, kind: upper, args: {txt: "{{inputs.ticket}}"}}` + end, "x", "args.txt", `takes no argument "txt"`},
		{"func output typo", base + `
  - {id: x, kind: upper, args: {text: "{{inputs.ticket}}"}}
  - {id: end, kind: end, outputs: {y: "{{nodes.x.outputs.txt}}"}}`, "end", "outputs", `no field "txt" (have text)`},
		{"output schema hides text", `
name: t
nodes:
  - {id: start, kind: start}
  - {id: x, kind: llm, model: m, prompt: p, depends_on: [start], output_schema: {type: object, properties: {text: {type: string}}}}` + strings.ReplaceAll(end, "classify", "x"), "x", "output_schema.properties.text", "already an output"},
		{"bad name", strings.Replace(base, "name: t", "name: 'a b'", 1) + end, "", "name", "letters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := workflow.Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			err = d.Validate(workflow.WithNodeTypes(upper))
			var es workflow.ValidationErrors
			if !errors.As(err, &es) {
				t.Fatalf("error %v, want ValidationErrors", err)
			}
			for _, e := range es {
				if e.Node == tc.node && e.Field == tc.field && strings.Contains(e.Msg, tc.msg) {
					return
				}
			}
			t.Errorf("want node %q field %q msg containing %q; got %v", tc.node, tc.field, tc.msg, err)
		})
	}
}

func TestValidationErrorAs(t *testing.T) {
	d, err := workflow.Parse([]byte(base + `
  - {id: end, kind: end, outputs: {x: "{{nodes.classify.outputs.lable}}", y: "{{inputs.nope}}"}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = d.Validate()
	var ve *workflow.ValidationError
	if !errors.As(err, &ve) || ve.Node != "end" || ve.Field != "outputs" {
		t.Fatalf("errors.As: %v", err)
	}
	if !strings.Contains(err.Error(), "faults: node end: outputs: nodes.classify.outputs.lable: no field") {
		t.Errorf("message %q", err)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct{ name, in, msg string }{
		{"unknown field", `{"name":"x","nodes":[],"nodez":1}`, "unknown field"},
		{"trailing data", `{"name":"x","nodes":[]} {}`, "data after"},
		{"empty", "  \n", "empty"},
		{"yaml syntax", "name: [", "yaml"},
		{"bad duration", `{"name":"x","nodes":[{"id":"a","kind":"end","timeout":"soon"}]}`, "duration"},
		{"too large", "name: x\n#" + strings.Repeat("x", workflow.MaxDefinitionSize), "over the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := workflow.Parse([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want %q", err, tc.msg)
			}
		})
	}
	d, err := workflow.Parse([]byte(`{"name":"x","nodes":[{"id":"a","kind":"end","timeout":1.5,"retry":{"max_attempts":2,"backoff":"10ms"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Nodes[0].Timeout; got != workflow.Duration(1500e6) {
		t.Errorf("timeout %v", got)
	}
	b, err := d.Nodes[0].Timeout.MarshalJSON()
	if err != nil || string(b) != `"1.5s"` {
		t.Errorf("marshal %s %v", b, err)
	}
}

// TestStreamedOutput: only a single end output that is exactly an llm
// node's text, from a node tried once that fails the run, is streamed.
func TestStreamedOutput(t *testing.T) {
	const head = `{"name":"w","nodes":[{"id":"start","kind":"start","inputs":{"q":{"type":"string"}}},`
	cases := []struct {
		name, nodes, want string
	}{
		{"llm text", `{"id":"a","kind":"llm","model":"m","prompt":"{{ inputs.q }}"},{"id":"end","kind":"end","outputs":{"out":"{{ nodes.a.outputs.text }}"}}`, "a"},
		{"explicit fail action", `{"id":"a","kind":"llm","model":"m","prompt":"{{ inputs.q }}","on_error":{"action":"fail"}},{"id":"end","kind":"end","outputs":{"out":"{{nodes.a.outputs.text}}"}}`, "a"},
		{"text inside a template", `{"id":"a","kind":"llm","model":"m","prompt":"{{ inputs.q }}"},{"id":"end","kind":"end","outputs":{"out":"Answer: {{ nodes.a.outputs.text }}"}}`, ""},
		{"two outputs", `{"id":"a","kind":"llm","model":"m","prompt":"{{ inputs.q }}"},{"id":"end","kind":"end","outputs":{"out":"{{ nodes.a.outputs.text }}","q":"{{ inputs.q }}"}}`, ""},
		{"retried", `{"id":"a","kind":"llm","model":"m","prompt":"{{ inputs.q }}","retry":{"max_attempts":2}},{"id":"end","kind":"end","outputs":{"out":"{{ nodes.a.outputs.text }}"}}`, ""},
		{"default on failure", `{"id":"a","kind":"llm","model":"m","prompt":"{{ inputs.q }}","on_error":{"action":"continue","default":{"text":"sorry"}}},{"id":"end","kind":"end","outputs":{"out":"{{ nodes.a.outputs.text }}"}}`, ""},
		{"template node", `{"id":"a","kind":"template","template":"{{ inputs.q }}"},{"id":"end","kind":"end","outputs":{"out":"{{ nodes.a.outputs.text }}"}}`, ""},
		{"input", `{"id":"end","kind":"end","outputs":{"out":"{{ inputs.q }}"}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			def, err := workflow.Parse([]byte(head + c.nodes + `]}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := def.Validate(); err != nil {
				t.Fatal(err)
			}
			got, ok := def.StreamedOutput()
			if got != c.want || ok != (c.want != "") {
				t.Fatalf("StreamedOutput() = %q, %v; want %q", got, ok, c.want)
			}
		})
	}
}

// TestCheckInputs: the inputs a run would refuse are refused before it,
// with the offending path, wrapping ErrInputs.
func TestCheckInputs(t *testing.T) {
	def, err := workflow.Parse([]byte(`{"name":"w","nodes":[{"id":"start","kind":"start","inputs":{
		"n":{"type":"integer"},"opts":{"type":"object","properties":{"mode":{"type":"string","enum":["a","b"]}}}}},
		{"id":"end","kind":"end","outputs":{"n":"{{ inputs.n }}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := def.CheckInputs(map[string]any{"n": 2, "opts": map[string]any{"mode": "a"}}); err != nil {
		t.Fatalf("good inputs: %v", err)
	}
	for in, want := range map[string]string{
		`{"n": 1.5, "opts": {}}`:           "n: want integer",
		`{"n": 1, "opts": {"mode": "c"}}`:  `opts.mode: "c" is not one of ["a","b"]`,
		`{"opts": {}}`:                     `missing input "n"`,
		`{"n": 1, "opts": {}, "extra": 1}`: `unknown input "extra"`,
	} {
		var inputs map[string]any
		if err := json.Unmarshal([]byte(in), &inputs); err != nil {
			t.Fatal(err)
		}
		err := def.CheckInputs(inputs)
		if !errors.Is(err, workflow.ErrInputs) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrInputs naming %q", in, err, want)
		}
	}
}
