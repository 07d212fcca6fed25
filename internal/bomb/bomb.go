// Package bomb builds hostile documents for tests of the loaders' limits:
// small files that decompress to far more than they weigh, nest without
// end or declare absurd sizes. They are written programmatically, so no
// bomb is stored in the repository.
package bomb

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"fmt"
	"io"
	"strings"
)

// repeat writes n bytes of pattern, repeated, to w.
func repeat(w io.Writer, pattern string, n int64) {
	chunk := []byte(strings.Repeat(pattern, max(1, 64<<10/len(pattern))))
	for n > 0 {
		k := min(int64(len(chunk)), n)
		if _, err := w.Write(chunk[:k]); err != nil {
			panic(err)
		}
		n -= k
	}
}

// zlibOf compresses n bytes of pattern at the best ratio.
func zlibOf(pattern string, n int64) []byte {
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	repeat(zw, pattern, n)
	zw.Close()
	return b.Bytes()
}

// PDF writes a one-page PDF whose objects are given as their dictionaries
// (and streams): objs[0] is the catalog's page tree. It computes the
// cross-reference table.
func pdf(objs []string, trailer string) []byte {
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
	if trailer == "" {
		trailer = fmt.Sprintf("/Size %d", len(objs)+1)
	}
	fmt.Fprintf(&b, "trailer\n<< %s /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", trailer, xref)
	return b.Bytes()
}

// PDFFlate is a one-page PDF whose content stream (FlateDecode) inflates
// to n bytes of drawing operators: a few hundred KiB per GiB.
func PDFFlate(n int64) []byte {
	z := zlibOf("0 0 m ", n)
	return pdf([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", len(z), z),
	}, "")
}

// PDFText is a one-page PDF whose content stream (FlateDecode) shows n
// bytes of text: a text bomb rather than a stream bomb.
func PDFText(n int64) []byte {
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	io.WriteString(zw, "BT /F1 12 Tf 72 720 Td (")
	repeat(zw, "A", n)
	io.WriteString(zw, ") Tj ET")
	zw.Close()
	z := b.Bytes()
	return pdf([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", len(z), z),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}, "")
}

// PDFGlyphs is a one-page PDF whose content stream (FlateDecode) shows n
// bytes of text in strings of 64 KiB, each under the loaders' token limit:
// text within the limits, a few KiB that show a glyph per byte, costly to a
// parser that keeps a record per glyph.
func PDFGlyphs(n int64) []byte {
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	io.WriteString(zw, "BT /F1 12 Tf 72 720 Td ")
	for n > 0 {
		k := min(n, 64<<10)
		io.WriteString(zw, "(")
		repeat(zw, "A", k)
		io.WriteString(zw, ") Tj\n")
		n -= k
	}
	io.WriteString(zw, "ET")
	zw.Close()
	z := b.Bytes()
	return pdf([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", len(z), z),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}, "")
}

// PDFOperands is a one-page PDF whose content stream piles n bytes of
// numbers on the interpreter's stack without an operator.
func PDFOperands(n int64) []byte {
	z := zlibOf("1 ", n)
	return pdf([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", len(z), z),
	}, "")
}

// PDFObjects is a PDF that declares n objects in its trailer: the parser
// would allocate a table entry for each.
func PDFObjects(n int64) []byte {
	return pdf([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [] /Count 0 >>",
	}, fmt.Sprintf("/Size %d", n))
}

// DOCXPart is a DOCX whose word/document.xml inflates to n bytes: a
// paragraph of text repeated.
func DOCXPart(n int64) []byte {
	const head = `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`
	return docx(func(w io.Writer) {
		io.WriteString(w, head)
		repeat(w, "<w:p><w:r><w:t>bomb bomb bomb bomb</w:t></w:r></w:p>", n)
		io.WriteString(w, "</w:body></w:document>")
	})
}

// DOCXEmpty is a DOCX whose word/document.xml inflates to n bytes of empty
// paragraphs: a bomb that yields no text, only parsing work.
func DOCXEmpty(n int64) []byte {
	return docx(func(w io.Writer) {
		io.WriteString(w, `<w:document xmlns:w="w"><w:body>`)
		repeat(w, "<w:p/>", n)
		io.WriteString(w, "</w:body></w:document>")
	})
}

// DOCXToken is a DOCX whose document holds one text node of n bytes.
func DOCXToken(n int64) []byte {
	return docx(func(w io.Writer) {
		io.WriteString(w, `<w:document xmlns:w="w"><w:body><w:p><w:r><w:t>`)
		repeat(w, "x", n)
		io.WriteString(w, "</w:t></w:r></w:p></w:body></w:document>")
	})
}

// DOCXDeep is a DOCX whose document nests depth elements.
func DOCXDeep(depth int) []byte {
	return docx(func(w io.Writer) {
		io.WriteString(w, `<w:document xmlns:w="w"><w:body>`)
		repeat(w, "<w:p>", int64(depth)*5)
		io.WriteString(w, "<w:r><w:t>deep</w:t></w:r>")
		repeat(w, "</w:p>", int64(depth)*6)
		io.WriteString(w, "</w:body></w:document>")
	})
}

// DOCXEntries is a valid DOCX with n extra (empty) zip entries.
func DOCXEntries(n int) []byte {
	return docxWith(func(w io.Writer) {
		io.WriteString(w, `<w:document xmlns:w="w"><w:body><w:p><w:r><w:t>hi</w:t></w:r></w:p></w:body></w:document>`)
	}, n)
}

func docx(document func(io.Writer)) []byte { return docxWith(document, 0) }

func docxWith(document func(io.Writer), extra int) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.DefaultCompression)
	})
	w, _ := zw.Create("[Content_Types].xml")
	io.WriteString(w, `<?xml version="1.0"?><Types/>`)
	w, _ = zw.Create("word/document.xml")
	document(w)
	for i := range extra {
		zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("x/%d", i), Method: zip.Store})
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}
