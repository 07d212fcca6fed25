package console_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestPlaygroundTitlesAndFeedback: a new chat's session is titled from
// its first message and renamed from the sessions list; an answer is
// rated with the thumbs, the rating stored with the turn (API), shown
// again when the session is reopened and in the turn's trace.
func TestPlaygroundTitlesAndFeedback(t *testing.T) {
	e := newEnv(t)
	id := e.createAgent("helper")
	e.signIn(e.admin)
	e.goTo("#/chat/" + id)
	e.ask("Where is my invoice from March? It should have arrived by now")
	e.until("the answer", `document.querySelector('.msg.assistant')?.dataset.state === 'done'`)
	e.until("the session titled", `document.querySelector('ul.sessions .session-title')?.textContent === 'Where is my invoice from March? It should have arrived by…'`)

	e.do(chromedp.Click(chromedp.CSS(`.msg.assistant .feedback-down`)))
	e.until("the rating shown", `document.querySelector('.msg.assistant .feedback-down').getAttribute('aria-pressed') === 'true'`)
	var sessions []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	e.api(e.admin, "GET", "/v1/sessions?agent_id=helper", nil, &sessions)
	if len(sessions) != 1 {
		t.Fatalf("sessions: %+v", sessions)
	}
	var fb []struct {
		MessageID string `json:"message_id"`
		Rating    int    `json:"rating"`
	}
	e.api(e.admin, "GET", "/v1/sessions/"+sessions[0].ID+"/feedback", nil, &fb)
	if len(fb) != 1 || fb[0].Rating != -1 {
		t.Fatalf("feedback stored: %+v", fb)
	}

	// Renamed from the list.
	e.do(chromedp.Click(chromedp.CSS(`ul.sessions .session-rename-open`)))
	e.do(
		chromedp.SetValue(chromedp.CSS(`ul.sessions form.session-rename input`), "March invoice"),
		submit(`ul.sessions form.session-rename`),
	)
	e.until("renamed", `document.querySelector('ul.sessions .session-title')?.textContent === 'March invoice'`)

	// Reopened: the rating is shown, and the trace carries it.
	e.do(chromedp.Click(chromedp.CSS(`button.link.resume`)))
	e.until("the stored rating", `document.querySelector('.msg.assistant .feedback-down')?.getAttribute('aria-pressed') === 'true'`)
	e.do(chromedp.Click(chromedp.CSS(`.msg.assistant details.trace summary`)))
	e.until("the feedback in the trace", `document.querySelector('.msg.assistant .trace-feedback')?.textContent.includes('not helpful')`)

	// Pressed again, the rating is taken back.
	e.do(chromedp.Click(chromedp.CSS(`.msg.assistant .feedback-down`)))
	e.until("the rating taken back", `document.querySelector('.msg.assistant .feedback-down').getAttribute('aria-pressed') === 'false'`)
	e.api(e.admin, "GET", "/v1/sessions/"+sessions[0].ID+"/feedback", nil, &fb)
	if len(fb) != 0 {
		t.Fatalf("after taking it back: %+v", fb)
	}
	e.noPageErrors()
}
