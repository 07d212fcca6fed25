package console_test

import (
	"testing"
)

// TestUsageScreen: after a turn (the agent addressed by name), the usage
// screen charts the day's tokens (the scripted model costs nothing) and
// lists the agent by its name.
func TestUsageScreen(t *testing.T) {
	e := newEnv(t)
	var a struct{ ID string }
	if code := e.api(e.admin, "POST", "/v1/agents", map[string]any{"name": "counted"}, &a); code != 201 {
		t.Fatalf("create agent: %d", code)
	}
	if code := e.api(e.admin, "POST", "/v1/agents/counted/chat", map[string]any{"query": "hello"}, nil); code != 200 {
		t.Fatalf("chat: %d", code)
	}
	e.signIn(e.admin)
	e.goTo("#/usage")
	e.until("a bar for today", `[...document.querySelectorAll('svg.usage-chart rect.bar')].some((r) => Number(r.getAttribute('height')) > 0)`)
	e.until("the agent listed by name", `[...document.querySelectorAll('main td')].some((td) => td.textContent === 'counted')`)
	if eval[bool](e, `document.querySelector('main').textContent.includes('`+a.ID+`')`) {
		t.Error("the usage screen shows the agent's id")
	}
	e.noPageErrors()
}
