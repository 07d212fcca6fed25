package loader

import (
	"archive/zip"
	"bytes"
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

// maxXMLPart bounds the decompressed size of one part of a DOCX archive
// (a defence against zip bombs).
const maxXMLPart = 256 << 20

func loadDOCX(data []byte) (rag.Document, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return rag.Document{}, fmt.Errorf("%w: not a valid zip archive: %v", ErrCorrupt, err)
	}
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
		if b, err := readPart(f); err == nil {
			levels = headingStyles(b)
		}
	}
	body, err := readPart(doc)
	if err != nil {
		return rag.Document{}, err
	}
	w := docxWriter{levels: levels}
	if err := w.render(body); err != nil {
		return rag.Document{}, err
	}
	meta := map[string]string{}
	if f, ok := parts["docProps/core.xml"]; ok {
		if b, err := readPart(f); err == nil {
			coreProperties(b, meta)
		}
	}
	if meta[rag.MetaTitle] == "" && w.title != "" {
		meta[rag.MetaTitle] = w.title
	}
	return rag.Document{Text: strings.TrimSpace(w.b.String()) + "\n", Metadata: meta}, nil
}

func readPart(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxXMLPart+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, f.Name, err)
	}
	if len(b) > maxXMLPart {
		return nil, fmt.Errorf("%w: %s expands to over %d MiB", ErrTooLarge, f.Name, maxXMLPart>>20)
	}
	return b, nil
}

// headingStyles maps style IDs to heading levels, from the style names in
// word/styles.xml ("heading 1", "Title") and their outline levels: style
// IDs are localised ("Titre1", "berschrift1"), names and outline levels are
// not.
func headingStyles(data []byte) map[string]int {
	levels := map[string]int{}
	d := xml.NewDecoder(bytes.NewReader(data))
	var id string
	for {
		tok, err := d.Token()
		if err != nil {
			return levels
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
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
	}
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
func coreProperties(data []byte, meta map[string]string) {
	var core struct {
		Title   string `xml:"title"`
		Creator string `xml:"creator"`
	}
	if xml.Unmarshal(data, &core) != nil {
		return
	}
	if t := strings.TrimSpace(core.Title); t != "" {
		meta[rag.MetaTitle] = t
	}
	if c := strings.TrimSpace(core.Creator); c != "" {
		meta["author"] = c
	}
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
	levels map[string]int
	b      strings.Builder
	title  string

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

func (w *docxWriter) render(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: word/document.xml: %v", ErrCorrupt, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			w.start(t)
		case xml.EndElement:
			w.end(t)
		case xml.CharData:
			if w.inText && w.skip == 0 {
				w.para.Write(t)
			}
		}
	}
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
