// Package jsonschema derives JSON Schema documents from Go types. Tools use
// it to describe their arguments, and the typed layer (package ai) to ask a
// model for structured output.
//
// The mapping follows encoding/json, so that what the schema promises is what
// json.Unmarshal accepts:
//
//   - struct fields are named by their `json` tag; `json:"-"` and unexported
//     fields are left out; embedded structs without a name are flattened,
//     and a name seen at several depths goes to the field encoding/json
//     would marshal (see [Fields]);
//   - a field is required unless its tag says omitempty or omitzero, its
//     type is a pointer, or it has a default;
//   - a `description` tag becomes the property's description;
//   - a `default` tag becomes the property's default: the value as JSON
//     (`default:"5"`, `default:"[1,2]"`), or for a field whose JSON form is
//     a string (string types, time.Time, []byte) the text itself
//     (`default:"celsius"`). It must decode into the field, and be one of
//     an enum's values. The schema only announces it: package tool fills it
//     in for a parameter the model leaves out;
//   - string types that implement [Enum] list their values;
//   - time.Time is a string with format date-time, []byte a base64 string,
//     maps with string keys are objects, json.RawMessage and interfaces accept
//     any value.
//
// Objects are closed (additionalProperties false), as the strict structured
// output modes of the providers require. Recursive types are reported as an
// error: providers reject most recursive schemas anyway.
//
// This package is written by hand because the schema is part of Weft's
// contract with models (field order, required rules, enum discovery) and the
// generators in the ecosystem each pull in a large dependency for a few
// hundred lines of code.
package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Enum is implemented by string types with a closed set of values. The
// schema of such a type lists the values, and the typed layer accepts only
// them as an answer.
//
//	type Sentiment string
//	func (Sentiment) EnumValues() []string { return []string{"positive", "neutral", "negative"} }
type Enum interface {
	EnumValues() []string
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	rawType     = reflect.TypeFor[json.RawMessage]()
	enumType    = reflect.TypeFor[Enum]()
	marshalType = reflect.TypeFor[json.Marshaler]()
)

// ErrUnsupported is matched by the error For returns for a type that has no
// JSON Schema (channels, functions, complex numbers, maps with non-string
// keys, recursive types).
var ErrUnsupported = errors.New("type has no JSON schema")

// For returns the JSON Schema of T.
func For[T any]() (json.RawMessage, error) { return ForType(reflect.TypeFor[T]()) }

// ForType returns the JSON Schema of t.
func ForType(t reflect.Type) (json.RawMessage, error) {
	if t == nil {
		return nil, fmt.Errorf("jsonschema: nil type: %w", ErrUnsupported)
	}
	g := gen{seen: map[reflect.Type]bool{}}
	if err := g.write(t, ""); err != nil {
		return nil, fmt.Errorf("jsonschema: %s: %w", t, err)
	}
	return json.RawMessage(g.b), nil
}

// EnumValues returns the values declared by t when t is a string type that
// implements [Enum], and nil otherwise.
func EnumValues(t reflect.Type) []string {
	if t.Kind() != reflect.String || !t.Implements(enumType) {
		return nil
	}
	return reflect.Zero(t).Interface().(Enum).EnumValues()
}

// Field is a property of an object schema, as [Fields] reports it.
type Field struct {
	// Name is the JSON name.
	Name string
	// Index is the field's index sequence for reflect.Value.FieldByIndex.
	Index []int
	// Required reports whether the schema requires the property.
	Required bool
	// Description is the field's `description` tag.
	Description string
	// Default is the field's `default` tag as JSON, nil without one (or
	// when the tag does not fit the field: the schema is then an error).
	Default json.RawMessage
	Type    reflect.Type

	defaultErr error
}

// Fields returns the JSON properties of struct type t in the order
// encoding/json marshals them, with embedded structs flattened under
// encoding/json's visibility rules: a shallower field hides a deeper one of
// the same name, a tagged field beats an untagged one at the same depth, and
// two equal candidates hide each other.
func Fields(t reflect.Type) []Field {
	type scan struct {
		typ   reflect.Type
		index []int
	}
	type cand struct {
		Field
		tagged bool
	}
	var (
		cands     []cand
		current   []scan
		next      = []scan{{typ: t}}
		count     map[reflect.Type]int
		nextCount = map[reflect.Type]int{}
		visited   = map[reflect.Type]bool{}
	)
	// Breadth first, one embedding depth at a time, as encoding/json's
	// typeFields does.
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, sc := range current {
			if visited[sc.typ] {
				continue
			}
			visited[sc.typ] = true
			for i := range sc.typ.NumField() {
				sf := sc.typ.Field(i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				index := append(append(make([]int, 0, len(sc.index)+1), sc.index...), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
					c := cand{Field: Field{
						Name:        name,
						Index:       index,
						Required:    !omit && sf.Type.Kind() != reflect.Pointer,
						Description: sf.Tag.Get("description"),
						Type:        sf.Type,
					}, tagged: tagged}
					if tag, ok := sf.Tag.Lookup("default"); ok {
						c.Default, c.defaultErr = defaultValue(sf.Type, tag)
						c.Required = false
					}
					cands = append(cands, c)
					if count[sc.typ] > 1 {
						// The same struct embedded twice at this depth: a
						// duplicate makes both copies hide each other.
						cands = append(cands, c)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, scan{typ: ft, index: index})
				}
			}
		}
	}
	// Group by name, dominant candidate first.
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if c := len(a.Index) - len(b.Index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.Index, b.Index)
	})
	out := make([]Field, 0, len(cands))
	for i := 0; i < len(cands); {
		j := i + 1
		for j < len(cands) && cands[j].Name == cands[i].Name {
			j++
		}
		if j-i == 1 || len(cands[i].Index) < len(cands[i+1].Index) || cands[i].tagged != cands[i+1].tagged {
			out = append(out, cands[i].Field)
		}
		i = j
	}
	slices.SortFunc(out, func(a, b Field) int { return slices.Compare(a.Index, b.Index) })
	return out
}

// defaultValue returns the JSON of a `default` tag on a field of type t:
// the tag quoted when t's JSON form is a string, else the tag itself. It
// must decode into t, and be one of an enum's values.
func defaultValue(t reflect.Type, tag string) (json.RawMessage, error) {
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	raw := []byte(tag)
	if base.Kind() == reflect.String || base == timeType || (base.Kind() == reflect.Slice && base.Elem().Kind() == reflect.Uint8) {
		raw, _ = json.Marshal(tag)
	}
	if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
		return nil, fmt.Errorf("default %q: %w", tag, err)
	}
	if vals := EnumValues(base); vals != nil && !slices.Contains(vals, tag) {
		return nil, fmt.Errorf("default %q is not one of %q", tag, vals)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("default %q: %w", tag, err)
	}
	return b.Bytes(), nil
}

// validTag reports whether encoding/json accepts s as a field name.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

type gen struct {
	b    []byte
	seen map[reflect.Type]bool
}

func (g *gen) str(s string) { g.b = strconv.AppendQuote(g.b, s) }

// quote writes s as a JSON string (strconv's Go quoting is not JSON for
// control and non-ASCII characters, so encoding/json does it).
func (g *gen) quote(s string) {
	q, _ := json.Marshal(s)
	g.b = append(g.b, q...)
}

func (g *gen) open(typ, desc string) {
	g.b = append(g.b, `{"type":`...)
	g.str(typ)
	g.desc(desc)
}

func (g *gen) desc(desc string) {
	if desc != "" {
		g.b = append(g.b, `,"description":`...)
		g.quote(desc)
	}
}

func (g *gen) write(t reflect.Type, desc string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if vals := EnumValues(t); vals != nil {
		g.open("string", desc)
		g.b = append(g.b, `,"enum":[`...)
		for i, v := range vals {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.quote(v)
		}
		g.b = append(g.b, "]}"...)
		return nil
	}
	switch {
	case t == timeType:
		g.open("string", desc)
		g.b = append(g.b, `,"format":"date-time"}`...)
		return nil
	case t == rawType || t.Kind() == reflect.Interface:
		g.b = append(g.b, '{')
		if desc != "" {
			g.b = append(g.b, `"description":`...)
			g.quote(desc)
		}
		g.b = append(g.b, '}')
		return nil
	case t.Implements(marshalType) || reflect.PointerTo(t).Implements(marshalType):
		// A type that marshals itself may produce anything.
		g.b = append(g.b, '{')
		if desc != "" {
			g.b = append(g.b, `"description":`...)
			g.quote(desc)
		}
		g.b = append(g.b, '}')
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		g.open("string", desc)
	case reflect.Bool:
		g.open("boolean", desc)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		g.open("integer", desc)
	case reflect.Float32, reflect.Float64:
		g.open("number", desc)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			g.open("string", desc)
			g.b = append(g.b, `,"contentEncoding":"base64"}`...)
			return nil
		}
		g.open("array", desc)
		g.b = append(g.b, `,"items":`...)
		if err := g.write(t.Elem(), ""); err != nil {
			return err
		}
		if t.Kind() == reflect.Array {
			g.b = append(g.b, `,"minItems":`...)
			g.b = strconv.AppendInt(g.b, int64(t.Len()), 10)
			g.b = append(g.b, `,"maxItems":`...)
			g.b = strconv.AppendInt(g.b, int64(t.Len()), 10)
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("map key %s: %w", t.Key(), ErrUnsupported)
		}
		g.open("object", desc)
		g.b = append(g.b, `,"additionalProperties":`...)
		if err := g.write(t.Elem(), ""); err != nil {
			return err
		}
	case reflect.Struct:
		return g.object(t, desc)
	default:
		return fmt.Errorf("%s: %w", t, ErrUnsupported)
	}
	g.b = append(g.b, '}')
	return nil
}

func (g *gen) object(t reflect.Type, desc string) error {
	if g.seen[t] {
		return fmt.Errorf("recursive type %s: %w", t, ErrUnsupported)
	}
	g.seen[t] = true
	defer delete(g.seen, t)
	g.open("object", desc)
	g.b = append(g.b, `,"properties":{`...)
	fields := Fields(t)
	var required []string
	for i, f := range fields {
		if i > 0 {
			g.b = append(g.b, ',')
		}
		g.quote(f.Name)
		g.b = append(g.b, ':')
		if f.defaultErr != nil {
			return fmt.Errorf("field %s: %w", f.Name, f.defaultErr)
		}
		if err := g.write(f.Type, f.Description); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		if f.Default != nil {
			// A schema written by write ends with its closing brace.
			g.b = g.b[:len(g.b)-1]
			if g.b[len(g.b)-1] != '{' {
				g.b = append(g.b, ',')
			}
			g.b = append(append(append(g.b, `"default":`...), f.Default...), '}')
		}
		if f.Required {
			required = append(required, f.Name)
		}
	}
	g.b = append(g.b, '}')
	if len(required) > 0 {
		g.b = append(g.b, `,"required":[`...)
		for i, r := range required {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.quote(r)
		}
		g.b = append(g.b, ']')
	}
	g.b = append(g.b, `,"additionalProperties":false}`...)
	return nil
}
