package jsonschema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
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

// Search has a default on fields of every JSON form.
type Search struct {
	Query  string    `json:"query"`
	Limit  int       `json:"limit" default:"5" description:"results"`
	Unit   string    `json:"unit" default:"celsius"`
	Mood   Mood      `json:"mood" default:"happy"`
	Exact  *bool     `json:"exact" default:"true"`
	Tags   []string  `json:"tags" default:"[\"a\", \"b\"]"`
	Since  time.Time `json:"since" default:"2026-01-02T03:04:05Z"`
	Extra  any       `json:"extra" default:"{\"k\": 1}"`
	Number string    `json:"number" default:"5"`
}

// TestDefaults: a `default` tag becomes the property's default, as JSON (or
// the text, for string forms), and the property is no longer required.
func TestDefaults(t *testing.T) {
	t.Parallel()
	got, err := jsonschema.For[Search]()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"query":{"type":"string"},` +
		`"limit":{"type":"integer","description":"results","default":5},` +
		`"unit":{"type":"string","default":"celsius"},` +
		`"mood":{"type":"string","enum":["happy","sad"],"default":"happy"},` +
		`"exact":{"type":"boolean","default":true},` +
		`"tags":{"type":"array","items":{"type":"string"},"default":["a","b"]},` +
		`"since":{"type":"string","format":"date-time","default":"2026-01-02T03:04:05Z"},` +
		`"extra":{"default":{"k":1}},` +
		`"number":{"type":"string","default":"5"}},` +
		`"required":["query"],"additionalProperties":false}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	f := jsonschema.Fields(reflect.TypeFor[Search]())
	if string(f[1].Default) != "5" || f[1].Required || f[0].Default != nil || !f[0].Required {
		t.Errorf("Fields: limit %+v, query %+v", f[1], f[0])
	}
}

// TestDefaultsInvalid: a default that does not fit its field makes the
// schema an error naming the field.
func TestDefaultsInvalid(t *testing.T) {
	t.Parallel()
	type notInt struct {
		N int `json:"n" default:"five"`
	}
	type notEnum struct {
		M Mood `json:"m" default:"angry"`
	}
	type notList struct {
		L []int `json:"l" default:"[\"x\"]"`
	}
	for name, f := range map[string]func() (json.RawMessage, error){
		"int":  jsonschema.For[notInt],
		"enum": jsonschema.For[notEnum],
		"list": jsonschema.For[notList],
	} {
		_, err := f()
		if err == nil || !strings.Contains(err.Error(), "default") {
			t.Errorf("%s: err = %v, want an error about the default", name, err)
		}
	}
}
