package ai_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/guardrail"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/tool"
)

func TestStreamFuncThroughToolRounds(t *testing.T) {
	t.Parallel()
	first := calls(call("1", "weather", CityArgs{"Rome"}))
	first.Message.Parts = []llm.Part{llm.TextPart("Let me check.")}
	m := scripted.New(steps(first, text("It is sunny in Rome today")))
	stream, err := ai.StreamFunc[string](m, ai.Tools(weatherTool()))
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	for s, err := range stream(context.Background(), "weather?") {
		if err != nil {
			t.Fatal(err)
		}
		pieces = append(pieces, s)
	}
	if got := strings.Join(pieces, ""); got != "Let me check.It is sunny in Rome today" {
		t.Errorf("streamed %q", got)
	}
	if len(pieces) < 4 {
		t.Errorf("text came in %d pieces, want it word by word", len(pieces))
	}
}

func TestEventStream(t *testing.T) {
	t.Parallel()
	m := scripted.New(steps(calls(call("1", "weather", CityArgs{"Rome"})), text("sunny")))
	events, err := ai.EventFunc[string](m, ai.Tools(weatherTool()))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var out *ai.Outcome
	for ev, err := range events(context.Background(), "weather?") {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind.String())
		if ev.Kind == ai.EventDone {
			out = ev.Outcome
		}
	}
	want := []string{"tool_call_delta", "tool_call_delta", "tool_call_delta", "tool_call_delta", "usage", "tool_call", "tool_result", "text", "usage", "done"}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %q, want %q", kinds, want)
	}
	if out == nil || out.Text != "sunny" || len(out.Messages) != 4 {
		t.Errorf("outcome = %+v", out)
	}
}

// cancelWatcher is a model whose stream reports when it returns.
type cancelWatcher struct {
	*scripted.Model
	cancelled chan struct{}
}

func (c *cancelWatcher) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		defer close(c.cancelled)
		for i := 0; ; i++ {
			if !yield(llm.TextChunk("tok "), nil) {
				return
			}
			if i > 1000 {
				yield(llm.Chunk{}, errors.New("consumer did not stop"))
				return
			}
		}
	}
}

func TestBreakStopsTheModel(t *testing.T) {
	t.Parallel()
	m := &cancelWatcher{Model: scripted.New(), cancelled: make(chan struct{})}
	stream, _ := ai.StreamFunc[string](m)
	n := 0
	for _, err := range stream(context.Background(), "go") {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	<-m.cancelled // the model's stream returned
}

func TestStreamWithOutputGuardrails(t *testing.T) {
	t.Parallel()
	shout := guardrail.OutputFunc(func(ctx context.Context, r guardrail.OutputRequest) guardrail.Verdict {
		return guardrail.Rewritten(strings.ToUpper(r.Message.Text()))
	})
	for _, tt := range []struct {
		mode ai.GuardedStreaming
		want []string
	}{
		{ai.GuardBuffer, []string{"HELLO THERE"}},
		{ai.GuardAfter, []string{"hello", " there"}},
	} {
		stream, _ := ai.StreamFunc[string](scripted.New(scripted.Reply("hello there")), ai.OutputGuardrails(0, shout), ai.GuardStreaming(tt.mode))
		var got []string
		for s, err := range stream(context.Background(), "hi") {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("mode %d: streamed %q, want %q", tt.mode, got, tt.want)
		}
	}
}

func TestEngineRunWithHistory(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Reply("4"))
	eng, err := ai.NewEngine(m, ai.MaxToolRounds(3))
	if err != nil {
		t.Fatal(err)
	}
	history := []llm.Message{llm.UserMessage("2+1?"), llm.AssistantMessage("3")}
	var text string
	var out *ai.Outcome
	for ev, err := range eng.Run(context.Background(), ai.Turn{System: "math", History: history, Message: llm.UserMessage("2+2?")}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case ai.EventText:
			text += ev.Text
		case ai.EventDone:
			out = ev.Outcome
		}
	}
	if text != "4" || out.Text != "4" {
		t.Errorf("text %q, outcome %q", text, out.Text)
	}
	if got := texts(m.Requests()[0].Messages); !slices.Equal(got, []string{"system:math", "user:2+1?", "assistant:3", "user:2+2?"}) {
		t.Errorf("sent %q", got)
	}
	if got := texts(out.Messages); !slices.Equal(got, []string{"user:2+2?", "assistant:4"}) {
		t.Errorf("new messages %q", got)
	}
	if len(history) != 2 {
		t.Errorf("history modified")
	}
}

func TestEventsFromNonStreamingModel(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Capabilities(llm.Capabilities{Tools: true}), steps(calls(call("1", "weather", CityArgs{"Rome"})), text("sunny in Rome")))
	events, err := ai.EventFunc[string](m, ai.Tools(weatherTool()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev, err := range events(context.Background(), "weather?") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == ai.EventText {
			got = append(got, ev.Text)
		}
	}
	if !slices.Equal(got, []string{"sunny in Rome"}) {
		t.Errorf("text events %q", got)
	}
}

func TestFailedTurnKeepsUserMessage(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Fail(&llm.Error{Kind: llm.ErrUnavailable, Message: "down"}))
	chats := memory.MessageWindow(10)
	f, _ := ai.Func[Chat, string](m, ai.MemoryPerID(chats), ai.User("{{.Msg}}"))
	_, err := f(context.Background(), Chat{"x", "hello"})
	if !errors.Is(err, llm.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	recs, _ := chats.Chat("x").Records(context.Background())
	if len(recs) != 1 || recs[0].Message.Text() != "hello" {
		t.Errorf("memory after a failed turn: %d records", len(recs))
	}
}

func TestForwardFromTool(t *testing.T) {
	t.Parallel()
	// A tool that delegates to another agent and forwards its text.
	inner := scripted.New(scripted.Reply("inner words here"))
	innerStream, _ := ai.StreamFunc[string](inner)
	delegate := tool.Func("delegate", "asks another agent", func(ctx context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		var all string
		for s, err := range innerStream(ctx, in.Q) {
			if err != nil {
				return "", err
			}
			ai.Forward(ctx, ai.Event{Kind: ai.EventText, Text: s})
			all += s
		}
		return all, nil
	})
	outer := scripted.New(steps(calls(call("1", "delegate", `{"q":"hi"}`)), text("done")))
	stream, _ := ai.StreamFunc[string](outer, ai.Tools(delegate))
	var got []string
	for s, err := range stream(context.Background(), "go") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if strings.Join(got, "") != "inner words heredone" {
		t.Errorf("streamed %q", got)
	}
	if ai.Forward(context.Background(), ai.Event{Kind: ai.EventText}) {
		t.Error("Forward outside a streamed turn reported delivery")
	}
}

func TestForwardAgentSteps(t *testing.T) {
	t.Parallel()
	// A tool that delegates reports the delegate's steps; they reach the
	// stream in order, and the delegate's text is not the turn's answer.
	failed := errors.New("delegate down")
	delegate := tool.Func("delegate", "asks another agent", func(ctx context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		step := func(p ai.AgentPhase, text string, err error) {
			ai.Forward(ctx, ai.Event{Kind: ai.EventAgent, Text: text, Agent: &ai.AgentStep{Agent: "helper", Depth: 1, Phase: p, Err: err}})
		}
		step(ai.AgentStarted, "", nil)
		step(ai.AgentText, "inner", nil)
		step(ai.AgentEnded, "", failed)
		return "", failed
	})
	eng, err := ai.NewEngine(scripted.New(steps(calls(call("1", "delegate", `{"q":"hi"}`)), text("done"))), ai.Tools(delegate))
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	var out *ai.Outcome
	for ev, err := range eng.Run(context.Background(), ai.Turn{Message: llm.UserMessage("go")}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case ai.EventAgent:
			phases = append(phases, fmt.Sprintf("%s/%d/%d/%s/%v", ev.Agent.Agent, ev.Agent.Depth, ev.Agent.Phase, ev.Text, ev.Agent.Err))
		case ai.EventDone:
			out = ev.Outcome
		}
	}
	want := []string{"helper/1/1//<nil>", "helper/1/2/inner/<nil>", "helper/1/3//delegate down"}
	if !slices.Equal(phases, want) {
		t.Errorf("agent steps %q, want %q", phases, want)
	}
	if out == nil || out.Text != "done" {
		t.Errorf("outcome %+v: the delegate's text leaked into the answer", out)
	}
	if ai.EventAgent.String() != "agent" {
		t.Errorf("EventAgent.String() = %q", ai.EventAgent.String())
	}
}

// callStreamer streams one response of two tool calls as the OpenAI driver
// may: the first call's id and name open it, the second's id arrives last
// (after its fragments), then answers "done".
type callStreamer struct{ turns int }

func (m *callStreamer) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return llm.Collect(m.Stream(ctx, req))
}

func (m *callStreamer) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		m.turns++
		chunks := []llm.Chunk{llm.TextChunk("done"), llm.FinishChunk(llm.FinishStop)}
		if m.turns == 1 {
			chunks = []llm.Chunk{
				llm.ToolCallStartChunk(0, "c1", "lookup"),
				llm.ToolCallDeltaChunk(0, `{"q":`),
				llm.ToolCallStartChunk(1, "", "weather"),
				llm.ToolCallDeltaChunk(1, `{"city":`),
				llm.ToolCallDeltaChunk(0, `"x"}`),
				llm.ToolCallDeltaChunk(1, `"Rome"}`),
				llm.ToolCallStartChunk(1, "c2", "weather"),
				llm.FinishChunk(llm.FinishToolCalls),
			}
		}
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// TestEventToolCallDeltas: a streamed tool call is passed on as it comes —
// each call's first delta once its id and name are known (with what arrived
// before), then each fragment — before the whole call; with output
// guardrails buffering the answer, no deltas.
func TestEventToolCallDeltas(t *testing.T) {
	t.Parallel()
	type delta struct{ id, name, text string }
	run := func(opts ...ai.Option) (deltas []delta, kinds []string) {
		e, err := ai.NewEngine(&callStreamer{}, append(opts, ai.Tools(weatherTool()))...)
		if err != nil {
			t.Fatal(err)
		}
		for ev, err := range e.Run(context.Background(), ai.Turn{Message: llm.UserMessage("x and weather?"), ClientTools: []llm.ToolSpec{lookupSpec}}) {
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, ev.Kind.String())
			if ev.Kind == ai.EventToolCallDelta {
				if ev.ToolCall.Arguments != "" {
					t.Errorf("a delta carries arguments %q", ev.ToolCall.Arguments)
				}
				deltas = append(deltas, delta{ev.ToolCall.ID, ev.ToolCall.Name, ev.Text})
			}
		}
		return deltas, kinds
	}
	deltas, kinds := run()
	want := []delta{{"c1", "lookup", ""}, {"c1", "lookup", `{"q":`}, {"c1", "lookup", `"x"}`}, {"c2", "weather", `{"city":"Rome"}`}}
	if !slices.Equal(deltas, want) {
		t.Errorf("deltas %q\nwant %q", deltas, want)
	}
	wantKinds := []string{"tool_call_delta", "tool_call_delta", "tool_call_delta", "tool_call_delta", "tool_call", "tool_call", "tool_result", "done"}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("events %q\nwant %q", kinds, wantKinds)
	}
	pass := guardrail.OutputFunc(func(_ context.Context, r guardrail.OutputRequest) guardrail.Verdict {
		return guardrail.Verdict{Action: guardrail.Pass}
	})
	if deltas, _ := run(ai.OutputGuardrails(0, pass)); len(deltas) != 0 {
		t.Errorf("buffered by output guardrails: deltas %q", deltas)
	}
}

func TestMemoryError(t *testing.T) {
	t.Parallel()
	// A conversation another turn holds past the lease's wait fails the
	// turn with a *MemoryError matching memory.ErrLockTimeout, before the
	// model is called.
	store := memory.NewInMemory()
	key := memory.Key{Tenant: "t", Agent: "a", Session: "s"}
	release, err := memory.NewChat(store, key, memory.Window{}).Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	chat := memory.NewChat(store, key, memory.Window{}, memory.WithLease(memory.Lease{Wait: 20 * time.Millisecond}))
	model := scripted.New(scripted.Reply("never"))
	eng, err := ai.NewEngine(model)
	if err != nil {
		t.Fatal(err)
	}
	_, err = eng.Do(context.Background(), ai.Turn{ID: "m1", Memory: chat, MemoryID: "s", Message: llm.UserMessage("hi")})
	var me *ai.MemoryError
	if !errors.As(err, &me) || me.ID != "s" || !errors.Is(err, memory.ErrLockTimeout) {
		t.Fatalf("err = %#v, want a *ai.MemoryError for %q matching memory.ErrLockTimeout", err, "s")
	}
	if !strings.Contains(err.Error(), `memory "s"`) {
		t.Errorf("error %q does not name the memory", err)
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
}
