package rag_test

import (
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tokens"
)

var injectSources = []rag.Source{
	{ID: "1", DocumentName: "handbook.md", Content: "Run the installer.\n", Metadata: map[string]string{rag.MetaHeadings: "Install > Linux", rag.MetaPage: "3"}},
	{ID: "2", Content: "Refunds take 5 days.", Metadata: map[string]string{rag.MetaName: "faq.pdf", rag.MetaPage: "2", rag.MetaPageEnd: "4"}},
	{ID: "3", DocumentID: "doc_9", Content: "Third."},
}

func TestContentInjectorFormat(t *testing.T) {
	t.Parallel()
	msg, used := rag.ContentInjector{}.Inject(llm.UserMessage("How do I install it?"), injectSources)
	want := `How do I install it?

Answer using the following information:
[1] handbook.md › Install > Linux (page 3)
Run the installer.

[2] faq.pdf (pages 2–4)
Refunds take 5 days.

[3] doc_9
Third.`
	if got := msg.Text(); got != want {
		t.Errorf("injected:\n%s\nwant:\n%s", got, want)
	}
	if len(used) != 3 || msg.Role != llm.RoleUser || len(msg.Parts) != 1 {
		t.Errorf("used %d, role %q, %d parts", len(used), msg.Role, len(msg.Parts))
	}
}

// countWords is an exact, easy-to-reason-about token counter: one token per
// whitespace-separated word.
var countWords = tokens.CounterFunc(func(s string) int { return len(strings.Fields(s)) })

func TestContentInjectorBudget(t *testing.T) {
	t.Parallel()
	// Intro: 5 words. Entry 1: "[1] handbook.md › Install > Linux (page
	// 3)" + "Run the installer." = 8 + 3 = 11. Entry 2: "[2] faq.pdf (pages
	// 2–4)" + 4 words = 4 + 4 = 8. Entry 3: "[3] doc_9 Third." = 3.
	tests := []struct {
		budget int
		want   int
	}{
		{-1, 3}, // unlimited
		{0, 3},  // default budget is plenty
		{5 + 11 + 8 + 3, 3},
		{5 + 11 + 8 + 2, 2}, // third does not fit
		{5 + 11 + 7, 1},     // second does not fit; the third, which would, is not used out of order
		{5 + 10, 0},         // the first does not fit: message unchanged
		{1, 0},
	}
	for _, tt := range tests {
		in := rag.ContentInjector{Counter: countWords, MaxTokens: tt.budget}
		orig := llm.UserMessage("q?")
		msg, used := in.Inject(orig, injectSources)
		if len(used) != tt.want {
			t.Errorf("budget %d: used %d sources, want %d", tt.budget, len(used), tt.want)
		}
		if tt.want == 0 && msg.Text() != "q?" {
			t.Errorf("budget %d: message changed to %q", tt.budget, msg.Text())
		}
		if tt.budget > 0 && tt.want > 0 {
			if n := countWords.Count(strings.TrimPrefix(msg.Text(), "q?")); n > tt.budget {
				t.Errorf("budget %d: block has %d tokens", tt.budget, n)
			}
		}
		for i := range used {
			if !strings.Contains(msg.Text(), strings.TrimSpace(injectSources[i].Content)) {
				t.Errorf("budget %d: chunk %d split or missing", tt.budget, i)
			}
		}
	}
}

func TestContentInjectorNothingRetrieved(t *testing.T) {
	t.Parallel()
	orig := llm.UserParts(llm.TextPart("a"), llm.TextPart("b"))
	msg, used := rag.ContentInjector{}.Inject(orig, nil)
	if used != nil || len(msg.Parts) != 2 || msg.Text() != "ab" {
		t.Errorf("message changed: %+v", msg)
	}
}

func TestContentInjectorKeepsImages(t *testing.T) {
	t.Parallel()
	orig := llm.UserParts(llm.TextPart("What is this?"), llm.ImageURLPart("https://example.com/x.png"))
	msg, _ := rag.ContentInjector{Intro: "Context:"}.Inject(orig, injectSources[:1])
	if len(msg.Parts) != 3 || msg.Parts[1].Kind != llm.PartImage || msg.Parts[2].Kind != llm.PartText {
		t.Fatalf("parts = %+v", msg.Parts)
	}
	if !strings.HasPrefix(msg.Parts[2].Text, "\n\nContext:\n[1] handbook.md") {
		t.Errorf("block = %q", msg.Parts[2].Text)
	}
	if len(orig.Parts) != 2 {
		t.Error("input message modified")
	}
}

func TestSourceLabelFallbacks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    rag.Source
		want string
	}{
		{rag.Source{DocumentName: "a.md"}, "[1] a.md"},
		{rag.Source{Metadata: map[string]string{rag.MetaTitle: "Title"}}, "[1] Title"},
		{rag.Source{Metadata: map[string]string{rag.MetaSource: "/x/y.txt"}}, "[1] /x/y.txt"},
		{rag.Source{ID: "c1"}, "[1] c1"},
		{rag.Source{}, "[1] source"},
		{rag.Source{DocumentName: "two\nlines"}, "[1] two lines"},
		{rag.Source{DocumentName: "p.pdf", Metadata: map[string]string{rag.MetaPage: "2", rag.MetaPageEnd: "2"}}, "[1] p.pdf (page 2)"},
	}
	for _, tt := range tests {
		if got := rag.SourceLabel(1, tt.s); got != tt.want {
			t.Errorf("SourceLabel(%+v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}
