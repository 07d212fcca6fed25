package eval

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sampleReport(t *testing.T, answer string) *Report {
	t.Helper()
	s := mustParse(t, "name: s\nagent: helper\ncases:\n  - {id: ok, user: q, expect: {text: {contains: <b>}}}\n  - {id: maybe, user: q, expect: {text: {contains: yes}}}\n  - {id: broken, user: boom}\n")
	tgt := &fakeTarget{chat: func(_, _, msg string) (*Answer, error) {
		if msg == "boom" {
			return nil, errString("server on fire")
		}
		return &Answer{Text: answer, ToolCalls: []ToolCall{{Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`), Result: "21"}}}, nil
	}}
	res, err := Run(t.Context(), tgt, s)
	if err != nil {
		t.Fatal(err)
	}
	return &Report{Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Mode: "replay", Suites: []*SuiteResult{res}}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestReports(t *testing.T) {
	r := sampleReport(t, "<b>yes</b>")
	if p, f := r.Counts(); p != 2 || f != 1 {
		t.Fatalf("counts = %d, %d", p, f)
	}

	var junit bytes.Buffer
	if err := r.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Tests    int `xml:"tests,attr"`
		Errors   int `xml:"errors,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name  string `xml:"name,attr"`
				Error *struct {
					Message string `xml:"message,attr"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(junit.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed.Tests != 3 || parsed.Errors != 1 || parsed.Failures != 0 || parsed.Suites[0].Cases[2].Error == nil ||
		!strings.Contains(parsed.Suites[0].Cases[2].Error.Message, "server on fire") {
		t.Errorf("junit = %+v\n%s", parsed, junit.String())
	}

	var html bytes.Buffer
	if err := r.WriteHTML(&html, nil); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, want := range []string{"2 passed, 1 failed", "&lt;b&gt;yes&lt;/b&gt;", "weather", "server on fire", "<style>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	for _, banned := range []string{"<script", "<link", "src=", "@import"} {
		if strings.Contains(page, banned) {
			t.Errorf("the HTML report is not self-contained: it has %q", banned)
		}
	}

	path := filepath.Join(t.TempDir(), "r.json")
	f, _ := os.Create(path)
	if err := r.WriteJSON(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	base, err := ReadReport(path)
	if err != nil || len(base.Suites[0].Cases) != 3 || !base.Suites[0].Cases[0].Pass {
		t.Fatalf("ReadReport = %+v, %v", base, err)
	}

	// Now "maybe" regresses; "broken" still fails; nothing new.
	now := sampleReport(t, "<b>no</b>")
	changes := now.Compare(base)
	if len(changes) != 1 || changes[0].Kind != "regressed" || changes[0].Case != "maybe" {
		t.Fatalf("changes = %+v", changes)
	}
	var table bytes.Buffer
	if err := now.WriteTable(&table, base); err != nil {
		t.Fatal(err)
	}
	out := table.String()
	for _, want := range []string{"regressed s/maybe: pass → FAIL", "--- s/maybe", `the answer does not contain "yes"`, "\n1 passed, 2 failed\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "1 passed, 2 failed\n") {
		t.Errorf("table does not end with the counts:\n%s", out)
	}
}
