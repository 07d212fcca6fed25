package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// createAgent makes an agent through the API and returns its id.
func (e *env) createAgent(name string) string {
	e.t.Helper()
	var a struct{ ID string }
	if code := e.api(e.admin, "POST", "/v1/agents", map[string]any{"name": name}, &a); code != 201 {
		e.t.Fatalf("create agent: %d", code)
	}
	return a.ID
}

// ask sends a chat message from the playground.
func (e *env) ask(q string) {
	e.t.Helper()
	// On the chat screen, the agents load first: a message sent before
	// would be refused with "Pick an agent first".
	e.until("an agent picked", `(() => { const s = document.querySelector('.chat-side select'); return !s || s.value !== ''; })()`)
	e.do(
		chromedp.WaitEnabled(chromedp.CSS(`.composer button[type=submit]`)),
		chromedp.SendKeys(chromedp.CSS(`.composer textarea`), q),
		chromedp.Click(chromedp.CSS(`.composer button[type=submit]`)),
	)
}

// TestStopTurn stops a running turn: the fetch is aborted, the server is
// told to cancel, the answer is marked stopped and partial in the page and
// saved as partial.
func TestStopTurn(t *testing.T) {
	e := newEnv(t)
	id := e.createAgent("storyteller")
	e.signIn(e.admin)
	e.goTo("#/chat/" + id)
	e.ask("tell me a long story " + markHold)
	e.until("the first words", `document.querySelector('.msg.assistant .body')?.textContent.trim().length > 0`)
	e.do(
		chromedp.WaitEnabled(chromedp.CSS(`.composer button.stop`)),
		chromedp.Click(chromedp.CSS(`.composer button.stop`)),
	)
	e.until("the turn marked stopped", `document.querySelector('.msg.assistant').dataset.state === 'stopped'`)
	if got := e.text(".msg.assistant .state"); !strings.Contains(got, "partial") {
		t.Fatalf("stopped turn labelled %q, want it marked partial", got)
	}
	e.until("Send enabled again", `!document.querySelector('.composer button[type=submit]').disabled && document.querySelector('.composer button.stop').disabled`)

	// The server kept the partial answer, marked as such, and the session
	// browser shows it so.
	var sessions []struct{ ID string }
	e.api(e.admin, "GET", "/v1/sessions?agent_id="+id, nil, &sessions)
	if len(sessions) != 1 {
		t.Fatalf("%d sessions", len(sessions))
	}
	e.goTo("#/sessions/" + sessions[0].ID)
	e.until("the stored transcript", `document.querySelector('.session-view .msg.assistant') !== null`)
	if st := eval[string](e, `document.querySelector('.session-view .msg.assistant').dataset.state`); st != "partial" && st != "failed" {
		t.Fatalf("stored stopped answer shown as %q, want partial", st)
	}
	e.noPageErrors()
}

// TestFailedTurnTrace: a turn that fails before any text stores only the
// user's message; the sessions browser marks it unanswered and shows its
// trace (found from the user message), which names the failure.
func TestFailedTurnTrace(t *testing.T) {
	e := newEnv(t)
	id := e.createAgent("fragile")
	e.signIn(e.admin)
	e.goTo("#/chat/" + id)
	e.ask("hello " + markFail)
	e.until("the turn marked failed", `document.querySelector('.msg.assistant')?.dataset.state === 'failed'`)
	var sessions []struct{ ID string }
	e.api(e.admin, "GET", "/v1/sessions?agent_id="+id, nil, &sessions)
	if len(sessions) != 1 {
		t.Fatalf("%d sessions", len(sessions))
	}
	e.goTo("#/sessions/" + sessions[0].ID)
	e.until("the unanswered turn", `document.querySelector('.session-view .msg.assistant')?.dataset.state === 'failed'`)
	if got := e.text(".session-view .msg.assistant .state"); !strings.Contains(got, "no answer") {
		t.Fatalf("unanswered turn labelled %q", got)
	}
	e.do(chromedp.Click(chromedp.CSS(`.session-view .msg.assistant details.trace > summary`)))
	e.until("the trace loaded", `document.querySelector('.session-view details.trace')?.dataset.loaded === 'true'`)
	if head := e.text(".session-view .trace-head"); !strings.Contains(head, "model_error") {
		t.Fatalf("trace head %q, want the failure's outcome", head)
	}
	if got := e.text(".session-view details.trace"); !strings.Contains(got, "overloaded") {
		t.Fatalf("trace %q, want the upstream's error", got)
	}
	e.noPageErrors()
}

// TestModelOutputIsInert sends a prompt-injection answer (the demo model
// repeats the query) with an <img onerror>, a <script> and javascript:
// links: nothing runs, no element is made from them, and the text stays
// visible — while streaming, and when the session is read back.
func TestModelOutputIsInert(t *testing.T) {
	e := newEnv(t)
	id := e.createAgent("echo")
	e.signIn(e.admin)
	eval[any](e, `(() => {
		window.__csp = 0;
		document.addEventListener('securitypolicyviolation', () => { window.__csp++; });
		return null;
	})()`)
	e.goTo("#/chat/" + id)
	payload := `<img src=x onerror="window.__xss=1"> <script>window.__xss=2</script> [click me](javascript:window.__xss=3) ` +
		`<a href="javascript:window.__xss=4">x</a> [ok](https://example.com/) **bold** <svg onload="window.__xss=5">`
	e.ask(payload)
	e.until("the answer", `document.querySelector('.msg.assistant')?.dataset.state === 'done'`)
	check := func(where string) {
		t.Helper()
		scope := "document.querySelector('" + where + "')"
		if v := eval[bool](e, `window.__xss === undefined`); !v {
			t.Fatalf("%s: injected script ran", where)
		}
		if n := eval[int](e, scope+`.querySelectorAll('img, script, svg, iframe, [onerror], [onload]').length`); n != 0 {
			t.Fatalf("%s: %d elements made from model output", where, n)
		}
		hrefs := eval[[]string](e, `[...`+scope+`.querySelectorAll('a')].map(a => a.getAttribute('href'))`)
		if len(hrefs) != 1 || hrefs[0] != "https://example.com/" {
			t.Fatalf("%s: links %q, want only the https one", where, hrefs)
		}
		text := eval[string](e, scope+`.textContent`)
		for _, want := range []string{`<img src=x onerror=`, `<script>window.__xss=2</script>`, `javascript:window.__xss=3`} {
			if !strings.Contains(text, want) {
				t.Fatalf("%s: %q not shown as text in %q", where, want, text)
			}
		}
		if n := eval[int](e, `window.__csp`); n != 0 {
			t.Fatalf("%s: %d CSP violations (something tried to run)", where, n)
		}
	}
	check(".transcript .msg.assistant .parts")
	if eval[int](e, `document.querySelectorAll('.transcript .msg.assistant strong').length`) != 1 {
		t.Fatal("Markdown emphasis not rendered")
	}

	var sessions []struct{ ID string }
	e.api(e.admin, "GET", "/v1/sessions?agent_id="+id, nil, &sessions)
	e.goTo("#/sessions/" + sessions[0].ID)
	e.until("the stored transcript", `document.querySelector('.session-view .msg.assistant') !== null`)
	check(".session-view .msg.assistant .parts")
	e.noPageErrors()
}
