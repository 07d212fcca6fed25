package loader

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weftlabs/weft/internal/bomb"
	"github.com/weftlabs/weft/rag"
)

// testLimit is the decompression limit the bomb tests run under: a 32nd
// of the default, so that they run fast under the race detector (parsing
// 64 MiB of XML takes seconds); the bombs expand to twice it or more.
const testLimit = 2 << 20

// bombs are hostile documents each limit must stop, with what their error
// must say.
var bombs = []struct {
	name string
	data func() []byte
	want string
}{
	{"flate.pdf", func() []byte { return bomb.PDFFlate(2 * testLimit) }, "decompresses to over 2 MiB"},
	{"text.pdf", func() []byte { return bomb.PDFText(4 << 20) }, "PDF content token"},
	{"operands.pdf", func() []byte { return bomb.PDFOperands(4 << 20) }, "operands"},
	{"objects.pdf", func() []byte { return bomb.PDFObjects(1 << 40) }, "objects"},
	{"part.docx", func() []byte { return bomb.DOCXPart(2 * testLimit) }, "word/document.xml"},
	{"empty.docx", func() []byte { return bomb.DOCXEmpty(2 * testLimit) }, "decompresses to over 2 MiB"},
	{"token.docx", func() []byte { return bomb.DOCXToken(4 << 20) }, "XML token"},
	{"deep.docx", func() []byte { return bomb.DOCXDeep(100000) }, "nested over 256"},
	{"entries.docx", func() []byte { return bomb.DOCXEntries(5000) }, "zip entries"},
	{"zip64.docx", func() []byte { return bomb.DOCXEntries(70000) }, "ZIP64"},
}

// TestBombsRefused: every bomb fails with ErrTooLarge naming the limit,
// while reading: the heap in use stays far below the expanded size (the
// figures are logged).
func TestBombsRefused(t *testing.T) {
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			data := b.data()
			var err error
			peak, alloc := bomb.PeakHeap(func() {
				_, err = Load(context.Background(), b.name, bytes.NewReader(data), WithMaxDecompressed(testLimit))
			})
			t.Logf("%s: %d KiB in, peak heap +%d MiB, %d MiB allocated: %v", b.name, len(data)>>10, peak>>20, alloc>>20, err)
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("err = %v, want ErrTooLarge saying %q", err, b.want)
			}
			if peak > 64<<20 {
				t.Errorf("peak heap +%d MiB, over 64 MiB", peak>>20)
			}
		})
	}
}

// TestPDFTextCostsItsSize: a PDF that shows text within the limits — 1
// MiB of it from a few KiB — costs about its text while it is laid out, not
// a record per glyph (that cost 128 bytes a glyph: +1 GiB for the default
// limit's 8 MiB of text). The figures are logged.
func TestPDFTextCostsItsSize(t *testing.T) {
	data := bomb.PDFGlyphs(1 << 20)
	var doc rag.Document
	var err error
	peak, alloc := bomb.PeakHeap(func() {
		doc, err = Load(context.Background(), "glyphs.pdf", bytes.NewReader(data), WithMaxText(2<<20))
	})
	t.Logf("glyphs.pdf: %d KiB in, %d KiB of text, peak heap +%d MiB, %d MiB allocated: %v", len(data)>>10, len(doc.Text)>>10, peak>>20, alloc>>20, err)
	if err != nil || len(doc.Text) < 1<<20 {
		t.Fatalf("text = %d bytes, err = %v; want 1 MiB", len(doc.Text), err)
	}
	if peak > 24<<20 {
		t.Errorf("peak heap +%d MiB for 1 MiB of text, over 24 MiB", peak>>20)
	}
	// Over the text limit, the same document fails naming it.
	if _, err := Load(context.Background(), "glyphs.pdf", bytes.NewReader(data), WithMaxText(512<<10)); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "of text") {
		t.Fatalf("1 MiB of text under a 512 KiB limit: %v", err)
	}
}

// TestLimitsOptions: the options move the limits both ways.
func TestLimitsOptions(t *testing.T) {
	ctx := context.Background()
	small := bomb.PDFFlate(2 << 20)
	if _, err := Load(ctx, "a.pdf", bytes.NewReader(small), WithMaxDecompressed(1<<20)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("2 MiB stream under a 1 MiB limit: %v", err)
	}
	// Under the default limit the stream is read (it has no text).
	if _, err := Load(ctx, "a.pdf", bytes.NewReader(small)); errors.Is(err, ErrTooLarge) {
		t.Fatalf("2 MiB stream under the default limit: %v", err)
	}
	doc := makeDOCX("t", []docxPara{{text: strings.Repeat("word ", 1000)}}, nil)
	if _, err := Load(ctx, "a.docx", bytes.NewReader(doc), WithMaxText(1000)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("5000 bytes of text under a 1000-byte limit: %v", err)
	}
	if _, err := Load(ctx, "a.docx", bytes.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, "a.md", strings.NewReader(strings.Repeat("text ", 1000)), WithMaxText(1000)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("markdown over the text limit: %v", err)
	}
	pages := makePDF("t", "one", "two", "three")
	if _, err := Load(ctx, "a.pdf", bytes.NewReader(pages), WithMaxPages(2)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("3 pages under a 2-page limit: %v", err)
	}
	if d, err := Load(ctx, "a.pdf", bytes.NewReader(pages), WithMaxPages(3)); err != nil || len(d.Pages) != 3 {
		t.Fatalf("3 pages under a 3-page limit: %v", err)
	}
	deep := bomb.DOCXDeep(50)
	if _, err := Load(ctx, "a.docx", bytes.NewReader(deep), WithMaxXMLDepth(40)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("depth 50 under a limit of 40: %v", err)
	}
	if _, err := Load(ctx, "a.docx", bytes.NewReader(deep)); err != nil {
		t.Fatalf("depth 50 under the default: %v", err)
	}
}
