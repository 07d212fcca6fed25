package jsonschema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/weftlabs/weft/jsonschema"
)

type Mood string

func (Mood) EnumValues() []string { return []string{"happy", "sad"} }

type Base struct {
	ID string `json:"id"`
}

type Person struct {
	Base
	Name     string          `json:"name" description:"full name"`
	Age      int             `json:"age,omitempty"`
	Nick     *string         `json:"nick"`
	Mood     Mood            `json:"mood"`
	Born     time.Time       `json:"born"`
	Tags     []string        `json:"tags"`
	Attrs    map[string]int  `json:"attrs,omitzero"`
	Raw      json.RawMessage `json:"raw,omitempty"`
	Skip     string          `json:"-"`
	hidden   int             // unexported: not in the schema
	Untagged bool
}

var _ = Person{}.hidden

type Node struct {
	Next *Node `json:"next"`
}

func TestForType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  func() (json.RawMessage, error)
		want string
	}{
		{"string", jsonschema.For[string], `{"type":"string"}`},
		{"int", jsonschema.For[int64], `{"type":"integer"}`},
		{"float", jsonschema.For[float32], `{"type":"number"}`},
		{"bool", jsonschema.For[bool], `{"type":"boolean"}`},
		{"slice", jsonschema.For[[]int], `{"type":"array","items":{"type":"integer"}}`},
		{"array", jsonschema.For[[2]bool], `{"type":"array","items":{"type":"boolean"},"minItems":2,"maxItems":2}`},
		{"bytes", jsonschema.For[[]byte], `{"type":"string","contentEncoding":"base64"}`},
		{"enum", jsonschema.For[Mood], `{"type":"string","enum":["happy","sad"]}`},
		{"time", jsonschema.For[time.Time], `{"type":"string","format":"date-time"}`},
		{"any", jsonschema.For[any], `{}`},
		{"struct", jsonschema.For[Person], `{"type":"object","properties":{` +
			`"id":{"type":"string"},` +
			`"name":{"type":"string","description":"full name"},` +
			`"age":{"type":"integer"},` +
			`"nick":{"type":"string"},` +
			`"mood":{"type":"string","enum":["happy","sad"]},` +
			`"born":{"type":"string","format":"date-time"},` +
			`"tags":{"type":"array","items":{"type":"string"}},` +
			`"attrs":{"type":"object","additionalProperties":{"type":"integer"}},` +
			`"raw":{},` +
			`"Untagged":{"type":"boolean"}},` +
			`"required":["id","name","mood","born","tags","Untagged"],"additionalProperties":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.got()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("invalid JSON: %s", got)
			}
		})
	}
}

func TestForTypeUnsupported(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func() (json.RawMessage, error){
		"chan":      jsonschema.For[chan int],
		"func":      jsonschema.For[func()],
		"intmap":    jsonschema.For[map[int]string],
		"recursive": jsonschema.For[Node],
	} {
		if _, err := f(); !errors.Is(err, jsonschema.ErrUnsupported) {
			t.Errorf("%s: err = %v, want ErrUnsupported", name, err)
		}
	}
}

func ExampleFor() {
	type Query struct {
		City string `json:"city" description:"city name"`
		Days int    `json:"days,omitempty"`
	}
	s, _ := jsonschema.For[Query]()
	fmt.Println(string(s))
	// Output: {"type":"object","properties":{"city":{"type":"string","description":"city name"},"days":{"type":"integer"}},"required":["city"],"additionalProperties":false}
}
