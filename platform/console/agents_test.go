package console_test

import (
	"slices"
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
