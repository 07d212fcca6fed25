package console_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestKnowledgeBaseRename: a knowledge base is renamed in place (its id
// kept); a taken name is refused beside the field.
func TestKnowledgeBaseRename(t *testing.T) {
	e := newEnv(t)
	var kb struct{ ID string }
	e.api(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "notes"}, &kb)
	e.api(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "other"}, nil)
	e.signIn(e.admin)
	e.goTo("#/knowledge/" + kb.ID)
	e.do(
		chromedp.WaitVisible(chromedp.CSS(`.kb-detail .drop`)),
		chromedp.Click(chromedp.CSS(`button[aria-label="Rename knowledge base"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.kb-rename`)),
		chromedp.SetValue(chromedp.CSS(`form.kb-rename [data-field=name]`), "other"),
		submit(`form.kb-rename`),
	)
	e.until("the taken name refused beside the field", `(() => { const c = document.querySelector('form.kb-rename [data-field=name]'); return c.getAttribute('aria-invalid') === 'true' && document.getElementById(c.id + '-err').textContent.includes('other'); })()`)
	e.do(
		chromedp.SetValue(chromedp.CSS(`form.kb-rename [data-field=name]`), "handbook"),
		submit(`form.kb-rename`),
	)
	e.until("renamed", `document.querySelector('.kb-detail h1').textContent === 'handbook' && document.querySelector('form.kb-rename').hidden && [...document.querySelectorAll('ul.list li')].some((li) => li.textContent.includes('handbook'))`)
	var got struct{ ID, Name string }
	e.api(e.admin, "GET", "/v1/knowledge-bases/"+kb.ID, nil, &got)
	if got.ID != kb.ID || got.Name != "handbook" {
		t.Fatalf("after the rename: %+v", got)
	}
	e.noPageErrors()
}
