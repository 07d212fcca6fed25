package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/weftlabs/weft/llm"
)

// Rule answers the requests it matches. A nil Match matches every request.
// Rules are tried in the order given to [New]; the first match answers.
// Respond returns the answer's message (and, optionally, usage and finish
// reason); the model fills in the rest.
type Rule struct {
	Match   func(*llm.Request) bool
	Respond func(*llm.Request) (*llm.Response, error)
}

func (r Rule) apply(m *Model) { m.rules = append(m.rules, r) }

func text(s string) *llm.Response {
	return &llm.Response{Message: llm.AssistantMessage(s)}
}

// Reply answers every request with text.
func Reply(s string) Rule {
	return Rule{Respond: func(*llm.Request) (*llm.Response, error) { return text(s), nil }}
}

// ReplyJSON answers every request with v encoded as JSON.
func ReplyJSON(v any) Rule {
	s, err := marshal(v)
	return Rule{Respond: func(*llm.Request) (*llm.Response, error) {
		if err != nil {
			return nil, err
		}
		return text(s), nil
	}}
}

// toolCall makes a call with an id derived from the call and the length of
// the conversation: the same script gives the same ids however tests are
// scheduled, and a call repeated on a later turn gets a new id.
func toolCall(req *llm.Request, name, args string) llm.ToolCall {
	h := fnv1a(name + "\x00" + args + "\x00" + strconv.Itoa(len(req.Messages)))
	return llm.ToolCall{ID: "call_" + strconv.FormatUint(h&0xffffffffffff, 36), Name: name, Arguments: args}
}

// CallTool answers every request with a call of tool name with argsJSON.
func CallTool(name, argsJSON string) Rule {
	return Rule{Respond: func(req *llm.Request) (*llm.Response, error) {
		return &llm.Response{Message: llm.Message{ToolCalls: []llm.ToolCall{toolCall(req, name, argsJSON)}}}, nil
	}}
}

// Echo answers with the last user message, verbatim.
func Echo() Rule {
	return Rule{Respond: func(req *llm.Request) (*llm.Response, error) { return text(lastUserText(req)), nil }}
}

// Fail answers every request with err, to test error paths. Use an
// [*llm.Error] to exercise a caller's handling of a kind (rate limits,
// authentication, …).
func Fail(err error) Rule {
	return Rule{Respond: func(*llm.Request) (*llm.Response, error) { return nil, err }}
}

// Sequence answers the i-th request it sees with steps[i] (their Match is
// not consulted), and matches nothing once the steps are used up. Its
// position is shared by every model it is given to. It is the
// shape tool-loop tests need: first a tool call, then a final answer.
func Sequence(steps ...Rule) Rule {
	var n atomic.Int64
	return Rule{
		Match: func(*llm.Request) bool { return n.Load() < int64(len(steps)) },
		Respond: func(req *llm.Request) (*llm.Response, error) {
			i := n.Add(1) - 1
			if i >= int64(len(steps)) {
				return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: "scripted", Message: fmt.Sprintf("sequence of %d steps used up", len(steps))}
			}
			return steps[i].Respond(req)
		},
	}
}

// WhenUserSays applies then when the last user message matches re (and
// then's own Match, if any, agrees).
func WhenUserSays(re *regexp.Regexp, then Rule) Rule {
	return Rule{
		Match: func(req *llm.Request) bool {
			return re.MatchString(lastUserText(req)) && (then.Match == nil || then.Match(req))
		},
		Respond: then.Respond,
	}
}

// CallToolWhen calls tool with argsJSON when the last user message matches
// re and no tool result has answered it yet, so that a tool round ends.
func CallToolWhen(re *regexp.Regexp, tool, argsJSON string) Rule {
	return Rule{
		Match: func(req *llm.Request) bool {
			return len(toolResultsSinceUser(req)) == 0 && re.MatchString(lastUserText(req))
		},
		Respond: CallTool(tool, argsJSON).Respond,
	}
}

// SummarizeToolResults matches once tool results follow the last user
// message, and answers with them, one line per result.
func SummarizeToolResults() Rule {
	return Rule{
		Match: func(req *llm.Request) bool { return len(toolResultsSinceUser(req)) > 0 },
		Respond: func(req *llm.Request) (*llm.Response, error) {
			var b strings.Builder
			for i, msg := range toolResultsSinceUser(req) {
				if i > 0 {
					b.WriteByte('\n')
				}
				name := msg.Name
				if name == "" {
					name = "the tool"
				}
				if msg.IsError {
					fmt.Fprintf(&b, "%s failed: %s", name, msg.Text())
				} else {
					fmt.Fprintf(&b, "%s returned: %s", name, msg.Text())
				}
			}
			return text(b.String()), nil
		},
	}
}

// CallNamedTool calls a tool offered in the request when the last user
// message names it (as "get_weather" or "get weather"), with arguments
// taken from the message by the tool's parameter schema: numbers in order
// for number and integer parameters, a quoted phrase or the text after the
// tool's name for string parameters, the first value of an enum. It does
// not match once tool results answer the message.
func CallNamedTool() Rule {
	return Rule{
		Match: func(req *llm.Request) bool {
			return len(toolResultsSinceUser(req)) == 0 && namedTool(req) != nil
		},
		Respond: func(req *llm.Request) (*llm.Response, error) {
			spec := namedTool(req)
			if spec == nil {
				return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: "scripted", Message: "no tool named in the message"}
			}
			args := toolArgs(spec, lastUserText(req))
			return &llm.Response{Message: llm.Message{ToolCalls: []llm.ToolCall{toolCall(req, spec.Name, args)}}}, nil
		},
	}
}

// namedTool returns the first offered tool the last user message names.
func namedTool(req *llm.Request) *llm.ToolSpec {
	if len(req.Tools) == 0 {
		return nil
	}
	msg := strings.ToLower(lastUserText(req))
	for i := range req.Tools {
		if _, ok := mention(msg, req.Tools[i].Name); ok {
			return &req.Tools[i]
		}
	}
	return nil
}

// mention finds name (or name with _ and - as spaces) in the lower-case
// msg and returns the index just after it.
func mention(msg, name string) (int, bool) {
	name = strings.ToLower(name)
	for _, form := range [...]string{name, strings.NewReplacer("_", " ", "-", " ").Replace(name)} {
		if i := strings.Index(msg, form); i >= 0 && form != "" {
			return i + len(form), true
		}
	}
	return 0, false
}

var (
	numberRE = regexp.MustCompile(`-?\d+(?:\.\d+)?`)
	quotedRE = regexp.MustCompile(`"([^"]+)"|'([^']+)'`)
)

// toolArgs builds arguments for spec's parameters from the user's text.
func toolArgs(spec *llm.ToolSpec, msg string) string {
	props := orderedProperties(spec.Parameters)
	numbers := numberRE.FindAllString(msg, -1)
	lower := strings.ToLower(msg)
	rest := msg
	if end, ok := mention(lower, spec.Name); ok {
		rest = strings.TrimSpace(strings.TrimLeft(msg[end:], " :,-"))
	}
	if rest == "" {
		rest = msg
	}
	if m := quotedRE.FindStringSubmatch(msg); m != nil {
		rest = m[1] + m[2]
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range props {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.name)
		b.Write(k)
		b.WriteByte(':')
		var v any
		switch {
		case len(p.schema.Enum) > 0:
			v = p.schema.Enum[0]
		case p.schema.Type == "number" || p.schema.Type == "integer":
			v = json.Number("0")
			if len(numbers) > 0 {
				n := numbers[0]
				numbers = numbers[1:]
				if p.schema.Type == "integer" {
					n, _, _ = strings.Cut(n, ".")
				}
				v = json.Number(n)
			}
		case p.schema.Type == "boolean":
			v = false
		case p.schema.Type == "array":
			v = []any{}
		case p.schema.Type == "object":
			v = map[string]any{}
		default:
			v = rest
		}
		enc, _ := json.Marshal(v)
		b.Write(enc)
	}
	b.WriteByte('}')
	return b.String()
}

type property struct {
	name   string
	schema struct {
		Type string `json:"type"`
		Enum []any  `json:"enum"`
	}
}

// orderedProperties returns a JSON Schema's properties in document order (a
// map would lose it, and numbers are assigned to parameters in order).
func orderedProperties(schema json.RawMessage) []property {
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []property
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		name, _ := t.(string)
		var p property
		p.name = name
		if dec.Decode(&p.schema) != nil {
			return out
		}
		out = append(out, p)
	}
	return out
}

// contextMarkers introduce a block of retrieved content in a user message,
// in the forms retrieval augmentors commonly inject.
var contextMarkers = []string{
	"answer using the following information:",
	"<context>",
	"context:\n",
	"information:\n",
	"sources:\n",
}

// contextBlock splits a user message into the question and the injected
// context, if any.
func contextBlock(msg string) (question, context string, ok bool) {
	lower := strings.ToLower(msg)
	for _, mk := range contextMarkers {
		i := strings.Index(lower, mk)
		if i < 0 {
			continue
		}
		ctx := msg[i+len(mk):]
		if end := strings.Index(strings.ToLower(ctx), "</context>"); end >= 0 {
			ctx = ctx[:end]
		}
		if strings.TrimSpace(ctx) == "" {
			continue
		}
		return strings.TrimSpace(msg[:i]), ctx, true
	}
	return msg, "", false
}

// QuoteContext matches a user message that carries a block of retrieved
// context, and answers by quoting the line of the block that shares the most
// words with the question. When the block numbers its sources with "[n]"
// label lines (as rag.ContentInjector does), the quote cites its source.
func QuoteContext() Rule {
	return Rule{
		Match: func(req *llm.Request) bool {
			_, _, ok := contextBlock(lastUserText(req))
			return ok
		},
		Respond: func(req *llm.Request) (*llm.Response, error) {
			q, ctx, _ := contextBlock(lastUserText(req))
			line, cite := bestPassage(q, ctx)
			if cite != "" {
				return text("According to the provided context " + cite + ": \"" + line + "\""), nil
			}
			return text("According to the provided context: \"" + line + "\""), nil
		},
	}
}

// sourceLabelRE matches a numbered source label line such as
// "[2] faq.md › Install".
var sourceLabelRE = regexp.MustCompile(`^\[(\d+)\](\s|$)`)

// bestPassage returns the non-empty, non-label line of ctx sharing the most
// words with q (the first on ties), cut to 300 bytes, and the "[n]" label of
// the source it belongs to, if any.
func bestPassage(q, ctx string) (line, cite string) {
	qwords := map[string]bool{}
	for w := range terms(q) {
		qwords[w] = true
	}
	bestScore, label := -1, ""
	for l := range strings.Lines(ctx) {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if m := sourceLabelRE.FindStringSubmatch(l); m != nil {
			label = "[" + m[1] + "]"
			continue
		}
		score := 0
		for w := range terms(l) {
			if qwords[w] {
				score++
			}
		}
		if score > bestScore {
			line, cite, bestScore = l, label, score
		}
	}
	if len(line) > 300 {
		cut := 300
		for cut > 0 && line[cut]&0xC0 == 0x80 {
			cut--
		}
		line = line[:cut] + "…"
	}
	return line, cite
}

// HelpfulEcho answers with the last user message, introduced by a line that
// says this is the offline demo model.
func HelpfulEcho() Rule {
	return Rule{Respond: func(req *llm.Request) (*llm.Response, error) {
		msg := lastUserText(req)
		if strings.TrimSpace(msg) == "" {
			return text("This is Weft's offline demo model. Configure a real model provider for real answers."), nil
		}
		return text("This is Weft's offline demo model, so it repeats what you said: " + msg), nil
	}}
}

// Demo returns the offline demo model: it answers requests for structured
// output with a value of the requested shape ([AnswerSchema]), summarises
// tool results once they arrive, calls a tool the user names, quotes
// retrieved context, and otherwise echoes helpfully. Options add to or adjust it; rules given here
// are tried before the demo's own.
func Demo(opts ...Option) *Model {
	all := append([]Option{WithName("scripted/demo")}, opts...)
	return New(append(all, AnswerSchema(), SummarizeToolResults(), CallNamedTool(), QuoteContext(), HelpfulEcho())...)
}
