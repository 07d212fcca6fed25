package rag

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/prompt"
)

// QueryTransformer rewrites the query retrieval runs with. It returns one or
// more queries; several are each recalled and the results fused (multi-query
// retrieval). A transformer that fails makes the [Augmentor] fall back to the
// query it was given.
type QueryTransformer interface {
	Transform(ctx context.Context, q Query) ([]string, error)
}

// QueryTransformerFunc adapts a function to the QueryTransformer interface.
type QueryTransformerFunc func(ctx context.Context, q Query) ([]string, error)

// Transform calls f(ctx, q).
func (f QueryTransformerFunc) Transform(ctx context.Context, q Query) ([]string, error) {
	return f(ctx, q)
}

// CompressPrompt is the default template of [CompressQuery]. It is rendered
// with [TransformData]: .Conversation holds the earlier turns, one
// "User: …" or "Assistant: …" paragraph each, and .Query the follow-up.
// The model's first non-empty line is the standalone query.
const CompressPrompt = `Rewrite the follow-up question below as a standalone question that can be understood without the conversation. Replace every pronoun and reference ("it", "its", "that one", "the second") with what it refers to in the conversation. Keep the language of the follow-up question. Do not answer it.

Conversation:
{{.Conversation}}

Follow-up question: {{.Query}}

Reply with the standalone question only, on one line.`

// ExpandPrompt is the default template of [ExpandQuery]. It is rendered with
// [TransformData]: .Query is the question and .N how many alternative
// queries to write. Each non-empty line of the answer is one query (list
// markers and quotes are removed).
const ExpandPrompt = `Write {{.N}} different search queries that would find the documents answering the question below. Vary the wording and use synonyms and related terms; keep each query short; keep the language of the question.

Question: {{.Query}}

Reply with one query per line, with no numbering and no other text.`

// TransformData is what the transform templates are rendered with.
type TransformData struct {
	// Conversation is the chat history before the query, one "User: …" or
	// "Assistant: …" paragraph per message (compression only).
	Conversation string
	// Query is the text to transform.
	Query string
	// N is how many queries to write (expansion only).
	N int
}

// TransformOption configures [CompressQuery] and [ExpandQuery].
type TransformOption func(*transformConfig)

type transformConfig struct {
	prompt  string
	history int
	timeout time.Duration
}

// DefaultTransformTimeout bounds a transform's model call unless
// [TransformTimeout] says otherwise.
const DefaultTransformTimeout = 10 * time.Second

// TransformPrompt replaces the transform's template (see [CompressPrompt]
// and [ExpandPrompt] for the data each gets). It is checked against
// [TransformData] at construction.
func TransformPrompt(text string) TransformOption {
	return func(c *transformConfig) { c.prompt = text }
}

// TransformHistory sets how many of the latest user and assistant messages
// compression shows the model (default 6).
func TransformHistory(n int) TransformOption {
	return func(c *transformConfig) { c.history = n }
}

// TransformTimeout bounds the transform's model call (default
// DefaultTransformTimeout; negative means only the caller's context).
func TransformTimeout(d time.Duration) TransformOption {
	return func(c *transformConfig) { c.timeout = d }
}

// modelTransform is a transform that asks a chat model.
type modelTransform struct {
	name  string
	model llm.ChatModel
	tmpl  *prompt.Template
	cfg   transformConfig
	n     int // queries to ask for (expansion)
}

func newModelTransform(name, defaultPrompt string, model llm.ChatModel, opts []TransformOption) (*modelTransform, error) {
	if model == nil {
		return nil, fmt.Errorf("rag: %s query: nil model", name)
	}
	cfg := transformConfig{prompt: defaultPrompt, history: 6, timeout: DefaultTransformTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	tmpl, err := prompt.For[TransformData]("rag."+name, cfg.prompt)
	if err != nil {
		return nil, fmt.Errorf("rag: %s query prompt: %w", name, err)
	}
	return &modelTransform{name: name, model: model, tmpl: tmpl, cfg: cfg}, nil
}

// Name names the transform in degradation reports ("compress", "expand").
func (t *modelTransform) Name() string { return t.name }

func (t *modelTransform) ask(ctx context.Context, data TransformData) (string, error) {
	text, err := t.tmpl.Render(data)
	if err != nil {
		return "", fmt.Errorf("render prompt: %w", err)
	}
	if t.cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.cfg.timeout)
		defer cancel()
	}
	temp := 0.0
	resp, err := t.model.Generate(ctx, &llm.Request{Messages: []llm.Message{llm.UserMessage(text)}, Temperature: &temp})
	if err != nil {
		return "", err
	}
	return resp.Text(), nil
}

// QueryCompressor turns a follow-up question into a standalone query using
// the conversation: "what about its price?" after a talk about the X200
// becomes "What is the price of the X200?". Build one with [CompressQuery].
type QueryCompressor struct{ t *modelTransform }

// CompressQuery returns a transformer that asks model to rewrite a follow-up
// question as a standalone query (prompt: [CompressPrompt]). Without earlier
// user or assistant messages it returns the query unchanged, without
// calling the model.
func CompressQuery(model llm.ChatModel, opts ...TransformOption) (*QueryCompressor, error) {
	t, err := newModelTransform("compress", CompressPrompt, model, opts)
	if err != nil {
		return nil, err
	}
	return &QueryCompressor{t: t}, nil
}

// Name returns "compress".
func (c *QueryCompressor) Name() string { return c.t.name }

// Transform returns the standalone form of q.Text.
func (c *QueryCompressor) Transform(ctx context.Context, q Query) ([]string, error) {
	conv := conversation(q.History, c.t.cfg.history)
	if conv == "" {
		return []string{q.Text}, nil
	}
	answer, err := c.t.ask(ctx, TransformData{Conversation: conv, Query: q.Text})
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(answer) {
		line = cleanQueryLine(line)
		if l := strings.ToLower(line); strings.HasPrefix(l, "standalone question:") {
			line = cleanQueryLine(line[len("standalone question:"):])
		}
		if line != "" {
			return []string{line}, nil
		}
	}
	return nil, errors.New("the model returned no question")
}

// QueryExpander turns one query into several phrasings, recalled separately
// and fused (multi-query retrieval). Build one with [ExpandQuery].
type QueryExpander struct{ t *modelTransform }

// ExpandQuery returns a transformer that asks model for n alternative
// phrasings of the query (prompt: [ExpandPrompt]); the result is the
// original query followed by up to n distinct alternatives. n below 1
// means 3.
func ExpandQuery(model llm.ChatModel, n int, opts ...TransformOption) (*QueryExpander, error) {
	t, err := newModelTransform("expand", ExpandPrompt, model, opts)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		n = 3
	}
	t.n = n
	return &QueryExpander{t: t}, nil
}

// Name returns "expand".
func (e *QueryExpander) Name() string { return e.t.name }

// Transform returns q.Text and its alternatives.
func (e *QueryExpander) Transform(ctx context.Context, q Query) ([]string, error) {
	answer, err := e.t.ask(ctx, TransformData{Query: q.Text, N: e.t.n})
	if err != nil {
		return nil, err
	}
	out := []string{q.Text}
	seen := map[string]bool{strings.ToLower(strings.TrimSpace(q.Text)): true}
	for line := range strings.Lines(answer) {
		line = cleanQueryLine(line)
		key := strings.ToLower(line)
		if line == "" || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, line)
		if len(out) == e.t.n+1 {
			break
		}
	}
	if len(out) == 1 {
		return nil, errors.New("the model returned no queries")
	}
	return out, nil
}

// cleanQueryLine strips list markers, quotes and surrounding space that
// models put around the queries they were asked for.
func cleanQueryLine(s string) string {
	s = strings.TrimSpace(s)
	// "1. ", "2) ", "- ", "* ", "• "
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')') {
		s = s[i+1:]
	} else if rest, ok := strings.CutPrefix(s, "- "); ok {
		s = rest
	} else if rest, ok := strings.CutPrefix(s, "* "); ok {
		s = rest
	} else if rest, ok := strings.CutPrefix(s, "• "); ok {
		s = rest
	}
	s = strings.TrimSpace(s)
	for _, q := range [][2]string{{`"`, `"`}, {"'", "'"}, {"“", "”"}, {"`", "`"}} {
		if len(s) >= len(q[0])+len(q[1]) && strings.HasPrefix(s, q[0]) && strings.HasSuffix(s, q[1]) {
			s = strings.TrimSpace(s[len(q[0]) : len(s)-len(q[1])])
		}
	}
	return s
}

// maxTurnBytes caps one message of the conversation shown to a transform:
// the question's referent is almost always near, and a pasted document
// would only make the rewrite slow and costly.
const maxTurnBytes = 2000

// conversation renders the last n user and assistant messages of history.
func conversation(history []llm.Message, n int) string {
	var turns []string
	for i := len(history) - 1; i >= 0 && len(turns) < n; i-- {
		m := history[i]
		var who string
		switch m.Role {
		case llm.RoleUser:
			who = "User: "
		case llm.RoleAssistant:
			who = "Assistant: "
		default:
			continue
		}
		text := strings.TrimSpace(m.Text())
		if text == "" {
			continue
		}
		if len(text) > maxTurnBytes {
			cut := maxTurnBytes
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut] + "…"
		}
		turns = append(turns, who+text)
	}
	for i, j := 0, len(turns)-1; i < j; i, j = i+1, j-1 {
		turns[i], turns[j] = turns[j], turns[i]
	}
	return strings.Join(turns, "\n\n")
}
