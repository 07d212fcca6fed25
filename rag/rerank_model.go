package rag

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/prompt"
)

// RerankPrompt is the template of [ModelReranker]. It is rendered with
// [RerankData]; the model answers one "N: score" line per passage, the score
// from 0 (irrelevant) to 10 (answers the question fully).
const RerankPrompt = `Rate how well each passage answers the question, from 0 (irrelevant) to 10 (answers it fully).

Question: {{.Query}}
{{range .Passages}}
[{{.N}}] {{.Text}}
{{end}}
Reply with one line per passage, in the form "N: score" (for example "1: 7"), and nothing else.`

// RerankData is what [RerankPrompt] is rendered with.
type RerankData struct {
	Query    string
	Passages []RerankPassage
}

// RerankPassage is one numbered passage of [RerankData].
type RerankPassage struct {
	N    int
	Text string
}

// maxPassageBytes caps each passage shown to a reranking model, to bound the
// prompt; the start of a chunk says what it is about.
const maxPassageBytes = 1500

// ModelReranker is a [Reranker] that asks a chat model to grade each
// passage (an "LLM as judge" reranker): one call per rerank, all passages
// at once. Sources are reordered by grade, ties kept in their fused order,
// and Score becomes the grade divided by 10, in [0, 1]. Sources graded below
// MinScore are dropped. A model answer with no usable grade is an error
// (the [MultiRetriever] then keeps the fused order).
//
// Dedicated rerank models (Cohere, Jina, bge-reranker behind an HTTP
// endpoint) are better and cheaper; plug them in with [RerankerFunc].
type ModelReranker struct {
	model    llm.ChatModel
	tmpl     *prompt.Template
	minScore float64
}

// NewModelReranker returns a reranker that grades with model, dropping
// sources graded below minScore (0 to 1; 0 keeps all).
func NewModelReranker(model llm.ChatModel, minScore float64) (*ModelReranker, error) {
	if model == nil {
		return nil, errors.New("rag: model reranker: nil model")
	}
	tmpl, err := prompt.For[RerankData]("rag.rerank", RerankPrompt)
	if err != nil {
		return nil, fmt.Errorf("rag: rerank prompt: %w", err)
	}
	return &ModelReranker{model: model, tmpl: tmpl, minScore: minScore}, nil
}

// Rerank grades sources against query and returns them best first.
func (r *ModelReranker) Rerank(ctx context.Context, query string, sources []Source) ([]Source, error) {
	if len(sources) == 0 {
		return sources, nil
	}
	data := RerankData{Query: query, Passages: make([]RerankPassage, len(sources))}
	for i, s := range sources {
		text := strings.Join(strings.Fields(s.Content), " ")
		if len(text) > maxPassageBytes {
			cut := maxPassageBytes
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut] + "…"
		}
		data.Passages[i] = RerankPassage{N: i + 1, Text: text}
	}
	text, err := r.tmpl.Render(data)
	if err != nil {
		return nil, fmt.Errorf("rag: rerank prompt: %w", err)
	}
	temp := 0.0
	resp, err := r.model.Generate(ctx, &llm.Request{Messages: []llm.Message{llm.UserMessage(text)}, Temperature: &temp})
	if err != nil {
		return nil, fmt.Errorf("rag: rerank: %w", err)
	}
	grades := ParseGrades(resp.Text(), len(sources))
	if grades == nil {
		return nil, fmt.Errorf("rag: rerank: no grades in the model's answer %q", truncate(resp.Text(), 200))
	}
	type graded struct {
		s     Source
		grade float64
	}
	all := make([]graded, 0, len(sources))
	for i, s := range sources {
		g := grades[i]
		if g < 0 {
			g = 0 // not graded: the model skipped it
		}
		s.Score = g / 10
		if s.Score >= r.minScore {
			all = append(all, graded{s, g})
		}
	}
	slices.SortStableFunc(all, func(a, b graded) int {
		switch {
		case a.grade > b.grade:
			return -1
		case a.grade < b.grade:
			return 1
		}
		return 0
	})
	out := make([]Source, len(all))
	for i, g := range all {
		out[i] = g.s
	}
	return out, nil
}

var gradeLine = regexp.MustCompile(`^\s*(?:passage\s*)?\[?(\d{1,4})\]?\s*[:=.)\-–]\s*(\d{1,2}(?:\.\d+)?)\s*(?:/\s*10)?\b`)

// ParseGrades reads a grading model's answer: lines like "3: 7", "[3] - 7",
// "Passage 3: 7/10". It returns n grades in passage order, -1 where the
// answer has none, or nil when it has no usable grade at all. Grades are
// clamped to [0, 10]; a passage graded twice keeps the first grade.
func ParseGrades(answer string, n int) []float64 {
	grades := make([]float64, n)
	for i := range grades {
		grades[i] = -1
	}
	found := false
	for line := range strings.Lines(answer) {
		m := gradeLine.FindStringSubmatch(strings.ToLower(strings.Trim(line, "*` \t\r\n")))
		if m == nil {
			continue
		}
		idx, err := strconv.Atoi(m[1])
		if err != nil || idx < 1 || idx > n || grades[idx-1] >= 0 {
			continue
		}
		g, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		grades[idx-1] = min(max(g, 0), 10)
		found = true
	}
	if !found {
		return nil
	}
	return grades
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
