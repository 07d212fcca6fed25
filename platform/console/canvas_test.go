package console_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWorkflowCanvas builds classify → retrieve → draft on the canvas
// without typing YAML: nodes from the palette, a connection dragged from
// a port, fields filled through forms made from the served schemas; a
// fault the server finds is shown on its node and field; then a test run
// from the Run button streams each node's status and results, and the
// run is in the history with the same view.
func TestWorkflowCanvas(t *testing.T) {
	e := newEnv(t)
	var kb struct{ ID string }
	if code := e.api(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "handbook"}, &kb); code != 201 {
		t.Fatalf("kb: %d", code)
	}
	e.signIn(e.admin)
	e.goTo("#/workflows")
	e.until("the palette", `document.querySelectorAll('.wf-palette-item').length === 11`)
	e.until("a new definition's start and end", `document.querySelectorAll('svg.wf-canvas g.wf-node').length === 2`)

	// setField sets a control of the open node form as a person does.
	setField := func(field, value string) {
		t.Helper()
		e.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
			const c = document.querySelector('.wf-node-form [data-field=%q]');
			c.value = %q;
			c.dispatchEvent(new Event('change', {bubbles: true}));
		})()`, field, value)))
	}
	add := func(kind, id string) {
		t.Helper()
		e.do(chromedp.Click(chromedp.CSS(`.wf-palette-item[data-kind="` + kind + `"]`)))
		e.until("the "+kind+" node's form", `document.querySelector('.wf-node-form')?.dataset.node?.startsWith('`+kind+`_')`)
		setField("id", id)
		e.until("the node renamed", `!!document.querySelector('svg.wf-canvas g.wf-node[data-node="`+id+`"]')`)
	}
	e.do(chromedp.SendKeys(chromedp.CSS(`#wf-name`), "triage"))

	add("llm", "classify")
	e.until("the model choices", `!!document.querySelector('.wf-node-form [data-field="model"] option')`)
	setField("prompt", "Classify: {{ inputs.question }}")

	add("knowledge", "retrieve")
	e.until("the knowledge base offered", `!!document.querySelector('.wf-node-form fieldset[data-field="knowledge_bases"] input[value="handbook"]')`)
	e.do(chromedp.Click(chromedp.CSS(`.wf-node-form fieldset[data-field="knowledge_bases"] input[value="handbook"]`)))
	setField("query", "{{ inputs.question }} ({{ nodes.classify.outputs.text }})")

	add("llm", "draft")
	// A misspelt reference: the server's fault lands on the node and field.
	setField("prompt", "Answer from {{ nodes.retrieve.outputs.txt }}")

	// Connect draft → end by dragging from draft's port onto end.
	port := eval[[]float64](e, `(() => { document.querySelector('svg.wf-canvas [data-port="draft"]').scrollIntoView({block: 'center', inline: 'center'}); const r = document.querySelector('svg.wf-canvas [data-port="draft"]').getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; })()`)
	end := eval[[]float64](e, `(() => { const r = document.querySelector('svg.wf-canvas g.wf-node[data-node="end"] rect').getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; })()`)
	e.do(
		chromedp.MouseEvent(chromedp.MousePressed, port[0], port[1], chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, (port[0]+end[0])/2, (port[1]+end[1])/2, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, end[0], end[1], chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, end[0], end[1], chromedp.ButtonLeft, chromedp.ClickCount(1)),
	)
	e.until("draft connected to end", `!!document.querySelector('svg.wf-canvas line.wf-edge[data-from="draft"][data-to="end"]')`)

	// The end node's outputs, through its form.
	e.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('svg.wf-canvas g.wf-node[data-node="end"]').dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}))`))
	e.until("the end node's form", `document.querySelector('.wf-node-form')?.dataset.node === 'end'`)
	setField("outputs", `{"answer": "{{ nodes.draft.outputs.text }}", "label": "{{ nodes.classify.outputs.text }}"}`)

	e.do(chromedp.Click(chromedp.CSS(`#wf-save`)))
	e.until("the fault on the node", `document.querySelector('svg.wf-canvas g.wf-node[data-node="draft"]')?.classList.contains('invalid')`)
	e.until("the fault on the field", `document.querySelector('.wf-node-form')?.dataset.node === 'draft' &&`+
		` document.querySelector('.wf-node-form [data-field="prompt"]')?.getAttribute('aria-invalid') === 'true' &&`+
		` document.getElementById(document.querySelector('.wf-node-form [data-field="prompt"]').id + '-err').textContent.includes('txt')`)
	setField("prompt", "Answer from {{ nodes.retrieve.outputs.text }}")

	// A node added by mistake is deleted.
	add("template", "oops")
	e.do(chromedp.Click(chromedp.CSS(`#wf-node-delete`)))
	e.until("the node deleted", `!document.querySelector('svg.wf-canvas g.wf-node[data-node="oops"]')`)

	// Run saves and opens the test-run panel with the start node's inputs.
	e.do(chromedp.Click(chromedp.CSS(`#wf-run`)))
	e.until("saved", `!!document.querySelector('.wf-list [data-workflow="triage"]')`)
	e.until("the inputs form", `!!document.querySelector('.wf-run-form [data-field="inputs.question"]')`)
	var wf struct {
		Nodes []map[string]any `json:"nodes"`
	}
	if code := e.api(e.admin, "GET", "/v1/workflows/triage", nil, &wf); code != 200 || len(wf.Nodes) != 5 {
		t.Fatalf("saved workflow: %d %v", code, wf.Nodes)
	}
	for _, n := range wf.Nodes {
		if n["id"] == "retrieve" && fmt.Sprint(n["knowledge_bases"]) != "[handbook]" || n["id"] == "draft" && fmt.Sprint(n["depends_on"]) != "[]" && n["depends_on"] != nil {
			t.Errorf("node %v", n)
		}
		if n["id"] == "end" && fmt.Sprint(n["depends_on"]) != "[draft]" {
			t.Errorf("end: %v (the dragged connection)", n)
		}
	}
	e.do(
		chromedp.SetValue(chromedp.CSS(`.wf-run-form [data-field="inputs.question"]`), "my invoice is wrong"),
		submit(`.wf-run-form`),
	)
	e.until("the run finished", `document.querySelector('.wf-run-state')?.textContent.includes('succeeded')`)
	e.until("every node's status on the canvas", `['start','classify','retrieve','draft','end'].every((id) => document.querySelector('svg.wf-canvas g.wf-node[data-node="' + id + '"]').classList.contains('done'))`)
	e.until("each node's results", `document.querySelectorAll('.wf-live .wf-step').length === 5 &&`+
		` document.querySelector('.wf-live .wf-step[data-key="classify"] pre.wf-inputs').textContent.includes('my invoice is wrong') &&`+
		` document.querySelector('.wf-live .wf-step[data-key="classify"] .wf-duration').textContent.includes('ms')`)
	e.until("the run in the history", `document.querySelectorAll('.wf-run-link').length === 1`)
	e.do(chromedp.Click(chromedp.CSS(`.wf-run-link`)))
	e.until("the history's view", `document.querySelectorAll('.wf-run .wf-step').length === 5 && document.querySelector('.wf-run h3').textContent.includes('succeeded')`)
	e.noPageErrors()
}
