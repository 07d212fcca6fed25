package rag

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"strconv"
)

// Metadata keys that loaders and splitters set and that every [Chunk]
// carries where they apply.
const (
	// MetaSource is where the document came from (a path, a URL, an upload
	// name), copied from [Document.Source].
	MetaSource = "source"
	// MetaName is the document's display name, copied from [Document.Name].
	MetaName = "name"
	// MetaTitle is the document's title (front matter, first heading, HTML
	// <title>, PDF /Title).
	MetaTitle = "title"
	// MetaHeadings is the heading path of the section a chunk belongs to,
	// outermost first, joined with " > " (for example "Install > Linux").
	MetaHeadings = "headings"
	// MetaPage is the 1-based page on which a chunk starts, for paged
	// formats such as PDF.
	MetaPage = "page"
	// MetaPageEnd is the 1-based page on which a chunk ends, set only when
	// it differs from [MetaPage].
	MetaPageEnd = "page_end"
	// MetaDocumentID is the ID of the document a chunk belongs to; indexes
	// store it so that searches can be filtered by document.
	MetaDocumentID = "document_id"
)

// HeadingSeparator joins the headings of a [MetaHeadings] path.
const HeadingSeparator = " > "

// ErrEmptyDocument reports a document with no text to index (an empty file,
// a scanned PDF without a text layer, whitespace only).
var ErrEmptyDocument = errors.New("rag: empty document: no text to index")

// Document is a loaded document: plain text (Markdown-structured for formats
// that have headings) plus what is known about where it came from.
type Document struct {
	// ID identifies the document across ingestions; re-ingesting a document
	// with the same ID replaces its chunks. [DocumentID] derives one from a
	// name when the caller has none.
	ID string `json:"id"`
	// Name is the display name (usually the file name).
	Name string `json:"name,omitempty"`
	// Source says where the document came from (a path or URL).
	Source string `json:"source,omitempty"`
	// MIMEType is the media type of the original content ("text/markdown",
	// "application/pdf", …). Loaders that render structure as Markdown
	// (Markdown, HTML, DOCX) leave a Text that the Markdown splitter
	// understands.
	MIMEType string `json:"mime_type,omitempty"`
	// Text is the extracted text, valid UTF-8.
	Text string `json:"text"`
	// Pages holds, for paged formats such as PDF, the byte offset in Text at
	// which each page begins: page n (1-based) starts at Pages[n-1]. It is
	// nil for formats without pages.
	Pages []int `json:"pages,omitempty"`
	// Metadata holds document-level metadata (title, author, …), copied to
	// every chunk.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// PageAt returns the 1-based page that holds the byte at offset, or 0 when
// the document has no pages.
func (d *Document) PageAt(offset int) int {
	page := 0
	for i, start := range d.Pages {
		if start > offset {
			break
		}
		page = i + 1
	}
	return page
}

// Chunk is a piece of a document sized for embedding and retrieval.
type Chunk struct {
	// ID is deterministic: a hash of the document ID, the chunk's index and
	// its text, so re-ingesting unchanged content yields the same IDs.
	ID string `json:"id"`
	// DocumentID is the ID of the document the chunk was cut from.
	DocumentID string `json:"document_id"`
	// Index is the chunk's position among its document's chunks, from 0.
	Index int `json:"index"`
	// Text is the chunk's content: Document.Text[Start:End].
	Text string `json:"text"`
	// Start and End are the byte offsets of Text in the document's text.
	// Consecutive chunks overlap when the splitter is configured to.
	Start int `json:"start"`
	End   int `json:"end"`
	// Tokens is the size of Text as the splitter's token counter measured it.
	Tokens int `json:"tokens"`
	// Metadata holds the document's metadata plus the chunk's own: source,
	// name, title, headings and page where they apply (see the Meta*
	// constants).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// ChunkID returns the deterministic ID of the chunk at index in document
// docID with the given text.
func ChunkID(docID string, index int, text string) string {
	h := sha256.New()
	h.Write([]byte(docID))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(index), 10))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// DocumentID derives a stable document ID from a name (a path, a URL): the
// same name always gives the same ID, so re-ingesting a changed file
// replaces its old chunks.
func DocumentID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "doc_" + hex.EncodeToString(sum[:12])
}

// chunkMetadata builds the metadata every chunk of doc carries, before its
// own headings and page are added.
func chunkMetadata(doc *Document) map[string]string {
	m := make(map[string]string, len(doc.Metadata)+5)
	maps.Copy(m, doc.Metadata)
	if doc.Source != "" {
		m[MetaSource] = doc.Source
	}
	if doc.Name != "" {
		m[MetaName] = doc.Name
	}
	if doc.ID != "" {
		m[MetaDocumentID] = doc.ID
	}
	return m
}
