package ai

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/jsonschema"
	"github.com/weftlabs/weft/llm"
)

// Output asks the pipeline for an answer in a given shape: a JSON Schema
// response format for models that declare support for it, otherwise
// instructions appended to the user message; and a parser whose failure is
// sent back to the model (see ParseRetries).
type Output struct {
	// Format is sent as the request's response format when the model
	// declares JSON Schema support.
	Format *llm.ResponseFormat
	// Instructions are appended to the user message when Format is not sent.
	Instructions string
	// Parse checks the final text and stores the value; its error is what
	// the model is told on a re-prompt.
	Parse func(text string) error
	// Type names the declared type in a *ParseError.
	Type string
}

type codecKind uint8

const (
	kindText codecKind = iota
	kindMessage
	kindBool
	kindInt
	kindUint
	kindFloat
	kindTime
	kindEnum
	kindJSON
)

var (
	timeType    = reflect.TypeFor[time.Time]()
	messageType = reflect.TypeFor[llm.Message]()
)

// codec turns answers into values of one Go type. It is built once per
// declared type; decoding uses no reflection beyond setting the value.
type codec struct {
	typ          reflect.Type
	kind         codecKind
	enum         []string
	schema       json.RawMessage
	wrapped      bool // the schema wraps a non-object in {"value": …}
	composite    bool // the value is an object or array
	instructions string
	format       *llm.ResponseFormat
}

func newCodec(t reflect.Type) (*codec, error) {
	c := &codec{typ: t}
	if vals := jsonschema.EnumValues(t); vals != nil {
		c.kind, c.enum = kindEnum, vals
		c.instructions = "Answer with only one of these values: " + strings.Join(vals, ", ") + "."
		return c, nil
	}
	switch {
	case t == messageType:
		c.kind = kindMessage
		return c, nil
	case t == timeType:
		c.kind = kindTime
		c.instructions = "Answer with only a date and time in RFC 3339 format, for example 2006-01-02T15:04:05Z."
		return c, nil
	}
	switch t.Kind() {
	case reflect.String:
		c.kind = kindText
		return c, nil
	case reflect.Bool:
		c.kind = kindBool
		c.instructions = "Answer with only true or false."
		return c, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.kind = kindInt
		c.instructions = "Answer with only an integer number."
		return c, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		c.kind = kindUint
		c.instructions = "Answer with only a non-negative integer number."
		return c, nil
	case reflect.Float32, reflect.Float64:
		c.kind = kindFloat
		c.instructions = "Answer with only a number."
		return c, nil
	case reflect.Struct, reflect.Slice, reflect.Array, reflect.Map, reflect.Pointer:
	default:
		return nil, fmt.Errorf("ai: cannot return %s: use string, llm.Message, bool, a number, time.Time, an enum, a struct, a slice or a map", t)
	}
	schema, err := jsonschema.ForType(t)
	if err != nil {
		return nil, fmt.Errorf("ai: cannot return %s: %w", t, err)
	}
	c.kind, c.schema = kindJSON, schema
	c.instructions = "Answer with only a JSON value that matches this JSON Schema, without any other text:\n" + string(schema)
	root := t
	for root.Kind() == reflect.Pointer {
		root = root.Elem()
	}
	fschema := schema
	switch root.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
		c.composite = true
	}
	if root.Kind() != reflect.Struct && root.Kind() != reflect.Map {
		// Providers want an object at the root of a response format.
		c.wrapped = true
		fschema = json.RawMessage(`{"type":"object","properties":{"value":` + string(schema) + `},"required":["value"],"additionalProperties":false}`)
	}
	c.format = &llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "response", Schema: fschema}
	return c, nil
}

// output returns the Output of the codec for a model with caps, parsing
// into dst (a pointer to a value of the codec's type).
func (c *codec) output(caps llm.Capabilities, dst any) *Output {
	switch c.kind {
	case kindText, kindMessage:
		return nil
	}
	o := &Output{Type: c.typ.String(), Parse: func(text string) error { return c.decode(text, dst) }}
	if c.format != nil && caps.JSONSchema {
		o.Format = c.format
	} else {
		o.Instructions = c.instructions
	}
	return o
}

// decode parses text into dst, tolerating the wrapping models add: code
// fences, quotes, prose around a JSON value, a trailing full stop.
func (c *codec) decode(text string, dst any) error {
	v := reflect.ValueOf(dst).Elem()
	switch c.kind {
	case kindText:
		v.SetString(text)
		return nil
	case kindJSON:
		return c.decodeJSON(text, dst)
	}
	s := scalar(unwrapValue(text))
	switch c.kind {
	case kindBool:
		switch strings.ToLower(s) {
		case "true", "yes":
			v.SetBool(true)
		case "false", "no":
			v.SetBool(false)
		default:
			return fmt.Errorf("%q is not true or false", clip(text))
		}
	case kindInt:
		n, err := strconv.ParseInt(numberIn(s, false), 10, 64)
		if err != nil || v.OverflowInt(n) {
			return fmt.Errorf("%q is not an integer of type %s", clip(text), c.typ)
		}
		v.SetInt(n)
	case kindUint:
		n, err := strconv.ParseUint(numberIn(s, false), 10, 64)
		if err != nil || v.OverflowUint(n) {
			return fmt.Errorf("%q is not a non-negative integer of type %s", clip(text), c.typ)
		}
		v.SetUint(n)
	case kindFloat:
		f, err := strconv.ParseFloat(numberIn(s, true), 64)
		if err != nil || math.IsNaN(f) || v.OverflowFloat(f) {
			return fmt.Errorf("%q is not a number", clip(text))
		}
		v.SetFloat(f)
	case kindTime:
		for _, layout := range []string{time.RFC3339Nano, time.DateTime, time.DateOnly} {
			if t, err := time.Parse(layout, s); err == nil {
				v.Set(reflect.ValueOf(t))
				return nil
			}
		}
		return fmt.Errorf("%q is not an RFC 3339 date and time", clip(text))
	case kindEnum:
		for _, e := range c.enum {
			if strings.EqualFold(s, e) {
				v.SetString(e)
				return nil
			}
		}
		// Prose that names exactly one value ("The sentiment is positive.").
		found := ""
		lower := strings.ToLower(text)
		for _, e := range c.enum {
			if containsWord(lower, strings.ToLower(e)) {
				if found != "" {
					found = ""
					break
				}
				found = e
			}
		}
		if found == "" {
			return fmt.Errorf("%q is not one of %s", clip(text), strings.Join(c.enum, ", "))
		}
		v.SetString(found)
	}
	return nil
}

func (c *codec) decodeJSON(text string, dst any) error {
	raw := extractJSON(text, c.composite)
	if raw == "" {
		return fmt.Errorf("no JSON value found in %q", clip(text))
	}
	if c.wrapped && raw[0] == '{' {
		var w struct {
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal([]byte(raw), &w) == nil && len(w.Value) > 0 {
			raw = string(w.Value)
		}
	}
	if err := json.Unmarshal([]byte(raw), dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("field %q: expected %s, got %s", te.Field, te.Type, te.Value)
		}
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return nil
}

// unwrapValue returns the value of a {"value": …} object — the wrapper
// response formats use for non-objects, which models also use for scalars —
// as a bare scalar (strings unquoted), or text unchanged.
func unwrapValue(text string) string {
	raw := strings.TrimSpace(stripFence(text))
	if len(raw) < 2 || raw[0] != '{' {
		return text
	}
	var w struct {
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal([]byte(raw), &w) != nil || len(w.Value) == 0 {
		return text
	}
	var str string
	if w.Value[0] == '"' && json.Unmarshal(w.Value, &str) == nil {
		return str
	}
	return string(w.Value)
}

// scalar strips what models put around a one-word answer: space, code
// fences, quotes, emphasis and a final full stop.
func scalar(s string) string {
	s = strings.TrimSpace(stripFence(s))
	s = strings.Trim(s, "\"'`*_ \t\r\n")
	s = strings.TrimRight(s, ".!")
	return strings.TrimSpace(s)
}

// numberIn returns the first number in s ("Answer: 42." → "42"), with a
// fraction and exponent when float is true. Thousands separators are not
// numbers: "1,000" gives "1".
func numberIn(s string, float bool) string {
	start := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			start = i
			if i > 0 && (s[i-1] == '-' || s[i-1] == '+') {
				start = i - 1
			}
			break
		}
	}
	if start < 0 {
		return s
	}
	end := start + 1
	for end < len(s) {
		c := s[end]
		switch {
		case c >= '0' && c <= '9':
		case float && (c == '.' || c == 'e' || c == 'E'):
		case float && (c == '-' || c == '+') && (s[end-1] == 'e' || s[end-1] == 'E'):
		default:
			return strings.TrimRight(s[start:end], ".eE")
		}
		end++
	}
	return strings.TrimRight(s[start:end], ".eE")
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

// stripFence returns the body of the first ``` code fence in s, or s.
func stripFence(s string) string {
	i := strings.Index(s, "```")
	if i < 0 {
		return s
	}
	body := s[i+3:]
	// Skip the language tag ("json") up to the end of the line.
	if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[\"") {
		body = body[nl+1:]
	}
	if j := strings.Index(body, "```"); j >= 0 {
		body = body[:j]
	}
	return body
}

// extractJSON finds the JSON value in a model's answer: inside a code fence
// if there is one, else the first balanced object or array, else (unless
// composite) the whole trimmed text, a bare string or number.
func extractJSON(s string, composite bool) string {
	s = strings.TrimSpace(stripFence(s))
	if s == "" {
		return ""
	}
	start := strings.IndexAny(s, "{[")
	if start < 0 {
		if composite {
			return ""
		}
		return s
	}
	if end := matchEnd(s, start); end > start {
		return s[start : end+1]
	}
	return s[start:]
}

// matchEnd returns the index of the bracket closing the one at start,
// skipping strings, or -1.
func matchEnd(s string, start int) int {
	depth := 0
	inStr := false
	for i := start; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func clip(s string) string {
	const n = 200
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
