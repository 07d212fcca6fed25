package console_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/weftlabs/weft/platform"
)

// TestModelChoices: the configured providers' models are choices for an
// agent's model, a workflow node's model and a knowledge base's
// embedding model; a new knowledge base takes the default embedding model
// unless "none" is chosen.
func TestModelChoices(t *testing.T) {
	e := newEnv(t, func(c *platform.Config) {
		c.ModelAliases = map[string]string{"fast": "scripted/demo"}
	})
	e.signIn(e.admin)
	e.goTo("#/agents/new")
	e.until("the agent's model choices", `(() => { const s = document.querySelector('form.agent-form select[data-field=model]');`+
		` const v = s && [...s.options].map((o) => o.value); return !!v && v[0] === '' && s.options[0].text.includes('scripted/demo') && v.includes('fast') && !v.includes('scripted/embed'); })()`)

	e.goTo("#/knowledge")
	e.until("the embedding model choices", `(() => { const s = document.querySelector('form.kb-create select[data-field=embedding_model]');`+
		` return !!s && s.options[0].text.includes('scripted/embed') && [...s.options].some((o) => o.value === 'none'); })()`)
	createKB := func(name, embedding string) {
		t.Helper()
		e.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
			const f = document.querySelector('form.kb-create');
			f.querySelector('[data-field=name]').value = %q;
			if (%q) f.querySelector('[data-field=embedding_model]').value = %q;
			f.requestSubmit();
		})()`, name, embedding, embedding)))
	}
	createKB("handbook", "")
	e.until("created", `document.querySelector('.kb-detail h1')?.textContent === 'handbook'`)
	// The second from the same form, beside the first's page.
	e.until("the form emptied", `document.querySelector('form.kb-create [data-field=name]')?.value === ''`)
	createKB("plain", "none")
	e.until("created", `document.querySelector('.kb-detail h1')?.textContent === 'plain'`)
	var kbs []struct {
		Name           string `json:"name"`
		EmbeddingModel string `json:"embedding_model"`
	}
	e.api(e.admin, "GET", "/v1/knowledge-bases", nil, &kbs)
	got := map[string]string{}
	for _, k := range kbs {
		got[k.Name] = k.EmbeddingModel
	}
	if got["handbook"] != "scripted/embed" || got["plain"] != "" || len(got) != 2 {
		t.Fatalf("knowledge bases: %v", got)
	}

	e.goTo("#/workflows")
	e.until("the palette", `!!document.querySelector('.wf-palette-item[data-kind="llm"]')`)
	e.do(chromedp.Click(chromedp.CSS(`.wf-palette-item[data-kind="llm"]`)))
	e.until("the node's model choices", `(() => { const s = document.querySelector('.wf-node-form select[data-field=model]');`+
		` const v = s && [...s.options].map((o) => o.value); return !!v && v[0] === '' && s.options[0].text.includes('scripted/demo') && v.includes('fast'); })()`)
	e.noPageErrors()
}
