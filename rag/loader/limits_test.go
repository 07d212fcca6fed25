package loader

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/internal/bomb"
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

// peakHeap runs f and returns the highest heap in use seen above the
// starting point, sampled every 10 ms, and the bytes allocated.
func peakHeap(f func()) (peak, alloc uint64) {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	done := make(chan struct{})
	sampled := make(chan uint64)
	go func() {
		var m runtime.MemStats
		high := before.HeapInuse
		for {
			runtime.ReadMemStats(&m)
			high = max(high, m.HeapInuse)
			select {
			case <-done:
				sampled <- high - before.HeapInuse
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	peak = <-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return peak, after.TotalAlloc - before.TotalAlloc
}

// TestBombsRefused: every bomb fails with ErrTooLarge naming the limit,
// while reading: the heap in use stays far below the expanded size (the
// figures are logged).
func TestBombsRefused(t *testing.T) {
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			data := b.data()
			var err error
			peak, alloc := peakHeap(func() {
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
