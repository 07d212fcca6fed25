package rag

import (
	"testing"

	"github.com/weftlabs/weft/tokens"
)

// FuzzSplit checks, for both splitters, that chunks cover the text in
// order, stay within the size, and overlap by at most the configured
// amount, whatever the text.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"",
		"Hello world. This is a test! Is it? Yes.",
		"# A\n\ntext\n\n## B\n\n```\ncode\n\n# no\n```\n\nmore text here\n",
		"今天天气很好。我们去公园吧！你觉得呢？好的。",
		"Title\n=====\n\npara one\n\n- item\n- item\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
		"supercalifragilisticexpialidocious",
		"a\n\n\n\nb\r\n\r\nc ~~~\n~~~\nx\n~~~~",
		"\xff\xfe invalid utf8 \x80 here. Next.",
	} {
		f.Add(s, uint8(8), uint8(2))
	}
	f.Fuzz(func(t *testing.T, text string, size, overlap uint8) {
		sz := int(size%64) + 1
		ov := int(overlap) % sz
		rs, err := NewRecursiveSplitter(WithChunkSize(sz), WithOverlap(ov))
		if err != nil {
			t.Fatal(err)
		}
		ms, err := NewMarkdownSplitter(WithChunkSize(sz), WithOverlap(ov))
		if err != nil {
			t.Fatal(err)
		}
		doc := Document{ID: "fuzz", Text: text}
		for _, s := range []Splitter{rs, ms} {
			chunks, err := s.Split(doc)
			if err != nil {
				if len(chunks) != 0 {
					t.Fatalf("error %v with %d chunks", err, len(chunks))
				}
				continue
			}
			checkChunks(t, doc, chunks, sz, ov, tokens.Estimator{})
		}
	})
}
