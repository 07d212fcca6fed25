package workflow

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
)

// The types of a [Schema], as JSON Schema names them.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeArray   = "array"
	TypeObject  = "object"
)

// Schema is the type of a value: the subset of JSON Schema a workflow
// needs to check references when it is saved. An empty Type accepts any
// value (and any reference into it).
type Schema struct {
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	// Properties are an object's fields. An object without properties is
	// a map whose fields are not checked.
	Properties map[string]*Schema `json:"properties,omitempty"`
	// Required lists the properties an input object must have.
	Required []string `json:"required,omitempty"`
	// Items is an array's element type.
	Items *Schema `json:"items,omitempty"`
	// Enum lists the allowed values.
	Enum []any `json:"enum,omitempty"`
	// Default is a start input's value when the run does not give one;
	// an input without a default is required.
	Default any `json:"default,omitempty"`
}

var (
	anySchema    = &Schema{}
	stringSchema = &Schema{Type: TypeString}
	intSchema    = &Schema{Type: TypeInteger}
	boolSchema   = &Schema{Type: TypeBoolean}
	objectSchema = &Schema{Type: TypeObject}
)

func (s *Schema) typ() string {
	if s == nil {
		return ""
	}
	return s.Type
}

// check reports whether s is well-formed, naming the path of the fault.
func (s *Schema) check(path string) error {
	if s == nil {
		return fmt.Errorf("%s: missing schema", path)
	}
	switch s.Type {
	case "", TypeString, TypeInteger, TypeNumber, TypeBoolean:
	case TypeArray:
		if s.Items != nil {
			if err := s.Items.check(path + "[]"); err != nil {
				return err
			}
		}
	case TypeObject:
		for _, name := range sortedKeys(s.Properties) {
			if err := s.Properties[name].check(path + "." + name); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s: unknown type %q (want string, integer, number, boolean, array or object)", path, s.Type)
	}
	return nil
}

// field returns the type of property name, or nil when s has none by that
// name. Untyped values and maps accept every name.
func (s *Schema) field(name string) *Schema {
	switch s.typ() {
	case "":
		return anySchema
	case TypeObject:
		if len(s.Properties) == 0 {
			return anySchema
		}
		return s.Properties[name]
	}
	return nil
}

// assignable reports whether a value of type from may be used where to is
// expected.
func assignable(to, from *Schema) bool {
	switch {
	case to.typ() == "" || from.typ() == "":
		return true
	case to.Type == TypeNumber && from.Type == TypeInteger:
		return true
	case to.Type != from.Type:
		return false
	case to.Type == TypeArray && to.Items != nil && from.Items != nil:
		return assignable(to.Items, from.Items)
	}
	return true
}

// fieldError is a value that does not fit its schema: the path of the
// value the message is about, the path of the field at fault (a missing
// field's own, inside the object the message names) and what is wrong.
type fieldError struct {
	path, field, msg string
}

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

// conform checks that v, a value decoded from JSON (or made by Go code),
// has type s, and returns it with integers as int64 where s says integer.
// Its error is a *fieldError.
func (s *Schema) conform(path string, v any) (any, error) {
	if s.typ() == "" || v == nil {
		return v, nil
	}
	bad := func() error { return &fieldError{path, path, fmt.Sprintf("want %s, got %s", s.Type, typeName(v))} }
	switch s.Type {
	case TypeString:
		if _, ok := v.(string); !ok {
			return nil, bad()
		}
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			return nil, bad()
		}
	case TypeInteger:
		f, ok := toFloat(v)
		if !ok || f != math.Trunc(f) {
			return nil, bad()
		}
		return int64(f), nil
	case TypeNumber:
		if _, ok := toFloat(v); !ok {
			return nil, bad()
		}
	case TypeArray:
		list, ok := v.([]any)
		if !ok {
			return nil, bad()
		}
		if s.Items != nil {
			for i, e := range list {
				c, err := s.Items.conform(fmt.Sprintf("%s[%d]", path, i), e)
				if err != nil {
					return nil, err
				}
				list[i] = c
			}
		}
	case TypeObject:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, bad()
		}
		for _, name := range s.Required {
			if _, ok := m[name]; !ok {
				return nil, &fieldError{path, path + "." + name, fmt.Sprintf("missing field %q", name)}
			}
		}
		for name, ps := range s.Properties {
			if fv, ok := m[name]; ok {
				c, err := ps.conform(path+"."+name, fv)
				if err != nil {
					return nil, err
				}
				m[name] = c
			}
		}
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return equalJSON(e, v) }) {
		got, _ := json.Marshal(v)
		want, _ := json.Marshal(s.Enum)
		return nil, &fieldError{path, path, fmt.Sprintf("%s is not one of %s", got, want)}
	}
	return v, nil
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func equalJSON(a, b any) bool {
	fa, oka := toFloat(a)
	fb, okb := toFloat(b)
	if oka && okb {
		return fa == fb
	}
	return a == b
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return TypeString
	case bool:
		return TypeBoolean
	case float64, float32, int, int64, json.Number:
		return TypeNumber
	case []any:
		return TypeArray
	case map[string]any:
		return TypeObject
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// jsonSchema returns s as a JSON Schema for a model's structured output:
// objects closed, every property required.
func (s *Schema) jsonSchema() map[string]any {
	out := map[string]any{}
	if s.Type != "" {
		out["type"] = s.Type
	}
	if s.Description != "" {
		out["description"] = s.Description
	}
	if len(s.Enum) > 0 {
		out["enum"] = s.Enum
	}
	switch s.Type {
	case TypeArray:
		if s.Items != nil {
			out["items"] = s.Items.jsonSchema()
		}
	case TypeObject:
		if len(s.Properties) == 0 {
			break // a map: any fields
		}
		props := map[string]any{}
		names := sortedKeys(s.Properties)
		for _, name := range names {
			props[name] = s.Properties[name].jsonSchema()
		}
		out["properties"] = props
		out["required"] = names
		out["additionalProperties"] = false
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
