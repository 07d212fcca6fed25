package scripted

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/weftlabs/weft/llm"
)

// Phrases the typed layer (package ai) uses to ask for an answer's shape
// when it sends no response format. The demo model recognises them.
const (
	schemaInstruction = "Answer with only a JSON value that matches this JSON Schema, without any other text:\n"
	boolInstruction   = "Answer with only true or false."
	intInstruction    = "Answer with only an integer number."
	uintInstruction   = "Answer with only a non-negative integer number."
	floatInstruction  = "Answer with only a number."
	timeInstruction   = "Answer with only a date and time in RFC 3339 format"
	enumInstruction   = "Answer with only one of these values: "
)

// AnswerSchema answers requests that ask for structured output — a JSON
// Schema response format, or the format instructions the typed layer
// appends to the user message for models without one — with a value of
// that shape, filled from the last user message (and the tool results
// after it): a string property takes the text after "<name> is" or
// "<name>:", a name-like property the first capitalised words, a quoted
// phrase or the whole text otherwise; numbers are taken in order; an enum
// takes the value the text names, else its first; booleans are true when
// the text says yes or true. The answer always matches the schema's types,
// so the typed layer parses it: the point is an offline demo of typed
// output, not extraction.
func AnswerSchema() Rule {
	return Rule{
		Match: func(req *llm.Request) bool {
			if len(toolResultsSinceUser(req)) == 0 && namedTool(req) != nil {
				return false // CallNamedTool's turn first
			}
			_, ok := structured(req)
			return ok
		},
		Respond: func(req *llm.Request) (*llm.Response, error) {
			ans, _ := structured(req)
			return text(ans), nil
		},
	}
}

// structured returns the answer to a request that asks for structured
// output, and whether it does.
func structured(req *llm.Request) (string, bool) {
	msg := lastUserText(req)
	src := newSource(msg, req)
	if f := req.ResponseFormat; f != nil && f.Type == llm.FormatJSONSchema && len(f.Schema) > 0 {
		return src.encode(f.Schema), true
	}
	i := strings.LastIndex(msg, "\n\nAnswer with only ")
	if i < 0 {
		return "", false
	}
	ask := msg[i+2:]
	switch {
	case strings.HasPrefix(ask, schemaInstruction):
		return src.encode(json.RawMessage(strings.TrimSpace(ask[len(schemaInstruction):]))), true
	case ask == boolInstruction:
		return boolText(src.yes()), true
	case ask == intInstruction, ask == uintInstruction, ask == floatInstruction:
		n := src.number("", ask == floatInstruction)
		if ask == uintInstruction {
			n = strings.TrimPrefix(n, "-")
		}
		return n, true
	case strings.HasPrefix(ask, timeInstruction):
		return src.dateTime(), true
	case strings.HasPrefix(ask, enumInstruction):
		vals := strings.Split(strings.TrimSuffix(ask[len(enumInstruction):], "."), ", ")
		enum := make([]any, len(vals))
		for i, v := range vals {
			enum[i] = v
		}
		return src.enum(enum).(string), true
	}
	return "", false
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// source is the text a structured answer is filled from.
type source struct {
	text    string
	lower   string
	numbers []string
	// budget is how many more values the answer may hold: the schema may
	// come from a user's message, so its size is bounded.
	budget int
}

// maxValues bounds the values of one structured answer.
const maxValues = 4096

func newSource(msg string, req *llm.Request) *source {
	if i := strings.LastIndex(msg, "\n\nAnswer with only "); i >= 0 {
		msg = msg[:i]
	}
	var b strings.Builder
	b.WriteString(msg)
	for _, r := range toolResultsSinceUser(req) {
		b.WriteString("\n")
		b.WriteString(r.Text())
	}
	s := strings.TrimSpace(b.String())
	return &source{text: s, lower: strings.ToLower(s), numbers: numberRE.FindAllString(s, -1), budget: maxValues}
}

// node is the part of a JSON Schema the answer follows.
type node struct {
	Type       any             `json:"type"`
	Properties json.RawMessage `json:"properties"`
	Items      json.RawMessage `json:"items"`
	Enum       []any           `json:"enum"`
	Format     string          `json:"format"`
	MinItems   int             `json:"minItems"`
}

func (s *source) encode(schema json.RawMessage) string {
	b, err := json.Marshal(s.value(schema, "", 0))
	if err != nil {
		return "{}"
	}
	return string(b)
}

// value returns a value of the schema's shape for the property name.
func (s *source) value(schema json.RawMessage, name string, depth int) any {
	var n node
	if s.budget <= 0 || depth > 32 || json.Unmarshal(schema, &n) != nil {
		return nil
	}
	s.budget--
	if len(n.Enum) > 0 {
		return s.enum(n.Enum)
	}
	switch typeOf(n.Type) {
	case "object":
		obj := map[string]any{}
		var keys []string
		for _, p := range orderedPropertiesRaw(n.Properties) {
			obj[p.name] = s.value(p.schema, p.name, depth+1)
			keys = append(keys, p.name)
		}
		return ordered{keys: keys, m: obj}
	case "array":
		k := min(max(n.MinItems, 1), 64, s.budget)
		out := make([]any, k)
		for i := range out {
			out[i] = s.value(n.Items, name, depth+1)
		}
		return out
	case "integer":
		return json.Number(s.number(name, false))
	case "number":
		return json.Number(s.number(name, true))
	case "boolean":
		return s.yes()
	case "null":
		return nil
	case "string":
		if n.Format == "date-time" {
			return s.dateTime()
		}
		return s.str(name)
	}
	return s.text
}

// typeOf returns a schema's type, the first non-null one of a list.
func typeOf(t any) string {
	switch t := t.(type) {
	case string:
		return t
	case []any:
		for _, v := range t {
			if v, ok := v.(string); ok && v != "null" {
				return v
			}
		}
	}
	return ""
}

func (s *source) enum(vals []any) any {
	for _, v := range vals {
		if str, ok := v.(string); ok && str != "" && containsWord(s.lower, strings.ToLower(str)) {
			return v
		}
	}
	return vals[0]
}

var (
	capitalisedRE = regexp.MustCompile(`\p{Lu}\p{Ll}+(?:\s+\p{Lu}\p{Ll}+)*`)
	dateRE        = regexp.MustCompile(`\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:\d{2})?)?`)
)

func (s *source) str(name string) string {
	if name != "" {
		re, err := regexp.Compile(`(?i)\b` + regexp.QuoteMeta(name) + `\s*(?:is|:|=)\s*([^,.;\n]+)`)
		if err == nil {
			if m := re.FindStringSubmatch(s.text); m != nil {
				return strings.TrimSpace(m[1])
			}
		}
		if strings.Contains(strings.ToLower(name), "name") {
			if m := capitalisedRE.FindString(s.text); m != "" {
				return m
			}
		}
	}
	if m := quotedRE.FindStringSubmatch(s.text); m != nil {
		return m[1] + m[2]
	}
	return s.text
}

func (s *source) number(name string, float bool) string {
	if name != "" {
		re, err := regexp.Compile(`(?i)\b` + regexp.QuoteMeta(name) + `\b\D{0,20}?(-?\d+(?:\.\d+)?)`)
		if err == nil {
			if m := re.FindStringSubmatch(s.text); m != nil {
				return trimFraction(m[1], float)
			}
		}
	}
	if len(s.numbers) == 0 {
		return "0"
	}
	n := s.numbers[0]
	s.numbers = s.numbers[1:]
	return trimFraction(n, float)
}

func trimFraction(n string, float bool) string {
	if !float {
		n, _, _ = strings.Cut(n, ".")
	}
	return n
}

func (s *source) yes() bool {
	return containsWord(s.lower, "yes") || containsWord(s.lower, "true")
}

func (s *source) dateTime() string {
	if d := dateRE.FindString(s.text); d != "" {
		if len(d) == 10 {
			return d + "T00:00:00Z"
		}
		d = strings.Replace(d, " ", "T", 1)
		if len(d) == 16 {
			d += ":00"
		}
		if !strings.HasSuffix(d, "Z") && !strings.ContainsAny(d[10:], "+-") {
			d += "Z"
		}
		return d
	}
	return "2000-01-01T00:00:00Z"
}

func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isWordByte(s[j-1])
		after := j+len(w) == len(s) || !isWordByte(s[j+len(w)])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// ordered is a JSON object that keeps its keys in schema order.
type ordered struct {
	keys []string
	m    map[string]any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.m[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type rawProperty struct {
	name   string
	schema json.RawMessage
}

// orderedPropertiesRaw returns the properties of an object schema in
// document order, with their schemas.
func orderedPropertiesRaw(props json.RawMessage) []rawProperty {
	if len(props) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []rawProperty
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return out
		}
		out = append(out, rawProperty{name: name, schema: raw})
	}
	return out
}
