package rag

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/weftlabs/weft/tokens"
)

// Splitter cuts a document into chunks.
type Splitter interface {
	Split(doc Document) ([]Chunk, error)
}

// SplitterFunc adapts a function to the Splitter interface.
type SplitterFunc func(doc Document) ([]Chunk, error)

// Split calls f(doc).
func (f SplitterFunc) Split(doc Document) ([]Chunk, error) { return f(doc) }

// Default splitter sizes, in tokens.
const (
	DefaultChunkSize = 512
	DefaultOverlap   = 64
)

// SplitOption configures a splitter.
type SplitOption func(*splitConfig)

type splitConfig struct {
	size, overlap int
	counter       tokens.Counter
}

// WithChunkSize sets the largest chunk, in tokens (default 512).
func WithChunkSize(n int) SplitOption { return func(c *splitConfig) { c.size = n } }

// WithOverlap sets how many tokens at the end of a chunk are repeated at the
// start of the next (default 64; 0 disables overlap). It must be smaller
// than the chunk size.
func WithOverlap(n int) SplitOption { return func(c *splitConfig) { c.overlap = n } }

// WithCounter sets the token counter that sizes chunks (default
// [tokens.Estimator]). Use the embedding model's own encoding for exact
// sizes.
func WithCounter(tc tokens.Counter) SplitOption { return func(c *splitConfig) { c.counter = tc } }

func newSplitConfig(opts []SplitOption) (splitConfig, error) {
	c := splitConfig{size: DefaultChunkSize, overlap: DefaultOverlap, counter: tokens.Estimator{}}
	for _, o := range opts {
		o(&c)
	}
	switch {
	case c.size < 1:
		return c, fmt.Errorf("rag: chunk size %d: must be at least 1 token", c.size)
	case c.overlap < 0 || c.overlap >= c.size:
		return c, fmt.Errorf("rag: overlap %d: must be at least 0 and below the chunk size %d", c.overlap, c.size)
	case c.counter == nil:
		return c, fmt.Errorf("rag: nil token counter")
	}
	return c, nil
}

// piece is an unbreakable span of text the merger packs into chunks.
type piece struct {
	start, end int
	tokens     int
	// atomic pieces (a fenced code block) are never entered by an overlap.
	atomic bool
}

// span is a chunk's extent before trimming.
type span struct{ start, end int }

// engine holds what the recursive and Markdown splitters share: cutting a
// span into pieces that fit, and packing pieces into overlapping chunks.
type engine struct{ splitConfig }

// pieces appends to out the pieces of text[start:end]: the span itself if it
// fits, else its segments at the first level that cuts it, recursively,
// down to single characters.
func (e *engine) pieces(text string, start, end int, levels []boundaryFunc, out []piece) []piece {
	// Separators stay in the span but are not content: count without
	// them, as the chunk will be.
	n := e.counter.Count(trimSpan(text, start, end))
	if n <= e.size {
		return append(out, piece{start: start, end: end, tokens: n})
	}
	for li, level := range levels {
		cuts := level(text, start, end)
		if len(cuts) == 0 {
			continue
		}
		prev := start
		for _, c := range cuts {
			out = e.pieces(text, prev, c, levels[li+1:], out)
			prev = c
		}
		return e.pieces(text, prev, end, levels[li+1:], out)
	}
	return e.characters(text, start, end, out)
}

// characters cuts a span that no boundary divides (one very long word) into
// the longest runs of whole characters that fit. Each run is searched in a
// window of characters that doubles while all of it fits: a long word costs
// a chunk's worth of character offsets at a time and counts over windows,
// not an offset per character of the word and counts over the rest of it
// (megabytes of text without a space, as a few KiB of PDF can show, held
// 8 bytes a byte and took seconds a chunk).
func (e *engine) characters(text string, start, end int, out []piece) []piece {
	var ends []int // the end offset of every character of the window
	for s := start; s < end; {
		for window := max(e.size, 16); ; window *= 2 {
			ends = ends[:0]
			for i := s; i < end && len(ends) < window; {
				_, size := utf8.DecodeRuneInString(text[i:end])
				i += size
				ends = append(ends, i)
			}
			if last := ends[len(ends)-1]; last == end || e.counter.Count(text[s:last]) > e.size {
				break
			}
		}
		// Counts grow with the prefix: take the most characters that fit, at
		// least one, so a character bigger than the chunk size still makes
		// progress.
		n := sort.Search(len(ends), func(k int) bool {
			return e.counter.Count(text[s:ends[k]]) > e.size
		})
		n = max(n, 1)
		out = append(out, piece{start: s, end: ends[n-1], tokens: e.counter.Count(trimSpan(text, s, ends[n-1]))})
		s = ends[n-1]
	}
	return out
}

// merge packs consecutive pieces into chunks of at most size tokens, each
// starting with up to overlap tokens from the end of the previous one.
func (e *engine) merge(text string, ps []piece) []span {
	var out []span
	overlapStart := -1
	for i := 0; i < len(ps); {
		start := ps[i].start
		sum := 0
		if overlapStart >= 0 {
			start = overlapStart
			sum = e.counter.Count(text[start:ps[i].start])
		}
		j := i
		for j < len(ps) && (j == i || sum+ps[j].tokens <= e.size) {
			sum += ps[j].tokens
			j++
		}
		// Token counts are not exactly additive (byte-pair merges across a
		// join): check the real count, giving back pieces, then the
		// overlap, until the chunk fits.
		for e.counter.Count(trimSpan(text, start, ps[j-1].end)) > e.size {
			switch {
			case j > i+1:
				j--
			case start != ps[i].start:
				start = ps[i].start
			default:
				goto fits // a single piece, which fits by construction
			}
		}
	fits:
		out = append(out, span{start, ps[j-1].end})
		// Pieces of white space alone would make a chunk that is nothing
		// but overlap.
		for j < len(ps) && strings.TrimSpace(text[ps[j].start:ps[j].end]) == "" {
			j++
		}
		if j >= len(ps) {
			break
		}
		overlapStart = -1
		if budget := min(e.overlap, e.size-ps[j].tokens); budget > 0 {
			if b, ok := e.overlapStart(text, ps[i:j], start, budget); ok {
				overlapStart = b
			}
		}
		i = j
	}
	return out
}

// overlapStart finds the earliest word boundary b in the chunk
// text[start:end] (end being the last piece's end), after start, such that
// text[b:end] holds at most budget tokens. Boundaries inside atomic pieces
// are not candidates. Only a window at the end of the chunk is scanned,
// widened while the tail still fits.
func (e *engine) overlapStart(text string, chunk []piece, start, budget int) (int, bool) {
	end := chunk[len(chunk)-1].end
	// Candidates must start after the chunk's first non-space byte, or the
	// next chunk would begin where this one does.
	start = end - len(strings.TrimLeftFunc(text[start:end], unicode.IsSpace))
	for window := 16*budget + 16; ; window *= 2 {
		from, whole := end-window, end-window <= start
		if whole {
			from = start
		}
		for from < end && !utf8.RuneStart(text[from]) {
			from++
		}
		cands := make([]int, 0, (end-from)/4+len(chunk))
		for _, p := range chunk {
			if p.end <= from {
				continue
			}
			s := max(p.start, from)
			if p.atomic {
				if s == p.start && s > start {
					cands = append(cands, s)
				}
				continue
			}
			if s > start {
				cands = append(cands, s)
			}
			if s <= start {
				s = start + 1 // cuts must lie after start
			}
			if s < p.end {
				cands = appendWordCuts(cands, text, s-1, p.end)
			}
		}
		// Counts fall as b moves right: find the first candidate that fits.
		k := sort.Search(len(cands), func(k int) bool {
			return e.counter.Count(strings.TrimSpace(text[cands[k]:end])) <= budget
		})
		if k == 0 && !whole {
			continue // the whole window fits (or has no boundary): look further back
		}
		for ; k < len(cands); k++ {
			if strings.TrimSpace(text[cands[k]:end]) != "" {
				return cands[k], true
			}
		}
		return 0, false
	}
}

// trimSpan returns text[start:end] without surrounding white space.
func trimSpan(text string, start, end int) string {
	return strings.TrimFunc(text[start:end], unicode.IsSpace)
}

// emit turns spans of doc.Text into chunks with IDs, token counts, and the
// document's metadata plus page numbers and the given extra metadata.
func (e *engine) emit(doc *Document, spans []span, extra []map[string]string, out []Chunk) []Chunk {
	base := chunkMetadata(doc)
	for k, sp := range spans {
		s := sp.start + len(doc.Text[sp.start:sp.end]) - len(strings.TrimLeftFunc(doc.Text[sp.start:sp.end], unicode.IsSpace))
		t := strings.TrimRightFunc(doc.Text[s:sp.end], unicode.IsSpace)
		if t == "" {
			continue
		}
		meta := make(map[string]string, len(base)+3)
		for key, v := range base {
			meta[key] = v
		}
		if extra != nil {
			for key, v := range extra[k] {
				meta[key] = v
			}
		}
		if len(doc.Pages) > 0 {
			first, last := doc.PageAt(s), doc.PageAt(s+len(t)-1)
			meta[MetaPage] = strconv.Itoa(first)
			if last != first {
				meta[MetaPageEnd] = strconv.Itoa(last)
			}
		}
		idx := len(out)
		out = append(out, Chunk{
			ID:         ChunkID(doc.ID, idx, t),
			DocumentID: doc.ID,
			Index:      idx,
			Text:       t,
			Start:      s,
			End:        s + len(t),
			Tokens:     e.counter.Count(t),
			Metadata:   meta,
		})
	}
	return out
}

// RecursiveSplitter cuts text into chunks of at most a given number of
// tokens, splitting at the coarsest boundary that makes the pieces fit:
// paragraphs, then lines, then sentences (Latin and CJK punctuation), then
// words, then characters. Consecutive chunks overlap by up to the configured
// number of tokens, cut at a word boundary. No chunk exceeds the size unless
// a single character does.
type RecursiveSplitter struct{ e engine }

// NewRecursiveSplitter returns a recursive splitter (defaults: 512-token
// chunks, 64 tokens of overlap, the [tokens.Estimator] counter).
func NewRecursiveSplitter(opts ...SplitOption) (*RecursiveSplitter, error) {
	c, err := newSplitConfig(opts)
	if err != nil {
		return nil, err
	}
	return &RecursiveSplitter{engine{c}}, nil
}

var recursiveLevels = []boundaryFunc{paragraphCuts, lineCuts, sentenceCuts, wordCuts}

// Split cuts doc into chunks. It returns [ErrEmptyDocument] when the text is
// only white space.
func (s *RecursiveSplitter) Split(doc Document) ([]Chunk, error) {
	if strings.TrimSpace(doc.Text) == "" {
		return nil, fmt.Errorf("%w: %q", ErrEmptyDocument, doc.Name)
	}
	ps := s.e.pieces(doc.Text, 0, len(doc.Text), recursiveLevels, nil)
	return s.e.emit(&doc, s.e.merge(doc.Text, ps), nil, nil), nil
}

// NewSplitter returns the default splitter: Markdown-aware (a
// [MarkdownSplitter]) for documents whose text carries Markdown structure —
// Markdown, and HTML and DOCX as package loader renders them — and a
// [RecursiveSplitter] for everything else.
func NewSplitter(opts ...SplitOption) (Splitter, error) {
	rs, err := NewRecursiveSplitter(opts...)
	if err != nil {
		return nil, err
	}
	ms, err := NewMarkdownSplitter(opts...)
	if err != nil {
		return nil, err
	}
	return SplitterFunc(func(doc Document) ([]Chunk, error) {
		if HasMarkdownStructure(doc.MIMEType) {
			return ms.Split(doc)
		}
		return rs.Split(doc)
	}), nil
}

// HasMarkdownStructure reports whether loaders render documents of the given
// MIME type as Markdown-structured text (headings as "#" lines, lists,
// tables), so that the Markdown splitter applies.
func HasMarkdownStructure(mimeType string) bool {
	mt, _, _ := strings.Cut(mimeType, ";")
	switch strings.TrimSpace(strings.ToLower(mt)) {
	case "text/markdown", "text/x-markdown", "text/html", "application/xhtml+xml",
		"application/vnd.openxmlformats-officedocument.wordprocessingml.document":
		return true
	}
	return false
}
