package ai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
)

var lookupSpec = llm.ToolSpec{Name: "lookup", Description: "The caller's lookup.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}

// A call of the caller's tool ends the turn with the call pending; the
// engine's own call of the same round runs; a Turn without a Message then
// continues after the caller's result.
func TestClientToolsRoundTrip(t *testing.T) {
	t.Parallel()
	m := scripted.New(steps(
		calls(call("w1", "weather", CityArgs{"Paris"}), call("c1", "lookup", `{"q":"x"}`)),
		text("It is 21 degrees and x is found."),
	))
	e, err := ai.NewEngine(m, ai.Tools(weatherTool()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var events []ai.EventKind
	var out *ai.Outcome
	for ev, err := range e.Run(ctx, ai.Turn{Message: llm.UserMessage("weather and x?"), ClientTools: []llm.ToolSpec{lookupSpec}}) {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev.Kind)
		if ev.Kind == ai.EventDone {
			out = ev.Outcome
		}
	}
	if len(out.Pending) != 1 || out.Pending[0].ID != "c1" || out.Pending[0].Name != "lookup" {
		t.Fatalf("pending = %+v, want the lookup call", out.Pending)
	}
	if out.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish reason = %q", out.FinishReason)
	}
	if len(out.ToolExecutions) != 1 || out.ToolExecutions[0].Call.Name != "weather" {
		t.Errorf("executions = %+v, want the engine's weather call only", out.ToolExecutions)
	}
	// user, assistant (both calls), the weather result.
	if got := texts(out.Messages); len(got) != 3 || len(out.Messages[1].ToolCalls) != 2 || out.Messages[2].ToolCallID != "w1" {
		t.Errorf("messages = %v", got)
	}
	req := m.Requests()[0]
	if len(req.Tools) != 2 || req.Tools[1].Name != "lookup" {
		t.Errorf("tools offered = %+v, want weather and lookup", req.Tools)
	}

	history := append([]llm.Message{}, out.Messages...)
	history = append(history, llm.ToolResultMessage("c1", "lookup", "x is found", false))
	next, err := e.Do(ctx, ai.Turn{History: history, ClientTools: []llm.ToolSpec{lookupSpec}})
	if err != nil {
		t.Fatal(err)
	}
	if next.Text != "It is 21 degrees and x is found." || len(next.Pending) != 0 {
		t.Errorf("continued outcome = %q pending %v", next.Text, next.Pending)
	}
	if got := texts(next.Messages); len(got) != 1 || !strings.HasPrefix(got[0], "assistant:") {
		t.Errorf("continued turn's new messages = %v, want the answer only", got)
	}
	sent := m.Requests()[1].Messages
	if last := sent[len(sent)-1]; last.Role != llm.RoleTool || last.ToolCallID != "c1" {
		t.Errorf("the continuation sent %v last", last)
	}
	if len(events) == 0 || events[len(events)-1] != ai.EventDone {
		t.Errorf("events = %v", events)
	}
}

func TestClientToolsRefused(t *testing.T) {
	t.Parallel()
	e, err := ai.NewEngine(scripted.New(scripted.Reply("hi")), ai.Tools(weatherTool()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	clash := llm.ToolSpec{Name: "weather", Parameters: json.RawMessage(`{"type":"object"}`)}
	if _, err := e.Do(ctx, ai.Turn{Message: llm.UserMessage("x"), ClientTools: []llm.ToolSpec{clash}}); err == nil || !strings.Contains(err.Error(), `"weather" has the name of another tool`) {
		t.Errorf("clashing name: err = %v", err)
	}
	if _, err := e.Do(ctx, ai.Turn{History: []llm.Message{llm.UserMessage("x")}}); err == nil || !strings.Contains(err.Error(), "ends with tool results") {
		t.Errorf("continuation without tool results: err = %v", err)
	}
}
