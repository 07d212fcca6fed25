package eval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportADK reads an evalset written from ADK's published schema
// (snake_case and camelCase) with its test_config.json, and runs it.
func TestImportADK(t *testing.T) {
	s, err := Load("testdata/adk/lights.evalset.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.Format != "adk" || s.Name != "lights" || len(s.Cases) != 2 || s.Cases[0].Agent != "home" {
		t.Fatalf("suite = %+v", s)
	}
	e := s.Cases[0].Turns[0].Expect
	if e.Tools == nil || e.Tools.Match != MatchInOrder || e.Tools.Calls[0].Name != "set_light" || e.Tools.Calls[0].Args["room"] != "kitchen" {
		t.Errorf("trajectory = %+v", e.Tools)
	}
	if e.Rouge == nil || e.Rouge.Threshold != 0.5 || e.Rouge.Reference != "The kitchen light is on now." || e.Rouge.Metric != "response_match_score" {
		t.Errorf("rouge = %+v", e.Rouge)
	}
	if e.Judge == nil || *e.Judge.Threshold != 0.7 || !strings.Contains(e.Judge.Rubric, "- The answer is polite.") {
		t.Errorf("judge = %+v", e.Judge)
	}
	if got := s.Cases[1].Turns[1]; got.User != "Thanks." || got.Expect.Tools == nil || len(got.Expect.Tools.Calls) != 0 {
		t.Errorf("second case, second turn = %+v", got)
	}

	tgt := &fakeTarget{chat: func(agent, session, msg string) (*Answer, error) {
		switch msg {
		case "Turn on the kitchen light.":
			return &Answer{Text: "Done: the kitchen light is on.", ToolCalls: []ToolCall{{Name: "set_light", Arguments: json.RawMessage(`{"on":true,"room":"kitchen"}`)}}}, nil
		case "Is the hall light on?":
			return &Answer{Text: "The hall light is off.", ToolCalls: []ToolCall{{Name: "get_light", Arguments: json.RawMessage(`{"room":"hall"}`)}}}, nil
		}
		return &Answer{Text: "You are welcome!"}, nil
	}}
	// The fake target lists no such agent: run it without its catalog.
	res, err := Run(t.Context(), struct{ Target }{tgt}, s, judgeOpener(`{"score": 1, "reason": "ok"}`), WithJudgeModel("judge/x"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cases {
		if !c.Pass {
			t.Errorf("%s", failure(&c))
		}
	}
	// An unknown agent is named at its case's line.
	if _, err := Run(t.Context(), tgt, s); err == nil || !strings.Contains(err.Error(), `lights.evalset.json:6: cases[0].agent: unknown agent "home"`) {
		t.Errorf("unknown agent: %v", err)
	}
	// --agent names the Weft agent.
	s, err = LoadAs("testdata/adk/lights.evalset.json", "lights-agent")
	if err != nil || s.Agent != "lights-agent" || s.Cases[0].Agent != "" {
		t.Fatalf("LoadAs: %+v, %v", s, err)
	}
}

// TestImportTrpc reads a trpc-agent-go evalset with its metrics file,
// tool mocks included, and runs it.
func TestImportTrpc(t *testing.T) {
	s, err := Load("testdata/trpc/weather.evalset.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.Format != "trpc" || s.Cases[0].Agent != "forecaster" {
		t.Fatalf("suite = %+v", s)
	}
	c := s.Cases[0]
	if len(c.Mocks) != 1 || c.Mocks[0].Tool != "get_weather" || c.Mocks[0].Args["city"] != "Paris" {
		t.Errorf("mocks = %+v", c.Mocks)
	}
	e := c.Turns[0].Expect
	if e.Tools.Match != MatchInOrder || *e.Tools.AllowExtra || e.Tools.Tolerance != 0.01 {
		t.Errorf("tools = %+v", e.Tools)
	}
	if !e.Text.IgnoreCase || e.Text.Contains[0] != "It is 21 degrees and sunny in Paris." || e.Rouge.Threshold != 0.4 {
		t.Errorf("text = %+v, rouge = %+v", e.Text, e.Rouge)
	}
	if e.Judge == nil || *e.Judge.Threshold != 0.6 || !strings.Contains(e.Judge.Rubric, "States the temperature.") {
		t.Errorf("judge = %+v", e.Judge)
	}
	tgt := &fakeTarget{chat: func(_, _, _ string) (*Answer, error) {
		return &Answer{Text: "it is 21 degrees and sunny in paris.", ToolCalls: []ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}}, nil
	}}
	res, err := Run(t.Context(), struct {
		Target
		Mocker
	}{tgt, tgt}, s, judgeOpener(`{"score": 0.8, "reason": "ok"}`), WithJudgeModel("judge/x"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cases[0].Pass {
		t.Error(failure(&res.Cases[0]))
	}
	if len(tgt.mocks) == 0 || tgt.mocks[0][0].Result.(map[string]any)["sky"] != "sunny" {
		t.Errorf("mocks given to the target = %+v", tgt.mocks)
	}
}

// TestImportErrors pins that an unknown metric or an unsupported option
// is named with its file and line.
func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	adk := `{"eval_set_id": "x", "eval_cases": [{"eval_id": "a", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}], "session_input": {"app_name": "a"}}]}`
	path := write("x.evalset.json", adk)
	write("test_config.json", "{\n  \"criteria\": {\n    \"response_match_score\": 0.5,\n    \"tool_trajectory_score\": 1.0\n  }\n}\n")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), `test_config.json:4: criteria.tool_trajectory_score: unknown ADK metric "tool_trajectory_score"`) {
		t.Errorf("unknown ADK metric: %v", err)
	}
	trpcDir := filepath.Join(dir, "t")
	os.Mkdir(trpcDir, 0o755)
	tp := filepath.Join(trpcDir, "y.evalset.json")
	os.WriteFile(tp, []byte(`{"evalSetId": "y", "evalCases": [{"evalId": "a", "conversation": [{"userContent": {"role": "user", "content": "hi"}}], "sessionInput": {"appName": "a"}}]}`), 0o644)
	if _, err := Load(tp); err == nil || !strings.Contains(err.Error(), "y.metrics.json") {
		t.Errorf("missing metrics file: %v", err)
	}
	os.WriteFile(filepath.Join(trpcDir, "y.metrics.json"), []byte("[\n  {\"metricName\": \"final_response_avg_score\", \"threshold\": 1,\n   \"criterion\": {\"finalResponse\": {\"rouge\": {\"rougeType\": \"rougeL\"}}}}\n]\n"), 0o644)
	if _, err := Load(tp); err == nil || !strings.Contains(err.Error(), `y.metrics.json:3: [0].criterion.finalResponse.rouge.rougeType: rougeType "rougeL": only rouge1 is supported`) {
		t.Errorf("unsupported option: %v", err)
	}
	os.WriteFile(filepath.Join(trpcDir, "y.metrics.json"), []byte(`[{"metricName": "llm_vibes", "threshold": 1}]`), 0o644)
	if _, err := Load(tp); err == nil || !strings.Contains(err.Error(), `unknown trpc-agent-go metric "llm_vibes"`) {
		t.Errorf("unknown trpc metric: %v", err)
	}
}

func FuzzImport(f *testing.F) {
	for _, p := range []string{"testdata/adk/lights.evalset.json", "testdata/trpc/weather.evalset.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, trpc bool) {
		dir := t.TempDir()
		path := filepath.Join(dir, "f.evalset.json")
		os.WriteFile(path, data, 0o644)
		if trpc {
			os.WriteFile(filepath.Join(dir, "f.metrics.json"), []byte(`[{"metricName": "tool_trajectory_avg_score", "threshold": 1}]`), 0o644)
		}
		s, err := Import(path)
		if err == nil && s.Check() != nil {
			t.Fatal("an imported suite fails its check")
		}
	})
}
