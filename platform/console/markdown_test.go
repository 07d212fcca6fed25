package console_test

import (
	"fmt"
	"testing"
)

// TestMarkdown runs the console's Markdown renderer in the browser on
// Markdown and on hostile input, comparing the DOM it builds (as HTML
// serialised by the browser) with what is wanted.
func TestMarkdown(t *testing.T) {
	e := newEnv(t)
	e.do(waitSignIn())
	src := eval[string](e, `document.querySelector('script[type=module]').src.replace('app.js', 'markdown.js')`)
	tests := []struct{ in, want string }{
		{"hello", "<p>hello</p>"},
		{"# Title\n\ntext", `<h3 class="md-h1">Title</h3><p>text</p>`},
		{"**b** *i* ~~s~~ `c`", "<p><strong>b</strong> <em>i</em> <s>s</s> <code>c</code></p>"},
		{"snake_case and a__b__c", "<p>snake_case and a__b__c</p>"},
		{"__strong__ _em_", "<p><strong>strong</strong> <em>em</em></p>"},
		{"- a\n- b", "<ul><li>a</li><li>b</li></ul>"},
		{"3. x\n4. y", `<ol start="3"><li>x</li><li>y</li></ol>`},
		{"```js\nif (a < b) {}\n```", `<pre><code data-lang="js">if (a &lt; b) {}</code></pre>`},
		{"> quoted", "<blockquote><p>quoted</p></blockquote>"},
		{"[w](https://example.com/a)", `<p><a href="https://example.com/a" rel="noopener noreferrer nofollow" target="_blank">w</a></p>`},
		{"see https://example.com/x.", `<p>see <a href="https://example.com/x" rel="noopener noreferrer nofollow" target="_blank">https://example.com/x</a>.</p>`},
		{"[x](javascript:alert(1))", "<p>x (javascript:alert(1))</p>"},
		{"[x](JaVaScRiPt:alert(1))", "<p>x (JaVaScRiPt:alert(1))</p>"},
		{"[x](data:text/html,<script>alert(1)</script>)", "<p>[x](data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;)</p>"},
		{"[x](/relative)", "<p>x (/relative)</p>"},
		{"[m](mailto:a@example.com)", `<p><a href="mailto:a@example.com" rel="noopener noreferrer nofollow" target="_blank">m</a></p>`},
		{`<img src=x onerror="window.__xss=1">`, `<p>&lt;img src=x onerror="window.__xss=1"&gt;</p>`},
		{"<script>window.__xss=1</script>", "<p>&lt;script&gt;window.__xss=1&lt;/script&gt;</p>"},
		{"line one\nline two", "<p>line one<br>line two</p>"},
		{"---", "<hr>"},
		{"\\*not em\\*", "<p>*not em*</p>"},
	}
	for _, tt := range tests {
		got := eval[string](e, fmt.Sprintf(`import(%q).then(m => { const d = document.createElement('div'); d.append(m.render(%q)); return d.innerHTML; })`, src, tt.in))
		if got != tt.want {
			t.Errorf("render(%q)\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
	if v := eval[bool](e, `window.__xss === undefined`); !v {
		t.Fatal("rendering ran injected script")
	}
	e.noPageErrors()
}
