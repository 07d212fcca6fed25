package rag

import (
	"fmt"
	"strings"
)

// MarkdownSplitter cuts Markdown at headings first: each section becomes one
// or more chunks that carry the section's heading path as [MetaHeadings]
// ("Guide > Install > Linux"). A section too big for one chunk is cut at
// blocks — paragraphs, lists, and fenced code blocks, which are never cut in
// the middle when they fit in a chunk — then like a [RecursiveSplitter].
// Overlap applies within a section, never across headings. A heading
// directly followed by a sub-heading travels with it rather than making a
// chunk of its own.
type MarkdownSplitter struct{ e engine }

// NewMarkdownSplitter returns a Markdown splitter (defaults: 512-token
// chunks, 64 tokens of overlap, the [tokens.Estimator] counter).
func NewMarkdownSplitter(opts ...SplitOption) (*MarkdownSplitter, error) {
	c, err := newSplitConfig(opts)
	if err != nil {
		return nil, err
	}
	return &MarkdownSplitter{engine{c}}, nil
}

// Levels below the block level, for blocks too big for a chunk.
var markdownBlockLevels = []boundaryFunc{lineCuts, sentenceCuts, wordCuts}

// Split cuts doc into chunks. It returns [ErrEmptyDocument] when the text is
// only white space.
func (s *MarkdownSplitter) Split(doc Document) ([]Chunk, error) {
	if strings.TrimSpace(doc.Text) == "" {
		return nil, fmt.Errorf("%w: %q", ErrEmptyDocument, doc.Name)
	}
	text := doc.Text
	var (
		spans []span
		extra []map[string]string
	)
	for _, sec := range markdownSections(text) {
		var ps []piece
		for _, b := range markdownBlocks(text, sec.start, sec.end) {
			if b.fence {
				n := s.e.counter.Count(text[b.start:b.end])
				if n <= s.e.size {
					ps = append(ps, piece{start: b.start, end: b.end, tokens: n, atomic: true})
					continue
				}
			}
			ps = s.e.pieces(text, b.start, b.end, markdownBlockLevels, ps)
		}
		var meta map[string]string
		if len(sec.path) > 0 {
			meta = map[string]string{MetaHeadings: strings.Join(sec.path, HeadingSeparator)}
		}
		for _, sp := range s.e.merge(text, ps) {
			spans = append(spans, sp)
			extra = append(extra, meta)
		}
	}
	return s.e.emit(&doc, spans, extra, nil), nil
}

// section is the text from one heading to the next, with its heading path.
type section struct {
	start, end int
	path       []string
}

// mdLine is one line of a Markdown text, newline included.
type mdLine struct {
	start, end int
	text       string // without the newline
}

func markdownLines(text string, start, end int) []mdLine {
	lines := make([]mdLine, 0, strings.Count(text[start:end], "\n")+1)
	for i := start; i < end; {
		j := strings.IndexByte(text[i:end], '\n')
		if j < 0 {
			lines = append(lines, mdLine{i, end, strings.TrimSuffix(text[i:end], "\r")})
			break
		}
		lines = append(lines, mdLine{i, i + j + 1, strings.TrimSuffix(text[i:i+j], "\r")})
		i += j + 1
	}
	return lines
}

// fenceState tracks fenced code blocks (``` and ~~~) line by line.
type fenceState struct {
	char byte
	n    int
}

// step reports whether line is part of a fence (opening, inside or
// closing) and updates the state.
func (f *fenceState) step(line string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return f.n > 0
	}
	if f.n > 0 {
		if n := countPrefix(t, f.char); n >= f.n && strings.TrimSpace(t[n:]) == "" {
			f.n = 0
		}
		return true
	}
	for _, c := range []byte{'`', '~'} {
		if n := countPrefix(t, c); n >= 3 && (c == '~' || !strings.ContainsRune(t[n:], '`')) {
			f.char, f.n = c, n
			return true
		}
	}
	return false
}

func countPrefix(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// atxHeading parses "## Title ##" into level 2 and "Title".
func atxHeading(line string) (int, string, bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return 0, "", false
	}
	n := countPrefix(t, '#')
	if n < 1 || n > 6 || (len(t) > n && t[n] != ' ' && t[n] != '\t') {
		return 0, "", false
	}
	title := strings.TrimSpace(t[n:])
	if trimmed := strings.TrimRight(title, "#"); trimmed == "" || strings.HasSuffix(trimmed, " ") {
		title = strings.TrimSpace(trimmed)
	}
	return n, title, true
}

// setextLevel reports whether line underlines the line before it as a level
// 1 ("===") or level 2 ("---") heading.
func setextLevel(line string) int {
	t := strings.TrimSpace(line)
	if len(t) < 3 {
		return 0
	}
	switch {
	case countPrefix(t, '=') == len(t):
		return 1
	case countPrefix(t, '-') == len(t):
		return 2
	}
	return 0
}

// markdownSections cuts text at its ATX and setext headings (outside fenced
// code) into sections with heading paths. A section that is only a heading
// is joined to the next section.
func markdownSections(text string) []section {
	lines := markdownLines(text, 0, len(text))
	type heading struct {
		level int
		title string
	}
	var (
		secs  []section
		stack []heading
		fence fenceState
	)
	open := func(at, level int, title string) {
		for len(stack) > 0 && stack[len(stack)-1].level >= level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, heading{level, title})
		path := make([]string, len(stack))
		for i, h := range stack {
			path[i] = h.title
		}
		if len(secs) > 0 {
			secs[len(secs)-1].end = at
		}
		secs = append(secs, section{start: at, path: path})
	}
	secs = append(secs, section{start: 0})
	for i, l := range lines {
		if fence.step(l.text) {
			continue
		}
		if level, title, ok := atxHeading(l.text); ok {
			open(l.start, level, title)
			continue
		}
		// A setext underline below a one-line paragraph.
		if i > 0 && strings.TrimSpace(lines[i-1].text) != "" && (i == 1 || strings.TrimSpace(lines[i-2].text) == "") {
			if level := setextLevel(l.text); level > 0 && secs[len(secs)-1].start != lines[i-1].start {
				if _, _, isATX := atxHeading(lines[i-1].text); !isATX && !strings.HasPrefix(strings.TrimSpace(lines[i-1].text), "- ") {
					open(lines[i-1].start, level, strings.TrimSpace(lines[i-1].text))
				}
			}
		}
	}
	secs[len(secs)-1].end = len(text)
	// Drop empty sections, and join heading-only sections to the next.
	out := secs[:0]
	var pending *section
	for _, s := range secs {
		if strings.TrimSpace(text[s.start:s.end]) == "" {
			continue
		}
		if pending != nil {
			s.start = pending.start
			pending = nil
		}
		if isHeadingOnly(text[s.start:s.end]) {
			pending = &s
			continue
		}
		out = append(out, s)
	}
	if pending != nil {
		// The text ends with headings and nothing under them: keep them.
		pending.end = len(text)
		out = append(out, *pending)
	}
	return out
}

// isHeadingOnly reports whether a section holds nothing but headings.
func isHeadingOnly(s string) bool {
	prev := "" // the previous non-blank line, for setext underlines
	for rest := s; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			prev = ""
			continue
		case prev != "" && setextLevel(line) > 0:
		default:
			if _, _, ok := atxHeading(line); !ok {
				next, _, _ := strings.Cut(rest, "\n")
				if setextLevel(next) == 0 {
					return false
				}
			}
		}
		prev = t
	}
	return true
}

// block is a run of Markdown between blank lines, or a fenced code block
// (which may hold blank lines).
type block struct {
	start, end int
	fence      bool
}

// markdownBlocks cuts a section into blocks; separators stay with the block
// before them, so blocks cover the section exactly.
func markdownBlocks(text string, start, end int) []block {
	var (
		out   []block
		fence fenceState
		cur   = block{start: start, end: start}
		blank = false
	)
	flush := func(at int) {
		if at > cur.start {
			cur.end = at
			out = append(out, cur)
		}
		cur = block{start: at, end: at}
	}
	for _, l := range markdownLines(text, start, end) {
		wasFence := fence.n > 0
		inFence := fence.step(l.text)
		switch {
		case inFence && !wasFence: // an opening fence starts a block
			flush(l.start)
			cur.fence = true
		case wasFence && fence.n == 0:
			// A closing fence ends the block; blank lines after it stay
			// with it, and the next line of text starts a new block.
			blank = true
			continue
		case inFence:
		case strings.TrimSpace(l.text) == "":
			blank = true
			continue
		case blank:
			flush(l.start)
		}
		blank = false
	}
	flush(end)
	return out
}
