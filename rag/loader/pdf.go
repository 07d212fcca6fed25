package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
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

// maxPDFObjects bounds the objects a PDF's cross-reference data may
// declare: the parser allocates a table entry for each.
const maxPDFObjects = 1 << 20

// The parser (ledongthuc/pdf) decompresses streams itself, lazily, as they
// are read. Bounds are kept from outside it: the raw file is checked for
// absurd object counts before it is opened; every stream the text
// extraction reads (page content, font maps) is first read through a
// counting reader against the document's decompression budget, stopping at
// the limit (so no stream reaches the parser's interpreter unchecked); the
// text laid out is bounded by the text limit, glyphs being laid out as they
// are shown rather than collected; and the file is handed
// over through a reader that fails once the parse deadline has passed,
// which stops the parser at its next read.

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
		doc, err := l.extractPDF(ctx, data)
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
			if le, ok := r.(limitError); ok {
				err = le.err
				return
			}
			if e, ok := r.(error); ok && isLimit(e) {
				err = e
				return
			}
			err = fmt.Errorf("%w: PDF parser: %v", ErrCorrupt, r)
		}
	}()
	return f()
}

// ctxReaderAt fails reads once ctx has ended.
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, fmt.Errorf("PDF parsing stopped: %w", err)
	}
	return c.r.ReadAt(p, off)
}

// objectCounts finds the numbers the parser sizes its cross-reference table
// by (/Size, and the ranges of /Index arrays) in the raw file, comments
// allowed between the tokens.
var objectCounts = regexp.MustCompile(`/(?:Size|Index)(?:\s|%[^\r\n]*[\r\n])*\[?((?:\s*[+-]?\d+)+)`)

// checkObjectCounts refuses a file that declares more objects than
// maxPDFObjects.
func checkObjectCounts(data []byte) error {
	for _, m := range objectCounts.FindAllSubmatch(data, -1) {
		for _, f := range bytes.Fields(m[1]) {
			if n, err := strconv.ParseInt(string(f), 10, 64); err != nil || n > maxPDFObjects || n < -maxPDFObjects {
				return fmt.Errorf("%w: declares over %d objects", ErrTooLarge, maxPDFObjects)
			}
		}
	}
	return nil
}

// checkStream reads stream v (or an array of streams) through the
// decompression budget and a scan of its tokens (pdfScan), failing at a
// limit without reading further.
func checkStream(ctx context.Context, v pdf.Value, b *budget) error {
	if v.Kind() == pdf.Array {
		for i := range min(v.Len(), 4096) {
			if err := checkStream(ctx, v.Index(i), b); err != nil {
				return err
			}
		}
		return nil
	}
	if v.Kind() != pdf.Stream {
		return nil
	}
	rc := v.Reader()
	defer rc.Close()
	_, err := io.Copy(&pdfScan{}, &boundedReader{ctx: ctx, r: rc, b: b})
	if isLimit(err) {
		return err
	}
	return nil // damage shows again, and is handled, when the parser reads it
}

func (l *Loader) extractPDF(ctx context.Context, data []byte) (rag.Document, error) {
	if err := checkObjectCounts(data); err != nil {
		return rag.Document{}, err
	}
	streams := newBudget(l.maxDecompressed)
	r, err := recovered(func() (*pdf.Reader, error) {
		return pdf.NewReader(ctxReaderAt{ctx, bytes.NewReader(data)}, int64(len(data)))
	})
	if err != nil {
		if isLimit(err) {
			return rag.Document{}, err
		}
		if errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(strings.ToLower(err.Error()), "encrypt") {
			return rag.Document{}, fmt.Errorf("%w: remove the password before uploading (%v)", ErrEncrypted, err)
		}
		if errors.Is(err, ErrCorrupt) {
			return rag.Document{}, err
		}
		return rag.Document{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	pages, err := recovered(func() ([]pdf.Page, error) {
		return pdfPages(r, min(l.maxPages+1, len(data)/32+1)), nil
	})
	if err != nil {
		return rag.Document{}, err
	}
	if len(pages) > l.maxPages {
		return rag.Document{}, fmt.Errorf("%w: over %d pages (raise it with loader.WithMaxPages)", ErrTooLarge, l.maxPages)
	}
	text := &textBudget{left: l.maxText, limit: l.maxText}
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
		text, err := recovered(func() (string, error) {
			if err := checkStream(ctx, p.V.Key("Contents"), streams); err != nil {
				return "", err
			}
			return pageText(ctx, p, streams, text), nil
		})
		if isLimit(err) {
			return rag.Document{}, err
		}
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
// space. Glyphs are laid out as the content stream shows them, none kept:
// what a page costs is its text, not a record per glyph (a few KiB of
// compressed content can show millions of them).
func pageText(ctx context.Context, p pdf.Page, budget *budget, text *textBudget) string {
	var (
		b    strings.Builder
		prev glyph
		have bool
	)
	pageGlyphs(ctx, p, budget, text, func(g glyph) {
		if g.s == "" || strings.IndexFunc(g.s, func(r rune) bool { return !unicode.IsControl(r) }) < 0 {
			return
		}
		size := g.size
		if size <= 0 || math.IsNaN(size) || math.IsInf(size, 0) {
			size = 10
		}
		if have {
			dy := prev.y - g.y
			sep := ""
			switch {
			case dy > 1.8*size || dy < -size:
				sep = "\n\n"
			case math.Abs(dy) > 0.5*size:
				sep = "\n"
			case gapIsSpace(prev, g, size):
				sep = " "
			}
			text.spend(len(sep))
			b.WriteString(sep)
		}
		b.WriteString(g.s)
		prev, have = g, true
	})
	return tidyLines(b.String())
}

// glyph is one shown character: its text, the position of its origin, its
// advance width and font size, in page space.
type glyph struct {
	s       string
	x, y, w float64
	size    float64
}

// matrix is a PDF transformation matrix [a b 0; c d 0; e f 1].
type matrix [3][3]float64

var identity = matrix{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}

func (m matrix) mul(n matrix) matrix {
	var z matrix
	for i := range 3 {
		for j := range 3 {
			for k := range 3 {
				z[i][j] += m[i][k] * n[k][j]
			}
		}
	}
	return z
}

func translate(tx, ty float64) matrix { return matrix{{1, 0, 0}, {0, 1, 0}, {tx, ty, 1}} }

// pdfFont is what text layout needs of a font, read once per page: the
// library's Page.Content re-reads the font dictionary and its widths for
// every glyph, which in files with compressed object streams means
// inflating a stream per glyph.
type pdfFont struct {
	enc    pdf.TextEncoding
	first  int
	widths []float64
}

func (f *pdfFont) width(code int) float64 {
	if i := code - f.first; f != nil && i >= 0 && i < len(f.widths) {
		return f.widths[i]
	}
	return 0
}

// maxWidths bounds the widths read from one font.
const maxWidths = 1 << 16

// textBudget is what is left of a document's text limit; glyphs are
// counted against it as they are shown, and the line breaks and spaces
// laid out between them as they are written.
type textBudget struct{ left, limit int }

// spend takes n bytes from the budget; past it, it stops the parse with
// ErrTooLarge (recovered turns the panic into the error).
func (t *textBudget) spend(n int) {
	if t.left -= n; t.left < 0 {
		panic(limitError{fmt.Errorf("%w: over %s of text (raise it with loader.WithMaxText)", ErrTooLarge, byteSize(int64(t.limit)))})
	}
}

func loadFont(ctx context.Context, p pdf.Page, name string, b *budget) *pdfFont {
	font := p.Font(name)
	// The encoder reads the font's ToUnicode map with the parser's own
	// interpreter: check that stream first.
	if err := checkStream(ctx, font.V.Key("ToUnicode"), b); err != nil {
		panic(limitError{err})
	}
	f := &pdfFont{enc: font.Encoder(), first: int(font.V.Key("FirstChar").Int64())}
	if w := font.V.Key("Widths"); w.Kind() == pdf.Array {
		n := min(w.Len(), maxWidths)
		f.widths = make([]float64, n)
		for i := range n {
			f.widths[i] = w.Index(i).Float64()
		}
	}
	return f
}

// textState is the part of the PDF graphics state that places glyphs.
type textState struct {
	ctm, tm, tlm          matrix
	tc, tw, th, tl, trise float64
	size                  float64
	font                  *pdfFont
}

// pageGlyphs interprets a page's content stream and passes its glyphs to
// emit in stream order. It follows the text operators of the PDF
// specification (section 9.4) and ignores malformed operators rather than
// failing.
func pageGlyphs(ctx context.Context, p pdf.Page, budget *budget, text *textBudget, emit func(glyph)) {
	contents := p.V.Key("Contents")
	if p.V.IsNull() || contents.IsNull() {
		return
	}
	fonts := map[string]*pdfFont{}
	st := textState{ctm: identity, tm: identity, tlm: identity, th: 1}
	var stack []textState
	show := func(raw string) {
		if st.font == nil {
			st.font = &pdfFont{enc: nopEncoding{}}
		}
		n := 0
		decoded := st.font.enc.Decode(raw)
		// A shown string costs its text and the layout work for it.
		text.spend(len(decoded) + 8)
		for _, ch := range decoded {
			var w0 float64
			code := -1
			if n < len(raw) {
				code = int(raw[n])
				w0 = st.font.width(code)
			}
			n++
			trm := matrix{{st.size * st.th, 0, 0}, {0, st.size, 0}, {0, st.trise, 1}}.mul(st.tm).mul(st.ctm)
			emit(glyph{s: string(ch), x: trm[2][0], y: trm[2][1], w: w0 / 1000 * trm[0][0], size: trm[0][0]})
			tx := w0/1000*st.size + st.tc
			if code == ' ' {
				tx += st.tw
			}
			st.tm = translate(tx*st.th, 0).mul(st.tm)
		}
	}
	pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
		args := make([]pdf.Value, stk.Len())
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		num := func(i int) float64 { return args[i].Float64() }
		switch op {
		case "cm", "Tm":
			if len(args) != 6 {
				return
			}
			var m matrix
			for i := range 6 {
				m[i/2][i%2] = num(i)
			}
			m[2][2] = 1
			if op == "cm" {
				st.ctm = m.mul(st.ctm)
			} else {
				st.tm, st.tlm = m, m
			}
		case "q":
			if len(stack) < 1024 {
				stack = append(stack, st)
			}
		case "Q":
			if len(stack) > 0 {
				st = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			}
		case "BT":
			st.tm, st.tlm = identity, identity
		case "T*":
			st.tlm = translate(0, -st.tl).mul(st.tlm)
			st.tm = st.tlm
		case "Tc", "Tw", "TL", "Ts", "Tz":
			if len(args) != 1 {
				return
			}
			switch v := num(0); op {
			case "Tc":
				st.tc = v
			case "Tw":
				st.tw = v
			case "TL":
				st.tl = v
			case "Ts":
				st.trise = v
			case "Tz":
				st.th = v / 100
			}
		case "Td", "TD":
			if len(args) != 2 {
				return
			}
			if op == "TD" {
				st.tl = -num(1)
			}
			st.tlm = translate(num(0), num(1)).mul(st.tlm)
			st.tm = st.tlm
		case "Tf":
			if len(args) != 2 {
				return
			}
			name := args[0].Name()
			f, ok := fonts[name]
			if !ok {
				f = loadFont(ctx, p, name, budget)
				fonts[name] = f
			}
			st.font, st.size = f, num(1)
		case "\"", "'", "Tj":
			if op == "\"" {
				if len(args) != 3 {
					return
				}
				st.tw, st.tc = num(0), num(1)
				args = args[2:]
			}
			if len(args) != 1 {
				return
			}
			if op != "Tj" {
				st.tlm = translate(0, -st.tl).mul(st.tlm)
				st.tm = st.tlm
			}
			show(args[0].RawString())
		case "TJ":
			if len(args) != 1 {
				return
			}
			v := args[0]
			for i := range v.Len() {
				x := v.Index(i)
				if x.Kind() == pdf.String {
					show(x.RawString())
				} else {
					st.tm = translate(-x.Float64()/1000*st.size*st.th, 0).mul(st.tm)
				}
			}
		}
	})
}

// nopEncoding passes bytes through, for text shown before any font is set.
type nopEncoding struct{}

func (nopEncoding) Decode(raw string) string { return raw }

// gapIsSpace reports whether the horizontal distance between two glyphs on
// a line reads as a word break.
func gapIsSpace(prev, g glyph, size float64) bool {
	if strings.HasSuffix(prev.s, " ") || strings.HasPrefix(g.s, " ") {
		return false
	}
	if prev.w > 0 {
		return g.x-(prev.x+prev.w) > 0.15*size
	}
	// Without glyph widths, only a jump of more than a character counts.
	return g.x-prev.x > 1.2*size || g.x < prev.x-size
}

// tidyLines trims the ends of lines and allows at most one blank line in a
// row. It copies s once: a page of one glyph per line would make a slice of
// lines many times the text's size.
func tidyLines(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	blank, lines := 0, 0
	for l := range strings.SplitSeq(s, "\n") {
		l = strings.TrimRightFunc(l, unicode.IsSpace)
		if l == "" {
			if blank++; blank > 1 || lines == 0 {
				continue
			}
		} else {
			blank = 0
		}
		if lines > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
		lines++
	}
	return strings.TrimSpace(b.String())
}
