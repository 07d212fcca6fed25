package rag

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"unicode"

	"github.com/weftlabs/weft/tokens"
)

// checkChunks asserts the splitter invariants: chunks are doc.Text[Start:End]
// trimmed, in order with strictly increasing starts, no bigger than size
// (unless one character is), overlapping the previous chunk by at most
// overlap tokens, and covering every non-space byte of the text.
func checkChunks(t testing.TB, doc Document, chunks []Chunk, size, overlap int, c tokens.Counter) {
	t.Helper()
	covered := 0 // every byte before this offset is covered
	for i, ch := range chunks {
		if ch.Start < 0 || ch.End > len(doc.Text) || ch.Start >= ch.End {
			t.Fatalf("chunk %d: bad span [%d,%d) of %d bytes", i, ch.Start, ch.End, len(doc.Text))
		}
		if got := doc.Text[ch.Start:ch.End]; got != ch.Text {
			t.Fatalf("chunk %d: Text %q is not Text[%d:%d] = %q", i, ch.Text, ch.Start, ch.End, got)
		}
		if strings.TrimSpace(ch.Text) != ch.Text {
			t.Fatalf("chunk %d: not trimmed: %q", i, ch.Text)
		}
		if ch.Index != i || ch.DocumentID != doc.ID || ch.ID != ChunkID(doc.ID, i, ch.Text) {
			t.Fatalf("chunk %d: index %d, document %q, ID %q", i, ch.Index, ch.DocumentID, ch.ID)
		}
		if ch.Tokens != c.Count(ch.Text) {
			t.Fatalf("chunk %d: Tokens %d, counter says %d", i, ch.Tokens, c.Count(ch.Text))
		}
		if ch.Tokens > size && len([]rune(ch.Text)) > 1 {
			t.Fatalf("chunk %d: %d tokens > size %d: %q", i, ch.Tokens, size, ch.Text)
		}
		if i > 0 {
			prev := chunks[i-1]
			if ch.Start <= prev.Start || ch.End <= prev.End {
				t.Fatalf("chunk %d [%d,%d) does not advance past chunk %d [%d,%d)", i, ch.Start, ch.End, i-1, prev.Start, prev.End)
			}
			if ch.Start < prev.End {
				if n := c.Count(strings.TrimSpace(doc.Text[ch.Start:prev.End])); n > overlap {
					t.Fatalf("chunk %d overlaps chunk %d by %d tokens > %d", i, i-1, n, overlap)
				}
			}
		}
		// Nothing but white space may lie between the covered prefix and
		// this chunk.
		if ch.Start > covered && strings.TrimFunc(doc.Text[covered:ch.Start], unicode.IsSpace) != "" {
			t.Fatalf("text %q before chunk %d is in no chunk", doc.Text[covered:ch.Start], i)
		}
		covered = max(covered, ch.End)
	}
	if rest := strings.TrimFunc(doc.Text[covered:], unicode.IsSpace); rest != "" {
		t.Fatalf("text %q after the last chunk is in no chunk", rest)
	}
}

func texts(chunks []Chunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Text
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// words counts one token per space-separated word: easy to reason about in
// tests.
var words = tokens.CounterFunc(func(s string) int { return len(strings.Fields(s)) })

func segments(text string, cuts func(string, int, int) []int) []string {
	var out []string
	prev := 0
	for _, c := range cuts(text, 0, len(text)) {
		out = append(out, text[prev:c])
		prev = c
	}
	return append(out, text[prev:])
}

func TestSentenceCuts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"latin", "One two. Three four! Five six? Seven.",
			[]string{"One two. ", "Three four! ", "Five six? ", "Seven."}},
		{"decimals and abbreviations", "Pi is 3.14, e.g. roughly. Dr. Smith agrees. J. R. R. Tolkien wrote it.",
			[]string{"Pi is 3.14, e.g. roughly. ", "Dr. Smith agrees. ", "J. R. R. Tolkien wrote it."}},
		{"dotted abbreviations", "The U.S. Army met at 9 a.m. today. Then i.e. nothing.",
			[]string{"The U.S. Army met at 9 a.m. today. ", "Then i.e. nothing."}},
		{"closing quotes", `He said "stop." Then left. (Really.) Yes.`,
			[]string{`He said "stop." `, "Then left. ", "(Really.) ", "Yes."}},
		{"ellipsis and ?!", "Wait... What?! Fine.",
			[]string{"Wait... ", "What?! ", "Fine."}},
		{"chinese", "今天天气很好。我们去公园吧！你觉得呢？好的；走吧……",
			[]string{"今天天气很好。", "我们去公园吧！", "你觉得呢？", "好的；", "走吧……"}},
		{"japanese with brackets", "これはペンです。「本当ですか？」はい、そうです。",
			[]string{"これはペンです。", "「本当ですか？」", "はい、そうです。"}},
		{"mixed", "Go 1.26 是最新版本。It ships iterators. 很好！",
			[]string{"Go 1.26 是最新版本。", "It ships iterators. ", "很好！"}},
		{"newline after period", "First.\nSecond.", []string{"First.\n", "Second."}},
		{"no terminator", "no end here", []string{"no end here"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := segments(tt.text, sentenceCuts); !equalStrings(got, tt.want) {
				t.Errorf("sentences of %q:\n got %q\nwant %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestWordAndParagraphCuts(t *testing.T) {
	t.Parallel()
	if got, want := segments("ab  cd\tef", wordCuts), []string{"ab  ", "cd\t", "ef"}; !equalStrings(got, want) {
		t.Errorf("words: got %q want %q", got, want)
	}
	if got, want := segments("Go语言很好", wordCuts), []string{"Go", "语", "言", "很", "好"}; !equalStrings(got, want) {
		t.Errorf("CJK words: got %q want %q", got, want)
	}
	if got, want := segments("a\nb\n\n  \n  c\n\nd", paragraphCuts), []string{"a\nb\n\n  \n", "  c\n\n", "d"}; !equalStrings(got, want) {
		t.Errorf("paragraphs: got %q want %q", got, want)
	}
}

func TestRecursiveSplitter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		text          string
		size, overlap int
		want          []string
	}{
		{"fits", "  one two three  ", 5, 0, []string{"one two three"}},
		{"paragraphs", "a b c\n\nd e f\n\ng h i", 6, 0, []string{"a b c\n\nd e f", "g h i"}},
		{"lines before sentences", "a b. c d.\ne f. g h.", 3, 0, []string{"a b.", "c d.", "e f.", "g h."}},
		{"sentences", "One two three. Four five six. Seven eight.", 4, 0,
			[]string{"One two three.", "Four five six.", "Seven eight."}},
		{"words", "a b c d e f g", 3, 0, []string{"a b c", "d e f", "g"}},
		{"overlap", "a b c d e f g h", 4, 2, []string{"a b c d", "c d e f", "e f g h"}},
		{"overlap shrinks to fit the next piece", "p q r s.\n\nt u v w.", 5, 3,
			[]string{"p q r s.", "s.\n\nt u v w."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := NewRecursiveSplitter(WithChunkSize(tt.size), WithOverlap(tt.overlap), WithCounter(words))
			if err != nil {
				t.Fatal(err)
			}
			doc := Document{ID: "d", Text: tt.text}
			chunks, err := s.Split(doc)
			if err != nil {
				t.Fatal(err)
			}
			if got := texts(chunks); !equalStrings(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
			checkChunks(t, doc, chunks, tt.size, tt.overlap, words)
		})
	}
}

func TestRecursiveSplitterLongWordAndCJK(t *testing.T) {
	t.Parallel()
	s, err := NewRecursiveSplitter(WithChunkSize(4), WithOverlap(1))
	if err != nil {
		t.Fatal(err)
	}
	est := tokens.Estimator{}
	for _, text := range []string{
		strings.Repeat("x", 50), // one 13-token word: cut at characters
		"今天天气很好。我们去公园吧！你觉得呢？好的。",                       // CJK sentences of 7, 7, 5, 3 tokens
		"東京は日本の首都です。人口は約一千四百万人です。",                     // Japanese
		"mixed 中文 and English text, with 標点。And more!", // mixed scripts
	} {
		doc := Document{ID: "cjk", Text: text}
		chunks, err := s.Split(doc)
		if err != nil {
			t.Fatal(err)
		}
		checkChunks(t, doc, chunks, 4, 1, est)
	}
	// CJK sentences that fit are kept whole.
	s, _ = NewRecursiveSplitter(WithChunkSize(8), WithOverlap(0))
	chunks, _ := s.Split(Document{ID: "zh", Text: "今天天气很好。我们去公园吧！你觉得呢？好的。"})
	if got, want := texts(chunks), []string{"今天天气很好。", "我们去公园吧！", "你觉得呢？好的。"}; !equalStrings(got, want) {
		t.Errorf("CJK chunks: got %q want %q", got, want)
	}
}

// TestRecursiveSplitterHugeWord: a word of 1 MiB (text without a space, as
// a few KiB of PDF can show) is cut at characters for about what its chunks
// weigh: it took an offset per character (8 bytes a byte, kept whole while
// the word was cut) and counted tokens over the rest of the word for every
// chunk. Not parallel: it counts the bytes allocated.
func TestRecursiveSplitterHugeWord(t *testing.T) {
	s, err := NewRecursiveSplitter()
	if err != nil {
		t.Fatal(err)
	}
	doc := Document{ID: "word", Text: strings.Repeat("A", 1<<20)}
	var chunks []Chunk
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	chunks, err = s.Split(doc)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	checkChunks(t, doc, chunks, DefaultChunkSize, DefaultOverlap, tokens.Estimator{})
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d chunks, %d KiB allocated", len(chunks), alloc>>10)
	if alloc > 4<<20 {
		t.Errorf("splitting a 1 MiB word allocated %d KiB, over 4 MiB", alloc>>10)
	}
}

func TestSplitterMetadataAndPages(t *testing.T) {
	t.Parallel()
	s, err := NewRecursiveSplitter(WithChunkSize(3), WithOverlap(0), WithCounter(words))
	if err != nil {
		t.Fatal(err)
	}
	text := "a b c\n\nd e f\n\ng h i"
	doc := Document{
		ID: "doc1", Name: "report.pdf", Source: "/data/report.pdf", Text: text,
		Pages:    []int{0, strings.Index(text, "d"), strings.Index(text, "g")},
		Metadata: map[string]string{MetaTitle: "Report", "author": "Ann"},
	}
	chunks, err := s.Split(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 3 {
		t.Fatalf("got %d chunks, want 3", len(chunks))
	}
	for i, c := range chunks {
		want := map[string]string{
			MetaTitle: "Report", "author": "Ann", MetaSource: "/data/report.pdf", MetaName: "report.pdf",
			MetaDocumentID: "doc1", MetaPage: string(rune('1' + i)),
		}
		if len(c.Metadata) != len(want) {
			t.Errorf("chunk %d metadata %v, want %v", i, c.Metadata, want)
		}
		for k, v := range want {
			if c.Metadata[k] != v {
				t.Errorf("chunk %d metadata[%q] = %q, want %q", i, k, c.Metadata[k], v)
			}
		}
	}
	// A chunk spanning pages records where it ends.
	s, _ = NewRecursiveSplitter(WithChunkSize(6), WithOverlap(0), WithCounter(words))
	chunks, _ = s.Split(doc)
	if chunks[0].Metadata[MetaPage] != "1" || chunks[0].Metadata[MetaPageEnd] != "2" {
		t.Errorf("spanning chunk pages: %v", chunks[0].Metadata)
	}
	// The input's metadata is not modified.
	if len(doc.Metadata) != 2 {
		t.Errorf("document metadata modified: %v", doc.Metadata)
	}
}

func TestChunkIDsDeterministic(t *testing.T) {
	t.Parallel()
	s, _ := NewRecursiveSplitter(WithChunkSize(3), WithOverlap(1), WithCounter(words))
	doc := Document{ID: "x", Text: "a b c d e f g h i j"}
	c1, _ := s.Split(doc)
	c2, _ := s.Split(doc)
	for i := range c1 {
		if c1[i].ID != c2[i].ID {
			t.Fatalf("chunk %d: IDs differ across runs", i)
		}
	}
	doc.Text = "a b c d e f g h i CHANGED"
	c3, _ := s.Split(doc)
	if c3[0].ID != c1[0].ID || c3[len(c3)-1].ID == c1[len(c1)-1].ID {
		t.Errorf("unchanged chunks must keep their IDs and changed ones must not")
	}
	if ChunkID("a", 1, "x") == ChunkID("b", 1, "x") || ChunkID("a", 1, "x") == ChunkID("a", 2, "x") {
		t.Error("ChunkID ignores the document ID or the index")
	}
}

func TestSplitterErrors(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]SplitOption{
		{WithChunkSize(0)},
		{WithOverlap(-1)},
		{WithChunkSize(10), WithOverlap(10)},
		{WithCounter(nil)},
	} {
		if _, err := NewRecursiveSplitter(opts...); err == nil {
			t.Errorf("NewRecursiveSplitter accepted bad options")
		}
		if _, err := NewMarkdownSplitter(opts...); err == nil {
			t.Errorf("NewMarkdownSplitter accepted bad options")
		}
	}
	s, _ := NewSplitter()
	for _, text := range []string{"", " \n\t "} {
		if _, err := s.Split(Document{Text: text}); !errors.Is(err, ErrEmptyDocument) {
			t.Errorf("Split(%q) error %v, want ErrEmptyDocument", text, err)
		}
	}
}
