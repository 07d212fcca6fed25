package workflow_test

import (
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
