package ai_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/tool"
)

type CityArgs struct {
	City string `json:"city" description:"the city"`
}

type Weather struct {
	City  string `json:"city"`
	TempC int    `json:"temp_c"`
}

func weatherTool(opts ...tool.FuncOption) tool.Tool {
	return tool.Func("weather", "Current weather of a city.", func(ctx context.Context, in CityArgs) (Weather, error) {
		switch in.City {
		case "fail":
			return Weather{}, errors.New("station offline")
		case "panic":
			panic("boom")
		}
		return Weather{City: in.City, TempC: 21}, nil
	}, opts...)
}

func TestToolLoopPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		first    *llm.Response
		opts     []ai.Option
		wantErr  string
		wantTool string // content of the first tool result the model saw
		isError  bool
	}{
		{name: "success", first: calls(call("1", "weather", CityArgs{"Paris"})), wantTool: `{"city":"Paris","temp_c":21}`},
		{name: "tool error to model", first: calls(call("1", "weather", CityArgs{"fail"})), wantTool: "Error: station offline", isError: true},
		{name: "tool error aborts", first: calls(call("1", "weather", CityArgs{"fail"})), opts: []ai.Option{ai.ToolErrors(tool.Abort)}, wantErr: "tool weather failed: station offline"},
		{name: "panic to model", first: calls(call("1", "weather", CityArgs{"panic"})), wantTool: "Error: tool panicked: boom", isError: true},
		{name: "unknown tool lists tools", first: calls(call("1", "wether", CityArgs{"Paris"})), wantTool: `Error: there is no tool named "wether". Available tools: weather.`, isError: true},
		{name: "unknown tool aborts", first: calls(call("1", "wether", "{}")), opts: []ai.Option{ai.UnknownTools(tool.Abort)}, wantErr: "unknown tool"},
		{name: "bad JSON", first: calls(call("1", "weather", `{"city":`)), wantTool: "Error: tool weather: invalid arguments", isError: true},
		{name: "wrong type names field", first: calls(call("1", "weather", `{"city":3}`)), wantTool: `Error: tool weather: argument "city": expected string, got number`, isError: true},
		{name: "missing field named", first: calls(call("1", "weather", `{}`)), wantTool: `Error: tool weather: argument "city": required but missing`, isError: true},
		{name: "bad args abort", first: calls(call("1", "weather", `{}`)), opts: []ai.Option{ai.BadToolArguments(tool.Abort)}, wantErr: "required but missing"},
		{name: "result capped", first: calls(call("1", "weather", CityArgs{strings.Repeat("x", 100)})), opts: []ai.Option{ai.MaxToolResultBytes(20)}, wantTool: `{"city":"xxxxxxxxxxx` + "\n[truncated: 103 more bytes]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := scripted.New(steps(tt.first, text("done")))
			f, err := ai.Func[string, ai.Result[string]](m, append([]ai.Option{ai.Tools(weatherTool())}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := f(context.Background(), "weather?")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Value != "done" || len(res.ToolExecutions) != 1 {
				t.Fatalf("result = %+v", res)
			}
			reqs := m.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls, want 2", len(reqs))
			}
			msgs := reqs[1].Messages
			got := msgs[len(msgs)-1]
			if got.Role != llm.RoleTool || !strings.HasPrefix(got.Text(), tt.wantTool) || got.IsError != tt.isError {
				t.Errorf("tool result = %q (error %v), want prefix %q (error %v)", got.Text(), got.IsError, tt.wantTool, tt.isError)
			}
			if res.Usage.TotalTokens != 30 {
				t.Errorf("usage = %+v, want the sum of two calls", res.Usage)
			}
			if len(res.Intermediate) != 1 {
				t.Errorf("intermediate = %d, want 1", len(res.Intermediate))
			}
		})
	}
}

func TestToolRoundsCap(t *testing.T) {
	t.Parallel()
	m := scripted.New(respond(func(*llm.Request) *llm.Response { return calls(call("x", "weather", CityArgs{"Paris"})) }))
	f, _ := ai.Func[string, string](m, ai.Tools(weatherTool()), ai.MaxToolRounds(3))
	_, err := f(context.Background(), "loop")
	var re *ai.ToolRoundsError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v", err)
	}
	if re.Rounds != 3 || len(re.Partial.ToolExecutions) != 3 || len(m.Requests()) != 4 {
		t.Errorf("rounds %d, executions %d, calls %d", re.Rounds, len(re.Partial.ToolExecutions), len(m.Requests()))
	}
}

func TestParallelToolCalls(t *testing.T) {
	t.Parallel()
	// Each call waits for the other to start: run one after the other,
	// they would wait until the deadline.
	var started atomic.Int32
	both := make(chan struct{})
	slow := tool.Func("slow", "waits for its sibling", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (int, error) {
		if started.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
			return in.N, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
	m := scripted.New(steps(calls(call("a", "slow", `{"n":1}`), call("b", "slow", `{"n":2}`)), text("ok")))
	f, _ := ai.Func[string, ai.Result[string]](m, ai.Tools(slow), ai.ToolErrors(tool.Abort))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := f(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ToolExecutions; got[0].Content != "1" || got[1].Content != "2" {
		t.Errorf("executions out of order: %+v", got)
	}
}

func TestImmediateReturn(t *testing.T) {
	t.Parallel()
	plain := tool.Func("note", "notes", func(ctx context.Context, in struct{}) (string, error) { return "noted", nil })
	tests := []struct {
		name      string
		mode      ai.ImmediateMode
		resp      *llm.Response
		wantCalls int
	}{
		{"all immediate", ai.ImmediateAll, calls(call("1", "weather", CityArgs{"Oslo"})), 1},
		{"all: one is not", ai.ImmediateAll, calls(call("1", "weather", CityArgs{"Oslo"}), call("2", "note", "{}")), 2},
		{"last: last is", ai.ImmediateLast, calls(call("2", "note", "{}"), call("1", "weather", CityArgs{"Oslo"})), 1},
		{"last: last is not", ai.ImmediateLast, calls(call("1", "weather", CityArgs{"Oslo"}), call("2", "note", "{}")), 2},
		{"never", ai.ImmediateNever, calls(call("1", "weather", CityArgs{"Oslo"})), 2},
		{"failed call is not immediate", ai.ImmediateAll, calls(call("1", "weather", CityArgs{"fail"})), 2},
		// A failure earlier in the round must reach the model even when the
		// last call is immediate.
		{"last: an earlier call failed", ai.ImmediateLast, calls(call("1", "weather", CityArgs{"fail"}), call("2", "weather", CityArgs{"Oslo"})), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := scripted.New(steps(tt.resp, text(`{"city":"model","temp_c":0}`)))
			f, err := ai.Func[string, Weather](m, ai.Tools(weatherTool(tool.Immediate()), plain), ai.ImmediateReturn(tt.mode))
			if err != nil {
				t.Fatal(err)
			}
			w, err := f(context.Background(), "weather in Oslo")
			if err != nil {
				t.Fatal(err)
			}
			if n := len(m.Requests()); n != tt.wantCalls {
				t.Errorf("%d model calls, want %d", n, tt.wantCalls)
			}
			want := "Oslo"
			if tt.wantCalls == 2 {
				want = "model"
			}
			if w.City != want {
				t.Errorf("value = %+v, want city %q", w, want)
			}
		})
	}
}

func TestDuplicateToolsAtConstruction(t *testing.T) {
	t.Parallel()
	_, err := ai.Func[string, string](scripted.New(), ai.Tools(weatherTool(), weatherTool()))
	if err == nil || !strings.Contains(err.Error(), `two tools are named "weather"`) {
		t.Errorf("err = %v", err)
	}
	_, err = ai.Func[string, string](scripted.New(scripted.Capabilities(llm.Capabilities{Streaming: true})), ai.Tools(weatherTool()))
	if err == nil || !strings.Contains(err.Error(), "no tool support") {
		t.Errorf("err = %v", err)
	}
}

func TestRequestTransformerEveryRound(t *testing.T) {
	t.Parallel()
	m := scripted.New(steps(calls(call("1", "weather", CityArgs{"Rome"})), text("sunny")))
	var seen []string
	g, err := ai.Func[struct {
		ID  ai.MemoryID
		Msg string
	}, string](m, ai.Tools(weatherTool()), ai.MemoryPerID(memoryWindow(10)), ai.User("{{.Msg}}"),
		ai.TransformRequest(func(ctx context.Context, req *llm.Request, id string) error {
			seen = append(seen, id)
			req.Temperature = llm.Ptr(0.5)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g(context.Background(), struct {
		ID  ai.MemoryID
		Msg string
	}{"u1", "weather in Rome?"}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != "u1" {
		t.Errorf("transformer saw %q", seen)
	}
	for _, r := range m.Requests() {
		if r.Temperature == nil || *r.Temperature != 0.5 {
			t.Errorf("temperature not applied")
		}
	}
}
