package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
)

// argDecoder decodes a model's JSON arguments into a Go value and names the
// field at fault when they do not fit.
type argDecoder struct {
	tool     string
	required []string
	// nullable[i] reports that required[i] accepts null (its schema has no
	// type: an interface or json.RawMessage field).
	nullable []bool
}

func newArgDecoder(tool string, schema json.RawMessage) *argDecoder {
	d := &argDecoder{tool: tool}
	var s struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) == nil {
		d.required = s.Required
		d.nullable = make([]bool, len(s.Required))
		for i, r := range s.Required {
			p, ok := s.Properties[r]
			d.nullable[i] = !ok || p.Type == nil || typeAllowsNull(p.Type)
		}
	}
	return d
}

// typeAllowsNull reports whether a schema "type" lists "null".
func typeAllowsNull(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "null"
	case []any:
		for _, v := range t {
			if v == "null" {
				return true
			}
		}
	}
	return false
}

// decode fills dst (a pointer) from args. Empty arguments and null count
// as {}: models send nothing for a tool without parameters.
func (d *argDecoder) decode(args json.RawMessage, dst any) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		if len(d.required) > 0 {
			return &ArgumentError{Tool: d.tool, Field: d.required[0], Err: errMissing}
		}
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, dst); err != nil {
		return d.wrap(err)
	}
	if len(d.required) > 0 {
		if field, err := d.check(args); err != nil {
			return &ArgumentError{Tool: d.tool, Field: field, Err: err}
		}
	}
	return nil
}

var (
	errMissing = errors.New("required but missing")
	errNull    = errors.New("required but null")
)

func (d *argDecoder) wrap(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return &ArgumentError{Tool: d.tool, Err: errors.New("expected a JSON " + jsonKind(te.Type) + ", got " + te.Value)}
		}
		return &ArgumentError{Tool: d.tool, Field: field, Err: errors.New("expected " + jsonKind(te.Type) + ", got " + te.Value)}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &ArgumentError{Tool: d.tool, Err: errors.New(se.Error() + " at offset " + strconv.FormatInt(se.Offset, 10))}
	}
	if strings.HasPrefix(err.Error(), "json: unknown field ") {
		return &ArgumentError{Tool: d.tool, Field: strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), Err: errors.New("unknown field")}
	}
	return &ArgumentError{Tool: d.tool, Err: err}
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}

// check returns the first required field that is not a key of the JSON
// object obj, or whose value is null when its type does not accept null.
// obj has already been decoded successfully, so it is valid JSON; only its
// top-level keys are looked at, without allocating for up to 64 required
// fields.
func (d *argDecoder) check(obj []byte) (string, error) {
	if len(obj) == 0 || obj[0] != '{' {
		return "", nil
	}
	// seen[j] is 0 while required[j] is missing, then null or present
	// for its last occurrence (encoding/json keeps the last).
	const (
		missing = iota
		null
		present
	)
	var small [64]uint8
	seen := small[:]
	if len(d.required) > len(small) {
		seen = make([]uint8, len(d.required))
	}
	depth := 0
	for i := 0; i < len(obj); i++ {
		switch c := obj[i]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(obj, i)
			if depth == 1 {
				if colon := keyColon(obj, end); colon > 0 {
					key := obj[i+1 : end]
					for j, r := range d.required {
						if keyEqual(key, r) {
							seen[j] = present
							if !d.nullable[j] && isNull(obj, colon+1) {
								seen[j] = null
							}
						}
					}
				}
			}
			i = end
		}
	}
	for j, r := range d.required {
		switch seen[j] {
		case missing:
			return r, errMissing
		case null:
			return r, errNull
		}
	}
	return "", nil
}

// isNull reports whether the JSON value starting at or after i is null.
func isNull(b []byte, i int) bool {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return bytes.HasPrefix(b[i:], []byte("null"))
}

// stringEnd returns the index of the quote closing the string opened at i.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(b) - 1
}

// keyColon returns the index of the colon after the string ending at end,
// or -1 when the string is not a key.
func keyColon(b []byte, end int) int {
	for j := end + 1; j < len(b); j++ {
		switch b[j] {
		case ' ', '\t', '\n', '\r':
			continue
		case ':':
			return j
		}
		return -1
	}
	return -1
}

// keyEqual compares a raw JSON key with a field name. Escaped keys are
// decoded first; encoding/json matches names case-insensitively, and so
// does this.
func keyEqual(raw []byte, name string) bool {
	if bytes.IndexByte(raw, '\\') >= 0 {
		var s string
		q := make([]byte, 0, len(raw)+2)
		q = append(append(append(q, '"'), raw...), '"')
		if json.Unmarshal(q, &s) != nil {
			return false
		}
		return strings.EqualFold(s, name)
	}
	return strings.EqualFold(string(raw), name)
}
