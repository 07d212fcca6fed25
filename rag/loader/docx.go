package loader

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/weftlabs/weft/rag"
)

// DOCX is read by hand with archive/zip and encoding/xml: the text, the
// heading styles, list paragraphs and tables of word/document.xml are all
// that retrieval needs, and the Go libraries that read Word files are
// either heavy, unmaintained or commercially licensed.

// maxZipEntries bounds the entries of a DOCX archive (Word writes a few
// dozen); more fail before archive/zip reads its directory.
const maxZipEntries = 4096

// docxReader reads the parts of one DOCX within the loader's limits.
type docxReader struct {
	ctx    context.Context
	l      *Loader
	budget *budget // decompressed bytes, shared by every part
}

func (l *Loader) loadDOCX(ctx context.Context, data []byte) (rag.Document, error) {
	if err := checkZipEntries(data); err != nil {
		return rag.Document{}, err
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return rag.Document{}, fmt.Errorf("%w: not a valid zip archive: %v", ErrCorrupt, err)
	}
	r := &docxReader{ctx: ctx, l: l, budget: newBudget(l.maxDecompressed)}
	parts := map[string]*zip.File{}
	for _, f := range zr.File {
		parts[f.Name] = f
	}
	doc, ok := parts["word/document.xml"]
	if !ok {
		return rag.Document{}, fmt.Errorf("%w: no word/document.xml: not a Word document", ErrCorrupt)
	}
	levels := map[string]int{}
	if f, ok := parts["word/styles.xml"]; ok {
		err := r.part(f, func(d *xml.Decoder) error {
			levels, err = headingStyles(d, l.maxXMLDepth)
			return err
		})
		if isLimit(err) {
			return rag.Document{}, err
		}
	}
	w := docxWriter{levels: levels, maxText: l.maxText, maxDepth: l.maxXMLDepth}
	if err := r.part(doc, w.render); err != nil {
		return rag.Document{}, err
	}
	meta := map[string]string{}
	if f, ok := parts["docProps/core.xml"]; ok {
		err := r.part(f, func(d *xml.Decoder) error { return coreProperties(d, meta) })
		if isLimit(err) {
			return rag.Document{}, err
		}
	}
	if meta[rag.MetaTitle] == "" && w.title != "" {
		meta[rag.MetaTitle] = w.title
	}
	return rag.Document{Text: strings.TrimSpace(w.b.String()) + "\n", Metadata: meta}, nil
}

// part decodes one part of the archive with read, streaming it from the
// zip entry through the decompression budget and the XML token bound.
func (r *docxReader) part(f *zip.File, read func(*xml.Decoder) error) error {
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, f.Name, err)
	}
	defer rc.Close()
	d := xml.NewDecoder(&xmlTokenReader{r: &boundedReader{ctx: r.ctx, r: rc, b: r.budget}})
	if err := read(d); err != nil {
		if isLimit(err) {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, f.Name, err)
	}
	return nil
}

// checkZipEntries reads the entry count from the end of central directory
// record and refuses archives with too many entries, or in ZIP64 form
// (no Word document needs it), before archive/zip allocates a record per
// entry.
func checkZipEntries(data []byte) error {
	const eocdLen = 22
	tail := data[max(0, len(data)-(eocdLen+65535)):]
	i := bytes.LastIndex(tail, []byte("PK\x05\x06"))
	if i < 0 || len(tail)-i < eocdLen {
		return fmt.Errorf("%w: not a valid zip archive: no end of central directory", ErrCorrupt)
	}
	n := int(binary.LittleEndian.Uint16(tail[i+10:]))
	if n == 0xFFFF || bytes.Contains(tail[max(0, i-20):i], []byte("PK\x06\x07")) {
		return fmt.Errorf("%w: a ZIP64 archive (a Word document has a few dozen parts)", ErrTooLarge)
	}
	if n > maxZipEntries {
		return fmt.Errorf("%w: %d zip entries, over the limit of %d", ErrTooLarge, n, maxZipEntries)
	}
	return nil
}

// tokens reads a decoder's tokens, failing when elements nest deeper than
// maxDepth.
func tokens(d *xml.Decoder, maxDepth int, f func(xml.Token) error) error {
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// encoding/xml wraps the reader's error in text only when it is
			// a syntax error; a limit comes back as is.
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth++; depth > maxDepth {
				return fmt.Errorf("%w: XML nested over %d levels deep (raise it with loader.WithMaxXMLDepth)", ErrTooLarge, maxDepth)
			}
		case xml.EndElement:
			depth--
		}
		if err := f(tok); err != nil {
			return err
		}
	}
}

// headingStyles maps style IDs to heading levels, from the style names in
// word/styles.xml ("heading 1", "Title") and their outline levels: style
// IDs are localised ("Titre1", "berschrift1"), names and outline levels are
// not.
func headingStyles(d *xml.Decoder, maxDepth int) (map[string]int, error) {
	levels := map[string]int{}
	var id string
	err := tokens(d, maxDepth, func(tok xml.Token) error {
		se, ok := tok.(xml.StartElement)
		if !ok {
			return nil
		}
		switch se.Name.Local {
		case "style":
			id = xmlAttr(se, "styleId")
		case "name":
			if id != "" {
				if l := headingLevelOf(xmlAttr(se, "val")); l > 0 {
					levels[id] = l
				}
			}
		case "outlineLvl":
			if n, err := strconv.Atoi(xmlAttr(se, "val")); err == nil && id != "" && n >= 0 && n < 9 {
				if _, ok := levels[id]; !ok {
					levels[id] = n + 1
				}
			}
		}
		return nil
	})
	return levels, err
}

// headingLevelOf reads a heading level from a style name or ID: "heading 2",
// "Heading2", "Title" (level 1).
func headingLevelOf(name string) int {
	n := strings.ToLower(strings.ReplaceAll(name, " ", ""))
	if n == "title" {
		return 1
	}
	if rest, ok := strings.CutPrefix(n, "heading"); ok {
		if l, err := strconv.Atoi(rest); err == nil && l >= 1 && l <= 9 {
			return min(l, 6)
		}
	}
	return 0
}

// coreProperties reads dc:title and dc:creator from docProps/core.xml.
func coreProperties(d *xml.Decoder, meta map[string]string) error {
	var core struct {
		Title   string `xml:"title"`
		Creator string `xml:"creator"`
	}
	if err := d.Decode(&core); err != nil {
		return err
	}
	if t := strings.TrimSpace(core.Title); t != "" {
		meta[rag.MetaTitle] = t
	}
	if c := strings.TrimSpace(core.Creator); c != "" {
		meta["author"] = c
	}
	return nil
}

func xmlAttr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// docxWriter renders word/document.xml as Markdown-structured text.
type docxWriter struct {
	levels   map[string]int
	maxText  int
	maxDepth int
	b        strings.Builder
	title    string
	text     int // bytes of text taken in so far

	para    strings.Builder // the paragraph being read
	style   string
	outline int // outline level from the paragraph's own properties, +1
	list    bool
	inText  bool // inside <w:t>
	skip    int  // depth inside deleted text, field codes and the like

	tables []*docxTable
}

type docxTable struct {
	row   []string
	rows  int
	cell  strings.Builder
	cells bool // inside a cell
}

func (w *docxWriter) render(d *xml.Decoder) error {
	return tokens(d, w.maxDepth, func(tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			w.start(t)
		case xml.EndElement:
			if t.Name.Local == "tc" || t.Name.Local == "tr" {
				// Cells and rows cost markup even when empty.
				if w.text += 4; w.text > w.maxText {
					return fmt.Errorf("%w: over %s of text (raise it with loader.WithMaxText)", ErrTooLarge, byteSize(int64(w.maxText)))
				}
			}
			w.end(t)
		case xml.CharData:
			if w.inText && w.skip == 0 {
				// Every byte of text is counted once as it comes in; the
				// output adds a bounded amount of markup per paragraph,
				// row and cell to it.
				if w.text += len(t); w.text > w.maxText {
					return fmt.Errorf("%w: over %s of text (raise it with loader.WithMaxText)", ErrTooLarge, byteSize(int64(w.maxText)))
				}
				w.para.Write(t)
			}
		}
		return nil
	})
}

func (w *docxWriter) start(se xml.StartElement) {
	switch se.Name.Local {
	case "delText", "instrText", "fldData", "footnoteReference":
		w.skip++
	case "p":
		w.para.Reset()
		w.style, w.outline, w.list = "", 0, false
	case "pStyle":
		w.style = xmlAttr(se, "val")
	case "outlineLvl":
		if n, err := strconv.Atoi(xmlAttr(se, "val")); err == nil && n >= 0 && n < 9 {
			w.outline = n + 1
		}
	case "numPr":
		w.list = true
	case "t":
		w.inText = true
	case "tab":
		if w.skip == 0 {
			w.para.WriteByte('\t')
		}
	case "br", "cr":
		if w.skip == 0 {
			w.para.WriteByte('\n')
		}
	case "tbl":
		w.blankLine()
		w.tables = append(w.tables, &docxTable{})
	case "tr":
		if t := w.table(); t != nil {
			t.row = t.row[:0]
		}
	case "tc":
		if t := w.table(); t != nil {
			t.cell.Reset()
			t.cells = true
		}
	}
}

func (w *docxWriter) end(ee xml.EndElement) {
	switch ee.Name.Local {
	case "delText", "instrText", "fldData", "footnoteReference":
		w.skip--
	case "t":
		w.inText = false
	case "p":
		w.paragraph()
	case "tc":
		if t := w.table(); t != nil {
			t.row = append(t.row, strings.Join(strings.Fields(t.cell.String()), " "))
			t.cells = false
		}
	case "tr":
		if t := w.table(); t != nil && len(t.row) > 0 {
			line := "| " + strings.Join(t.row, " | ") + " |"
			if outer := w.outer(); outer != nil {
				outer.cell.WriteString(" " + line + " ")
			} else {
				w.b.WriteString(line + "\n")
				if t.rows == 0 {
					w.b.WriteString(strings.Repeat("|---", len(t.row)) + "|\n")
				}
			}
			t.rows++
		}
	case "tbl":
		if len(w.tables) > 0 {
			w.tables = w.tables[:len(w.tables)-1]
		}
		if len(w.tables) == 0 {
			w.b.WriteString("\n")
		}
	}
}

// table returns the innermost open table, or nil.
func (w *docxWriter) table() *docxTable {
	if len(w.tables) == 0 {
		return nil
	}
	return w.tables[len(w.tables)-1]
}

// outer returns the table that encloses the innermost one, or nil.
func (w *docxWriter) outer() *docxTable {
	if len(w.tables) < 2 {
		return nil
	}
	return w.tables[len(w.tables)-2]
}

// paragraph writes the finished paragraph: into the current table cell, or
// as a heading, list item or plain paragraph.
func (w *docxWriter) paragraph() {
	text := strings.TrimSpace(w.para.String())
	w.para.Reset()
	if t := w.table(); t != nil && t.cells {
		if text != "" {
			if t.cell.Len() > 0 {
				t.cell.WriteByte(' ')
			}
			t.cell.WriteString(text)
		}
		return
	}
	if text == "" {
		return
	}
	level := w.levels[w.style]
	if level == 0 {
		level = headingLevelOf(w.style)
	}
	if level == 0 {
		level = w.outline
	}
	switch {
	case level > 0:
		heading := strings.Join(strings.Fields(text), " ")
		if w.title == "" {
			w.title = heading
		}
		w.blankLine()
		w.b.WriteString(strings.Repeat("#", min(level, 6)) + " " + heading + "\n\n")
	case w.list:
		w.b.WriteString("- " + strings.ReplaceAll(text, "\n", " ") + "\n")
	default:
		w.blankLine()
		w.b.WriteString(text + "\n\n")
	}
}

// blankLine makes sure the output ends with a blank line before a block
// that needs one (after a run of list items or table rows).
func (w *docxWriter) blankLine() {
	s := w.b.String()
	if s != "" && !strings.HasSuffix(s, "\n\n") {
		w.b.WriteString("\n")
	}
}
