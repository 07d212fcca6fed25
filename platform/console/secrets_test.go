package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestSecretsScreen sets a secret and sees its name listed, never its
// value; on a server without the secrets API the screen says so.
func TestSecretsScreen(t *testing.T) {
	e := newEnv(t)
	e.signIn(e.admin)
	e.goTo("#/secrets")
	if code := e.api(e.admin, "GET", "/v1/secrets", nil, nil); code == 404 {
		e.until("the no-API message", `document.querySelector('main')?.textContent.includes('no secrets API')`)
		return
	}
	const value = "s3cr3t-value-never-shown"
	e.do(
		chromedp.WaitVisible(chromedp.CSS(`form.secret-form [data-field=name]`)),
		chromedp.SendKeys(chromedp.CSS(`form.secret-form [data-field=name]`), "SEARCH_KEY"),
		chromedp.SendKeys(chromedp.CSS(`form.secret-form [data-field=value]`), value),
		submit(`form.secret-form`),
	)
	e.until("the secret listed", `document.querySelector('tr[data-name=SEARCH_KEY]') !== null`)
	if html := eval[string](e, `document.documentElement.outerHTML`); strings.Contains(html, value) {
		t.Fatal("the secret's value is in the page after saving")
	}
	sel := `tr[data-name=SEARCH_KEY] button.danger`
	e.do(chromedp.Click(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
	e.until("the secret gone", `document.querySelector('tr[data-name=SEARCH_KEY]') === null`)
	e.noPageErrors()
}
