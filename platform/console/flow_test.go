package console_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestNewUserFlow is the "done when": sign in with the printed key,
// create a knowledge base, upload files, see them become ready, search,
// create an agent with the knowledge base (after a validation error shown
// next to its field), and chat with sources, the answer streaming in before
// the turn completes.
func TestNewUserFlow(t *testing.T) {
	e := newEnv(t)
	e.signIn(e.admin)
	if got := e.text(".who .tenant"); got != "default" {
		t.Fatalf("tenant shown %q, want default", got)
	}
	if got := e.text(".who .badge"); got != "admin" {
		t.Fatalf("admin badge %q", got)
	}

	// Knowledge base, and a "folder" of two files.
	e.goTo("#/knowledge")
	e.do(
		chromedp.WaitVisible(chromedp.CSS(`form.kb-create input`)),
		chromedp.SendKeys(chromedp.CSS(`form.kb-create input`), "handbook"),
		submit(`form.kb-create`),
		chromedp.WaitVisible(chromedp.CSS(`.kb-detail .drop`)),
	)
	dir := t.TempDir()
	files := map[string]string{
		"refunds.md":  "# Refunds\n\nRefunds are paid within 14 days of the return reaching our warehouse.\n",
		"shipping.md": "# Shipping\n\nParcels ship from Rotterdam every weekday.\n",
	}
	var paths []string
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		paths = append(paths, p)
	}
	e.do(chromedp.SetUploadFiles(chromedp.CSS(`#kb-files`), paths))
	e.until("both documents ready", `document.querySelectorAll('table.docs tr[data-status=ready]').length === 2`)
	// A drop on the drop zone (a synthetic drag: Chromium's headless input
	// cannot drag files from outside the page).
	eval[any](e, `(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(['# Returns\n\nReturns are accepted for 30 days.\n'], 'returns.md', {type: 'text/markdown'}));
		document.querySelector('.drop').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
		return null;
	})()`)
	e.until("all three documents ready", `document.querySelectorAll('table.docs tr[data-status=ready]').length === 3`)
	e.until("per-file progress complete", `[...document.querySelectorAll('ul.progress progress')].filter(p => p.value === 1).length === 3`)

	// Search shows the three modes with scores.
	e.do(
		chromedp.SendKeys(chromedp.CSS(`form.search input[type=search]`), "refunds paid"),
		submit(`form.search`),
	)
	for _, mode := range []string{"hybrid", "vector", "keyword"} {
		e.until(mode+" results", fmt.Sprintf(`(() => { const c = document.querySelector('.result-col[data-mode=%s]'); return c && c.querySelector('.result .score') && c.textContent.includes('refunds.md'); })()`, mode))
	}

	// An agent: a bad field first, shown beside that field.
	e.goTo("#/agents/new")
	e.do(chromedp.WaitVisible(chromedp.CSS(`form.agent-form`)))
	e.do(
		chromedp.SendKeys(chromedp.CSS(`form.agent-form [data-field=name]`), "support"),
		chromedp.SetValue(chromedp.CSS(`form.agent-form [data-field=context_window_tokens]`), "100"),
		chromedp.Click(chromedp.CSS(`form.agent-form button[type=submit]`)),
	)
	e.until("the error beside the context window field", `(() => { const c = document.querySelector('[data-field=context_window_tokens]'); const err = document.getElementById(c.id + '-err'); return c.getAttribute('aria-invalid') === 'true' && err.textContent.includes('at least 256'); })()`)
	e.do(
		chromedp.SetValue(chromedp.CSS(`form.agent-form [data-field=context_window_tokens]`), "4096"),
		chromedp.Click(chromedp.CSS(`fieldset[data-field=knowledge_base_ids] input[type=checkbox]`)),
		chromedp.Click(chromedp.CSS(`form.agent-form button[type=submit]`)),
	)
	e.until("the agent saved and listed", `location.hash.startsWith('#/agents/agt') && document.querySelector('ul.list li a[aria-current=true]')?.textContent.includes('support')`)

	// Chat: the first words show while the turn is still running.
	e.goTo("#/chat")
	e.until("the agent picked", `document.querySelector('.chat-side select')?.selectedOptions[0]?.textContent === 'support'`)
	eval[any](e, `(() => {
		window.__growth = [];
		new MutationObserver(() => {
			const b = document.querySelector('.transcript .msg.assistant');
			if (b) window.__growth.push(b.querySelector('.parts').textContent.length);
		}).observe(document.querySelector('.transcript'), {subtree: true, childList: true, characterData: true});
		return null;
	})()`)
	e.do(
		chromedp.SendKeys(chromedp.CSS(`.composer textarea`), "How fast are refunds paid? "+markGate),
		chromedp.Click(chromedp.CSS(`.composer button[type=submit]`)),
	)
	e.until("a source shown", `document.querySelector('.msg.assistant .source .doc')?.textContent === 'refunds.md'`)
	e.until("the first delta", `document.querySelector('.msg.assistant .body')?.textContent.trim().length > 0`)
	if st := eval[string](e, `document.querySelector('.msg.assistant').dataset.state`); st != "streaming" {
		t.Fatalf("state %q while the model is held: the answer did not stream", st)
	}
	before := eval[int](e, `document.querySelector('.msg.assistant .body').textContent.length`)
	e.model.gate <- struct{}{}
	e.until("the turn completed", `document.querySelector('.msg.assistant').dataset.state === 'done'`)
	after := eval[int](e, `document.querySelector('.msg.assistant .body').textContent.length`)
	if after <= before {
		t.Fatalf("answer text %d chars before release, %d after", before, after)
	}
	if steps := eval[int](e, `new Set(window.__growth.filter(n => n > 0)).size`); steps < 2 {
		t.Fatalf("the answer grew in %d step(s), want incremental updates", steps)
	}
	if u := e.text(".msg.assistant .usage"); !strings.Contains(u, "tokens") || !strings.Contains(u, "ms") {
		t.Fatalf("usage and latency %q", u)
	}
	if got := e.text(".msg.assistant .body"); !strings.Contains(got, "14 days") {
		t.Fatalf("answer %q does not quote the source", got)
	}
	e.until("the session listed", `document.querySelectorAll('ul.sessions li[data-id]').length === 1`)
	if p := os.Getenv("WEFT_CONSOLE_SCREENSHOT"); p != "" {
		// The README's picture: a second question, its sources and its
		// trace open.
		e.ask("When do parcels ship?")
		e.until("the second answer", `document.querySelectorAll('.msg.assistant')[1]?.dataset.state === 'done'`)
		eval[any](e, `(() => { document.querySelectorAll('.sources-box')[1].open = true; document.querySelectorAll('.msg.assistant')[1].querySelector('details.trace').open = true; return null; })()`)
		e.until("the trace loaded", `document.querySelectorAll('.msg.assistant')[1].querySelector('details.trace').dataset.loaded === 'true'`)
		eval[any](e, `(() => { const t = document.querySelector('.transcript'); t.scrollTop = t.scrollHeight; return null; })()`)
		b, err := chromedpScreenshot(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.noPageErrors()
}

func chromedpScreenshot(e *env) ([]byte, error) {
	return chromedp.Run(e.tab, chromedp.CaptureScreenshot())
}
