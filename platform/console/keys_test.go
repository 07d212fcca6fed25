package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestRevokedKeySignsOut signs in with a tenant's non-admin key, has the
// admin revoke it, and sees the console sign out on its next request.
func TestRevokedKeySignsOut(t *testing.T) {
	e := newEnv(t)
	var k struct{ ID, Key string }
	if code := e.api(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "alice"}, &k); code != 201 {
		t.Fatalf("create key: %d", code)
	}
	e.signIn(k.Key)
	if got := e.text(".who"); strings.Contains(got, "admin") {
		t.Fatalf("a non-admin key shows %q", got)
	}
	if n := eval[int](e, `document.querySelectorAll('nav a[data-screen=keys]').length`); n != 0 {
		t.Fatal("the API keys screen is offered to a non-admin key")
	}
	if eval[bool](e, `sessionStorage.getItem('weft.apiKey') !== null && location.href.indexOf('wk_') < 0`) != true {
		t.Fatal("the key is not in sessionStorage, or it is in the URL")
	}
	if code := e.api(e.admin, "DELETE", "/v1/api-keys/"+k.ID, nil, nil); code != 204 {
		t.Fatalf("revoke: %d", code)
	}
	e.do(chromedp.Click(chromedp.CSS(`nav a[data-screen=agents]`)))
	e.until("the sign-in form", `document.querySelector('form.signin') !== null`)
	if got := e.text("form.signin .error"); !strings.Contains(got, "refused") {
		t.Fatalf("sign-in message %q", got)
	}
	if eval[bool](e, `sessionStorage.getItem('weft.apiKey') === null`) != true {
		t.Fatal("the revoked key stayed in sessionStorage")
	}
}

// TestKeysScreen creates a key (shown once) and revokes it from the admin
// screen.
func TestKeysScreen(t *testing.T) {
	e := newEnv(t)
	e.signIn(e.admin)
	e.goTo("#/keys")
	e.do(
		chromedp.WaitVisible(chromedp.CSS(`form.key-form input`)),
		chromedp.SendKeys(chromedp.CSS(`form.key-form [data-field=name]`), "ci"),
		submit(`form.key-form`),
	)
	e.until("the new key shown", `document.querySelector('.shown-once input')?.value.startsWith('wk_')`)
	e.until("the key listed", `[...document.querySelectorAll('.keys tbody tr')].some(r => r.textContent.startsWith('ci'))`)
	key := eval[string](e, `document.querySelector('.shown-once input').value`)
	var me struct {
		KeyID string `json:"key_id"`
	}
	if code := e.api(key, "GET", "/v1/me", nil, &me); code != 200 {
		t.Fatalf("the shown key does not work: %d", code)
	}
	sel := `.keys tbody tr[data-id="` + me.KeyID + `"] button.danger`
	e.do(chromedp.Click(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
	e.until("the key gone", `document.querySelector('.keys tbody tr[data-id="`+me.KeyID+`"]') === null`)
	if code := e.api(key, "GET", "/v1/me", nil, nil); code != 401 {
		t.Fatalf("revoked key answered %d", code)
	}
	e.noPageErrors()
}
