package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"

	// PDF text extraction is done with github.com/ledongthuc/pdf, a
	// maintained fork of rsc.io/pdf without dependencies that decodes fonts
	// (ToUnicode CMaps, standard encodings) and reports every glyph with its
	// position. pdfcpu (v0.15.0) was the other candidate: well maintained
	// and strong at validating and rewriting PDFs, but its text extraction
	// hands back raw content streams, leaving font decoding and layout to
	// us. ledongthuc/pdf panics on some malformed input and follows a
	// document's object graph without cycle checks, so it runs behind
	// recover, with a page-tree walk of our own that bounds depth and
	// count, and under a deadline.
	"github.com/ledongthuc/pdf"

	"github.com/weftlabs/weft/rag"
)

// maxPDFPages bounds the pages read from one PDF.
const maxPDFPages = 20000

// loadPDF extracts the text of each page, page breaks recorded in
// Document.Pages. Parsing runs in its own goroutine so that the caller gets
// control back when ctx ends or the parse timeout passes, whatever the
// parser is doing.
func (l *Loader) loadPDF(ctx context.Context, data []byte) (rag.Document, error) {
	if l.parseTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.parseTimeout)
		defer cancel()
	}
	type result struct {
		doc rag.Document
		err error
	}
	done := make(chan result, 1)
	go func() {
		doc, err := extractPDF(ctx, data)
		done <- result{doc, err}
	}()
	select {
	case r := <-done:
		return r.doc, r.err
	case <-ctx.Done():
		return rag.Document{}, fmt.Errorf("PDF parsing stopped: %w", ctx.Err())
	}
}

// recovered runs f, turning a panic of the PDF parser into ErrCorrupt.
func recovered[T any](f func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: PDF parser: %v", ErrCorrupt, r)
		}
	}()
	return f()
}

func extractPDF(ctx context.Context, data []byte) (rag.Document, error) {
	r, err := recovered(func() (*pdf.Reader, error) {
		return pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	})
	if err != nil {
		if errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(strings.ToLower(err.Error()), "encrypt") {
			return rag.Document{}, fmt.Errorf("%w: remove the password before uploading (%v)", ErrEncrypted, err)
		}
		if errors.Is(err, ErrCorrupt) {
			return rag.Document{}, err
		}
		return rag.Document{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	pages, err := recovered(func() ([]pdf.Page, error) {
		return pdfPages(r, min(maxPDFPages, len(data)/32+1)), nil
	})
	if err != nil {
		return rag.Document{}, err
	}
	meta, _ := recovered(func() (map[string]string, error) {
		meta := map[string]string{}
		info := r.Trailer().Key("Info")
		for key, name := range map[string]string{"Title": rag.MetaTitle, "Author": "author", "Subject": "subject"} {
			if v := strings.TrimSpace(info.Key(key).Text()); v != "" && strings.ToValidUTF8(v, "") == v {
				meta[name] = v
			}
		}
		return meta, nil
	})
	if meta == nil {
		meta = map[string]string{}
	}
	var (
		b        strings.Builder
		offsets  []int
		firstErr error
	)
	for i, p := range pages {
		if err := ctx.Err(); err != nil {
			return rag.Document{}, err
		}
		text, err := recovered(func() (string, error) { return pageText(p), nil })
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("page %d: %w", i+1, err)
			}
			text = ""
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		offsets = append(offsets, b.Len())
		b.WriteString(text)
	}
	if strings.TrimSpace(b.String()) == "" {
		switch {
		case firstErr != nil:
			return rag.Document{}, firstErr
		case len(pages) == 0:
			return rag.Document{}, fmt.Errorf("%w: no pages found", ErrCorrupt)
		}
		return rag.Document{}, fmt.Errorf("%w: no text layer in %d pages (a scanned PDF needs OCR first)", rag.ErrEmptyDocument, len(pages))
	}
	meta["pages"] = fmt.Sprint(len(pages))
	return rag.Document{Text: b.String(), Pages: offsets, Metadata: meta}, nil
}

// pdfPages lists the pages of the document's page tree in order, visiting
// at most limit pages and bounding depth, so that cyclic or absurd trees in
// corrupt files cannot loop. Pages whose resource inheritance chain is
// cyclic are left out (the parser would follow it forever).
func pdfPages(r *pdf.Reader, limit int) []pdf.Page {
	type node struct {
		v     pdf.Value
		depth int
	}
	var pages []pdf.Page
	stack := []node{{r.Trailer().Key("Root").Key("Pages"), 0}}
	for visits := 0; len(stack) > 0 && len(pages) < limit && visits < 4*limit; visits++ {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.v.Kind() != pdf.Dict {
			continue
		}
		kids := n.v.Key("Kids")
		if n.v.Key("Type").Name() == "Pages" || kids.Kind() == pdf.Array {
			if n.depth >= 32 {
				continue
			}
			for i := min(kids.Len(), limit) - 1; i >= 0; i-- {
				stack = append(stack, node{kids.Index(i), n.depth + 1})
			}
			continue
		}
		if finiteInheritance(n.v) {
			pages = append(pages, pdf.Page{V: n.v})
		}
	}
	return pages
}

// finiteInheritance reports whether looking up a page's inherited
// Resources ends: a dictionary on the Parent chain has them, or the chain
// ends, within a bounded number of steps.
func finiteInheritance(v pdf.Value) bool {
	for range 64 {
		if v.IsNull() || !v.Key("Resources").IsNull() {
			return true
		}
		v = v.Key("Parent")
	}
	return false
}

// pageText lays out the glyphs of a page as lines of text: a change of
// baseline starts a new line (a larger one, a new paragraph), and a gap
// wider than a fraction of the font size between glyphs on a line is a
// space.
func pageText(p pdf.Page) string {
	glyphs := p.Content().Text
	var (
		b    strings.Builder
		prev pdf.Text
		have bool
	)
	for _, g := range glyphs {
		if g.S == "" || strings.IndexFunc(g.S, func(r rune) bool { return !unicode.IsControl(r) }) < 0 {
			continue
		}
		size := g.FontSize
		if size <= 0 || math.IsNaN(size) || math.IsInf(size, 0) {
			size = 10
		}
		if have {
			dy := prev.Y - g.Y
			switch {
			case dy > 1.8*size || dy < -size:
				b.WriteString("\n\n")
			case math.Abs(dy) > 0.5*size:
				b.WriteString("\n")
			case gapIsSpace(prev, g, size):
				b.WriteByte(' ')
			}
		}
		b.WriteString(g.S)
		prev, have = g, true
	}
	return tidyLines(b.String())
}

// gapIsSpace reports whether the horizontal distance between two glyphs on
// a line reads as a word break.
func gapIsSpace(prev, g pdf.Text, size float64) bool {
	if strings.HasSuffix(prev.S, " ") || strings.HasPrefix(g.S, " ") {
		return false
	}
	if prev.W > 0 {
		return g.X-(prev.X+prev.W) > 0.15*size
	}
	// Without glyph widths, only a jump of more than a character counts.
	return g.X-prev.X > 1.2*size || g.X < prev.X-size
}

// tidyLines trims the ends of lines and allows at most one blank line in a
// row.
func tidyLines(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := 0
	for _, l := range lines {
		l = strings.TrimRightFunc(l, unicode.IsSpace)
		if l == "" {
			if blank++; blank > 1 || len(out) == 0 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
