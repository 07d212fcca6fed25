package console_test

import (
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

// firstLoadBudget is the goal for the console's first load:
// everything transferred (compressed) up to the sign-in form.
const firstLoadBudget = 300 << 10

// TestFirstLoadAndStreamingRender measures, in the browser, the bytes the
// first load transfers (Resource Timing transferSize: compressed bodies
// plus headers, for the page and every asset) and the main-thread time
// spent while a 2,000-token answer streams in (Chromium's TaskDuration,
// ScriptDuration and LayoutDuration metrics, and long tasks). It logs
// both. It checks the size budget, that the whole answer arrived, and that
// streaming rebuilt nothing but the unfinished tail of the current message
// (no whole-transcript re-render per token). Times are logged, not
// asserted: the machine is shared.
func TestFirstLoadAndStreamingRender(t *testing.T) {
	e := newEnv(t)
	e.do(chromedp.WaitVisible(chromedp.CSS(`form.signin`)))
	type load struct {
		Transfer, Decoded, Requests int
	}
	l := eval[load](e, `(() => {
		const all = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
		return {Transfer: all.reduce((s, r) => s + r.transferSize, 0), Decoded: all.reduce((s, r) => s + r.decodedBodySize, 0), Requests: all.length};
	})()`)
	t.Logf("first load: %d bytes transferred (compressed, headers included) in %d requests; %d bytes decoded", l.Transfer, l.Requests, l.Decoded)
	if l.Transfer == 0 || l.Transfer > firstLoadBudget {
		t.Fatalf("first load %d bytes, budget %d", l.Transfer, firstLoadBudget)
	}

	id := e.createAgent("writer")
	e.signIn(e.admin)
	e.goTo("#/chat/" + id)
	e.ask("hello")
	e.until("the first answer", `document.querySelector('.msg.assistant')?.dataset.state === 'done'`)
	eval[any](e, `(() => {
		window.__bad = [];
		window.__long = {n: 0, ms: 0};
		new PerformanceObserver((list) => { for (const x of list.getEntries()) { window.__long.n++; window.__long.ms += x.duration; } }).observe({type: 'longtask'});
		new MutationObserver((records) => {
			const msgs = document.querySelectorAll('.transcript .msg');
			const current = msgs[msgs.length - 1];
			for (const r of records) {
				if (r.type !== 'childList' || r.removedNodes.length === 0) continue;
				if (!current.contains(r.target) || r.target.closest('.md-done')) window.__bad.push(r.target.className || r.target.nodeName);
			}
		}).observe(document.querySelector('.transcript'), {subtree: true, childList: true});
		return null;
	})()`)
	if _, err := chromedp.Call(e.tab, performance.Enable, performance.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	before := metrics(t, e)
	start := time.Now()
	e.ask("write at length " + markLong)
	e.until("the long answer", `document.querySelectorAll('.msg.assistant')[1]?.dataset.state === 'done'`)
	wall := time.Since(start)
	after := metrics(t, e)
	type result struct {
		Bad        []string
		LongN      int
		LongMS     float64
		Done, Text int
	}
	r := eval[result](e, `(() => {
		const m = document.querySelectorAll('.msg.assistant')[1];
		return {Bad: window.__bad, LongN: window.__long.n, LongMS: window.__long.ms,
			Done: m.querySelector('.md-done').children.length, Text: m.querySelector('.parts').textContent.length};
	})()`)
	d := func(name string) float64 { return (after[name] - before[name]) * 1000 }
	t.Logf("2,000-token streamed answer: main thread busy %.0f ms (script %.0f ms, layout %.0f ms, style %.0f ms); %d long tasks totalling %.0f ms; %.0f ms wall from send to done; %d blocks rendered once, %d chars",
		d("TaskDuration"), d("ScriptDuration"), d("LayoutDuration"), d("RecalcStyleDuration"), r.LongN, r.LongMS, float64(wall.Milliseconds()), r.Done, r.Text)
	if len(r.Bad) > 0 {
		t.Fatalf("streaming removed nodes outside the current message's unfinished tail: %q", r.Bad)
	}
	if r.Done < 50 {
		t.Fatalf("only %d blocks committed: the answer was not rendered incrementally", r.Done)
	}
	if r.Text < 8000 {
		t.Fatalf("the answer has %d chars: it did not all arrive", r.Text)
	}
	e.noPageErrors()
}

// metrics returns Chromium's performance metrics of the tab, by name.
func metrics(t *testing.T, e *env) map[string]float64 {
	t.Helper()
	res, err := chromedp.Call(e.tab, performance.GetMetrics, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, m := range res.Metrics {
		out[m.Name] = m.Value
	}
	return out
}
