package console_test

import (
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAgentEditorRemoteAndWorkflows: the editor shows and keeps what an
// A2A remote agent and an agent's workflows are made of — the protocol,
// the key's secret, the workflows chosen by name — so saving an edit does
// not turn an A2A agent into a Weft one or drop its key.
func TestAgentEditorRemoteAndWorkflows(t *testing.T) {
	e := newEnv(t)
	if code := e.api(e.admin, "PUT", "/v1/secrets/FAR_KEY", map[string]any{"value": "sk-far-remote-key"}, nil); code != 200 && code != 201 {
		t.Fatalf("secret: %d", code)
	}
	var wf struct{ ID string }
	if code := e.api(e.admin, "POST", "/v1/workflows", map[string]any{"name": "triage", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"text": map[string]any{"type": "string"}}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"reply": "{{ inputs.text }}"}},
	}}, &wf); code != 201 {
		t.Fatalf("workflow: %d", code)
	}
	var far struct{ ID string }
	if code := e.api(e.admin, "POST", "/v1/agents", map[string]any{"name": "far", "workflow_ids": []string{wf.ID},
		"remote": map[string]any{"protocol": "a2a", "url": "https://agents.example.com/a2a", "api_key": "${secret:FAR_KEY}"}}, &far); code != 201 {
		t.Fatalf("remote agent: %d", code)
	}
	e.signIn(e.admin)
	e.goTo("#/agents/" + far.ID)
	e.do(chromedp.WaitVisible(chromedp.CSS(`form.agent-form`)))
	if got := eval[string](e, `document.querySelector('[data-field="remote.protocol"]').value`); got != "a2a" {
		t.Fatalf("protocol shown %q", got)
	}
	if got := eval[string](e, `document.querySelector('[data-field="remote.api_key"]').value`); got != "FAR_KEY" {
		t.Fatalf("key secret shown %q", got)
	}
	if !eval[bool](e, `document.querySelector('fieldset[data-field=workflow_ids] input[value="`+wf.ID+`"]').checked`) {
		t.Fatal("the agent's workflow is not shown chosen")
	}
	e.do(
		chromedp.SetValue(chromedp.CSS(`form.agent-form [data-field=system_prompt]`), "Ask the far agent."),
		chromedp.Click(chromedp.CSS(`form.agent-form button[type=submit]`)),
	)
	e.until("saved", `document.querySelector('form.agent-form p.ok')?.textContent === 'Saved.'`)
	var got struct {
		SystemPrompt string   `json:"system_prompt"`
		WorkflowIDs  []string `json:"workflow_ids"`
		Remote       struct {
			Protocol, URL string
			APIKey        string `json:"api_key"`
			AgentID       string `json:"agent_id"`
		}
	}
	e.api(e.admin, "GET", "/v1/agents/"+far.ID, nil, &got)
	if got.SystemPrompt != "Ask the far agent." || got.Remote.Protocol != "a2a" || got.Remote.URL != "https://agents.example.com/a2a" ||
		got.Remote.APIKey != "${secret:FAR_KEY}" || got.Remote.AgentID != "" || !slices.Equal(got.WorkflowIDs, []string{wf.ID}) {
		t.Fatalf("after an edit in the console: %+v", got)
	}

	// A new agent chooses its workflows by name.
	e.goTo("#/agents/new")
	e.do(
		chromedp.WaitVisible(chromedp.CSS(`form.agent-form`)),
		chromedp.SendKeys(chromedp.CSS(`form.agent-form [data-field=name]`), "local"),
		chromedp.Click(chromedp.CSS(`fieldset[data-field=workflow_ids] input[value="`+wf.ID+`"]`)),
		chromedp.Click(chromedp.CSS(`form.agent-form button[type=submit]`)),
	)
	e.until("the agent saved", `location.hash.startsWith('#/agents/agt')`)
	var agents []struct {
		Name        string
		WorkflowIDs []string `json:"workflow_ids"`
	}
	e.api(e.admin, "GET", "/v1/agents", nil, &agents)
	i := slices.IndexFunc(agents, func(a struct {
		Name        string
		WorkflowIDs []string `json:"workflow_ids"`
	}) bool {
		return a.Name == "local"
	})
	if i < 0 || !slices.Equal(agents[i].WorkflowIDs, []string{wf.ID}) {
		t.Fatalf("agents %+v", agents)
	}
	e.noPageErrors()
}

// gate holds the first answer to GET path after it is armed until release
// is closed (a slow network for that request alone); arrived is closed
// when that request reaches the server, answered once its answer has been
// sent.
type gate struct {
	path                       string
	armed                      atomic.Bool
	arrived, release, answered chan struct{}
}

func newGate(path string) *gate {
	return &gate{path: path, arrived: make(chan struct{}), release: make(chan struct{}), answered: make(chan struct{})}
}

func (g *gate) wrap() wrapHandler {
	var once sync.Once
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			first := false
			if r.Method == "GET" && r.URL.Path == g.path && g.armed.Load() {
				once.Do(func() { first = true })
			}
			if !first {
				next.ServeHTTP(w, r)
				return
			}
			close(g.arrived)
			<-g.release
			next.ServeHTTP(w, r)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			close(g.answered)
		})
	}
}

// TestNewAgentRace: the agents list answers late (after "New agent" was
// pressed and a name typed): the first agent must not open over the
// new-agent form, and the name typed must create a new agent, not rename
// the first.
func TestNewAgentRace(t *testing.T) {
	g := newGate("/v1/agents")
	e := newEnv(t, g.wrap())
	first := e.createAgent("first")
	e.signIn(e.admin)
	e.until("the chat screen loaded", `document.querySelector('.chat-side select')?.value !== ''`)
	g.armed.Store(true)
	e.goTo("#/agents")
	<-g.arrived
	e.do(
		chromedp.Click(chromedp.CSS(`a.button.primary[href="#/agents/new"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.agent-form [data-field=name]`)),
		chromedp.SendKeys(chromedp.CSS(`form.agent-form [data-field=name]`), "second"),
	)
	close(g.release)
	<-g.answered
	// The late answer is out; give the page time to do what it would
	// with it (the bug navigated within milliseconds).
	eval[any](e, `new Promise((resolve) => setTimeout(() => requestAnimationFrame(() => resolve(null)), 300))`)
	if h := eval[string](e, `location.hash`); h != "#/agents/new" {
		t.Fatalf("the late list navigated to %s", h)
	}
	if got := e.text("form.agent-form h2"); got != "New agent" {
		t.Fatalf("the form is %q", got)
	}
	e.do(chromedp.Click(chromedp.CSS(`form.agent-form button[type=submit]`)))
	e.until("the new agent saved", `location.hash.startsWith('#/agents/agt') && location.hash !== '#/agents/`+first+`'`)
	var agents []struct{ ID, Name string }
	e.api(e.admin, "GET", "/v1/agents", nil, &agents)
	names := map[string]string{}
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	if names[first] != "first" || len(agents) != 2 {
		t.Fatalf("agents after the race: %v", names)
	}
	e.noPageErrors()
}
