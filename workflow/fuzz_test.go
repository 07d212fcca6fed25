package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/weftlabs/weft/workflow"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(ticketYAML))
	f.Add([]byte(`{"name":"x","nodes":[{"id":"s","kind":"start"},{"id":"e","kind":"end","depends_on":["s"],"outputs":{"a":"{{inputs.a}}"}}]}`))
	f.Add([]byte(`name: x
nodes:
  - {id: s, kind: start, inputs: {xs: {type: array, items: {type: string}}}}
  - {id: loop, kind: iteration, items: "{{inputs.xs}}", output: "{{nodes.t.outputs.text}}", nodes: [{id: t, kind: template, template: "{{item}} {{index}}"}]}
  - {id: c, kind: condition, cases: [{when: "len(nodes.loop.outputs.results) > 1", next: [e]}]}
  - {id: e, kind: end, timeout: 3}
`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := workflow.Parse(data)
		if err != nil {
			return
		}
		// Validation of any parsed definition must return, not panic.
		_ = d.Validate()
	})
}

// FuzzAnswer checks that any JSON object answering a human node is either
// refused with an *AnswerError, leaving the run waiting, or accepted with
// its fields of the declared types.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{`{"approved":true}`, `{"approved":"yes"}`, `{"approved":true,"copies":2.5}`, `{}`, `{"note":null}`, `{"approved":true,"x":[1,{"y":2}]}`} {
		f.Add([]byte(s))
	}
	d, err := workflow.Parse([]byte(`
name: answer
nodes:
  - {id: start, kind: start}
  - id: ask
    kind: human
    message: "?"
    depends_on: [start]
    output_schema:
      type: object
      required: [approved]
      properties:
        approved: {type: boolean}
        copies: {type: integer}
        tags: {type: array, items: {type: string, enum: [a, b]}}
  - {id: end, kind: end, outputs: {approved: "{{nodes.ask.outputs.approved}}", copies: "{{nodes.ask.outputs.copies}}"}}
`))
	if err != nil {
		f.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		f.Fatal(err)
	}
	e := workflow.New(workflow.Services{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var payload map[string]any
		if json.Unmarshal(data, &payload) != nil {
			return
		}
		cp := workflow.NewMemoryCheckpointer()
		opts := []workflow.RunOption{workflow.WithRunID("r"), workflow.WithCheckpointer(cp)}
		if _, err := workflow.Collect(e.Run(context.Background(), d, nil, opts...)); err != nil {
			t.Fatal(err)
		}
		res, err := workflow.Collect(e.Run(context.Background(), d, nil, append(opts, workflow.WithAnswer("r:ask", payload))...))
		if err != nil {
			if !errors.As(err, new(*workflow.AnswerError)) {
				t.Fatalf("%s: %v is not an AnswerError", data, err)
			}
			if res, err := workflow.Collect(e.Run(context.Background(), d, nil, opts...)); err != nil || len(res.Waiting) != 1 {
				t.Fatalf("%s: refused, and then the run is %v, %v", data, err, res.Waiting)
			}
			return
		}
		if _, ok := res.Outputs["approved"].(bool); !ok {
			t.Fatalf("%s: accepted with approved %#v", data, res.Outputs["approved"])
		}
		if c := res.Outputs["copies"]; c != nil {
			if _, ok := c.(int64); !ok {
				t.Fatalf("%s: accepted with copies %#v", data, c)
			}
		}
	})
}
