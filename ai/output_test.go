package ai

import (
	"reflect"
	"testing"
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
