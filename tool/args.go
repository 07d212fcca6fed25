package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/weftlabs/weft/jsonschema"
)

// argDecoder decodes a model's JSON arguments into a Go value, fills in the
// defaults of the parameters they leave out, and names the field at fault
// when they do not fit.
type argDecoder struct {
	tool     string
	required []string
	// nullable[i] reports that required[i] accepts null (its schema has no
	// type: an interface or json.RawMessage field).
	nullable []bool
	// defaults are the parameters with a `default` tag.
	defaults []jsonschema.Field
}

// newArgDecoder returns the decoder of arguments into values of type in
// (whose JSON Schema is schema). A default on a field of a nested object is
// an error: defaults are filled in for parameters only.
func newArgDecoder(tool string, schema json.RawMessage, in reflect.Type) (*argDecoder, error) {
	d := &argDecoder{tool: tool}
	for in.Kind() == reflect.Pointer {
		in = in.Elem()
	}
	if in.Kind() == reflect.Struct {
		seen := map[reflect.Type]bool{in: true}
		for _, f := range jsonschema.Fields(in) {
			if f.Default != nil {
				d.defaults = append(d.defaults, f)
			}
			if path := nestedDefault(f.Type, f.Name, seen); path != "" {
				return d, fmt.Errorf("field %s has a default, which applies to parameters only (fields of the arguments object)", path)
			}
		}
	}
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
	return d, nil
}

// nestedDefault returns the path of a field with a `default` tag inside
// values of type t (the type of the field at path), "" when there is none.
func nestedDefault(t reflect.Type, path string, seen map[reflect.Type]bool) string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return ""
	}
	seen[t] = true
	for _, f := range jsonschema.Fields(t) {
		p := path + "." + f.Name
		if _, ok := t.FieldByIndex(f.Index).Tag.Lookup("default"); ok {
			return p
		}
		if p := nestedDefault(f.Type, p, seen); p != "" {
			return p
		}
	}
	return ""
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
// as {}: models send nothing for a tool without parameters. A parameter
// with a default that args leave out (or set to null) gets its default.
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
	if len(d.required) == 0 && len(d.defaults) == 0 {
		return nil
	}
	// Up to 64 parameters are tracked without allocating.
	var small [64]uint8
	var seen []uint8
	if n := len(d.required) + len(d.defaults); n <= len(small) {
		seen = small[:n]
	} else {
		seen = make([]uint8, n)
	}
	if field, err := d.check(args, seen); err != nil {
		return &ArgumentError{Tool: d.tool, Field: field, Err: err}
	}
	v := reflect.ValueOf(dst).Elem()
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	for i := range d.defaults {
		if seen[len(d.required)+i] == argPresent {
			continue
		}
		f := &d.defaults[i]
		fv, err := fieldAt(v, f.Index)
		if err == nil {
			// A fresh decode per call keeps calls from sharing the
			// default's slices and maps.
			err = json.Unmarshal(f.Default, fv.Addr().Interface())
		}
		if err != nil {
			return &ArgumentError{Tool: d.tool, Field: f.Name, Err: fmt.Errorf("default: %w", err)}
		}
	}
	return nil
}

// fieldAt is v.FieldByIndex(index), allocating the embedded struct
// pointers on the way as encoding/json does.
func fieldAt(v reflect.Value, index []int) (reflect.Value, error) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return v, fmt.Errorf("cannot set embedded pointer to unexported struct %s", v.Type().Elem())
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, nil
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

// The state of a parameter in the arguments, as check records it.
const (
	argMissing uint8 = iota
	argNull
	argPresent
)

// check scans the top-level keys of the JSON object obj and records in seen
// the state of each required parameter, then each parameter with a
// default (seen has room for both). It returns the first required field
// that is missing, or null when its type does not accept null. obj has
// already been decoded successfully, so it is valid JSON.
func (d *argDecoder) check(obj []byte, seen []uint8) (string, error) {
	if len(obj) == 0 || obj[0] != '{' {
		return "", nil
	}
	nr := len(d.required)
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
					// encoding/json keeps the last occurrence of a key, and
					// so does seen.
					key := obj[i+1 : end]
					for j, r := range d.required {
						if keyEqual(key, r) {
							seen[j] = argPresent
							if !d.nullable[j] && isNull(obj, colon+1) {
								seen[j] = argNull
							}
						}
					}
					for j := range d.defaults {
						if keyEqual(key, d.defaults[j].Name) {
							seen[nr+j] = argPresent
							if isNull(obj, colon+1) {
								seen[nr+j] = argNull
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
		case argMissing:
			return r, errMissing
		case argNull:
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
