package workflow_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/workflow"
)

func ExampleEngine_Run() {
	d, err := workflow.Parse([]byte(`
name: greet
nodes:
  - {id: start, kind: start, inputs: {name: {type: string}}}
  - id: shout
    kind: llm
    model: scripted/echo
    prompt: "Hello, {{inputs.name}}!"
  - {id: end, kind: end, outputs: {greeting: "{{nodes.shout.outputs.text}}"}}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := d.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	e := workflow.New(workflow.Services{
		Model: func(ctx context.Context, name string) (llm.ChatModel, error) { return scripted.New(), nil },
	})
	for ev, err := range e.Run(context.Background(), d, map[string]any{"name": "Ada"}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev.Type {
		case workflow.NodeFinished:
			fmt.Println(ev.Key, ev.Status)
		case workflow.WorkflowFinished:
			fmt.Println(ev.Outputs["greeting"])
		}
	}
	// Output:
	// start succeeded
	// shout succeeded
	// end succeeded
	// Hello, Ada!
}

func ExampleDefinition_Validate() {
	d, _ := workflow.Parse([]byte(`
name: typo
nodes:
  - {id: start, kind: start, inputs: {text: {type: string}}}
  - {id: upper, kind: template, template: "{{inputs.txt}}"}
  - {id: end, kind: end, outputs: {text: "{{nodes.upper.outputs.text}}"}}
`))
	fmt.Println(d.Validate())
	// Output:
	// workflow: node upper: template: inputs.txt: the workflow has no input "txt"
}

func ExampleFunc() {
	type in struct {
		Text string `json:"text"`
	}
	type out struct {
		Upper string `json:"upper"`
	}
	upper, err := workflow.Func("upper", func(ctx context.Context, x in) (out, error) {
		return out{Upper: strings.ToUpper(x.Text)}, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := workflow.Parse([]byte(`
name: shout
nodes:
  - {id: start, kind: start, inputs: {text: {type: string}}}
  - {id: up, kind: upper, args: {text: "{{inputs.text}}"}}
  - {id: end, kind: end, outputs: {text: "{{nodes.up.outputs.upper}}"}}
`))
	if err := d.Validate(workflow.WithNodeTypes(upper)); err != nil {
		fmt.Println(err)
		return
	}
	e := workflow.New(workflow.Services{}, workflow.Register(upper))
	res, err := workflow.Collect(e.Run(context.Background(), d, map[string]any{"text": "quiet"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outputs["text"])
	// Output:
	// QUIET
}

func ExampleWithCheckpointer() {
	d, _ := workflow.Parse([]byte(`
name: durable
nodes:
  - {id: start, kind: start}
  - {id: a, kind: template, template: "done", depends_on: [start]}
  - {id: end, kind: end, outputs: {a: "{{nodes.a.outputs.text}}"}}
`))
	e := workflow.New(workflow.Services{})
	cp := workflow.NewMemoryCheckpointer()
	for range 2 { // the second run of the same id restores every node
		res, err := workflow.Collect(e.Run(context.Background(), d, nil, workflow.WithRunID("run-1"), workflow.WithCheckpointer(cp)))
		if err != nil {
			fmt.Println(err)
			return
		}
		restored := 0
		for _, ev := range res.Nodes {
			if ev.Restored {
				restored++
			}
		}
		fmt.Println(res.Outputs["a"], "restored:", restored)
	}
	// Output:
	// done restored: 0
	// done restored: 3
}

func ExampleWithAnswer() {
	d, _ := workflow.Parse([]byte(`
name: expense
nodes:
  - {id: start, kind: start, inputs: {amount: {type: integer}}}
  - id: approve
    kind: human
    message: "Approve an expense of {{inputs.amount}} EUR?"
    timeout: 48h
    on_timeout: [reject]
    output_schema: {type: object, required: [ok], properties: {ok: {type: boolean}}}
  - {id: pay, kind: template, template: "paid (approved: {{nodes.approve.outputs.ok}})"}
  - {id: reject, kind: template, template: "nobody answered"}
  - {id: end, kind: end, depends_on: [pay, reject], outputs: {pay: "{{nodes.pay.outputs.text}}", reject: "{{nodes.reject.outputs.text}}"}}
`))
	if err := d.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	e := workflow.New(workflow.Services{})
	cp := workflow.NewMemoryCheckpointer() // a database in a server: the run survives restarts
	ctx := context.Background()

	// The run stops at the human node: nothing waits in the process.
	res, err := workflow.Collect(e.Run(ctx, d, map[string]any{"amount": 120}, workflow.WithRunID("run-7"), workflow.WithCheckpointer(cp)))
	if err != nil {
		fmt.Println(err)
		return
	}
	in := res.Waiting[0]
	fmt.Println(in.ID, "asks:", in.Message)

	// An answer that does not fit the schema is refused; the run still waits.
	_, err = workflow.Collect(e.Run(ctx, d, nil, workflow.WithRunID("run-7"), workflow.WithCheckpointer(cp),
		workflow.WithAnswer(in.ID, map[string]any{"ok": "sure"})))
	fmt.Println(err)

	// Later, anywhere: the answer resumes the run.
	res, err = workflow.Collect(e.Run(ctx, d, nil, workflow.WithRunID("run-7"), workflow.WithCheckpointer(cp),
		workflow.WithAnswer(in.ID, map[string]any{"ok": true})))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outputs["pay"], res.Outputs["reject"])
	// Output:
	// run-7:approve asks: Approve an expense of 120 EUR?
	// workflow: answer to run-7:approve: ok: want boolean, got string
	// paid (approved: true) <nil>
}
