// Package loader turns files into [rag.Document] values: plain text,
// Markdown, HTML, PDF, DOCX, CSV and JSON, chosen by file extension and by
// sniffing the content.
//
// Loaders that know a document's structure (Markdown, HTML, DOCX) render it
// as Markdown-structured text — headings as "#" lines, lists, tables as
// "| a | b |" rows — so that the Markdown splitter (see [rag.NewSplitter])
// keeps heading paths on chunks. PDF text keeps its page boundaries in
// [rag.Document.Pages], so chunks carry page numbers.
//
// Bad input is an error, never a panic: every failure is an [*Error] that
// names the file and matches one of [ErrTooLarge], [ErrBinary],
// [ErrUnsupported], [ErrCorrupt], [ErrEncrypted] or [rag.ErrEmptyDocument]
// with errors.Is.
//
// # Limits
//
// Documents may come from people who mean harm: a small PDF or DOCX can
// inflate to gigabytes (a decompression bomb), nest XML without end or
// claim millions of pages. Every limit is enforced while reading — a
// counting reader that fails at the limit, never "inflate, then check" —
// and a document over one fails alone with an error matching [ErrTooLarge]
// that says which limit. The limits and their defaults:
//
//   - [WithMaxSize]: bytes read from the input (50 MiB).
//   - [WithMaxDecompressed]: bytes decompressed from one document, summed
//     over its zip entries (DOCX) or the PDF streams the loader reads
//     (content streams, font maps) (64 MiB). A single XML token (text run,
//     tag with its attributes) is bounded at 1 MiB.
//   - [WithMaxText]: extracted text of one document (8 MiB).
//   - [WithMaxPages]: pages of a PDF (5000).
//   - [WithMaxXMLDepth]: nesting of XML elements (256); a DOCX has at
//     most 4096 zip entries.
//   - [WithParseTimeout]: time to parse one binary document (2 minutes);
//     the parse stops reading when it passes.
//
// What the third-party PDF parser allocates while opening a file (its
// cross-reference table, object streams) is bounded by checks on the raw
// file before it is handed over (see loadPDF).
package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftlabs/weft/rag"
)

// Format names a document format the loader reads.
type Format string

// The formats the loader reads.
const (
	Text     Format = "text"
	Markdown Format = "markdown"
	HTML     Format = "html"
	PDF      Format = "pdf"
	DOCX     Format = "docx"
	CSV      Format = "csv"
	JSON     Format = "json"
)

// mimeTypes maps each format to the MIME type set on its documents.
var mimeTypes = map[Format]string{
	Text:     "text/plain",
	Markdown: "text/markdown",
	HTML:     "text/html",
	PDF:      "application/pdf",
	DOCX:     "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	CSV:      "text/csv",
	JSON:     "application/json",
}

// MIMEType returns the MIME type of documents of format f.
func (f Format) MIMEType() string { return mimeTypes[f] }

// Errors that loading matches with errors.Is (besides [rag.ErrEmptyDocument]
// for documents without text).
var (
	// ErrTooLarge reports input over the size limit (see [WithMaxSize]).
	ErrTooLarge = errors.New("document too large")
	// ErrBinary reports binary content where text was expected (NUL bytes,
	// control characters, bytes that are not text in any encoding).
	ErrBinary = errors.New("binary content is not text")
	// ErrUnsupported reports a format the loader cannot read.
	ErrUnsupported = errors.New("unsupported document format")
	// ErrCorrupt reports a damaged or malformed file.
	ErrCorrupt = errors.New("corrupt or malformed document")
	// ErrEncrypted reports a password-protected document.
	ErrEncrypted = errors.New("document is encrypted")
)

// Error is a failure to load one document.
type Error struct {
	// Name is the document's name as given to Load.
	Name string
	// Format is the format the loader took it for ("" if unknown).
	Format Format
	// Err is the cause; it matches one of the package's sentinel errors.
	Err error
}

// Error describes the failure.
func (e *Error) Error() string {
	if e.Format == "" {
		return fmt.Sprintf("loader: %s: %v", e.Name, e.Err)
	}
	return fmt.Sprintf("loader: %s (%s): %v", e.Name, e.Format, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// DefaultMaxSize is the default limit on the bytes read from one document.
const DefaultMaxSize = 50 << 20

// DefaultParseTimeout bounds how long parsing one binary document (PDF) may
// take when the caller's context has no earlier deadline.
const DefaultParseTimeout = 2 * time.Minute

// Defaults of the limits (see the package documentation).
const (
	DefaultMaxDecompressed = 64 << 20
	DefaultMaxText         = 8 << 20
	DefaultMaxPages        = 5000
	DefaultMaxXMLDepth     = 256
)

// Loader loads documents. The zero value is not usable; call [New]. A Loader
// is safe for concurrent use and implements the Loader interface the
// ingestion pipeline ([rag.Ingester]) takes.
type Loader struct {
	maxSize         int64
	parseTimeout    time.Duration
	format          Format
	maxDecompressed int64
	maxText         int
	maxPages        int
	maxXMLDepth     int
}

// WithMaxDecompressed sets the most bytes decompressed from one document
// (default 64 MiB): DOCX zip entries, PDF streams.
func WithMaxDecompressed(n int64) Option { return func(l *Loader) { l.maxDecompressed = n } }

// WithMaxText sets the most text, in bytes, extracted from one document
// (default 8 MiB).
func WithMaxText(n int) Option { return func(l *Loader) { l.maxText = n } }

// WithMaxPages sets the most pages of a PDF (default 5000).
func WithMaxPages(n int) Option { return func(l *Loader) { l.maxPages = n } }

// WithMaxXMLDepth sets the deepest nesting of XML elements (default 256).
func WithMaxXMLDepth(n int) Option { return func(l *Loader) { l.maxXMLDepth = n } }

// Option configures a [Loader].
type Option func(*Loader)

// WithMaxSize sets the largest document, in bytes, the loader reads
// (default 50 MiB); larger input fails with [ErrTooLarge].
func WithMaxSize(n int64) Option { return func(l *Loader) { l.maxSize = n } }

// WithFormat makes the loader read every document as format f instead of
// choosing by extension and content.
func WithFormat(f Format) Option { return func(l *Loader) { l.format = f } }

// WithParseTimeout bounds the parsing of one binary document (default 2
// minutes), for third-party parsers that do not follow a context.
func WithParseTimeout(d time.Duration) Option { return func(l *Loader) { l.parseTimeout = d } }

// New returns a Loader.
func New(opts ...Option) *Loader {
	l := &Loader{maxSize: DefaultMaxSize, parseTimeout: DefaultParseTimeout, maxDecompressed: DefaultMaxDecompressed,
		maxText: DefaultMaxText, maxPages: DefaultMaxPages, maxXMLDepth: DefaultMaxXMLDepth}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Load reads one document with a [Loader] configured by opts.
func Load(ctx context.Context, name string, r io.Reader, opts ...Option) (rag.Document, error) {
	return New(opts...).Load(ctx, name, r)
}

// LoadFile opens and loads the file at path.
func LoadFile(ctx context.Context, path string, opts ...Option) (rag.Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return rag.Document{}, fmt.Errorf("loader: %w", err)
	}
	defer f.Close()
	return New(opts...).Load(ctx, path, f)
}

// Load reads r, named name (a file name or path, whose extension guides the
// choice of format), into a document. The document's ID is
// [rag.DocumentID](name); its Source is name and its Name the base name.
func (l *Loader) Load(ctx context.Context, name string, r io.Reader) (rag.Document, error) {
	data, err := l.read(ctx, r)
	if err != nil {
		return rag.Document{}, &Error{Name: name, Err: err}
	}
	f := l.format
	if f == "" {
		if f, err = detect(name, data); err != nil {
			return rag.Document{}, &Error{Name: name, Err: err}
		}
	}
	doc, err := l.parse(ctx, f, data)
	switch {
	case err != nil:
	case len(doc.Text) > l.maxText:
		err = fmt.Errorf("%w: over %s of text (raise it with loader.WithMaxText)", ErrTooLarge, byteSize(int64(l.maxText)))
	case strings.TrimSpace(doc.Text) == "":
		err = rag.ErrEmptyDocument
	}
	if err != nil {
		return rag.Document{}, &Error{Name: name, Format: f, Err: err}
	}
	doc.ID = rag.DocumentID(name)
	doc.Name = baseName(name)
	doc.Source = name
	doc.MIMEType = f.MIMEType()
	if doc.Metadata == nil {
		doc.Metadata = map[string]string{}
	}
	doc.Metadata["format"] = string(f)
	return doc, nil
}

// baseName returns the last element of a slash or OS path, or of a URL path.
func baseName(name string) string {
	if i := strings.IndexAny(name, "?#"); i > 0 && strings.Contains(name, "://") {
		name = name[:i]
	}
	b := path.Base(filepath.ToSlash(name))
	if b == "." || b == "/" {
		return name
	}
	return b
}

func (l *Loader) parse(ctx context.Context, f Format, data []byte) (rag.Document, error) {
	switch f {
	case Text:
		return loadText(data)
	case Markdown:
		return loadMarkdown(data)
	case HTML:
		return loadHTML(data)
	case PDF:
		return l.loadPDF(ctx, data)
	case DOCX:
		if l.parseTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, l.parseTimeout)
			defer cancel()
		}
		return l.loadDOCX(ctx, data)
	case CSV:
		return loadCSV(data)
	case JSON:
		return loadJSON(data)
	}
	return rag.Document{}, fmt.Errorf("%w: %q", ErrUnsupported, f)
}

// read reads all of r, up to the size limit, checking ctx between reads.
func (l *Loader) read(ctx context.Context, r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	lr := io.LimitReader(r, l.maxSize+1)
	chunk := make([]byte, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := lr.Read(chunk)
		buf.Write(chunk[:n])
		if int64(buf.Len()) > l.maxSize {
			return nil, fmt.Errorf("%w: over the %s limit (raise it with loader.WithMaxSize)", ErrTooLarge, byteSize(l.maxSize))
		}
		if err == io.EOF {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
	}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d-byte", n)
}

// extensions maps file extensions to formats.
var extensions = map[string]Format{
	".txt": Text, ".text": Text, ".log": Text, ".rst": Text, ".adoc": Text,
	".md": Markdown, ".markdown": Markdown, ".mdown": Markdown, ".mkd": Markdown, ".mdx": Markdown,
	".html": HTML, ".htm": HTML, ".xhtml": HTML,
	".pdf":  PDF,
	".docx": DOCX,
	".csv":  CSV, ".tsv": CSV,
	".json": JSON, ".jsonl": JSON, ".ndjson": JSON,
}

// detect chooses the format from the extension of name, checked against the
// content's magic numbers, or by sniffing when the extension is unknown.
func detect(name string, data []byte) (Format, error) {
	if len(data) == 0 {
		return "", rag.ErrEmptyDocument
	}
	sniffed, why := sniff(data)
	ext := strings.ToLower(path.Ext(baseName(name)))
	if f, ok := extensions[ext]; ok {
		switch {
		case f == PDF || f == DOCX:
			if sniffed != f {
				return "", fmt.Errorf("%w: the content is not %s (it starts with %q)", ErrCorrupt, strings.ToUpper(string(f)), prefix(data))
			}
		case sniffed == PDF || sniffed == DOCX:
			return "", fmt.Errorf("%w: a %s file holds %s data", ErrBinary, ext, strings.ToUpper(string(sniffed)))
		case why != nil:
			return "", why
		}
		return f, nil
	}
	switch {
	case why != nil:
		return "", fmt.Errorf("%w: %v; name the file with a supported extension if this is wrong", ErrUnsupported, why)
	case sniffed == "":
		return Text, nil
	}
	return sniffed, nil
}

func prefix(data []byte) string {
	if len(data) > 8 {
		data = data[:8]
	}
	return string(data)
}

// sniff recognises a format from the content: PDF and DOCX by magic number,
// HTML and JSON; "" means plain text. A non-nil error says why the content
// is not text (and wraps ErrBinary).
func sniff(data []byte) (Format, error) {
	switch {
	case bytes.HasPrefix(data, []byte("%PDF-")):
		return PDF, nil
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		if bytes.Contains(data, []byte("word/document.xml")) {
			return DOCX, nil
		}
		return "", fmt.Errorf("%w: a zip archive that is not a Word document", ErrBinary)
	}
	if _, err := decodeText(data); err != nil {
		return "", err
	}
	ct := http.DetectContentType(data)
	switch {
	case strings.HasPrefix(ct, "text/html"):
		return HTML, nil
	case strings.HasPrefix(ct, "text/plain"):
		t := bytes.TrimSpace(data)
		if len(t) > 0 && (t[0] == '{' || t[0] == '[') && isJSON(t) {
			return JSON, nil
		}
		return "", nil
	case strings.HasPrefix(ct, "text/"), ct == "application/json":
		return "", nil
	}
	return "", fmt.Errorf("%w: content type %s", ErrBinary, ct)
}
