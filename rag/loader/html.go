package loader

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/weftlabs/weft/rag"
)

// skipped are elements whose content is not document text.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Nav: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Iframe: true, atom.Object: true, atom.Embed: true,
	atom.Canvas: true, atom.Title: true, atom.Select: true, atom.Button: true, atom.Input: true,
	atom.Textarea: true, atom.Audio: true, atom.Video: true,
}

// blocks are elements that start and end a paragraph.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Blockquote: true, atom.Figure: true,
	atom.Figcaption: true, atom.Address: true, atom.Details: true, atom.Summary: true, atom.Dl: true,
	atom.Dt: true, atom.Dd: true, atom.Form: true, atom.Fieldset: true, atom.Hr: true, atom.Table: true,
	atom.Caption: true, atom.Body: true, atom.Center: true,
}

var headingLevel = map[atom.Atom]int{atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6}

// loadHTML renders HTML as Markdown-structured text: headings as "#" lines,
// paragraphs separated by blank lines, list items as "-" or "1." lines,
// table rows as "| a | b |" lines, preformatted text in code fences. Scripts,
// styles, navigation and form controls are dropped. The title comes from
// <title>, else the first <h1>.
func loadHTML(data []byte) (rag.Document, error) {
	s, err := decodeText(data)
	if err != nil {
		return rag.Document{}, err
	}
	root, err := html.Parse(strings.NewReader(s))
	if err != nil {
		return rag.Document{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	w := &htmlWriter{}
	w.walk(root)
	meta := map[string]string{}
	title := w.title
	if title == "" {
		title = w.firstH1
	}
	if title != "" {
		meta[rag.MetaTitle] = title
	}
	if w.lang != "" {
		meta["lang"] = w.lang
	}
	return rag.Document{Text: strings.TrimSpace(w.b.String()) + "\n", Metadata: meta}, nil
}

type htmlList struct {
	ordered bool
	n       int
}

// htmlWriter renders a parsed HTML tree as text.
type htmlWriter struct {
	b        bytes.Buffer
	space    bool // a space is due before the next word
	pre      int  // depth of <pre> elements
	cell     int  // depth of table cells: blocks inside become spaces
	lists    []htmlList
	rowCells []int // cells written in the current row, per open table
	heading  *bytes.Buffer
	title    string
	firstH1  string
	lang     string
}

// walk visits the tree in document order without recursion (deeply nested
// markup must not exhaust the stack), calling enter and leave per node.
func (w *htmlWriter) walk(root *html.Node) {
	n := root
	for n != nil {
		descend := w.enter(n)
		if descend && n.FirstChild != nil {
			n = n.FirstChild
			continue
		}
		if descend {
			w.leave(n)
		}
		for n != root && n.NextSibling == nil {
			n = n.Parent
			w.leave(n)
		}
		if n == root {
			return
		}
		n = n.NextSibling
	}
}

// enter handles the start of a node and reports whether to visit its
// children (and later call leave).
func (w *htmlWriter) enter(n *html.Node) bool {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return false
	case html.DocumentNode:
		return true
	case html.ElementNode:
	default:
		return false
	}
	switch a := n.DataAtom; {
	case a == atom.Html:
		w.lang = attr(n, "lang")
	case a == atom.Head:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.DataAtom == atom.Title && w.title == "" {
				w.title = collapse(textContent(c))
			}
		}
		return false
	case skipped[a]:
		return false
	case headingLevel[a] > 0:
		w.breakLines(2)
		w.b.WriteString(strings.Repeat("#", headingLevel[a]) + " ")
		w.space = false
		w.heading = &bytes.Buffer{}
	case a == atom.Pre:
		w.breakLines(2)
		w.b.WriteString("```\n")
		w.pre++
	case a == atom.Br:
		if w.cell > 0 {
			w.space = true
		} else {
			w.breakLines(1)
		}
	case a == atom.Ul || a == atom.Ol:
		w.breakLines(1)
		w.lists = append(w.lists, htmlList{ordered: a == atom.Ol})
	case a == atom.Li:
		w.breakLines(1)
		depth := max(len(w.lists), 1)
		w.b.WriteString(strings.Repeat("  ", depth-1))
		if len(w.lists) > 0 && w.lists[len(w.lists)-1].ordered {
			l := &w.lists[len(w.lists)-1]
			l.n++
			w.b.WriteString(strconv.Itoa(l.n) + ". ")
		} else {
			w.b.WriteString("- ")
		}
		w.space = false
	case a == atom.Table:
		w.breakLines(2)
		w.rowCells = append(w.rowCells, 0)
	case a == atom.Tr:
		w.breakLines(1)
		if len(w.rowCells) > 0 {
			w.rowCells[len(w.rowCells)-1] = 0
		}
	case a == atom.Td || a == atom.Th:
		w.b.WriteString("| ")
		w.space = false
		w.cell++
		if len(w.rowCells) > 0 {
			w.rowCells[len(w.rowCells)-1]++
		}
	case a == atom.Img:
		if alt := collapse(attr(n, "alt")); alt != "" {
			w.text(alt)
		}
		return false
	case blocks[a]:
		w.breakLines(2)
	}
	return true
}

// leave handles the end of an element whose children were visited.
func (w *htmlWriter) leave(n *html.Node) {
	if n.Type != html.ElementNode {
		return
	}
	switch a := n.DataAtom; {
	case headingLevel[a] > 0:
		if w.heading != nil {
			h := collapse(w.heading.String())
			if a == atom.H1 && w.firstH1 == "" {
				w.firstH1 = h
			}
			w.heading = nil
		}
		w.breakLines(2)
	case a == atom.Pre:
		w.pre--
		w.breakLines(1)
		w.b.WriteString("```")
		w.breakLines(2)
	case a == atom.Ul || a == atom.Ol:
		if len(w.lists) > 0 {
			w.lists = w.lists[:len(w.lists)-1]
		}
		if len(w.lists) == 0 {
			w.breakLines(2)
		}
	case a == atom.Td || a == atom.Th:
		w.cell--
		w.b.WriteString(" ")
		w.space = false
	case a == atom.Tr:
		if len(w.rowCells) > 0 && w.rowCells[len(w.rowCells)-1] > 0 {
			w.b.WriteString("|")
		}
		w.breakLines(1)
	case a == atom.Table:
		if len(w.rowCells) > 0 {
			w.rowCells = w.rowCells[:len(w.rowCells)-1]
		}
		w.breakLines(2)
	case blocks[a]:
		w.breakLines(2)
	}
}

// text writes a text node: verbatim inside <pre>, else with white space
// collapsed to single spaces.
func (w *htmlWriter) text(s string) {
	if w.heading != nil {
		w.heading.WriteString(s)
	}
	if w.pre > 0 {
		w.b.WriteString(s)
		return
	}
	for s != "" {
		r, size := utf8.DecodeRuneInString(s)
		if unicode.IsSpace(r) {
			w.space = true
			s = s[size:]
			continue
		}
		end := strings.IndexFunc(s, unicode.IsSpace)
		if end < 0 {
			end = len(s)
		}
		if w.space && !w.atLineStart() {
			w.b.WriteByte(' ')
		}
		w.space = false
		w.b.WriteString(s[:end])
		s = s[end:]
	}
}

// atLineStart reports whether a space would be redundant: at the start of a
// line, or after a list marker or cell opener.
func (w *htmlWriter) atLineStart() bool {
	b := w.b.Bytes()
	return len(b) == 0 || b[len(b)-1] == '\n' || b[len(b)-1] == ' '
}

// breakLines ends the current line so that n newlines (1: a new line, 2: a
// blank line) separate it from what follows. Inside table cells it writes a
// space instead, to keep the row on one line.
func (w *htmlWriter) breakLines(n int) {
	w.space = false
	if w.cell > 0 {
		w.space = true
		return
	}
	b := w.b.Bytes()
	// Drop trailing spaces on the line.
	t := bytes.TrimRight(b, " \t")
	w.b.Truncate(len(t))
	b = w.b.Bytes()
	if len(b) == 0 {
		return
	}
	have := len(b) - len(bytes.TrimRight(b, "\n"))
	for ; have < n; have++ {
		w.b.WriteByte('\n')
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// textContent returns the text of the nodes under n.
func textContent(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }
