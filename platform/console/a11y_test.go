package console_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeSource is axe-core (npm, pinned in testdata/axe; `npm ci` there).
// Without it the check skips, unless WEFT_TEST_NODE=1 (set by .ci/run),
// which makes a missing install a failure.
func axeSource(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "axe", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		if os.Getenv("WEFT_TEST_NODE") == "1" {
			t.Fatalf("axe-core missing (run npm ci in platform/console/testdata/axe): %v", err)
		}
		t.Skip("axe-core not installed: npm ci in platform/console/testdata/axe")
	}
	return string(b)
}

type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

// TestAccessibility runs axe-core (WCAG 2 A and AA rules) over the
// console's main screens, each with content, and fails on any serious or
// critical violation.
func TestAccessibility(t *testing.T) {
	src := axeSource(t)
	e := newEnv(t)
	var agent, kb struct{ ID string }
	e.api(e.admin, "POST", "/v1/agents", map[string]any{"name": "helper"}, &agent)
	e.api(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "handbook"}, &kb)
	e.api(e.admin, "POST", "/v1/agents/helper/chat", map[string]any{"query": "hello"}, nil)
	e.api(e.admin, "POST", "/v1/workflows", map[string]any{"name": "echo", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"text": map[string]any{"type": "string"}}},
		map[string]any{"id": "shout", "kind": "template", "template": "You said: {{ inputs.text }}"},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"reply": "{{ nodes.shout.outputs.text }}"}},
	}}, nil)
	e.api(e.admin, "POST", "/v1/workflows/echo/runs", map[string]any{"inputs": map[string]any{"text": "hi"}}, nil)

	check := func(name string) {
		t.Helper()
		e.until("axe loaded", `typeof axe === 'object' || (() => { (0, eval)(`+jsString(src)+`); return typeof axe === 'object'; })()`)
		raw := eval[string](e, `axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}, resultTypes: ['violations']}).then((r) => JSON.stringify(r.violations))`)
		var vs []axeViolation
		if err := json.Unmarshal([]byte(raw), &vs); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, v := range vs {
			if v.Impact != "serious" && v.Impact != "critical" {
				t.Logf("%s: %s (%s): %s, %d elements", name, v.ID, v.Impact, v.Help, len(v.Nodes))
				continue
			}
			var where []string
			for _, n := range v.Nodes {
				where = append(where, n.HTML)
			}
			t.Errorf("%s: %s (%s): %s:\n  %s", name, v.ID, v.Impact, v.Help, strings.Join(where, "\n  "))
		}
	}

	e.until("the sign-in form", `!!document.querySelector('form.signin')`)
	check("sign-in")
	e.signIn(e.admin)
	for _, s := range []struct{ hash, ready string }{
		{"#/chat/" + agent.ID, `!!document.querySelector('main textarea')`},
		{"#/agents", `!!document.querySelector('ul.list li a')`},
		{"#/agents/" + agent.ID, `!!document.querySelector('form.agent-form select[data-field=model] option')`},
		{"#/knowledge", `!!document.querySelector('form.kb-create')`},
		{"#/knowledge/" + kb.ID, `!!document.querySelector('.kb-detail .drop')`},
		{"#/tools", `!!document.querySelector('main h1')`},
		{"#/sessions", `!!document.querySelector('main li, main p.muted')`},
		{"#/secrets", `!!document.querySelector('main h1')`},
		{"#/workflows", `document.querySelectorAll('.wf-palette-item').length > 0 && !!document.querySelector('.wf-list [data-workflow]')`},
		{"#/usage", `!!document.querySelector('svg.usage-chart')`},
		{"#/keys", `!!document.querySelector('main table, main ul')`},
	} {
		e.goTo(s.hash)
		e.until(s.hash, s.ready)
		check(s.hash)
	}
	// A chat's transcript, with an answer's feedback buttons and trace.
	e.goTo("#/chat/" + agent.ID)
	e.until("the sessions", `!!document.querySelector('button.link.resume')`)
	e.do(clickJS(`button.link.resume`))
	e.until("the transcript", `!!document.querySelector('.msg.assistant .feedback')`)
	check("#/chat (transcript)")
	// The workflow canvas with a node's form open, a test run and a run's
	// view.
	e.goTo("#/workflows")
	e.until("the workflows", `!!document.querySelector('.wf-list [data-workflow="echo"]')`)
	e.do(clickJS(`.wf-list [data-workflow="echo"]`))
	e.until("the canvas", `document.querySelectorAll('svg.wf-canvas g.wf-node').length === 3`)
	e.do(clickJS(`.wf-palette-item[data-kind="llm"]`))
	e.until("the node form", `!!document.querySelector('.wf-node-form')`)
	check("#/workflows (node form)")
	e.do(clickJS(`.wf-run-link`))
	e.until("a run's view", `document.querySelectorAll('.wf-run .wf-step').length === 3`)
	check("#/workflows (run)")
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// clickJS clicks the first element matching a CSS selector from script.
func clickJS(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).click()`, sel))
}
