package console_test

import (
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
	e.do(
		chromedp.SetValue(chromedp.CSS(`form.kb-create [data-field=name]`), "handbook"),
		submit(`form.kb-create`),
	)
	e.until("created", `location.hash.startsWith('#/knowledge/kb_')`)
	e.goTo("#/knowledge")
	e.until("the embedding model choices", `document.querySelector('form.kb-create select[data-field=embedding_model]')?.options.length > 1`)
	e.do(
		chromedp.SetValue(chromedp.CSS(`form.kb-create [data-field=name]`), "plain"),
		chromedp.SetValue(chromedp.CSS(`form.kb-create [data-field=embedding_model]`), "none"),
		submit(`form.kb-create`),
	)
	e.until("created", `location.hash.startsWith('#/knowledge/kb_')`)
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
