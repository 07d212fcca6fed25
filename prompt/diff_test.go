package prompt_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/weftlabs/weft/prompt"
)

// Diff is the value of the differential fuzz: every kind a fast path
// handles, and types that print through a method.
type Diff struct {
	S   string
	I   int
	I8  int8
	U   uint16
	B   bool
	M   Mood
	L   Label
	N   Inner
	P   *Inner
	Any any
	Map map[string]any
}

var diffClock = func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }

// stdTemplate is text/template configured as package prompt configures it.
func stdTemplate(text string) (*template.Template, error) {
	c := diffClock
	return template.New("t").Option("missingkey=error").Funcs(template.FuncMap{
		"now":             c,
		"currentDate":     func() string { return c().Format(time.DateOnly) },
		"currentTime":     func() string { return c().Format(time.TimeOnly) },
		"currentDateTime": func() string { return c().Format(time.RFC3339) },
	}).Parse(text)
}

// checkSame renders text over data with both engines: what package prompt
// renders must be what text/template renders, except that prompt refuses
// nil values (and may refuse, at New, fields the type does not have).
func checkSame(t *testing.T, text string, typ reflect.Type, data any) {
	t.Helper()
	if strings.Contains(text, "_weftNotNil") {
		return
	}
	tmpl, err := prompt.New("t", text, typ, prompt.WithClock(diffClock))
	if err != nil {
		return
	}
	std, err := stdTemplate(text)
	if err != nil {
		t.Fatalf("prompt accepts %q, text/template does not: %v", text, err)
	}
	var b strings.Builder
	stdErr := std.Execute(&b, data)
	got, err := tmpl.Render(data)
	switch {
	case stdErr != nil:
		if err == nil {
			t.Errorf("%q over %#v: prompt renders %q, text/template fails: %v", text, data, got, stdErr)
		}
	case err != nil:
		if !errors.Is(err, prompt.ErrNilValue) || !strings.Contains(b.String(), "<nil>") && !strings.Contains(b.String(), "<no value>") {
			t.Errorf("%q over %#v: prompt fails (%v), text/template renders %q", text, data, err, b.String())
		}
	case got != b.String():
		t.Errorf("%q over %#v: prompt renders %q, text/template %q", text, data, got, b.String())
	}
}

// pieces are the fuzz's building blocks: the actions every fast path
// admits, and some it must hand to text/template.
var pieces = []string{
	"{{.S}}", "{{.I}}", "{{.I8}}", "{{.U}}", "{{.B}}", "{{.M}}", "{{.L}}", "{{.N.City}}", "{{.P.City}}",
	"{{.Any}}", "{{.Map.k}}", "{{.}}", "{{ .S }}", "{{- .S -}}", "{{/* c */}}", " text ", "\n", "{{",
	"{{if .B}}y{{else}}n{{end}}", "{{with .P}}{{.City}}{{end}}", "{{printf \"%v\" .M}}",
}

// FuzzRenderMatchesTextTemplate is a differential fuzz of every rendering
// path (literal, fast field paths, the single-string-field path, and
// text/template itself) against text/template.
func FuzzRenderMatchesTextTemplate(f *testing.F) {
	f.Add([]byte{0, 15, 1}, "x", int64(3), true, "")
	f.Add([]byte{0}, "", int64(0), false, "")
	f.Add([]byte{11, 5, 6}, "<b>", int64(-1), false, "{{.S}}")
	f.Add([]byte{9, 10, 2, 3}, "é", int64(200), true, "")
	f.Add([]byte{}, "", int64(1), true, "The mood is {{.}}.")
	f.Fuzz(func(t *testing.T, choice []byte, s string, n int64, b bool, raw string) {
		if len(choice) > 32 {
			choice = choice[:32]
		}
		var text strings.Builder
		for _, c := range choice {
			text.WriteString(pieces[int(c)%len(pieces)])
		}
		text.WriteString(raw)
		d := Diff{S: s, I: int(n), I8: int8(n), U: uint16(n), B: b, M: Mood(n & 1), L: Label(s), N: Inner{City: s}}
		if b {
			d.P = &Inner{City: s}
			d.Any = s
			d.Map = map[string]any{"k": n}
		} else if n&1 == 1 {
			d.Map = map[string]any{"k": nil}
		}
		checkSame(t, text.String(), reflect.TypeFor[Diff](), d)
		checkSame(t, text.String(), reflect.TypeFor[*Diff](), &d)
		checkSame(t, text.String(), reflect.TypeFor[string](), s)
		checkSame(t, text.String(), reflect.TypeFor[int64](), n)
		checkSame(t, text.String(), reflect.TypeFor[bool](), b)
		checkSame(t, text.String(), reflect.TypeFor[Mood](), Mood(n&1))
		checkSame(t, text.String(), nil, nil)
	})
}
