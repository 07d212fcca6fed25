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
}

func newArgDecoder(tool string, schema json.RawMessage) *argDecoder {
	d := &argDecoder{tool: tool}
	var s struct {
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) == nil {
		d.required = s.Required
	}
	return d
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
		if missing := missingKey(args, d.required); missing != "" {
			return &ArgumentError{Tool: d.tool, Field: missing, Err: errMissing}
		}
	}
	return nil
}

var errMissing = errors.New("required but missing")

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

// missingKey returns the first of required that is not a key of the JSON
// object obj, or "". obj has already been decoded successfully, so it is
// valid JSON; only its top-level keys are looked at, without allocating.
func missingKey(obj []byte, required []string) string {
	if len(obj) == 0 || obj[0] != '{' {
		return ""
	}
	const maxKeys = 64
	var found [maxKeys]bool
	depth := 0
	for i := 0; i < len(obj); i++ {
		switch c := obj[i]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(obj, i)
			if depth == 1 && isKey(obj, end) {
				key := obj[i+1 : end]
				for j, r := range required {
					if j < maxKeys && keyEqual(key, r) {
						found[j] = true
					}
				}
			}
			i = end
		}
	}
	for j, r := range required {
		if j < maxKeys && !found[j] {
			return r
		}
	}
	return ""
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

// isKey reports whether the string ending at end is followed by a colon.
func isKey(b []byte, end int) bool {
	for j := end + 1; j < len(b); j++ {
		switch b[j] {
		case ' ', '\t', '\n', '\r':
			continue
		case ':':
			return true
		}
		return false
	}
	return false
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
