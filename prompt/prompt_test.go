package prompt_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/weftlabs/weft/prompt"
)

type Inner struct{ City string }

type Args struct {
	Text     string
	Language string
	Count    int
	Tags     []string
	Inner    Inner
	Ptr      *Inner
	Meta     map[string]string
}

func (a Args) Upper() string { return "UP:" + a.Text }

func TestNewChecksFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		typ        reflect.Type
		wantErr    bool
	}{
		{"plain field", "Translate {{.Text}} to {{.Language}}", reflect.TypeFor[Args](), false},
		{"missing field", "Translate {{.Txt}}", reflect.TypeFor[Args](), true},
		{"nested", "{{.Inner.City}}", reflect.TypeFor[Args](), false},
		{"nested missing", "{{.Inner.Town}}", reflect.TypeFor[Args](), true},
		{"pointer nested", "{{.Ptr.City}}", reflect.TypeFor[Args](), false},
		{"method", "{{.Upper}}", reflect.TypeFor[Args](), false},
		{"range elem", "{{range .Tags}}{{.}}{{end}}", reflect.TypeFor[Args](), false},
		{"range struct elem missing", "{{range .Tags}}{{.X}}{{end}}", reflect.TypeFor[Args](), true},
		{"with", "{{with .Inner}}{{.City}}{{end}}", reflect.TypeFor[Args](), false},
		{"with missing", "{{with .Inner}}{{.Text}}{{end}}", reflect.TypeFor[Args](), true},
		{"root var in with", "{{with .Inner}}{{$.Text}}{{end}}", reflect.TypeFor[Args](), false},
		{"root var missing", "{{$.Nope}}", reflect.TypeFor[Args](), true},
		{"if", "{{if .Count}}{{.Nope}}{{end}}", reflect.TypeFor[Args](), true},
		{"map is unchecked", "{{.Meta.anything}}", reflect.TypeFor[Args](), false},
		{"string value", "Say {{.}}", reflect.TypeFor[string](), false},
		{"field of string", "Say {{.Text}}", reflect.TypeFor[string](), true},
		{"no value literal", "Be brief. Today is {{currentDate}}.", nil, false},
		{"no value field", "{{.Text}}", nil, true},
		{"syntax", "{{.Text", reflect.TypeFor[Args](), true},
		{"unknown func", "{{shout .Text}}", reflect.TypeFor[Args](), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := prompt.New(tt.name, tt.text, tt.typ)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New(%q) err = %v, wantErr %v", tt.text, err, tt.wantErr)
			}
		})
	}
}

func TestUnknownFieldError(t *testing.T) {
	t.Parallel()
	_, err := prompt.For[Args]("user", "{{.Lang}}")
	if !errors.Is(err, prompt.ErrUnknownField) {
		t.Fatalf("err = %v, want ErrUnknownField", err)
	}
	want := `prompt: template "user": {{.Lang}} names field Lang, which prompt_test.Args does not have (its fields: Text, Language, Count, Tags, Inner, Ptr, Meta): unknown field`
	if err.Error() != want {
		t.Errorf("err =\n%s\nwant\n%s", err, want)
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	clock := func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }
	args := Args{Text: "{{.Language}}", Language: "French", Count: 3, Tags: []string{"a", "b"}, Inner: Inner{City: "Paris"}, Ptr: &Inner{City: "Lyon"}}
	tests := []struct {
		text string
		data any
		want string
	}{
		{"Translate {{.Text}} into {{.Language}} ({{.Count}})", args, "Translate {{.Language}} into French (3)"},
		{"{{.Inner.City}}/{{.Ptr.City}}", args, "Paris/Lyon"},
		{"{{range .Tags}}[{{.}}]{{end}}", args, "[a][b]"},
		{"{{.Upper}}", args, "UP:{{.Language}}"},
		{"{{currentDate}} {{currentTime}} {{currentDateTime}} {{now.Year}}", nil, "2026-03-04 05:06:07 2026-03-04T05:06:07Z 2026"},
		{"plain", nil, "plain"},
		{"", nil, ""},
	}
	for _, tt := range tests {
		var typ reflect.Type
		if tt.data != nil {
			typ = reflect.TypeOf(tt.data)
		}
		tmpl, err := prompt.New("t", tt.text, typ, prompt.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.Render(tt.data)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("Render(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
	s, _ := prompt.For[string]("s", "Say {{.}}!")
	if got, _ := s.Render("{{hi}}"); got != "Say {{hi}}!" {
		t.Errorf("got %q", got)
	}
}

func TestRenderAllocs(t *testing.T) {
	tmpl, _ := prompt.For[Args]("t", "Translate {{.Text}} into {{.Language}}")
	a := Args{Text: "Hello", Language: "French"}
	allocs := testing.AllocsPerRun(100, func() { _, _ = tmpl.Render(a) })
	if allocs > 4 {
		t.Errorf("Render allocates %v times, want ≤ 4", allocs)
	}
}

func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"{{.Text}}", "{{range .Tags}}{{.}}{{end}}", "{{with .Inner}}{{$.Text}}{{.City}}{{end}}", "{{", "{{.Ptr.City}}", "{{currentDate}}", "{{if .Count}}x{{else}}y{{end}}", "{{template \"x\"}}", "{{define \"x\"}}{{.Nope}}{{end}}"} {
		f.Add(s, "value {{.Text}}")
	}
	f.Fuzz(func(t *testing.T, text, value string) {
		tmpl, err := prompt.For[Args]("fuzz", text)
		if err != nil {
			return
		}
		_, _ = tmpl.Render(Args{Text: value, Tags: []string{value}})
		_, _ = tmpl.Render(&Args{Text: value})
	})
}

func ExampleFor() {
	type Translate struct{ Text, Language string }
	tmpl, err := prompt.For[Translate]("user", "Translate into {{.Language}}: {{.Text}}")
	if err != nil {
		fmt.Println(err)
		return
	}
	s, _ := tmpl.Render(Translate{Text: "Hello", Language: "French"})
	fmt.Println(s)
	_, err = prompt.For[Translate]("user", "Translate into {{.Lang}}")
	fmt.Println(err != nil)
	// Output:
	// Translate into French: Hello
	// true
}
