package workflow_test

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/workflow"
)

const ticketYAML = `
name: ticket
version: 1
nodes:
  - id: start
    kind: start
    inputs:
      ticket: {type: string}
  - id: classify
    kind: llm
    model: scripted
    prompt: "Classify: {{inputs.ticket}}"
    output_schema:
      type: object
      properties:
        label: {type: string, enum: [billing, bug]}
        urgent: {type: boolean}
  - id: route
    kind: condition
    cases:
      - id: bill
        when: nodes.classify.outputs.label == "billing"
        next: [refund]
    else: [triage]
  - id: refund
    kind: template
    template: "refund for {{inputs.ticket}}"
  - id: triage
    kind: template
    template: "triage {{nodes.classify.outputs.label}}"
  - id: end
    kind: end
    depends_on: [refund, triage]
    outputs:
      refund: "{{nodes.refund.outputs.text}}"
      triage: "{{nodes.triage.outputs.text}}"
      label: "{{nodes.classify.outputs.label}}"
`

func models(m llm.ChatModel) func(context.Context, string) (llm.ChatModel, error) {
	return func(context.Context, string) (llm.ChatModel, error) { return m, nil }
}

func TestRunTicket(t *testing.T) {
	d, err := workflow.Parse([]byte(ticketYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.WhenUserSays(regexp.MustCompile("refund"), scripted.ReplyJSON(map[string]any{"label": "billing", "urgent": true})),
		scripted.ReplyJSON(map[string]any{"label": "bug", "urgent": false}))
	e := workflow.New(workflow.Services{Model: models(m)})
	res, err := workflow.Collect(e.Run(context.Background(), d, map[string]any{"ticket": "please refund me"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs["refund"] != "refund for please refund me" || res.Outputs["label"] != "billing" || res.Outputs["triage"] != nil {
		t.Errorf("outputs %v", res.Outputs)
	}
	for _, ev := range res.Nodes {
		t.Logf("%s %s %v %v", ev.Key, ev.Status, ev.Outputs, ev.Error)
	}
	res, err = workflow.Collect(e.Run(context.Background(), d, map[string]any{"ticket": "it crashes"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs["triage"] != "triage bug" || res.Outputs["refund"] != nil {
		t.Errorf("outputs %v", res.Outputs)
	}
	_, err = workflow.Collect(e.Run(context.Background(), d, map[string]any{}))
	if !errors.Is(err, workflow.ErrInputs) {
		t.Errorf("missing input: %v", err)
	}
}
