package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodSuite = `name: support
agent: helper
judge: {model: scripted/demo}
mocks:
  - tool: weather
    args: {city: Paris}
    result: {temp: 21}
cases:
  - id: one-turn
    user: What is the refund window?
    expect:
      text: {contains: 30 days, not: [sorry, apologize]}
      citations: [refunds.md]
  - id: two-turns
    repeat: 3
    pass: pass@k
    turns:
      - user: Weather in Paris?
        expect:
          tools: {match: in_order, args: subset, calls: [{name: weather, args: {city: Paris}}]}
      - user: And tomorrow?
        expect:
          judge: {rubric: Mentions tomorrow, threshold: 0.7}
          rouge: {reference: It will be sunny tomorrow, threshold: 0.3}
          latency_ms: 5000
          cost_usd: 0.01
  - id: triage
    workflow: triage
    inputs: {ticket: "printer on fire"}
    expect:
      status: succeeded
      json: {subset: {queue: hardware}, tolerance: 0.5}
`

func TestParse(t *testing.T) {
	s, err := Parse([]byte(goodSuite), "suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "support" || len(s.Cases) != 3 || s.Format != "weft" {
		t.Fatalf("suite = %+v", s)
	}
	c := s.Cases[0]
	if got := c.turns(); len(got) != 1 || got[0].User != "What is the refund window?" {
		t.Fatalf("one-turn shorthand: %+v", got)
	}
	if got := c.Expect.Text.Contains; len(got) != 1 || got[0] != "30 days" {
		t.Fatalf("contains written as one string = %q", got)
	}
	if got := c.Expect.Text.Not; len(got) != 2 {
		t.Fatalf("not = %q", got)
	}
	if n, pass := s.repeat(&s.Cases[1]); n != 3 || pass != PassAny {
		t.Fatalf("repeat = %d %s", n, pass)
	}
	if n, pass := s.repeat(&s.Cases[0]); n != 1 || pass != PassAll {
		t.Fatalf("default repeat = %d %s", n, pass)
	}
	if kind, name := s.Subject(&s.Cases[2]); kind != "workflow" || name != "triage" {
		t.Fatalf("subject = %s %s", kind, name)
	}
	if kind, name := s.Subject(&s.Cases[0]); kind != "agent" || name != "helper" {
		t.Fatalf("subject = %s %s", kind, name)
	}
	if th := *s.Cases[1].Turns[1].Expect.Judge.Threshold; th != 0.7 {
		t.Fatalf("threshold = %v", th)
	}
}

// TestParseErrors pins that a bad suite is refused with its file, line and
// field.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"unknown field", "name: s\nagent: a\ncases:\n  - id: x\n    user: hi\n    expect:\n      text: {contian: x}\n",
			"s.yaml:7: cases[0].expect.text: additional properties 'contian' not allowed"},
		{"wrong type", "name: s\nagent: a\ncases:\n  - id: x\n    user: hi\n    repeat: many\n",
			"s.yaml:6: cases[0].repeat: got string, want integer"},
		{"bad match", "name: s\nagent: a\ncases:\n  - id: x\n    user: hi\n    expect:\n      tools:\n        match: sometimes\n        calls: []\n",
			"s.yaml:8: cases[0].expect.tools.match: value must be one of"},
		{"duplicate id", "name: s\nagent: a\ncases:\n  - id: x\n    user: hi\n  - id: x\n    user: ho\n",
			`s.yaml:6: cases[1].id: case id "x" is also the id of case 0`},
		{"bad regex", "name: s\nagent: a\ncases:\n  - id: x\n    user: hi\n    expect:\n      text:\n        regex: 'a('\n",
			"s.yaml:8: cases[0].expect.text.regex: regular expression"},
		{"no subject", "name: s\ncases:\n  - id: x\n    user: hi\n",
			`s.yaml:3: cases[0]: case "x" names no agent or workflow`},
		{"workflow with turns", "name: s\nworkflow: w\ncases:\n  - id: x\n    user: hi\n",
			`s.yaml:4: cases[0]: case "x" runs workflow "w": it takes inputs, not turns`},
		{"missing cases", "name: s\nagent: a\n", "s.yaml:1: missing property 'cases'"},
		{"yaml syntax", "name: s\ncases: [\n", "s.yaml:2: did not find expected node content"},
		{"duplicate key", "name: s\nname: t\n", "s.yaml:2: name: key given twice"},
		{"two documents", "name: s\n---\nname: t\n", "s.yaml:2: a suite file holds one YAML document"},
		{"schema reading a file", "name: s\nagent: a\ncases:\n  - id: x\n    user: hi\n    expect:\n      json:\n        schema: {$ref: 'file:///etc/passwd'}\n",
			"may not refer to file:///etc/passwd"},
		{"bad schema", "name: s\nagent: a\ncases:\n  - id: x\n    user: hi\n    expect:\n      json:\n        schema: {type: 7}\n",
			"s.yaml:8: cases[0].expect.json.schema: schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "s.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%T %v is not an *Error", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n  %s\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
}

func TestLoadLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, make([]byte, MaxSuiteBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "larger than the limit") {
		t.Fatalf("err = %v", err)
	}
}

// TestSchemaAliases pins that YAML aliases expand (and a billion laughs
// does not).
func TestSchemaAliases(t *testing.T) {
	src := "name: s\nagent: a\nx: &e {text: {contains: ok}}\ncases:\n  - id: a\n    user: hi\n    expect: *e\n"
	if _, err := Parse([]byte(src), "s.yaml"); err == nil || !strings.Contains(err.Error(), "'x' not allowed") {
		t.Fatalf("err = %v", err)
	}
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	if _, err := Parse([]byte(b.String()), "bomb.yaml"); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(goodSuite))
	f.Add([]byte(`{"name": "s", "agent": "a", "cases": [{"id": "x", "user": "hi"}]}`))
	f.Add([]byte("name: s\ncases: [{id: x, workflow: w, inputs: {a: 1}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "f.yaml")
		if err != nil {
			return
		}
		if s.Check() != nil {
			t.Fatal("a parsed suite fails its check")
		}
	})
}
