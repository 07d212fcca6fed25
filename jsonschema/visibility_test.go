package jsonschema_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/weftlabs/weft/jsonschema"
)

// Types whose embedded fields exercise encoding/json's visibility rules.
type (
	Inner struct {
		Name string `json:"name"`
		Deep string `json:"deep"`
	}
	// Outer's own name hides Inner's.
	Outer struct {
		Inner
		Name string `json:"name"`
	}
	TagA struct {
		X string `json:"x"`
	}
	TagB struct {
		X string
	}
	// At the same depth a tagged field beats an untagged one.
	TaggedWins struct {
		TagA
		TagB
	}
	TagC struct {
		X string `json:"x"`
	}
	Mid struct {
		Inner
		Deep int `json:"deep"`
	}
	// Depth decides: Mid.Deep hides Mid.Inner.Deep; Outer's Name hides
	// both names below it.
	Layered struct {
		Mid
		Name string `json:"name"`
	}
	// A tagged embedded struct is a named field, not flattened.
	Named struct {
		Inner `json:"inner"`
		Z     bool `json:"z"`
	}
	// Embedded through a pointer.
	ViaPointer struct {
		*Inner
		Name string `json:"name,omitempty"`
	}
	Text string
	// An embedded non-struct type is a field named after its type.
	EmbeddedScalar struct {
		Text
		Other int `json:"other"`
	}
	inner struct {
		Secret string `json:"secret"`
	}
	// The exported fields of an unexported embedded struct are promoted.
	Promoted struct {
		inner
		Open string `json:"open"`
	}
)

// TestPropertiesMatchEncodingJSON checks the schema's properties against
// the keys encoding/json marshals for a value with every field set.
func TestPropertiesMatchEncodingJSON(t *testing.T) {
	t.Parallel()
	// Two tagged fields at the same depth cancel each other out. (Built
	// with reflect: go vet rejects the declaration, rightly, in real code.)
	conflict := reflect.StructOf([]reflect.StructField{
		{Name: "TagA", Type: reflect.TypeFor[TagA](), Anonymous: true},
		{Name: "TagC", Type: reflect.TypeFor[TagC](), Anonymous: true},
		{Name: "Y", Type: reflect.TypeFor[int](), Tag: `json:"y"`},
	})
	for _, typ := range []reflect.Type{
		reflect.TypeFor[Person](), reflect.TypeFor[Outer](), reflect.TypeFor[TaggedWins](), conflict, reflect.TypeFor[Layered](),
		reflect.TypeFor[Named](), reflect.TypeFor[ViaPointer](), reflect.TypeFor[EmbeddedScalar](), reflect.TypeFor[Promoted](),
	} {
		t.Run(typ.String(), func(t *testing.T) {
			t.Parallel()
			val := reflect.New(typ).Elem()
			fill(val)
			b, err := json.Marshal(val.Interface())
			if err != nil {
				t.Fatal(err)
			}
			want := orderedKeys(b)

			schema, err := jsonschema.ForType(typ)
			if err != nil {
				t.Fatal(err)
			}
			var s struct {
				Properties json.RawMessage `json:"properties"`
				Required   []string        `json:"required"`
			}
			if err := json.Unmarshal(schema, &s); err != nil {
				t.Fatal(err)
			}
			got := orderedKeys(s.Properties)
			if !slices.Equal(got, want) {
				t.Errorf("schema properties %q, encoding/json marshals %q\nschema: %s\njson:   %s", got, want, schema, b)
			}
			seen := map[string]bool{}
			for _, r := range s.Required {
				if seen[r] {
					t.Errorf("%q is required twice: %s", r, schema)
				}
				seen[r] = true
				if !slices.Contains(want, r) {
					t.Errorf("%q is required but encoding/json has no such key", r)
				}
			}
		})
	}
}

// fill sets every settable field of v to a non-zero value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.CanSet() {
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if f.CanSet() {
				fill(f)
			} else if v.Type().Field(i).Anonymous && f.Kind() == reflect.Struct {
				fillUnexported(f)
			}
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString("x")
		}
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte("1"))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf(1).Convert(v.Type().Elem()))
	}
}

// fillUnexported fills the exported fields of an unexported embedded
// struct (the embedded value itself cannot be set, its fields can).
func fillUnexported(v reflect.Value) {
	for i := range v.NumField() {
		if f := v.Field(i); f.CanSet() {
			fill(f)
		}
	}
}

// orderedKeys returns the top-level keys of a JSON object in order.
func orderedKeys(obj []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.Token() // {
	var keys []string
	for dec.More() {
		tok, _ := dec.Token()
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	return keys
}
