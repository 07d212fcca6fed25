package rag

import (
	"strings"
	"testing"
)

func TestMarkdownSplitterHeadings(t *testing.T) {
	t.Parallel()
	text := `Intro text before any heading.

# Guide

Welcome.

## Install
### Linux

Run the installer.

### macOS

Use brew.

## Usage ##

Call it.

Setext Title
============

Under setext.

` + "```go\n# not a heading\n```\n"
	s, err := NewMarkdownSplitter(WithChunkSize(100), WithOverlap(0))
	if err != nil {
		t.Fatal(err)
	}
	doc := Document{ID: "md", Text: text, MIMEType: "text/markdown"}
	chunks, err := s.Split(doc)
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ headings, first string }
	wants := []want{
		{"", "Intro text before any heading."},
		{"Guide", "# Guide\n\nWelcome."},
		// "## Install" has no text of its own: it travels with "### Linux".
		{"Guide > Install > Linux", "## Install\n### Linux\n\nRun the installer."},
		{"Guide > Install > macOS", "### macOS"},
		{"Guide > Usage", "## Usage ##"},
		{"Setext Title", "Setext Title\n============"},
	}
	if len(chunks) != len(wants) {
		t.Fatalf("got %d chunks %q, want %d", len(chunks), texts(chunks), len(wants))
	}
	for i, w := range wants {
		if got := chunks[i].Metadata[MetaHeadings]; got != w.headings {
			t.Errorf("chunk %d headings %q, want %q", i, got, w.headings)
		}
		if !strings.HasPrefix(chunks[i].Text, w.first) {
			t.Errorf("chunk %d = %q, want prefix %q", i, chunks[i].Text, w.first)
		}
	}
	if !strings.Contains(chunks[5].Text, "# not a heading") {
		t.Errorf("a '#' line inside a code fence started a section: %q", texts(chunks))
	}
	checkChunks(t, doc, chunks, 100, 0, s.e.counter)
}

func TestMarkdownSplitterKeepsCodeFences(t *testing.T) {
	t.Parallel()
	code := "```python\ndef f(x):\n\n    return x * 2\n\n\nprint(f(21))\n```"
	text := "# Code\n\nSome words before the code block here.\n\n" + code + "\n\nAnd words after the code block.\n"
	s, err := NewMarkdownSplitter(WithChunkSize(16), WithOverlap(4))
	if err != nil {
		t.Fatal(err)
	}
	doc := Document{ID: "code", Text: text}
	chunks, err := s.Split(doc)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range chunks {
		if strings.Contains(c.Text, "```python") {
			found = true
			if !strings.Contains(c.Text, code) {
				t.Errorf("code fence cut: %q", c.Text)
			}
		}
		if strings.Count(c.Text, "```")%2 != 0 {
			t.Errorf("chunk holds half a fence: %q", c.Text)
		}
		if c.Metadata[MetaHeadings] != "Code" {
			t.Errorf("chunk %q headings %q", c.Text, c.Metadata[MetaHeadings])
		}
	}
	if !found {
		t.Fatalf("no chunk holds the fence: %q", texts(chunks))
	}
	checkChunks(t, doc, chunks, 16, 4, s.e.counter)

	// A fence too big for any chunk is cut at lines, and still covered.
	big := "```\n" + strings.Repeat("line of code here\n", 20) + "```\n"
	doc = Document{ID: "big", Text: big}
	chunks, err = s.Split(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 2 {
		t.Fatalf("oversized fence not cut: %d chunks", len(chunks))
	}
	checkChunks(t, doc, chunks, 16, 4, s.e.counter)
}

func TestMarkdownSplitterOverlapStaysInSection(t *testing.T) {
	t.Parallel()
	text := "# A\n\nalpha beta gamma delta epsilon zeta eta theta.\n\n# B\n\niota kappa lambda mu nu xi omicron pi."
	s, err := NewMarkdownSplitter(WithChunkSize(6), WithOverlap(2), WithCounter(words))
	if err != nil {
		t.Fatal(err)
	}
	doc := Document{ID: "o", Text: text}
	chunks, err := s.Split(doc)
	if err != nil {
		t.Fatal(err)
	}
	checkChunks(t, doc, chunks, 6, 2, words)
	for _, c := range chunks {
		h := c.Metadata[MetaHeadings]
		if (h == "A" && strings.Contains(c.Text, "iota")) || (h == "B" && strings.Contains(c.Text, "theta")) {
			t.Errorf("overlap crossed a heading: %q under %q", c.Text, h)
		}
	}
}

func TestNewSplitterRoutesByMIMEType(t *testing.T) {
	t.Parallel()
	s, err := NewSplitter(WithChunkSize(50), WithOverlap(0))
	if err != nil {
		t.Fatal(err)
	}
	text := "# Title\n\nbody\n\n# Other\n\nmore"
	for _, tt := range []struct {
		mime   string
		chunks int
	}{
		{"text/markdown; charset=utf-8", 2},
		{"text/html", 2},
		{"text/plain", 1},
		{"", 1},
	} {
		chunks, err := s.Split(Document{ID: "r", Text: text, MIMEType: tt.mime})
		if err != nil {
			t.Fatal(err)
		}
		if len(chunks) != tt.chunks {
			t.Errorf("MIME %q: %d chunks, want %d", tt.mime, len(chunks), tt.chunks)
		}
	}
}
