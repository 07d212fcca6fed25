package inproc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/eval"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform/config"
	_ "github.com/weftlabs/weft/provider/openai"
)

const weftYAML = `
default_model: openai/gpt-4o-mini
providers:
  openai:
    base_url: ${TEST_BASE_URL}
knowledge_bases:
  - name: handbook
tools:
  - name: weather
    kind: http
    description: The weather in a city.
    parameters: {type: object, properties: {city: {type: string}}, required: [city]}
    http: {method: GET, url: https://weather.example.com/now}
agents:
  - name: support
    system_prompt: You answer customers from the handbook.
    knowledge_base_ids: [handbook]
    tool_ids: [weather]
`

const suiteYAML = `
name: support
agent: support
judge: {model: openai/gpt-4o-mini}
setup:
  documents:
    - knowledge_base: handbook
      paths: [docs/*.md]
mocks:
  - tool: weather
    args: {city: Paris}
    result: {temp_c: 21}
cases:
  - id: weather
    user: What is the weather in Paris?
    expect:
      tools: {calls: [{name: weather, args: {city: Paris}}]}
      text: {contains: "21"}
      judge: {rubric: Gives the temperature, threshold: 0.5}
  - id: refunds
    user: How many days do I have for a refund?
    expect:
      citations: [refunds.md]
      text: {contains: 30 days}
  - id: unmocked
    user: Weather in Rome?
    expect:
      tools: {calls: [{name: weather}]}
`

// script is what the stand-in provider answers, in the order the suite
// asks.
func script() []llmtest.Turn {
	return []llmtest.Turn{
		llmtest.CallTools(llmtest.ToolCall{Name: "weather", Arguments: `{"city":"Paris"}`}),
		llmtest.Reply("It is 21 °C in Paris."),
		llmtest.Reply(`{"score": 0.9, "reason": "gives 21 °C"}`),
		llmtest.Reply("You have 30 days from delivery [1]."),
		llmtest.CallTools(llmtest.ToolCall{Name: "weather", Arguments: `{"city":"Rome"}`}),
		llmtest.Reply("I could not get the weather in Rome."),
	}
}

func start(t *testing.T, cas *eval.Cassettes, baseURL string) (*Server, *eval.Suite) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "support.yaml")
	if err := os.WriteFile(path, []byte(suiteYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "docs"), os.DirFS("testdata/docs")); err != nil {
		t.Fatal(err)
	}
	suite, err := eval.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(weftYAML), "weft.yaml")
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(name string) string {
		if name == "TEST_BASE_URL" {
			return baseURL
		}
		return ""
	}
	srv, err := Start(t.Context(), Options{Config: cfg, Cassettes: cas, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.Setup(t.Context(), suite); err != nil {
		t.Fatal(err)
	}
	return srv, suite
}

// TestRecordReplay records a suite over an agent with knowledge and a
// mocked HTTP tool against a stand-in provider, then replays it three
// times offline with identical results.
func TestRecordReplay(t *testing.T) {
	provider := llmtest.NewServer(script()...)
	defer provider.Close()
	casDir := t.TempDir()
	rec := eval.NewCassettes(casDir, llmtest.Record, nil)
	srv, suite := start(t, rec, provider.URL())
	res, err := eval.Run(t.Context(), srv, suite, eval.WithCassettes(rec), eval.WithJudgeOpener(srv.OpenModel))
	if err != nil {
		t.Fatal(err)
	}
	check := func(res *eval.SuiteResult) {
		t.Helper()
		for _, c := range res.Cases[:2] {
			if !c.Pass {
				t.Errorf("%s: %+v", c.ID, c)
			}
		}
		w := res.Cases[0].Runs[0].Turns[0].Answer
		if len(w.ToolCalls) != 1 || w.ToolCalls[0].Result != `{"temp_c":21}` {
			t.Errorf("weather tool calls = %+v", w.ToolCalls)
		}
		u := res.Cases[2].Runs[0].Turns[0].Answer
		if len(u.ToolCalls) != 1 || !strings.Contains(u.ToolCalls[0].Error+u.ToolCalls[0].Result, "no mock of tool weather in this case matches") {
			t.Errorf("unmocked call = %+v", u.ToolCalls)
		}
	}
	check(res)
	if n := provider.Pending(); n != 0 {
		t.Fatalf("%d scripted turns unused", n)
	}
	provider.Close()

	for i := range 3 {
		play := eval.NewCassettes(casDir, llmtest.Replay, nil)
		srv, suite := start(t, play, "http://127.0.0.1:1/v1")
		res, err := eval.Run(context.Background(), srv, suite, eval.WithCassettes(play), eval.WithJudgeOpener(srv.OpenModel))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Cases {
			if c.Error != "" {
				t.Fatalf("replay %d: %s: %s", i, c.ID, c.Error)
			}
		}
		check(res)
	}
}

func TestMockTools(t *testing.T) {
	cfg, err := config.Parse([]byte(weftYAML), "weft.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := mockTools(cfg, "http://127.0.0.1:9")
	h := out.Tools[0]["http"].(map[string]any)
	if h["url"] != "http://127.0.0.1:9/tools/weather" || h["method"] != "POST" {
		t.Fatalf("mocked tool = %+v", out.Tools[0])
	}
	if cfg.Tools[0]["http"].(map[string]any)["url"] != "https://weather.example.com/now" {
		t.Fatal("the configuration was changed in place")
	}
}
