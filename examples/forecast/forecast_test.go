package forecast_test

import (
	"cmp"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/weftlabs/weft/examples/forecast"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/provider/openai"
	"github.com/weftlabs/weft/provider/scripted"
)

func fixed(t int) forecast.Lookup {
	return func(context.Context, string) (int, error) { return t, nil }
}

// 1. A scripted model: answers given in order, requests kept for
// assertions. No HTTP at all; the fastest and most precise test.
func TestScripted(t *testing.T) {
	model := scripted.New(scripted.Sequence(
		scripted.CallTool("temperature", `{"city":"Oslo"}`),
		scripted.ReplyJSON(forecast.Forecast{City: "Oslo", TempC: -3, Summary: "cold"}),
	))
	ask, err := forecast.New(model, fixed(-3))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ask(context.Background(), "Weather in Oslo?")
	if err != nil {
		t.Fatal(err)
	}
	if got != (forecast.Forecast{City: "Oslo", TempC: -3, Summary: "cold"}) {
		t.Errorf("forecast = %+v", got)
	}

	// Assert on what the model was sent.
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	first := reqs[0]
	if first.Messages[0].Role != llm.RoleSystem || first.Messages[1].Text() != "Weather in Oslo?" {
		t.Errorf("first request messages = %+v", first.Messages)
	}
	if len(first.Tools) != 1 || first.Tools[0].Name != "temperature" {
		t.Errorf("tools offered = %+v", first.Tools)
	}
	if first.ResponseFormat == nil || !strings.Contains(string(first.ResponseFormat.Schema), `"temp_c"`) {
		t.Errorf("response format = %+v", first.ResponseFormat)
	}
	// The tool's result went back to the model.
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != llm.RoleTool || last.Text() != "-3" {
		t.Errorf("tool result sent = %s %q", last.Role, last.Text())
	}
}

// 2. A failing tool: the error reaches the model, which can recover.
func TestToolFailureReachesModel(t *testing.T) {
	model := scripted.New(scripted.Sequence(
		scripted.CallTool("temperature", `{"city":"Atlantis"}`),
		scripted.ReplyJSON(forecast.Forecast{City: "Atlantis", Summary: "unknown city"}),
	))
	broken := func(context.Context, string) (int, error) { return 0, errors.New("no station") }
	ask, _ := forecast.New(model, broken)
	if _, err := ask(context.Background(), "Weather in Atlantis?"); err != nil {
		t.Fatal(err)
	}
	last := model.Requests()[1].Messages
	if msg := last[len(last)-1]; !msg.IsError || !strings.Contains(msg.Text(), "no station") {
		t.Errorf("the model saw %q (error %v)", msg.Text(), msg.IsError)
	}
}

// 3. llmtest.Server: the real OpenAI-compatible driver over HTTP against a
// fake server, with the wire quirks real providers have (here: tool-call
// arguments split over several stream fragments is the default).
func TestOverHTTP(t *testing.T) {
	srv := llmtest.NewServer(
		llmtest.CallTools(llmtest.ToolCall{Name: "temperature", Arguments: `{"city":"Lima"}`}),
		llmtest.Reply(`{"city":"Lima","temp_c":19,"summary":"mild"}`),
	)
	defer srv.Close()
	driver, err := openai.New(openai.WithBaseURL(srv.URL()), openai.WithAPIKey("test"), openai.WithModel("gpt-test"))
	if err != nil {
		t.Fatal(err)
	}
	ask, err := forecast.New(llm.New(driver), fixed(19))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ask(context.Background(), "Weather in Lima?")
	if err != nil {
		t.Fatal(err)
	}
	if got.TempC != 19 {
		t.Errorf("forecast = %+v", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || len(reqs[0].Tools) != 1 || reqs[1].Messages[len(reqs[1].Messages)-1].ToolCallID == "" {
		t.Errorf("requests on the wire: %+v", reqs)
	}
}

// 4. A cassette: recorded once from a real provider
// (LLMTEST_RECORD=1 OPENAI_API_KEY=… go test -run TestCassette), then
// replayed offline from testdata/cassettes/forecast.json on every run.
func TestCassette(t *testing.T) {
	rec := llmtest.Cassette(t, "forecast", nil)
	driver, err := openai.New(
		openai.WithBaseURL(cmp.Or(os.Getenv("OPENAI_BASE_URL"), "https://api.openai.com/v1")),
		openai.WithAPIKey(cmp.Or(os.Getenv("OPENAI_API_KEY"), "replayed")),
		openai.WithModel("gpt-4o-mini"),
		openai.WithHTTPClient(rec.Client()))
	if err != nil {
		t.Fatal(err)
	}
	ask, err := forecast.New(llm.New(driver), fixed(12))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ask(context.Background(), "Weather in Paris?")
	if err != nil {
		t.Fatal(err)
	}
	if got.City != "Paris" || got.TempC != 12 {
		t.Errorf("forecast = %+v", got)
	}
	if n := rec.Unused(); n != 0 {
		t.Errorf("%d recorded exchanges were not replayed: the function's requests changed", n)
	}
}
