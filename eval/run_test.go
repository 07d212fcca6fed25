package eval

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/openai"
	"github.com/weftlabs/weft/provider/scripted"
)

// fakeTarget answers from a function and records the mocks it was given.
type fakeTarget struct {
	chat  func(agent, session, msg string) (*Answer, error)
	wf    func(name string, in map[string]any) (*Answer, error)
	mocks [][]Mock
	calls int
}

func (f *fakeTarget) Chat(_ context.Context, agent, session, msg string) (*Answer, error) {
	f.calls++
	return f.chat(agent, session, msg)
}

func (f *fakeTarget) RunWorkflow(_ context.Context, name string, in map[string]any) (*Answer, error) {
	return f.wf(name, in)
}

func (f *fakeTarget) SetMocks(m []Mock) { f.mocks = append(f.mocks, m) }

func (f *fakeTarget) Catalog(context.Context) (*Catalog, error) {
	return &Catalog{Agents: []string{"helper"}, Workflows: []string{"triage"}, Tools: []string{"weather", "lookup"}}, nil
}

func mustParse(t *testing.T, src string) *Suite {
	t.Helper()
	s, err := Parse([]byte(src), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func judgeOpener(reply string) Option {
	return WithJudgeOpener(func(spec string) (*llm.Model, error) {
		return llm.New(scripted.New(scripted.Reply(reply)), llm.WithName(spec)), nil
	})
}

func TestRunChecks(t *testing.T) {
	s := mustParse(t, goodSuite)
	tgt := &fakeTarget{
		chat: func(agent, session, msg string) (*Answer, error) {
			switch msg {
			case "What is the refund window?":
				return &Answer{Text: "Refunds are accepted within 30 days.", SessionID: "s1",
					Citations: []Citation{{Document: "refunds.md"}}}, nil
			case "Weather in Paris?":
				return &Answer{Text: "21 degrees.", SessionID: "s2",
					ToolCalls: []ToolCall{{Name: "lookup", Arguments: json.RawMessage(`{}`)}, {Name: "weather", Arguments: json.RawMessage(`{"city":"Paris","unit":"C"}`)}}}, nil
			default:
				if session != "s2" {
					t.Errorf("second turn in session %q, want s2", session)
				}
				return &Answer{Text: "It will be sunny tomorrow too.", SessionID: "s2", CostUSD: 0.001}, nil
			}
		},
		wf: func(name string, in map[string]any) (*Answer, error) {
			return &Answer{Status: "succeeded", Outputs: json.RawMessage(`{"queue":"hardware","priority":1.2}`)}, nil
		},
	}
	var progress []string
	res, err := Run(t.Context(), tgt, s, judgeOpener(`{"score": 0.9, "reason": "mentions tomorrow"}`),
		WithProgress(func(done, total int, c *CaseResult) { progress = append(progress, c.ID) }))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cases {
		if !c.Pass {
			t.Errorf("%s failed: %s", c.ID, failure(&c))
		}
	}
	if got := strings.Join(progress, ","); got != "one-turn,two-turns,triage" {
		t.Errorf("progress = %s", got)
	}
	if c := res.Cases[1]; c.K != 3 || len(c.Runs) != 3 || c.Passed != 3 || c.Duration <= 0 {
		t.Errorf("repeats: %+v", c)
	}
	j := res.Cases[1].Runs[0].Turns[1].Checks
	var judged *Check
	for i := range j {
		if j[i].Name == "judge" {
			judged = &j[i]
		}
	}
	if judged == nil || *judged.Score != 0.9 || judged.Reason != "mentions tomorrow" {
		t.Errorf("judge check = %+v", judged)
	}
	// Mocks: the suite's weather mock for every case, nil after each.
	if len(tgt.mocks) != 6 || len(tgt.mocks[0]) != 1 || tgt.mocks[0][0].Tool != "weather" || tgt.mocks[1] != nil {
		t.Errorf("mocks = %+v", tgt.mocks)
	}
}

func TestChecksFail(t *testing.T) {
	ans := &Answer{Text: "I'm sorry, but I can't help with that.",
		ToolCalls: []ToolCall{{Name: "weather", Arguments: json.RawMessage(`{"city":"Lyon"}`)}}}
	exact := "hello"
	th := 0.8
	e := &Expect{
		Text:      &TextExpect{Exact: &exact, Contains: Strings{"Paris"}, Regex: Strings{`\d+`}, Not: Strings{"sorry"}},
		JSON:      &JSONExpect{Subset: json.RawMessage(`{"a":1}`)},
		Tools:     &ToolsExpect{Calls: []ExpectedCall{{Name: "weather", Args: map[string]any{"city": "Paris"}}}},
		Citations: []string{"faq.md"},
		Refusal:   new(bool),
		Rouge:     &RougeExpect{Reference: "The weather in Paris is sunny", Threshold: 0.5},
		Judge:     &JudgeExpect{Rubric: "helpful", Threshold: &th},
		LatencyMS: 1,
		CostUSD:   0.0001,
	}
	ans.Latency = 5e6
	ans.CostUSD = 0.5
	r := newRunner(&fakeTarget{}, &Suite{Name: "s"}, []Option{judgeOpener(`{"score": 0.2, "reason": "refuses"}`), WithJudgeModel("x/judge")})
	checks := r.checks(t.Context(), e, ans, judgeInput{user: "weather?", answer: ans}, false)
	want := []string{"text.exact", "text.contains", "text.regex", "text.not", "json", "tools.exact", "citations", "refusal", "rouge1", "judge", "latency", "cost"}
	if len(checks) != len(want) {
		t.Fatalf("%d checks, want %d: %+v", len(checks), len(want), checks)
	}
	for i, c := range checks {
		if c.Name != want[i] || c.Pass {
			t.Errorf("check %d = %s pass=%v, want %s failing", i, c.Name, c.Pass, want[i])
		}
		if c.Reason == "" {
			t.Errorf("check %s has no reason", c.Name)
		}
		if c.Name == "judge" && c.Reason != "score 0.20 is under 0.80: refuses" {
			t.Errorf("judge reason = %q", c.Reason)
		}
	}
}

func TestToolsCheck(t *testing.T) {
	calls := []ToolCall{
		{Name: "a", Arguments: json.RawMessage(`{"x":1,"y":2}`)},
		{Name: "b", Arguments: json.RawMessage(`{"q":"z"}`)},
		{Name: "c"},
	}
	yes, no := true, false
	for _, tc := range []struct {
		name string
		e    ToolsExpect
		want bool
	}{
		{"exact", ToolsExpect{Calls: []ExpectedCall{{Name: "a"}, {Name: "b"}, {Name: "c"}}}, true},
		{"exact missing one", ToolsExpect{Calls: []ExpectedCall{{Name: "a"}, {Name: "c"}}}, false},
		{"exact wrong order", ToolsExpect{Calls: []ExpectedCall{{Name: "b"}, {Name: "a"}, {Name: "c"}}}, false},
		{"in order with extras", ToolsExpect{Match: MatchInOrder, Calls: []ExpectedCall{{Name: "a"}, {Name: "c"}}}, true},
		{"in order wrong order", ToolsExpect{Match: MatchInOrder, Calls: []ExpectedCall{{Name: "c"}, {Name: "a"}}}, false},
		{"in order no extras", ToolsExpect{Match: MatchInOrder, AllowExtra: &no, Calls: []ExpectedCall{{Name: "a"}, {Name: "c"}}}, false},
		{"any order", ToolsExpect{Match: MatchAnyOrder, Calls: []ExpectedCall{{Name: "c"}, {Name: "a"}}}, true},
		{"any order twice", ToolsExpect{Match: MatchAnyOrder, Calls: []ExpectedCall{{Name: "a"}, {Name: "a"}}}, false},
		{"args exact", ToolsExpect{Match: MatchInOrder, Calls: []ExpectedCall{{Name: "a", Args: map[string]any{"x": 1, "y": 2}}}}, true},
		{"args exact partial", ToolsExpect{Match: MatchInOrder, Calls: []ExpectedCall{{Name: "a", Args: map[string]any{"x": 1}}}}, false},
		{"args subset", ToolsExpect{Match: MatchInOrder, Args: ArgsSubset, Calls: []ExpectedCall{{Name: "a", Args: map[string]any{"x": 1}}}}, true},
		{"args tolerance", ToolsExpect{Match: MatchInOrder, Args: ArgsSubset, Tolerance: 0.1, Calls: []ExpectedCall{{Name: "a", Args: map[string]any{"x": 1.05}}}}, true},
		{"no calls expected", ToolsExpect{Calls: nil}, false},
		{"exact allowing extras", ToolsExpect{AllowExtra: &yes, Calls: []ExpectedCall{{Name: "b"}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := toolsCheck(&tc.e, calls)
			if c.Pass != tc.want {
				t.Errorf("pass = %v, want %v (%s vs %s)", c.Pass, tc.want, c.Expected, c.Actual)
			}
		})
	}
}

func TestJSONChecks(t *testing.T) {
	text := "Here:\n```json\n{\"name\": \"Ada\", \"age\": 36.4, \"tags\": [\"x\"]}\n```"
	for _, tc := range []struct {
		e    JSONExpect
		want bool
	}{
		{JSONExpect{Subset: json.RawMessage(`{"name":"Ada"}`)}, true},
		{JSONExpect{Subset: json.RawMessage(`{"age":36}`)}, false},
		{JSONExpect{Subset: json.RawMessage(`{"age":36}`), Tolerance: 0.5}, true},
		{JSONExpect{Subset: json.RawMessage(`{"tags":[]}`)}, false},
		{JSONExpect{Equals: json.RawMessage(`{"name":"Ada","age":36.4,"tags":["x"]}`)}, true},
		{JSONExpect{Equals: json.RawMessage(`{"name":"Ada"}`)}, false},
		{JSONExpect{Schema: json.RawMessage(`{"type":"object","required":["name"]}`)}, true},
		{JSONExpect{Schema: json.RawMessage(`{"type":"object","required":["email"]}`)}, false},
	} {
		cs := jsonChecks(&tc.e, text)
		if len(cs) != 1 || cs[0].Pass != tc.want {
			t.Errorf("%+v: %+v, want pass %v", tc.e, cs, tc.want)
		}
	}
	if cs := jsonChecks(&JSONExpect{Subset: json.RawMessage(`{}`)}, "no json here"); cs[0].Pass {
		t.Error("text without JSON passed")
	}
}

func TestRefusal(t *testing.T) {
	for text, want := range map[string]bool{
		"I can't help with that.":              true,
		"I’m sorry, but I cannot do this.":     true,
		"I am unable to assist with requests.": true,
		"Sorry for the wait! It is 21 °C.":     false,
		"You can't return opened items.":       false,
	} {
		if got := isRefusal(text); got != want {
			t.Errorf("isRefusal(%q) = %v", text, got)
		}
	}
}

func TestRouge1(t *testing.T) {
	for _, tc := range []struct {
		cand, ref string
		want      float64
	}{
		{"the cat sat on the mat", "the cat is on the mat", 5.0 / 6},
		{"The Cats were RUNNING!", "a cat runs", 2 * (2.0 / 4) * (2.0 / 3) / (2.0/4 + 2.0/3)},
		{"", "anything", 0},
		{"日本語 only", "日本語 only", 1},
		{"totally different", "nothing shared", 0},
	} {
		if got := Rouge1(tc.cand, tc.ref); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("Rouge1(%q, %q) = %v, want %v", tc.cand, tc.ref, got, tc.want)
		}
	}
}

func TestStem(t *testing.T) {
	for in, want := range map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "tie", "cats": "cat", "feed": "feed",
		"agreed": "agre", "plastered": "plaster", "motoring": "motor", "sing": "sing",
		"conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"falling": "fall", "hissing": "hiss", "failing": "fail", "filing": "file", "happy": "happi",
		"sky": "sky", "relational": "relat", "conditional": "condit", "rational": "ration",
		"digitizer": "digit", "radicalli": "radic", "differentli": "differ", "vietnamization": "vietnam",
		"operator": "oper", "feudalism": "feudal", "decisiveness": "decis", "hopefulness": "hope",
		"formaliti": "formal", "sensibiliti": "sensibl", "triplicate": "triplic", "formative": "form",
		"electrical": "electr", "goodness": "good", "revival": "reviv", "allowance": "allow",
		"adjustable": "adjust", "replacement": "replac", "adoption": "adopt", "communism": "commun",
		"effective": "effect", "bowdlerize": "bowdler", "cease": "ceas", "controll": "control",
		"generalizations": "gener", "oscillators": "oscil", "dying": "die", "died": "die", "spied": "spi",
	} {
		if got := stem(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPassRules(t *testing.T) {
	n := 0
	tgt := &fakeTarget{chat: func(_, _, _ string) (*Answer, error) {
		n++
		if n%2 == 0 {
			return &Answer{Text: "yes"}, nil
		}
		return &Answer{Text: "no"}, nil
	}}
	s := mustParse(t, "name: s\nagent: helper\ncases:\n  - {id: any, user: q, repeat: 2, pass: pass@k, expect: {text: {exact: 'yes'}}}\n  - {id: all, user: q, repeat: 2, expect: {text: {exact: 'yes'}}}\n")
	res, err := Run(t.Context(), tgt, s)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Cases[0]; !c.Pass || c.Passed != 1 {
		t.Errorf("pass@k: %+v", c)
	}
	if c := res.Cases[1]; c.Pass || c.Passed != 1 {
		t.Errorf("pass^k: %+v", c)
	}
	if res.Passed() != 1 {
		t.Errorf("Passed = %d", res.Passed())
	}
}

// TestUnknownNames pins that an agent, workflow or tool the target does
// not serve is named, with its line, before anything runs.
func TestUnknownNames(t *testing.T) {
	for src, want := range map[string]string{
		"name: s\nagent: helpr\ncases: [{id: a, user: q}]\n":                                                                      `s.yaml:2: agent: unknown agent "helpr" (the target has: helper)`,
		"name: s\ncases:\n  - {id: a, workflow: triag}\n":                                                                         `s.yaml:3: cases[0].workflow: unknown workflow "triag"`,
		"name: s\nagent: helper\ncases:\n  - id: a\n    user: q\n    mocks: [{tool: wether}]\n":                                   `s.yaml:6: cases[0].mocks[0].tool: unknown tool "wether" (the target has: lookup, weather)`,
		"name: s\nagent: helper\ncases:\n  - id: a\n    turns:\n      - user: q\n        expect: {tools: {calls: [{name: x}]}}\n": `s.yaml:7: cases[0].turns[0].expect.tools.calls[0].name: unknown tool "x"`,
	} {
		tgt := &fakeTarget{}
		_, err := Run(t.Context(), tgt, mustParse(t, src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %s", err, want)
		}
		if tgt.calls != 0 {
			t.Errorf("a case ran before the names were checked")
		}
	}
}

func TestMocksNeedMocker(t *testing.T) {
	var tgt Target = struct{ Target }{&fakeTarget{chat: func(_, _, _ string) (*Answer, error) { return &Answer{}, nil }}}
	s := mustParse(t, "name: s\nagent: helper\ncases:\n  - id: a\n    user: q\n    mocks: [{tool: weather, result: sunny}]\n")
	res, err := Run(t.Context(), tgt, s)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Cases[0]; c.Pass || !strings.Contains(c.Error, "mocks tools") {
		t.Errorf("case = %+v", c)
	}
}

// TestCassettes records the judge's calls against a fake provider, then
// replays them offline; a changed request, a missing cassette and an
// unused exchange are errors naming the case.
func TestCassettes(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Reply(`{"score": 1, "reason": "fine"}`), llmtest.Reply(`{"score": 0.4, "reason": "meh"}`))
	defer srv.Close()
	dir := t.TempDir()
	suite := func(rubric string) *Suite {
		return mustParse(t, "name: s\nagent: helper\njudge: {model: openai/gpt-4o-mini}\ncases:\n  - id: a\n    user: q\n    repeat: 2\n    pass: pass@k\n    expect: {judge: {rubric: "+rubric+"}}\n")
	}
	tgt := &fakeTarget{chat: func(_, _, _ string) (*Answer, error) { return &Answer{Text: "answer"}, nil }}
	open := func(c *Cassettes) Option {
		return WithJudgeOpener(func(spec string) (*llm.Model, error) {
			return provider.Open(spec, provider.WithHTTPClient(c.Client()), provider.WithBaseURL(srv.URL()), provider.WithAPIKey("k"))
		})
	}
	rec := NewCassettes(dir, llmtest.Record, nil)
	res, err := Run(t.Context(), tgt, suite("polite"), WithCassettes(rec), open(rec))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cases[0].Pass || res.Cases[0].Passed != 1 {
		t.Fatalf("recorded run: %s", failure(&res.Cases[0]))
	}
	if _, err := os.Stat(filepath.Join(dir, "s", "a.json")); err != nil {
		t.Fatal(err)
	}
	srv.Close() // replay must not need it

	play := NewCassettes(dir, llmtest.Replay, nil)
	res, err = Run(t.Context(), tgt, suite("polite"), WithCassettes(play), open(play))
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cases[0]
	if !c.Pass || c.Passed != 1 || *c.Runs[1].Turns[0].Checks[0].Score != 0.4 {
		t.Fatalf("replayed run: %s", failure(&c))
	}

	// A changed rubric changes the request: the case fails loudly.
	res, _ = Run(t.Context(), tgt, suite("concise"), WithCassettes(play), open(play))
	if c := res.Cases[0]; c.Pass || !strings.Contains(c.Error, `case s/a: a model request matches no recording`) {
		t.Errorf("changed request: pass=%v error=%q", c.Pass, c.Error)
	}
	// One run fewer leaves an exchange unused.
	one := suite("polite")
	one.Cases[0].Repeat = 1
	res, _ = Run(t.Context(), tgt, one, WithCassettes(play), open(play))
	if c := res.Cases[0]; c.Pass || !strings.Contains(c.Error, "1 recorded model exchanges were not requested") {
		t.Errorf("unused exchange: pass=%v error=%q", c.Pass, c.Error)
	}
	// No cassette: an error naming the case, and no model call.
	other := suite("polite")
	other.Cases[0].ID = "b"
	res, _ = Run(t.Context(), tgt, other, WithCassettes(play), open(play))
	if c := res.Cases[0]; c.Pass || !strings.Contains(c.Error, `case s/b: no cassette at `+filepath.Join(dir, "s", "b.json")) {
		t.Errorf("missing cassette: pass=%v error=%q", c.Pass, c.Error)
	}
	// A case without model calls needs no cassette.
	plain := mustParse(t, "name: s\nagent: helper\ncases: [{id: c, user: q, expect: {text: {exact: answer}}}]\n")
	res, _ = Run(t.Context(), tgt, plain, WithCassettes(play))
	if c := res.Cases[0]; !c.Pass {
		t.Errorf("case without model calls: %s", failure(&c))
	}
	// Outside a case, nothing goes through.
	if _, err := play.Client().Get("http://example.invalid/v1/models"); err == nil || !strings.Contains(err.Error(), "outside any case") {
		t.Errorf("call outside a case: %v", err)
	}
}

func TestCitations(t *testing.T) {
	got := []Citation{{Document: "returns.md"}, {Document: "shipping.md", DocumentID: "doc_2"}}
	for _, tc := range []struct {
		want []string
		text string
		pass bool
	}{
		{[]string{"returns.md"}, "30 days.", true},
		{[]string{"faq.md"}, "30 days.", false},
		{[]string{"returns.md"}, "30 days [1].", true},
		{[]string{"returns.md"}, "Ships in 3 days [2].", false},
		{[]string{"doc_2", "RETURNS.md"}, "See [2] and [1].", true},
		{[]string{"returns.md"}, "Out of range [7] only.", true},
	} {
		c := citationsCheck(tc.want, got, tc.text)
		if c.Pass != tc.pass {
			t.Errorf("%v in %q: pass = %v (%s)", tc.want, tc.text, c.Pass, c.Reason)
		}
	}
}
