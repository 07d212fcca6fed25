package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform"
)

// weatherTarget is the HTTP endpoint of a "weather" tool, on loopback: it
// answers a city's weather, and a 500 for the city "Nowhere". It counts
// the requests that reach it.
func weatherTarget(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		city := r.URL.Query().Get("city")
		if city == "Nowhere" {
			http.Error(w, "no such city", http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"city": city, "temp_c": 21})
	}))
	t.Cleanup(ts.Close)
	return ts, &hits
}

// allowLoopback lets the server's outbound guard reach the loopback test
// endpoints (WEFT_HTTP_TOOLS_ALLOW, read through Config.Getenv).
func allowLoopback(c *platform.Config) {
	c.Getenv = func(k string) string {
		if k == netguard.AllowEnv {
			return "127.0.0.1"
		}
		return ""
	}
}

// setArgs replaces the try panel's arguments as a user typing would (an
// input event follows).
func (e *env) setArgs(v string) {
	e.t.Helper()
	eval[any](e, fmt.Sprintf(`(() => { const ta = document.querySelector('.tool-try textarea'); ta.value = %q; ta.dispatchEvent(new Event('input', {bubbles: true})); return null; })()`, v))
}

// TestToolsScreen registers an HTTP tool through the form, tries it with
// JSON arguments (checked against its parameters before anything runs),
// sees its result and a failure, and checks that a tenant key is not
// offered the admin-only kinds.
func TestToolsScreen(t *testing.T) {
	target, hits := weatherTarget(t)
	e := newEnv(t, allowLoopback)
	e.signIn(e.admin)
	e.goTo("#/tools")
	e.do(chromedp.WaitVisible(chromedp.CSS(`form.tool-form`)))
	if got := eval[[]string](e, `[...document.querySelector('form.tool-form [data-field=kind]').options].map((o) => o.value)`); strings.Join(got, ",") != "http,mcp,sql" {
		t.Fatalf("admin offered kinds %v", got)
	}
	eval[any](e, fmt.Sprintf(`(() => {
		const f = document.querySelector('form.tool-form');
		const set = (name, v) => { const c = f.querySelector('[data-field="' + name + '"]'); c.value = v; c.dispatchEvent(new Event('change')); };
		set('kind', 'http');
		set('name', 'weather');
		set('description', 'The weather in a city');
		set('http.method', 'GET');
		set('http.url', %q);
		set('parameters', '{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}');
		return null;
	})()`, target.URL+"/now"))
	e.do(submit(`form.tool-form`))
	e.until("the tool listed", `[...document.querySelectorAll('.tool-table tr')].some((r) => r.textContent.includes('weather'))`)

	e.do(chromedp.Click(chromedp.CSS(`button[aria-label="Try tool weather"]`)))
	e.do(chromedp.WaitVisible(chromedp.CSS(`.tool-try textarea`)))
	if got := eval[string](e, `JSON.stringify(JSON.parse(document.querySelector('.tool-try textarea').value))`); got != `{"city":""}` {
		t.Fatalf("arguments prefilled with %s, want the parameters' skeleton", got)
	}

	// Arguments the schema refuses are shown beside the field and not sent.
	e.setArgs(`{"city": 5}`)
	e.until("the type error shown", `document.querySelector('.tool-try textarea').getAttribute('aria-invalid') === 'true' && document.querySelector('.tool-try .field-error').textContent.includes('arguments.city: want string')`)
	e.setArgs(`{}`)
	e.until("the missing argument shown", `document.querySelector('.tool-try .field-error').textContent.includes('arguments.city: required')`)
	e.setArgs(`{"city": `)
	e.until("the JSON error shown", `document.querySelector('.tool-try .field-error').textContent.includes('not valid JSON')`)
	e.do(submit(`.tool-try form`))
	if n := hits.Load(); n != 0 {
		t.Fatalf("invalid arguments reached the tool (%d requests)", n)
	}

	// A good call: the result is shown.
	e.setArgs(`{"city": "Paris"}`)
	e.until("the arguments accepted", `document.querySelector('.tool-try textarea').getAttribute('aria-invalid') === null`)
	e.do(submit(`.tool-try form`))
	e.until("the result", `document.querySelector('.tool-try').dataset.ok === 'true'`)
	if got := e.text(".tool-try .try-result"); !strings.Contains(got, `"city": "Paris"`) || !strings.Contains(got, `"temp_c": 21`) {
		t.Fatalf("result shown %q", got)
	}
	if got := e.text(".tool-try .try-status"); !strings.Contains(got, "ok") || !strings.Contains(got, "ms") {
		t.Fatalf("status %q", got)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d requests reached the tool, want 1", n)
	}

	// A failing call shows the error a model would get.
	e.setArgs(`{"city": "Nowhere"}`)
	e.do(submit(`.tool-try form`))
	e.until("the failure", `document.querySelector('.tool-try').dataset.ok === 'false'`)
	if got := e.text(".tool-try .try-result"); !strings.Contains(got, "500") {
		t.Fatalf("failure shown as %q", got)
	}

	// Edit in place: the form opens filled in, the kind fixed; saving
	// keeps the tool's id.
	var before []struct{ ID, Name string }
	e.api(e.admin, "GET", "/v1/tools", nil, &before)
	e.do(chromedp.Click(chromedp.CSS(`button[aria-label="Edit tool weather"]`)))
	e.until("the edit form", `document.querySelector('form.tool-form h2')?.textContent === 'Edit tool weather'`)
	if got := eval[[]any](e, `(() => { const f = document.querySelector('form.tool-form'); const v = (n) => f.querySelector('[data-field="' + n + '"]'); return [v('kind').value, v('kind').disabled, v('http.url').value, JSON.parse(v('parameters').value).required[0]]; })()`); fmt.Sprint(got) != fmt.Sprint([]any{"http", true, target.URL + "/now", "city"}) {
		t.Fatalf("edit form shows %v", got)
	}
	eval[any](e, `(() => {
		const f = document.querySelector('form.tool-form');
		f.querySelector('[data-field="description"]').value = 'The weather now';
		f.querySelector('[data-field="http.headers"]').value = 'X-Unit=c';
		return null;
	})()`)
	e.do(submit(`form.tool-form`))
	e.until("the form back to registering", `document.querySelector('form.tool-form h2')?.textContent === 'Register a tool'`)
	e.until("the edit listed", `[...document.querySelectorAll('.tool-table tr')].some((r) => r.textContent.includes('The weather now'))`)
	var after []struct {
		ID, Name, Description string
		HTTP                  struct{ Headers map[string]string }
	}
	e.api(e.admin, "GET", "/v1/tools", nil, &after)
	if len(after) != 1 || len(before) != 1 || after[0].ID != before[0].ID || after[0].Description != "The weather now" || after[0].HTTP.Headers["X-Unit"] != "c" {
		t.Fatalf("after the edit: %+v (before %+v)", after, before)
	}

	// A tenant's key is not offered SQL tools or stdio MCP servers.
	var k struct{ Key string }
	if code := e.api(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "dev", "tenant": "acme"}, &k); code != 201 {
		t.Fatalf("create key: %d", code)
	}
	e.do(chromedp.Click(chromedp.CSS(`#signout`)))
	e.signIn(k.Key)
	e.goTo("#/tools")
	e.do(chromedp.WaitVisible(chromedp.CSS(`form.tool-form`)))
	if got := eval[[]string](e, `[...document.querySelector('form.tool-form [data-field=kind]').options].map((o) => o.value).concat([...document.querySelector('form.tool-form [data-field="mcp.transport"]').options].map((o) => 'mcp:' + o.value))`); strings.Join(got, ",") != "http,mcp,mcp:http" {
		t.Fatalf("tenant offered %v", got)
	}
	e.noPageErrors()
}

type shoutArgs struct {
	Text string `json:"text" jsonschema:"the text to shout"`
}

// TestMCPToolsScreen registers an MCP server through the form: its tools
// are listed under it, one is tried from the console, and Refresh lists
// the tools the server offers since.
func TestMCPToolsScreen(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "console-test", Version: "1"}, nil)
	addTool := func(name string, fn func(string) string) {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "Makes " + name + " of the text."},
			func(ctx context.Context, req *mcp.CallToolRequest, in shoutArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fn(in.Text)}}}, nil, nil
			})
	}
	addTool("shout", strings.ToUpper)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	e := newEnv(t, allowLoopback)
	e.signIn(e.admin)
	e.goTo("#/tools")
	e.do(chromedp.WaitVisible(chromedp.CSS(`form.tool-form`)))
	eval[any](e, fmt.Sprintf(`(() => {
		const f = document.querySelector('form.tool-form');
		const set = (name, v) => { const c = f.querySelector('[data-field="' + name + '"]'); c.value = v; c.dispatchEvent(new Event('change')); };
		set('kind', 'mcp');
		set('name', 'box');
		set('mcp.transport', 'http');
		set('mcp.url', %q);
		return null;
	})()`, hs.URL))
	e.do(submit(`form.tool-form`))
	e.until("the server's tool listed under it", `[...document.querySelectorAll('.tool-table tr.child')].some((r) => r.textContent.includes('box_shout'))`)

	e.do(chromedp.Click(chromedp.CSS(`button[aria-label="Try tool box_shout"]`)))
	e.do(chromedp.WaitVisible(chromedp.CSS(`.tool-try textarea`)))
	e.setArgs(`{"text": "hello"}`)
	e.do(submit(`.tool-try form`))
	e.until("the result", `document.querySelector('.tool-try').dataset.ok === 'true'`)
	if got := e.text(".tool-try .try-result"); got != "HELLO" {
		t.Fatalf("result %q", got)
	}

	// The server offers another tool: Refresh lists it.
	addTool("whisper", strings.ToLower)
	e.do(chromedp.Click(chromedp.CSS(`button[aria-label="Refresh MCP server box"]`)))
	e.until("the new tool listed", `[...document.querySelectorAll('.tool-table tr.child')].some((r) => r.textContent.includes('box_whisper'))`)
	e.noPageErrors()
}

// TestTraceView: a turn that retrieved, called a model and a tool shows
// its trace — a timeline of those steps with timings and tokens — under
// the answer in the chat, and again in the sessions browser; a delegating
// turn's trace names the delegate.
func TestTraceView(t *testing.T) {
	target, hits := weatherTarget(t)
	e := newEnv(t, allowLoopback)
	var tl struct{ ID string }
	if code := e.api(e.admin, "POST", "/v1/tools", map[string]any{
		"name": "weather", "kind": "http", "description": "The weather in a city",
		"http":       map[string]any{"method": "GET", "url": target.URL},
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
	}, &tl); code != 201 {
		t.Fatalf("create tool: %d", code)
	}
	var kb struct{ ID string }
	e.api(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "travel"}, &kb)
	var doc struct{ ID string }
	if code := e.api(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{"name": "paris.md", "content": "# Paris\n\nThe weather in Paris is mild in spring.\n"}, &doc); code != 202 {
		t.Fatalf("upload: %d", code)
	}
	var a struct{ ID string }
	if code := e.api(e.admin, "POST", "/v1/agents", map[string]any{"name": "guide", "tool_ids": []string{tl.ID}, "knowledge_base_ids": []string{kb.ID}}, &a); code != 201 {
		t.Fatalf("create agent: %d", code)
	}
	e.signIn(e.admin)
	e.goTo("#/knowledge/" + kb.ID)
	e.until("the document ready", `document.querySelector('table.docs tr[data-status=ready]') !== null`)

	e.goTo("#/chat/" + a.ID)
	e.ask(`What is the weather in Paris? Use weather "Paris"`)
	e.until("the answer", `document.querySelector('.msg.assistant')?.dataset.state === 'done'`)
	if hits.Load() != 1 {
		t.Fatalf("the tool ran %d times, want once", hits.Load())
	}
	checkTrace := func(scope string) {
		t.Helper()
		e.until("the trace toggle", fmt.Sprintf(`document.querySelector('%s details.trace > summary') !== null`, scope))
		e.do(chromedp.Click(chromedp.CSS(scope + ` details.trace > summary`)))
		e.until("the trace loaded", fmt.Sprintf(`document.querySelector('%s details.trace')?.dataset.loaded === 'true'`, scope))
		kinds := eval[[]string](e, fmt.Sprintf(`[...document.querySelectorAll('%s ol.timeline li.step')].map((li) => li.dataset.kind)`, scope))
		if strings.Join(kinds, ",") != "retrieval,model,tool,model" {
			t.Fatalf("%s: steps %v, want retrieval, model, tool, model", scope, kinds)
		}
		head := e.text(scope + " .trace-head")
		if !strings.Contains(head, "ok") || !strings.Contains(head, "tokens") || !strings.Contains(head, "ms") {
			t.Fatalf("%s: trace head %q", scope, head)
		}
		model := e.text(scope + ` li.step[data-kind=model]`)
		if !strings.Contains(model, "prompt") || !strings.Contains(model, "completion tokens") || !strings.Contains(model, "ms") {
			t.Fatalf("%s: model step %q", scope, model)
		}
		// A tool step opens on its arguments and result; the retrieval on
		// its hits.
		e.do(chromedp.Click(chromedp.CSS(scope + ` li.step[data-kind=tool] summary`)))
		if got := e.text(scope + ` li.step[data-kind=tool] details`); !strings.Contains(got, "Paris") || !strings.Contains(got, "temp_c") {
			t.Fatalf("%s: tool step %q", scope, got)
		}
		if got := e.text(scope + ` li.step[data-kind=retrieval]`); !strings.Contains(got, "paris.md") {
			t.Fatalf("%s: retrieval step %q", scope, got)
		}
		// The timeline's bars are placed (through the CSSOM: the policy
		// refuses style attributes).
		if w := eval[string](e, fmt.Sprintf(`document.querySelector('%s li.step .bar').style.width`, scope)); !strings.HasSuffix(w, "%") {
			t.Fatalf("%s: bar width %q", scope, w)
		}
	}
	checkTrace(".chat-panel .msg.assistant")

	var sessions []struct{ ID string }
	e.api(e.admin, "GET", "/v1/sessions?agent_id="+a.ID, nil, &sessions)
	if len(sessions) != 1 {
		t.Fatalf("%d sessions", len(sessions))
	}
	e.goTo("#/sessions/" + sessions[0].ID)
	e.until("the stored transcript", `document.querySelector('.session-view .msg.assistant') !== null`)
	checkTrace(".session-view .msg.assistant")

	// A delegation is a step of its own, naming the delegate.
	var helper, boss struct{ ID string }
	e.api(e.admin, "POST", "/v1/agents", map[string]any{"name": "helper"}, &helper)
	if code := e.api(e.admin, "POST", "/v1/agents", map[string]any{"name": "boss", "delegate_agent_ids": []string{helper.ID}}, &boss); code != 201 {
		t.Fatalf("create agent: %d", code)
	}
	e.goTo("#/chat/" + boss.ID)
	e.until("boss picked", `document.querySelector('.chat-side select')?.selectedOptions[0]?.textContent === 'boss'`)
	e.ask(`Ask delegate_agent_` + helper.ID + ` "When do parcels ship?"`)
	e.until("the delegated answer", `document.querySelector('.msg.assistant')?.dataset.state === 'done' && document.querySelector('.msg.assistant details.delegate') !== null`)
	e.do(chromedp.Click(chromedp.CSS(`.msg.assistant details.trace > summary`)))
	e.until("the trace loaded", `document.querySelector('.msg.assistant details.trace')?.dataset.loaded === 'true'`)
	if kinds := eval[[]string](e, `[...document.querySelectorAll('.msg.assistant ol.timeline li.step')].map((li) => li.dataset.kind)`); strings.Join(kinds, ",") != "model,delegate,model" {
		t.Fatalf("delegating turn's steps %v, want model, delegate, model", kinds)
	}
	if got := e.text(`.msg.assistant li.step[data-kind=delegate]`); !strings.Contains(got, "Delegated to helper") {
		t.Fatalf("delegation step %q", got)
	}
	e.noPageErrors()
}

// TestUploadOutcomes uploads files, then the same files again (one
// unchanged, one edited): each upload's line says what it did — added,
// unchanged, replaced N chunks — and where its document stands, and the
// second drop's summary counts that drop alone.
func TestUploadOutcomes(t *testing.T) {
	e := newEnv(t)
	var kb struct{ ID string }
	e.api(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "notes"}, &kb)
	e.signIn(e.admin)
	e.goTo("#/knowledge/" + kb.ID)
	e.do(chromedp.WaitVisible(chromedp.CSS(`.kb-detail .drop`)))
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.md", "# A\n\nThe first note.\n")
	b := write("b.md", "# B\n\nThe second note.\n")
	e.do(chromedp.SetUploadFiles(chromedp.CSS(`#kb-files`), []string{a, b}))
	e.until("both ready", `document.querySelectorAll('table.docs tr[data-status=ready]').length === 2`)
	e.until("both added", `[...document.querySelectorAll('ul.progress li')].filter((li) => li.dataset.outcome === 'added').length === 2`)

	b = write("b.md", "# B\n\nThe second note, edited.\n")
	e.do(chromedp.SetUploadFiles(chromedp.CSS(`#kb-files`), []string{a, b}))
	e.until("the second drop answered", `document.querySelectorAll('.upload-batch').length === 2 && `+uploadDone)
	type line struct{ Name, Outcome, Text string }
	lines := eval[[]line](e, `[...document.querySelector('.upload-batch').querySelectorAll('ul.progress li')].map((li) => ({Name: li.dataset.name, Outcome: li.dataset.outcome, Text: li.querySelector('span:not(.name)').textContent}))`)
	got := map[string]line{}
	for _, l := range lines {
		got[l.Name] = l
	}
	if l := got["a.md"]; l.Outcome != "unchanged" || l.Text != "unchanged · ready, 1 chunk" {
		t.Fatalf("a.md again: %+v", l)
	}
	if l := got["b.md"]; l.Outcome != "replaced" || l.Text != "replaced 1 chunk · ready, 1 chunk" {
		t.Fatalf("b.md edited: %+v", l)
	}
	// The summary counts this drop, not the two together.
	if s := e.text(".upload-summary"); s != "2 files: 1 replaced, 1 unchanged; 2 ready" {
		t.Fatalf("summary %q", s)
	}
	if n := eval[int](e, `[...document.querySelectorAll('ul.progress progress')].filter((p) => p.value === 1).length`); n != 4 {
		t.Fatalf("%d of 4 progress bars complete", n)
	}
	e.noPageErrors()
}
