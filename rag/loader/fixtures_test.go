package loader

import (
	"archive/zip"
	"bytes"
	"fmt"
	"strings"
)

// makePDF writes a minimal valid PDF: one page per element of pages, each
// line of a page drawn 14 points below the one before in Helvetica 12.
func makePDF(title string, pages ...string) []byte {
	var objs []string
	add := func(s string) int { objs = append(objs, s); return len(objs) }
	catalog := add("") // filled below, once the page tree number is known
	tree := add("")
	font := add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	var kids []string
	for _, p := range pages {
		var content strings.Builder
		content.WriteString("BT /F1 12 Tf 72 720 Td")
		for i, line := range strings.Split(p, "\n") {
			if i > 0 {
				content.WriteString(" 0 -14 Td")
			}
			fmt.Fprintf(&content, " (%s) Tj", pdfEscape(line))
		}
		content.WriteString(" ET")
		c := add(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", content.Len(), content.String()))
		page := add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>", tree, font, c))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	objs[catalog-1] = fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree)
	objs[tree-1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids))
	info := add(fmt.Sprintf("<< /Title (%s) /Producer (weft test) >>", pdfEscape(title)))

	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, catalog, info, xref)
	return b.Bytes()
}

func pdfEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`).Replace(s)
}

// docxBody is a word/document.xml body, written with the w: prefix.
type docxPara struct {
	style string // pStyle value, "" for none
	list  bool
	text  string
}

// makeDOCX writes a minimal DOCX: paragraphs (with styles and list
// numbering), then a table of rows, plus core properties with a title.
func makeDOCX(title string, paras []docxPara, table [][]string) []byte {
	var body strings.Builder
	for _, p := range paras {
		body.WriteString("<w:p>")
		if p.style != "" || p.list {
			body.WriteString("<w:pPr>")
			if p.style != "" {
				fmt.Fprintf(&body, `<w:pStyle w:val="%s"/>`, p.style)
			}
			if p.list {
				body.WriteString(`<w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>`)
			}
			body.WriteString("</w:pPr>")
		}
		for i, part := range strings.Split(p.text, "\t") {
			if i > 0 {
				body.WriteString("<w:r><w:tab/></w:r>")
			}
			fmt.Fprintf(&body, `<w:r><w:t xml:space="preserve">%s</w:t></w:r>`, xmlEscape(part))
		}
		body.WriteString(`<w:r><w:delText>deleted words</w:delText></w:r></w:p>`)
	}
	if len(table) > 0 {
		body.WriteString("<w:tbl>")
		for _, row := range table {
			body.WriteString("<w:tr>")
			for _, cell := range row {
				fmt.Fprintf(&body, "<w:tc><w:p><w:r><w:t>%s</w:t></w:r></w:p></w:tc>", xmlEscape(cell))
			}
			body.WriteString("</w:tr>")
		}
		body.WriteString("</w:tbl>")
	}
	files := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`,
		"word/document.xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` +
			`<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` +
			body.String() + `</w:body></w:document>`,
		"word/styles.xml": `<?xml version="1.0"?><w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">` +
			`<w:style w:type="paragraph" w:styleId="Titre1"><w:name w:val="heading 1"/></w:style>` +
			`<w:style w:type="paragraph" w:styleId="Custom"><w:name w:val="My Section"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>` +
			`</w:styles>`,
		"docProps/core.xml": `<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">` +
			`<dc:title>` + xmlEscape(title) + `</dc:title><dc:creator>Ann</dc:creator></cp:coreProperties>`,
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range []string{"[Content_Types].xml", "word/document.xml", "word/styles.xml", "docProps/core.xml"} {
		w, err := zw.Create(name)
		if err != nil {
			panic(err)
		}
		if _, err := w.Write([]byte(files[name])); err != nil {
			panic(err)
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
