package ai

import (
	"reflect"
	"testing"
	"time"
)

type fuzzPerson struct {
	Name string   `json:"name"`
	Tags []string `json:"tags,omitempty"`
}

func TestExtractJSON(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"```json\n{\"a\":1}\n```", `{"a":1}`},
		{"```\n[1,2]\n```", `[1,2]`},
		{`Sure! {"a":"}"} and more {"b":2}`, `{"a":"}"}`},
		{`Here: [{"a":"\"]"}] ok`, `[{"a":"\"]"}]`},
		{"no json", ""},
		{`{"unterminated": 1`, `{"unterminated": 1`},
	}
	for _, tt := range tests {
		if got := extractJSON(tt.in, true); got != tt.want {
			t.Errorf("extractJSON(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, "```json\n{\"name\":\"a\",\"tags\":[\"x\"]}\n```", `text {"name": "}"} text`, "```", `{"value":{"name":"a"}}`, "[", `"\`} {
		f.Add(s)
	}
	codecs := []*codec{}
	for _, t := range []reflect.Type{reflect.TypeFor[fuzzPerson](), reflect.TypeFor[[]int](), reflect.TypeFor[bool](), reflect.TypeFor[int8](), reflect.TypeFor[float64](), reflect.TypeFor[map[string]int]()} {
		c, err := newCodec(t)
		if err != nil {
			f.Fatal(err)
		}
		codecs = append(codecs, c)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, c := range codecs {
			dst := reflect.New(c.typ)
			_ = c.decode(text, dst.Interface())
		}
	})
}

// TestDecodeScalarWrapped: models answer scalars in the {"value": …}
// wrapper used for other non-object types; every scalar kind accepts it.
func TestDecodeScalarWrapped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ  reflect.Type
		text string
		want any
	}{
		{reflect.TypeFor[bool](), `{"value": false}`, false},
		{reflect.TypeFor[bool](), "```json\n{\"value\":true}\n```", true},
		{reflect.TypeFor[int](), `{"value": -7}`, -7},
		{reflect.TypeFor[uint8](), `{"value":200}`, uint8(200)},
		{reflect.TypeFor[float64](), `{"value": 2.5e3}`, 2500.0},
		{reflect.TypeFor[time.Time](), `{"value":"2026-01-02T03:04:05Z"}`, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{reflect.TypeFor[testMood](), `{"value":"sad"}`, testMood("sad")},
	}
	for _, tt := range tests {
		c, err := newCodec(tt.typ)
		if err != nil {
			t.Fatal(err)
		}
		dst := reflect.New(tt.typ)
		if err := c.decode(tt.text, dst.Interface()); err != nil {
			t.Errorf("%s: decode(%q): %v", tt.typ, tt.text, err)
			continue
		}
		if got := dst.Elem().Interface(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: decode(%q) = %v, want %v", tt.typ, tt.text, got, tt.want)
		}
	}
}

type testMood string

func (testMood) EnumValues() []string { return []string{"happy", "sad"} }
