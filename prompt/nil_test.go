package prompt_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/weftlabs/weft/prompt"
)

type Mood int

func (m Mood) String() string { return [...]string{"sad", "happy"}[m] }

type Label string

func (l *Label) String() string { return "label:" + string(*l) }

type Nullable struct {
	Name  *string
	Any   any
	Meta  map[string]any
	Inner *Inner
}

// TestRenderNil: a nil value is a render error naming the variable, not
// "<nil>" or "<no value>" in the prompt.
func TestRenderNil(t *testing.T) {
	t.Parallel()
	name := "Ann"
	tests := []struct {
		text    string
		data    Nullable
		want    string
		wantErr string
	}{
		{"Hi {{.Name}}", Nullable{Name: &name}, "Hi Ann", ""},
		{"Hi {{.Name}}", Nullable{}, "", "{{.Name}} is nil"},
		{"Hi {{.Any}}", Nullable{}, "", "{{.Any}} is nil"},
		{"Hi {{.Meta.user}}", Nullable{Meta: map[string]any{"user": nil}}, "", "{{.Meta.user}} is nil"},
		{"Hi {{.Meta.user}}", Nullable{Meta: map[string]any{"user": "Bo"}}, "Hi Bo", ""},
		{"{{with .Inner}}{{.City}}{{end}}", Nullable{}, "", ""},
		{"{{if .Name}}{{.Name}}{{else}}nobody{{end}}", Nullable{}, "nobody", ""},
		{"{{range $k, $v := .Meta}}{{$k}}={{$v}};{{end}}", Nullable{Meta: map[string]any{"a": 1, "b": nil}}, "", "{{$v}} is nil"},
	}
	for _, tt := range tests {
		tmpl, err := prompt.For[Nullable]("user", tt.text)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.Render(tt.data)
		if tt.wantErr != "" {
			if !errors.Is(err, prompt.ErrNilValue) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Render(%q) = %q, %v; want error %q", tt.text, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Render(%q) = %q, %v; want %q", tt.text, got, err, tt.want)
		}
	}
}

// TestRenderStringer: every path prints a value as text/template does,
// through its String method.
func TestRenderStringer(t *testing.T) {
	t.Parallel()
	tmpl, err := prompt.For[Mood]("user", "The mood is {{.}}.")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tmpl.Render(Mood(1)); err != nil || got != "The mood is happy." {
		t.Errorf("Render = %q, %v; want %q", got, err, "The mood is happy.")
	}
	type withLabel struct{ L Label }
	tl, err := prompt.For[*withLabel]("user", "{{.L}}!")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tl.Render(&withLabel{L: "x"}); err != nil || got != "label:x!" {
		t.Errorf("Render = %q, %v; want %q", got, err, "label:x!")
	}
}
