package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWorkflowsScreen: in the JSON / YAML view, a definition with a typo
// is refused with the node and field named; a good one is saved and drawn
// as a graph; a run of it shows its node timeline with inputs and
// outputs.
func TestWorkflowsScreen(t *testing.T) {
	e := newEnv(t)
	e.signIn(e.admin)
	e.goTo("#/workflows")
	e.until("the editor", `!!document.querySelector('textarea.wf-editor')`)
	// The JSON / YAML view, beside the canvas.
	e.do(chromedp.Click(chromedp.CSS(`button.wf-view[data-view="text"]`)))
	e.until("the text view", `!document.querySelector('.wf-text').hidden && document.querySelector('.wf-editor-canvas').hidden`)
	typo := `{"name":"echo","nodes":[{"id":"start","kind":"start","inputs":{"text":{"type":"string"}}},` +
		`{"id":"shout","kind":"template","template":"You said: {{ inputs.txet }}"},` +
		`{"id":"end","kind":"end","outputs":{"reply":"{{ nodes.shout.outputs.text }}"}}]}`
	e.do(
		chromedp.Click(chromedp.CSS(`#wf-new`)),
		chromedp.SetValue(chromedp.CSS(`textarea.wf-editor`), typo),
		chromedp.Click(chromedp.CSS(`#wf-save`)),
	)
	e.until("the fault named", `document.querySelector('.wf-status')?.textContent.includes('nodes.shout.template')`)
	e.do(
		chromedp.SetValue(chromedp.CSS(`textarea.wf-editor`), strings.Replace(typo, "txet", "text", 1)),
		chromedp.Click(chromedp.CSS(`#wf-save`)),
	)
	e.until("the workflow listed", `!!document.querySelector('.wf-list [data-workflow="echo"]')`)
	e.until("the graph drawn", `document.querySelectorAll('svg.wf-graph g.wf-node').length === 3 && document.querySelectorAll('svg.wf-graph line.wf-edge').length === 2`)

	var run struct{ ID string }
	if code := e.api(e.admin, "POST", "/v1/workflows/echo/runs", map[string]any{"inputs": map[string]any{"text": "hi"}}, &run); code != 200 {
		t.Fatalf("run: %d", code)
	}
	e.do(chromedp.Click(chromedp.CSS(`.wf-list [data-workflow="echo"]`)))
	e.until("the run listed", `!!document.querySelector('.wf-run-link[data-run="`+run.ID+`"]')`)
	e.do(chromedp.Click(chromedp.CSS(`.wf-run-link[data-run="` + run.ID + `"]`)))
	e.until("the timeline", `document.querySelectorAll('.wf-timeline .wf-step').length === 3`)
	e.until("the node's output", `[...document.querySelectorAll('.wf-step[data-key="shout"] pre.wf-outputs')].some((p) => p.textContent.includes('You said: hi'))`)
	e.until("finished nodes marked", `document.querySelectorAll('svg.wf-graph g.wf-node.done').length === 3`)

	// An iteration's sub-graph is drawn under the workflow's graph.
	loop := `{"name":"loop","nodes":[{"id":"start","kind":"start","inputs":{"words":{"type":"array","items":{"type":"string"}}}},` +
		`{"id":"each","kind":"iteration","items":"{{ inputs.words }}","concurrency":2,"output":"{{ nodes.up.outputs.text }}","nodes":[` +
		`{"id":"fmt","kind":"template","template":"{{ index }}:{{ item }}"},{"id":"up","kind":"template","template":"<{{ nodes.fmt.outputs.text }}>"}]},` +
		`{"id":"end","kind":"end","outputs":{"all":"{{ nodes.each.outputs.results }}"}}]}`
	e.do(
		chromedp.Click(chromedp.CSS(`#wf-new`)),
		chromedp.SetValue(chromedp.CSS(`textarea.wf-editor`), loop),
		chromedp.Click(chromedp.CSS(`#wf-save`)),
	)
	e.until("the workflow listed", `!!document.querySelector('.wf-list [data-workflow="loop"]')`)
	e.until("the iteration's sub-graph", `(() => { const f = document.querySelector('figure.wf-sub[data-iteration="each"]');`+
		` return !!f && f.querySelectorAll('g.wf-node').length === 2 && f.querySelectorAll('line.wf-edge').length === 1 &&`+
		` f.querySelector('figcaption').textContent.includes('at most 2 at a time') })()`)
	e.noPageErrors()
}

// TestWorkflowAnswerForm: a run waiting at a human node shows, in the
// runs view, the node's question as a form made from its output_schema
// (a checkbox, a number, a text); a refused answer shows the field the
// server names and the run still waits; Submit with a fitting answer
// resumes the run, which shows succeeded with the answer in its outputs.
func TestWorkflowAnswerForm(t *testing.T) {
	e := newEnv(t)
	def := map[string]any{"name": "signoff", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"amount": map[string]any{"type": "number"}}},
		map[string]any{"id": "approve", "kind": "human", "depends_on": []string{"start"}, "message": "Pay {{ inputs.amount }} EUR?",
			"output_schema": map[string]any{"type": "object", "required": []string{"ok", "copies"}, "properties": map[string]any{
				"ok": map[string]any{"type": "boolean"}, "copies": map[string]any{"type": "integer"}, "note": map[string]any{"type": "string"}}}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"ok": "{{ nodes.approve.outputs.ok }}", "copies": "{{ nodes.approve.outputs.copies }}"}},
	}}
	if code := e.api(e.admin, "POST", "/v1/workflows", def, nil); code != 201 {
		t.Fatalf("save: %d", code)
	}
	var run struct{ ID, Status string }
	if code := e.api(e.admin, "POST", "/v1/workflows/signoff/runs", map[string]any{"inputs": map[string]any{"amount": 40}}, &run); code != 200 || run.Status != "waiting" {
		t.Fatalf("run: %d %+v", code, run)
	}
	e.signIn(e.admin)
	e.goTo("#/workflows")
	e.until("the workflow listed", `!!document.querySelector('.wf-list [data-workflow="signoff"]')`)
	e.do(chromedp.Click(chromedp.CSS(`.wf-list [data-workflow="signoff"]`)))
	e.until("the run listed as waiting", `[...document.querySelectorAll('.wf-run-link[data-run="`+run.ID+`"]')].some((b) => b.textContent.includes('waiting'))`)
	e.do(chromedp.Click(chromedp.CSS(`.wf-run-link[data-run="` + run.ID + `"]`)))
	form := `form.wf-interrupt[data-interrupt="` + run.ID + `:approve"]`
	e.until("the question's form", `document.querySelector('`+form+` .wf-question')?.textContent === 'Pay 40 EUR?' && `+
		`document.querySelector('`+form+` input[type="checkbox"][name="ok"]') && document.querySelector('`+form+` input[type="number"][name="copies"]') && `+
		`document.querySelector('`+form+` textarea[name="note"]')`)
	// Without the required copies: the server names the field.
	e.do(chromedp.Click(chromedp.CSS(form+` input[name="ok"]`)), submit(form))
	e.until("the refused field named", `document.querySelector('`+form+` .wf-answer-error')?.textContent.includes('copies')`)
	var still struct{ Status string }
	e.api(e.admin, "GET", "/v1/workflows/signoff/runs/"+run.ID, nil, &still)
	if still.Status != "waiting" {
		t.Fatalf("after a refused answer the run is %q", still.Status)
	}
	e.do(chromedp.SetValue(chromedp.CSS(form+` input[name="copies"]`), "2"), submit(form))
	e.until("the run resumed", `[...document.querySelectorAll('h3')].some((x) => x.textContent === 'Run `+run.ID+`: succeeded')`)
	var done struct {
		Status  string
		Outputs map[string]any
	}
	e.api(e.admin, "GET", "/v1/workflows/signoff/runs/"+run.ID, nil, &done)
	if done.Status != "succeeded" || done.Outputs["ok"] != true || done.Outputs["copies"] != float64(2) {
		t.Fatalf("run %+v", done)
	}
	e.noPageErrors()
}
