package rag

import (
	"strconv"
	"strings"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tokens"
)

// Injector adds retrieved sources to a user message. It returns the new
// message and the sources it actually used (an injector with a budget may
// use fewer than it was given).
type Injector interface {
	Inject(msg llm.Message, sources []Source) (llm.Message, []Source)
}

// InjectorFunc adapts a function to the Injector interface.
type InjectorFunc func(msg llm.Message, sources []Source) (llm.Message, []Source)

// Inject calls f(msg, sources).
func (f InjectorFunc) Inject(msg llm.Message, sources []Source) (llm.Message, []Source) {
	return f(msg, sources)
}

// DefaultInjectIntro introduces the retrieved content in the user message.
const DefaultInjectIntro = "Answer using the following information:"

// DefaultInjectTokens is the default budget of a [ContentInjector]: the
// tokens the injected block may take.
const DefaultInjectTokens = 2000

// ContentInjector appends retrieved sources to the user message in this
// format:
//
//	<the user's text>
//
//	Answer using the following information:
//	[1] handbook.md › Install > Linux (page 3)
//	<the chunk's text>
//
//	[2] faq.md
//	<the chunk's text>
//
// Each source is numbered in rank order, so a model can cite "[1]", and
// labelled with its document name (falling back to the source path, the
// document ID, then the chunk ID), the heading path of its section and its
// page or page range where the chunk has them. Chunks are added whole, best
// first, while the block fits MaxTokens; the first that does not fit ends
// the block, so a chunk is never split and rank order is never skipped.
// With no sources (or none that fits) the message is returned unchanged.
//
// A message whose parts are all text gets one text part; a message with
// images keeps them and gets the block as an extra text part at the end.
//
// The zero value is ready to use.
type ContentInjector struct {
	// Counter measures the block (default tokens.Estimator).
	Counter tokens.Counter
	// MaxTokens is the budget of the injected block, intro and labels
	// included (default DefaultInjectTokens; negative means no limit).
	MaxTokens int
	// Intro is the line before the sources (default DefaultInjectIntro).
	Intro string
}

// Inject returns msg with as many sources as fit the budget, and those
// sources.
func (in ContentInjector) Inject(msg llm.Message, sources []Source) (llm.Message, []Source) {
	if len(sources) == 0 {
		return msg, nil
	}
	counter := in.Counter
	if counter == nil {
		counter = tokens.Estimator{}
	}
	budget := in.MaxTokens
	if budget == 0 {
		budget = DefaultInjectTokens
	}
	intro := in.Intro
	if intro == "" {
		intro = DefaultInjectIntro
	}

	var b strings.Builder
	b.WriteString("\n\n")
	b.WriteString(intro)
	used := counter.Count(b.String())
	n := 0
	for _, s := range sources {
		sep := "\n"
		if n > 0 {
			sep = "\n\n"
		}
		entry := sep + SourceLabel(n+1, s) + "\n" + strings.TrimSpace(s.Content)
		cost := counter.Count(entry)
		if budget > 0 && used+cost > budget {
			break
		}
		used += cost
		b.WriteString(entry)
		n++
	}
	if n == 0 {
		return msg, nil
	}
	block := b.String()

	out := msg
	if out.Role == "" {
		out.Role = llm.RoleUser
	}
	if !msg.HasImages() {
		out.Parts = []llm.Part{llm.TextPart(msg.Text() + block)}
	} else {
		out.Parts = append(append([]llm.Part(nil), msg.Parts...), llm.TextPart(block))
	}
	return out, sources[:n:n]
}

// SourceLabel is the line a [ContentInjector] puts above source s, numbered
// n: "[n] name › headings (page p)".
func SourceLabel(n int, s Source) string {
	var b strings.Builder
	b.WriteByte('[')
	b.WriteString(strconv.Itoa(n))
	b.WriteString("] ")
	b.WriteString(sourceName(s))
	if h := s.Metadata[MetaHeadings]; h != "" {
		b.WriteString(" › ")
		b.WriteString(h)
	}
	if p := s.Metadata[MetaPage]; p != "" {
		if end := s.Metadata[MetaPageEnd]; end != "" && end != p {
			b.WriteString(" (pages " + p + "–" + end + ")")
		} else {
			b.WriteString(" (page " + p + ")")
		}
	}
	return b.String()
}

func sourceName(s Source) string {
	for _, name := range []string{s.DocumentName, s.Metadata[MetaName], s.Metadata[MetaTitle], s.Metadata[MetaSource], s.DocumentID, s.ID} {
		if name = strings.TrimSpace(name); name != "" {
			return strings.ReplaceAll(name, "\n", " ")
		}
	}
	return "source"
}
