package loader

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/rag"
)

func TestLoadFormats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		content   []byte
		format    Format
		text      string // the exact text, when set
		contains  []string
		title     string
		notInText []string
	}{
		{
			name: "notes.txt", content: []byte("Hello\r\nworld\n"), format: Text,
			text: "Hello\nworld\n",
		},
		{
			name: "bom.txt", content: []byte("\xEF\xBB\xBFcafé"), format: Text, text: "café",
		},
		{
			name: "utf16.txt", content: []byte{0xFF, 0xFE, 'h', 0, 'i', 0, 0xAC, 0x20}, format: Text, text: "hi€",
		},
		{
			name: "latin1.txt", content: []byte("caf\xe9 cr\xe8me br\xfbl\xe9e"), format: Text, text: "café crème brûlée",
		},
		{
			name: "guide.md", format: Markdown,
			content: []byte("---\ntitle: \"The Guide\"\nauthor: Ann\ntags:\n  - x\n---\n# Heading\n\nBody.\n"),
			text:    "# Heading\n\nBody.\n", title: "The Guide",
		},
		{
			name: "README.markdown", format: Markdown,
			content: []byte("```\n# not this\n```\n\nSetext Title\n============\n\ntext"),
			title:   "Setext Title", contains: []string{"# not this"},
		},
		{
			name: "page.html", format: HTML,
			content: []byte(`<!doctype html><html lang="en"><head><title> My  Page </title><style>p{color:red}</style>
<script>alert("x")</script></head><body><nav><a href="/">Home</a> | <a href="/a">About</a></nav>
<h1>Main   title</h1><p>First <b>bold</b>
paragraph.</p><ul><li>one</li><li>two<ol><li>nested</li></ol></li></ul>
<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann</td><td><p>30</p></td></tr></table>
<pre>code  line 1
  line 2</pre><p>end<br>next line</p></body></html>`),
			text:  "# Main title\n\nFirst bold paragraph.\n\n- one\n- two\n  1. nested\n\n| Name | Age |\n| Ann | 30 |\n\n```\ncode  line 1\n  line 2\n```\n\nend\nnext line\n",
			title: "My Page", notInText: []string{"alert", "color", "Home", "About"},
		},
		{
			name: "sniffed-html", format: HTML,
			content: []byte("<html><body><h2>Only heading</h2><p>and text</p></body></html>"),
			text:    "## Only heading\n\nand text\n", title: "",
		},
		{
			name: "data.csv", format: CSV,
			content: []byte("name,age,city\nAnn,30,\"Paris, FR\"\nBob,,Rome\n"),
			text:    "name: Ann; age: 30; city: Paris, FR\nname: Bob; city: Rome\n",
		},
		{
			name: "data.tsv", format: CSV,
			content: []byte("a\tb\n1\t2\n"), text: "a: 1; b: 2\n",
		},
		{
			name: "obj.json", format: JSON,
			content: []byte(`{"name":"Ann","tags":["a","b"],"address":{"city":"Paris","zip":75001},"ok":true,"none":null,"empty":{}}`),
			text:    "name: Ann\ntags[0]: a\ntags[1]: b\naddress.city: Paris\naddress.zip: 75001\nok: true\nnone: null\nempty: {}\n",
		},
		{
			name: "records.json", format: JSON,
			content: []byte(`[{"id":1,"title":"First"},{"id":2,"title":"Second"}]`),
			text:    "id: 1\ntitle: First\n\nid: 2\ntitle: Second\n",
		},
		{
			name: "lines.jsonl", format: JSON,
			content: []byte("{\"q\":\"a\"}\n{\"q\":\"b\"}\n"), text: "q: a\n\nq: b\n",
		},
		{
			name: "sniffed-json", format: JSON, content: []byte(`  [1, 2]`), text: "[0]: 1\n[1]: 2\n",
		},
		{
			name: "report.pdf", format: PDF, content: makePDF("Annual (Report)", "Page one line one\nline two", "Page two (text)"),
			text:  "Page one line one\nline two\n\nPage two (text)",
			title: "Annual (Report)",
		},
		{
			name: "sniffed-pdf", format: PDF, content: makePDF("", "Hi"), text: "Hi",
		},
		{
			name: "/some/dir/memo.docx", format: DOCX,
			content: makeDOCX("Memo", []docxPara{
				{style: "Title", text: "Quarterly memo"},
				{text: "Intro\tparagraph."},
				{style: "Titre1", text: "Results"},
				{list: true, text: "first"},
				{list: true, text: "second"},
				{style: "Custom", text: "Details"},
				{style: "Heading3", text: "Deep"},
				{text: "Closing."},
			}, [][]string{{"Metric", "Value"}, {"Revenue", "10"}}),
			text:  "# Quarterly memo\n\nIntro\tparagraph.\n\n# Results\n\n- first\n- second\n\n## Details\n\n### Deep\n\nClosing.\n\n| Metric | Value |\n|---|---|\n| Revenue | 10 |\n",
			title: "Memo", notInText: []string{"deleted"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, err := Load(context.Background(), tt.name, bytes.NewReader(tt.content))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if doc.Metadata["format"] != string(tt.format) || doc.MIMEType != tt.format.MIMEType() {
				t.Errorf("format %q, MIME %q; want %q", doc.Metadata["format"], doc.MIMEType, tt.format)
			}
			if tt.text != "" && doc.Text != tt.text {
				t.Errorf("text:\n got %q\nwant %q", doc.Text, tt.text)
			}
			for _, s := range tt.contains {
				if !strings.Contains(doc.Text, s) {
					t.Errorf("text %q lacks %q", doc.Text, s)
				}
			}
			for _, s := range tt.notInText {
				if strings.Contains(doc.Text, s) {
					t.Errorf("text %q holds %q", doc.Text, s)
				}
			}
			if doc.Metadata[rag.MetaTitle] != tt.title {
				t.Errorf("title %q, want %q", doc.Metadata[rag.MetaTitle], tt.title)
			}
			if doc.ID != rag.DocumentID(tt.name) || doc.Source != tt.name || doc.Name == "" || strings.Contains(doc.Name, "/") {
				t.Errorf("ID %q, Source %q, Name %q", doc.ID, doc.Source, doc.Name)
			}
		})
	}
}

func TestLoadPDFPages(t *testing.T) {
	t.Parallel()
	data := makePDF("Paged", "alpha beta gamma", "delta epsilon", "zeta eta theta")
	doc, err := Load(context.Background(), "paged.pdf", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Pages) != 3 || doc.Metadata["pages"] != "3" {
		t.Fatalf("pages %v, metadata %v", doc.Pages, doc.Metadata)
	}
	for i, word := range []string{"alpha", "delta", "zeta"} {
		if !strings.HasPrefix(doc.Text[doc.Pages[i]:], word) {
			t.Errorf("page %d starts with %q, want %q", i+1, doc.Text[doc.Pages[i]:], word)
		}
	}
	s, err := rag.NewRecursiveSplitter(rag.WithChunkSize(4), rag.WithOverlap(0))
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := s.Split(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"alpha": "1", "delta": "2", "zeta": "3"}
	for _, c := range chunks {
		for w, page := range want {
			if strings.HasPrefix(c.Text, w) && c.Metadata[rag.MetaPage] != page {
				t.Errorf("chunk %q on page %q, want %q", c.Text, c.Metadata[rag.MetaPage], page)
			}
		}
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	pdf := makePDF("x", "hello")
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(i*7919>>3) ^ byte(i)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		content []byte
		opts    []Option
		ctx     context.Context
		want    error
	}{
		{"empty.txt", nil, nil, nil, rag.ErrEmptyDocument},
		{"blank.md", []byte(" \n\t\n"), nil, nil, rag.ErrEmptyDocument},
		{"nul.txt", []byte("looks like text\x00\x01\x02 but is not"), nil, nil, ErrBinary},
		{"noise.txt", random, nil, nil, ErrBinary},
		{"control.txt", bytes.Repeat([]byte{1, 2, 3, 'a'}, 100), nil, nil, ErrBinary},
		{"pdf-named.txt", pdf, nil, nil, ErrBinary},
		{"image", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), nil, nil, ErrUnsupported},
		{"archive.zip-noext", []byte("PK\x03\x04 not a word file"), nil, nil, ErrUnsupported},
		{"notpdf.pdf", []byte("hello, I am text"), nil, nil, ErrCorrupt},
		{"truncated.pdf", pdf[:len(pdf)/2], nil, nil, ErrCorrupt},
		{"garbage.pdf", []byte("%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 9 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF"), nil, nil, ErrCorrupt},
		{"broken.docx", []byte("PK\x03\x04word/document.xml but no archive"), nil, nil, ErrCorrupt},
		{"notdocx.docx", []byte("plain text"), nil, nil, ErrCorrupt},
		{"bad.json", []byte(`{"a": [1, 2`), nil, nil, ErrCorrupt},
		{"deep.json", []byte(strings.Repeat("[", 300) + strings.Repeat("]", 300)), nil, nil, ErrCorrupt},
		{"bad.csv", []byte("a,b\n\"unterminated,1\n"), nil, nil, nil}, // lazy quotes: read, not an error
		{"big.txt", bytes.Repeat([]byte("a"), 101), []Option{WithMaxSize(100)}, nil, ErrTooLarge},
		{"canceled.txt", []byte("text"), nil, canceled, context.Canceled},
		{"forced.bin", []byte("# Forced\n\nmarkdown"), []Option{WithFormat(Markdown)}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			doc, err := Load(ctx, tt.name, bytes.NewReader(tt.content), tt.opts...)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Load error %v, want %v", err, tt.want)
			}
			var le *Error
			if !errors.As(err, &le) || le.Name != tt.name || !strings.Contains(err.Error(), tt.name) {
				t.Errorf("error %v is not an *Error naming %q", err, tt.name)
			}
			if doc.Text != "" {
				t.Errorf("failed load returned text %q", doc.Text)
			}
		})
	}
}

func TestLoadPDFParseTimeout(t *testing.T) {
	t.Parallel()
	// A deadline already passed stops PDF parsing at once.
	_, err := Load(context.Background(), "slow.pdf", bytes.NewReader(makePDF("", "text")), WithParseTimeout(time.Nanosecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want DeadlineExceeded", err)
	}
}

func TestLoadPDFCyclicPageTree(t *testing.T) {
	t.Parallel()
	// A page tree whose Kids point back at itself, and a page whose Parent
	// chain loops without Resources, must not hang the loader.
	data := []byte("%PDF-1.4\n" +
		"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n" +
		"2 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] /Count 5 >> endobj\n" +
		"3 0 obj << /Type /Page /Parent 4 0 R /Contents 5 0 R >> endobj\n" +
		"4 0 obj << /Type /Pages /Parent 4 0 R >> endobj\n" +
		"5 0 obj << /Length 20 >>\nstream\nBT (loop) Tj ET     \nendstream endobj\n" +
		"trailer << /Root 1 0 R >>\n%%EOF\n")
	_, err := Load(context.Background(), "cyclic.pdf", bytes.NewReader(data), WithParseTimeout(20*time.Second))
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a corrupt or empty document error", err)
	}
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	if _, err := LoadFile(context.Background(), "testdata/does-not-exist.md"); err == nil {
		t.Fatal("no error for a missing file")
	}
}
