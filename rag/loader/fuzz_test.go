package loader

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/internal/bomb"
	"github.com/weftlabs/weft/rag"
)

// fuzzLoad loads data as name and checks the contract: a document with
// valid UTF-8 text and in-range page offsets, or an *Error matching one of
// the package's sentinels. A panic or a hang fails the fuzzer.
func fuzzLoad(t *testing.T, name string, data []byte) {
	doc, err := Load(context.Background(), name, bytes.NewReader(data), WithParseTimeout(10*time.Second))
	if err != nil {
		var le *Error
		if !errors.As(err, &le) {
			t.Fatalf("error %v is not an *Error", err)
		}
		for _, s := range []error{ErrTooLarge, ErrBinary, ErrUnsupported, ErrCorrupt, ErrEncrypted, rag.ErrEmptyDocument} {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("error %v matches no sentinel", err)
	}
	if !utf8.ValidString(doc.Text) || strings.TrimSpace(doc.Text) == "" {
		t.Fatalf("bad text %q", doc.Text)
	}
	prev := -1
	for _, off := range doc.Pages {
		if off < prev || off > len(doc.Text) {
			t.Fatalf("page offsets %v out of order or range (%d bytes)", doc.Pages, len(doc.Text))
		}
		prev = off
	}
}

func FuzzLoadHTML(f *testing.F) {
	f.Add([]byte(`<html><head><title>T</title></head><body><h1>A</h1><p>x<br>y</p><ul><li>1<ol><li>2</li></ol></li></ul><table><tr><td><table><tr><td>n</td></tr></table></td></tr></table><pre>p</pre></body></html>`))
	f.Add([]byte(`<p><h2>unclosed<td>cell<li>item<pre><script>x</script>`))
	f.Add([]byte(strings.Repeat("<div>", 2000) + "deep"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzLoad(t, "fuzz.html", data) })
}

func FuzzLoadMarkdown(f *testing.F) {
	f.Add([]byte("---\ntitle: x\n---\n# H\n\ntext\n```\ncode\n```\n"))
	f.Add([]byte("+++\ntitle = \"t\"\n+++\nSetext\n===\n"))
	f.Add([]byte("---\n---"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzLoad(t, "fuzz.md", data) })
}

func FuzzLoadPDF(f *testing.F) {
	f.Add(makePDF("title", "one\ntwo", "three"))
	f.Add([]byte("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [2 0 R] /Count 1 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"))
	f.Add([]byte("%PDF-1.7\nxref\n0 1\n0000000000 65535 f \ntrailer << /Size 1 >>\nstartxref\n9\n%%EOF"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzLoad(t, "fuzz.pdf", data) })
}

func FuzzLoad(f *testing.F) {
	f.Add("a.docx", makeDOCX("t", []docxPara{{style: "Heading1", text: "h"}, {text: "p"}}, [][]string{{"a"}}))
	f.Add("a.json", []byte(`[{"a":{"b":[1,{"c":null}]}}, 2]`))
	f.Add("a.csv", []byte("h1;h2\n\"x;y\";z\n"))
	f.Add("a.txt", []byte("plain \xff text"))
	f.Add("noext", []byte("<html>x</html>"))
	f.Fuzz(func(t *testing.T, name string, data []byte) { fuzzLoad(t, name, data) })
}

func FuzzLoadDOCX(f *testing.F) {
	f.Add(makeDOCX("t", []docxPara{{style: "Heading1", text: "h"}, {list: true, text: "a\tb"}}, [][]string{{"a", "b"}, {"c"}}))
	f.Add(bomb.DOCXDeep(300))
	f.Add(bomb.DOCXEntries(3))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzLoad(t, "fuzz.docx", data) })
}

// FuzzBoundedReaders: the bounded readers never let more than their limit
// through and fail with ErrTooLarge past it; the PDF content scan never
// panics.
func FuzzBoundedReaders(f *testing.F) {
	f.Add([]byte("BT /F1 12 Tf (a\\)b(c)) Tj [<41> 1 (x)] TJ ET % c\n<< /A 1 >>"), int64(10))
	f.Add([]byte(strings.Repeat("x", 100)), int64(99))
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		limit = max(0, limit%4096)
		b := newBudget(limit)
		n, err := io.Copy(io.Discard, &boundedReader{ctx: context.Background(), r: bytes.NewReader(data), b: b})
		if n > limit+1 || (int64(len(data)) > limit) != errors.Is(err, ErrTooLarge) {
			t.Fatalf("%d bytes under limit %d: read %d, %v", len(data), limit, n, err)
		}
		(&pdfScan{}).Write(data)
		x := &xmlTokenReader{r: bytes.NewReader(data)}
		io.Copy(io.Discard, x)
	})
}
