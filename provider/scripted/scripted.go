// Package scripted is a deterministic, in-process model for tests and for
// Weft's offline demo. It answers by rules instead of by inference: reply
// with a text or JSON, call a tool when the user names it, quote retrieved
// context, summarise tool results, echo, or fail, so that every layer above
// the model (tool loops, structured output, retrieval, streaming, error
// handling) can be exercised without a network or an API key.
//
// It registers itself as provider "scripted" with three models that need no
// configuration:
//
//   - scripted/echo answers with the last user message, verbatim;
//   - scripted/demo (the default) answers structured-output requests with
//     a value of the JSON Schema it is sent, calls a tool the user names,
//     quotes retrieved context, summarises tool results, and otherwise
//     echoes;
//   - scripted/embed is the echo model, named for use as an embedder.
//
// Every model also computes embeddings: feature-hashed bags of words,
// L2-normalised (see [Vector]), so texts that share words are near.
package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
	"github.com/weftlabs/weft/tokens"
)

// Model is a scripted model. It implements [llm.ChatModel],
// [llm.EmbeddingModel], [llm.CapabilityReporter] and [llm.Namer], and is
// safe for concurrent use.
type Model struct {
	name  string
	rules []Rule
	caps  llm.Capabilities
	dims  int
	seq   atomic.Int64

	noRecord bool
	mu       sync.Mutex
	reqs     []*llm.Request
}

// Option configures a [Model]. Every [Rule] is an Option that appends the
// rule.
type Option interface {
	apply(*Model)
}

type optionFunc func(*Model)

func (f optionFunc) apply(m *Model) { f(m) }

// WithName sets the model's name (default "scripted/model").
func WithName(name string) Option { return optionFunc(func(m *Model) { m.name = name }) }

// Capabilities sets what the model declares it can do. The default declares
// tools, JSON Schema output, JSON mode and streaming; declare
// JSONSchema: false to exercise a caller's format-instructions path.
func Capabilities(c llm.Capabilities) Option {
	return optionFunc(func(m *Model) { m.caps = c })
}

// Dimensions sets the length of the model's embedding vectors (default
// [DefaultDimensions]).
func Dimensions(n int) Option {
	return optionFunc(func(m *Model) {
		if n > 0 {
			m.dims = n
		}
	})
}

// RecordRequests says whether the model keeps the requests it receives for
// [Model.Requests] (default true). Models opened through the provider
// registry do not keep them, so a long-running server using the demo model
// does not grow.
func RecordRequests(on bool) Option {
	return optionFunc(func(m *Model) { m.noRecord = !on })
}

// DefaultDimensions is the length of embedding vectors when neither the
// model nor the request sets one.
const DefaultDimensions = 256

// New returns a model that answers each request with the first rule that
// matches it. With no rules it echoes the last user message.
func New(opts ...Option) *Model {
	m := &Model{
		name: "scripted/model",
		caps: llm.Capabilities{Tools: true, JSONSchema: true, JSONMode: true, Streaming: true, ContextWindow: 128_000},
		dims: DefaultDimensions,
	}
	for _, o := range opts {
		o.apply(m)
	}
	if len(m.rules) == 0 {
		m.rules = []Rule{Echo()}
	}
	return m
}

// Name returns the model's name.
func (m *Model) Name() string { return m.name }

// Capabilities returns what the model declares.
func (m *Model) Capabilities() llm.Capabilities { return m.caps }

// Requests returns the chat requests the model received, in order (none
// when RecordRequests(false) is set).
func (m *Model) Requests() []*llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*llm.Request(nil), m.reqs...)
}

// Generate answers req with the first matching rule.
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req == nil {
		return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: "scripted", Message: "nil request"}
	}
	if !m.noRecord {
		m.mu.Lock()
		m.reqs = append(m.reqs, req)
		m.mu.Unlock()
	}
	for _, r := range m.rules {
		if r.Match != nil && !r.Match(req) {
			continue
		}
		resp, err := r.Respond(req)
		if err != nil {
			return nil, err
		}
		return m.complete(req, resp), nil
	}
	return nil, &llm.Error{
		Kind:     llm.ErrBadRequest,
		Provider: "scripted",
		Message:  fmt.Sprintf("%s: no rule matches the request (last user message %q); add a catch-all rule such as Echo()", m.name, lastUserText(req)),
	}
}

// complete fills in what a rule left out: role, id, model, finish reason
// and an estimated usage.
func (m *Model) complete(req *llm.Request, r *llm.Response) *llm.Response {
	out := *r
	out.Message.Role = llm.RoleAssistant
	if out.ID == "" {
		out.ID = "scripted-" + strconv.FormatInt(m.seq.Add(1), 10)
	}
	if out.Model == "" {
		out.Model = m.name
	}
	if out.FinishReason == "" {
		out.FinishReason = llm.FinishStop
		if len(out.Message.ToolCalls) > 0 {
			out.FinishReason = llm.FinishToolCalls
		}
	}
	if out.Usage.IsZero() {
		var c tokens.Estimator
		for _, msg := range req.Messages {
			out.Usage.PromptTokens += tokens.MessageTokens(c, msg)
		}
		out.Usage.CompletionTokens = tokens.MessageTokens(c, out.Message)
		out.Usage.TotalTokens = out.Usage.PromptTokens + out.Usage.CompletionTokens
	}
	return &out
}

// Stream answers req like Generate, as a stream: metadata, the reasoning
// and text in word-sized chunks, each tool call's start and its arguments
// in three fragments, the usage, and the finish.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		for c := range chunks(resp) {
			if err := ctx.Err(); err != nil {
				yield(llm.Chunk{}, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// chunks yields the stream form of resp.
func chunks(resp *llm.Response) iter.Seq[llm.Chunk] {
	return func(yield func(llm.Chunk) bool) {
		if !yield(llm.Chunk{Type: llm.ChunkMeta, ResponseID: resp.ID, Model: resp.Model}) {
			return
		}
		for w := range words(resp.Message.Reasoning) {
			if !yield(llm.ReasoningChunk(w)) {
				return
			}
		}
		for w := range words(resp.Message.Text()) {
			if !yield(llm.TextChunk(w)) {
				return
			}
		}
		for i, tc := range resp.Message.ToolCalls {
			if !yield(llm.ToolCallStartChunk(i, tc.ID, tc.Name)) {
				return
			}
			args := tc.Arguments
			for n := 3; n > 0 && args != ""; n-- {
				size := (len(args) + n - 1) / n
				for size < len(args) && args[size]&0xC0 == 0x80 {
					size++ // keep UTF-8 sequences whole
				}
				if !yield(llm.ToolCallDeltaChunk(i, args[:size])) {
					return
				}
				args = args[size:]
			}
		}
		if !yield(llm.UsageChunk(resp.Usage)) {
			return
		}
		yield(llm.FinishChunk(resp.FinishReason))
	}
}

// words yields s in word-sized pieces, each word with the spaces before it,
// without allocating.
func words(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			i := 0
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			for i < len(s) && !isSpace(s[i]) {
				i++
			}
			if !yield(s[:i]) {
				return
			}
			s = s[i:]
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// Embed returns one [Vector] per input.
func (m *Model) Embed(ctx context.Context, req *llm.EmbedRequest) (*llm.EmbedResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req == nil {
		return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: "scripted", Message: "nil embedding request"}
	}
	dims := m.dims
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	out := &llm.EmbedResponse{Vectors: make([][]float32, len(req.Inputs)), Model: m.name}
	for i, in := range req.Inputs {
		out.Vectors[i] = Vector(in, dims)
		out.Usage.PromptTokens += tokens.Estimate(in)
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	return out, nil
}

func lastUserText(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Text()
		}
	}
	return ""
}

// toolResultsSinceUser returns the tool messages after the last user message.
func toolResultsSinceUser(req *llm.Request) []llm.Message {
	i := len(req.Messages)
	for i > 0 && req.Messages[i-1].Role != llm.RoleUser {
		i--
	}
	var out []llm.Message
	for _, msg := range req.Messages[i:] {
		if msg.Role == llm.RoleTool {
			out = append(out, msg)
		}
	}
	return out
}

func init() {
	provider.Register("scripted", provider.Provider{
		Open:         open,
		DefaultModel: "demo",
		Description:  "deterministic offline models for tests and the demo (echo, demo, embed)",
	})
}

func open(cfg provider.Config) (llm.ChatModel, error) {
	name := "scripted/" + cfg.Model
	switch cfg.Model {
	case "echo", "embed":
		return New(WithName(name), RecordRequests(false), Echo()), nil
	case "demo":
		return Demo(WithName(name), RecordRequests(false)), nil
	}
	return nil, fmt.Errorf("unknown scripted model %q (have echo, demo, embed)", cfg.Model)
}

// marshal is json.Marshal for values a rule was built with; a value that
// cannot be encoded becomes the rule's error.
func marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("scripted: encoding %T: %w", v, err)
	}
	return string(b), nil
}
