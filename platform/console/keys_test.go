package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestRevokedKeySignsOut signs in with a builder's key, which sees its role
// and no API keys screen (an owner's), has the admin revoke it, and sees
// the console sign out on its next request.
func TestRevokedKeySignsOut(t *testing.T) {
	e := newEnv(t)
	var k struct{ ID, Key string }
	if code := e.api(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "alice", "role": "builder"}, &k); code != 201 {
		t.Fatalf("create key: %d", code)
	}
	e.signIn(k.Key)
	if got := e.text(".who .badge"); got != "builder" {
		t.Fatalf("a builder's key shows %q", got)
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
		chromedp.Evaluate[chromedp.Void](`document.querySelector('form.key-form [data-field=role]').value = 'viewer'`),
		submit(`form.key-form`),
	)
	e.until("the new key shown", `document.querySelector('.shown-once input')?.value.startsWith('wk_')`)
	e.until("the key listed", `[...document.querySelectorAll('.keys tbody tr')].some(r => r.textContent.startsWith('ci'))`)
	key := eval[string](e, `document.querySelector('.shown-once input').value`)
	var me struct {
		KeyID string `json:"key_id"`
		Role  string `json:"role"`
	}
	if code := e.api(key, "GET", "/v1/me", nil, &me); code != 200 || me.Role != "viewer" {
		t.Fatalf("the shown key: %d, role %q", code, me.Role)
	}
	// Its role changes from the list, for its next request.
	e.do(chromedp.Evaluate[chromedp.Void](`{ const s = document.querySelector('.keys tbody tr[data-id="` + me.KeyID + `"] select');
		s.dataset.old = '1'; s.value = 'builder'; s.dispatchEvent(new Event('change')); }`))
	e.until("the list reloaded", `document.querySelector('.keys tbody tr[data-id="`+me.KeyID+`"] select:not([data-old])')?.value === 'builder'`)
	for deadline := time.Now().Add(10 * time.Second); ; {
		e.api(key, "GET", "/v1/me", nil, &me)
		if me.Role == "builder" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("role after the change: %q", me.Role)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sel := `.keys tbody tr[data-id="` + me.KeyID + `"] button.danger`
	e.do(chromedp.Click(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
	e.until("the key gone", `document.querySelector('.keys tbody tr[data-id="`+me.KeyID+`"]') === null`)
	if code := e.api(key, "GET", "/v1/me", nil, nil); code != 401 {
		t.Fatalf("revoked key answered %d", code)
	}
	e.noPageErrors()
}
