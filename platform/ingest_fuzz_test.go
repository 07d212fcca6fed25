package platform

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/loader"
)

// FuzzWebPage feeds arbitrary bytes as a fetched web page to the
// conversion a URL ingestion stores: it must not panic, and what it
// produces is valid UTF-8 that the Markdown loader then reads.
func FuzzWebPage(f *testing.F) {
	for _, seed := range []string{
		`<!DOCTYPE html><html><head><title>T</title></head><body><h1>A</h1><p>x<br>y</p></body></html>`,
		`<title>  spaced
		title </title><pre>code</pre><table><tr><td>a<td>b</table>`,
		`<ul><li>1<ol><li>2</li></ol></li></ul><script>alert(1)</script>`,
		"<p>\xff\xfe broken</p>", ``, `<html>`, `plain text`,
	} {
		f.Add([]byte(seed))
	}
	q := &ingestion{opts: IngestOptions{Loader: []loader.Option{loader.WithMaxText(1 << 20)}}}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, page []byte) {
		md, err := q.htmlToMarkdown(ctx, "https://example.com/page", page)
		if err != nil {
			return
		}
		if !utf8.Valid(md) {
			t.Fatalf("invalid UTF-8 from %q: %q", page, md)
		}
		_, err = loader.New(loader.WithFormat(loader.Markdown)).Load(ctx, "https://example.com/page", bytes.NewReader(md))
		if err != nil && !errors.Is(err, rag.ErrEmptyDocument) && !errors.Is(err, loader.ErrTooLarge) {
			t.Fatalf("the stored Markdown does not load: %v\npage %q\nmarkdown %q", err, page, md)
		}
	})
}
