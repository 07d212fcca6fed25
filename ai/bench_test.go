package ai_test

import (
	"context"
	"iter"
	"strconv"
	"testing"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/tool"
)

// fakeModel answers a user message with a tool call and a tool result with
// text, without recording anything: the cheapest model the pipeline can
// have, so that benchmarks measure the pipeline.
type fakeModel struct {
	callResp, textResp llm.Response
}

func newFakeModel() *fakeModel {
	return &fakeModel{
		callResp: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: `{"city":"Paris"}`}}}, FinishReason: llm.FinishToolCalls, Usage: llm.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}},
		textResp: llm.Response{Message: llm.AssistantMessage("It is 21 degrees in Paris."), FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 30, CompletionTokens: 8, TotalTokens: 38}},
	}
}

func (m *fakeModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if req.Messages[len(req.Messages)-1].Role == llm.RoleUser {
		return &m.callResp, nil
	}
	return &m.textResp, nil
}

func (m *fakeModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		r, _ := m.Generate(ctx, req)
		for _, c := range r.Message.ToolCalls {
			if !yield(llm.ToolCallStartChunk(0, c.ID, c.Name), nil) || !yield(llm.ToolCallDeltaChunk(0, c.Arguments), nil) {
				return
			}
		}
		if t := r.Text(); t != "" && !yield(llm.TextChunk(t), nil) {
			return
		}
		yield(llm.FinishChunk(r.FinishReason), nil)
	}
}

type benchIn struct {
	ID  ai.MemoryID
	Msg string
}

// newBenchFunc is the measured work: one user turn with memory (a window of
// 20 messages) and one tool round.
func newBenchFunc(tb testing.TB) func(context.Context, benchIn) (string, error) {
	weather := tool.Func("weather", "Current weather of a city.", func(ctx context.Context, in CityArgs) (Weather, error) {
		return Weather{City: in.City, TempC: 21}, nil
	})
	f, err := ai.Func[benchIn, string](newFakeModel(),
		ai.System("You are a weather assistant."),
		ai.User("{{.Msg}}"),
		ai.MemoryPerID(memory.MessageWindow(20)),
		ai.Tools(weather))
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func BenchmarkTypedCall(b *testing.B) {
	f := newBenchFunc(b)
	ctx := context.Background()
	in := benchIn{ID: "bench", Msg: "What is the weather in Paris?"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTypedCallNoMemoryNoTools(b *testing.B) {
	f, err := ai.Func[string, string](newFakeModel())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f(ctx, "hi"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAllocationBudget pins the allocations of the core call path: one
// typed call with memory and one tool round. Raise the budget only with a
// reason.
func TestAllocationBudget(t *testing.T) {
	f := newBenchFunc(t)
	ctx := context.Background()
	in := benchIn{ID: "budget", Msg: "What is the weather in Paris?"}
	for range 10 { // fill the window
		if _, err := f(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := f(ctx, in); err != nil {
			t.Fatal(err)
		}
	})
	// 23: the engine turn (see TestEngineAllocationBudget), of which about
	// 10 are the tool's JSON decoding and encoding and its result message;
	// the call's argument; the turn's memory state and its hold on the
	// conversation; two copies of parts (the user message, stored with the
	// lease before the model call, and the turn's last messages), one of
	// tool calls, and one string of new ids for each of the two appends;
	// the context that gives the round's tools the memory ID
	// (tool.MemoryID). History is read from the store without copying.
	const budget = 23 + raceSlack
	t.Logf("allocations per typed call with memory: %v", allocs)
	if allocs > budget {
		t.Errorf("a typed call allocates %v times, budget %d", allocs, budget)
	}
}

// TestEngineAllocationBudget pins the pipeline's own allocations: a turn
// with a tool round over history the caller keeps (no memory store).
func TestEngineAllocationBudget(t *testing.T) {
	weather := tool.Func("weather", "Current weather of a city.", func(ctx context.Context, in CityArgs) (Weather, error) {
		return Weather{City: in.City, TempC: 21}, nil
	})
	eng, err := ai.NewEngine(newFakeModel(), ai.Tools(weather))
	if err != nil {
		t.Fatal(err)
	}
	history := make([]llm.Message, 0, 20)
	for range 5 {
		history = append(history, llm.UserMessage("q"), newFakeModel().callResp.Message,
			llm.ToolResultMessage("c1", "weather", `{"city":"Paris","temp_c":21}`, false), llm.AssistantMessage("a"))
	}
	turn := ai.Turn{System: "You are a weather assistant.", History: history, Message: llm.UserMessage("What is the weather in Paris?")}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := eng.Do(ctx, turn); err != nil {
			t.Fatal(err)
		}
	})
	const budget = 15 + raceSlack
	t.Logf("allocations per engine turn: %v", allocs)
	if allocs > budget {
		t.Errorf("an engine turn allocates %v times, budget %d", allocs, budget)
	}
}

// TestEngineMemoryAllocationBudget pins an engine turn with memory over
// the in-process store as a server runs one: a token window (history is
// cut to leave room for the rest of the request), named records, a tool
// round.
func TestEngineMemoryAllocationBudget(t *testing.T) {
	weather := tool.Func("weather", "Current weather of a city.", func(ctx context.Context, in CityArgs) (Weather, error) {
		return Weather{City: in.City, TempC: 21}, nil
	})
	eng, err := ai.NewEngine(newFakeModel(), ai.Tools(weather))
	if err != nil {
		t.Fatal(err)
	}
	chat := memory.NewChat(memory.NewInMemory(), memory.Key{Session: "s"}, memory.Window{MaxTokens: 400, Reserve: 50}, memory.KeepAll())
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = "turn-" + strconv.Itoa(i)
	}
	n := 0
	ctx := context.Background()
	turn := func() {
		turn := ai.Turn{ID: ids[n], System: "You are a weather assistant.", Memory: chat, Message: llm.UserMessage("What is the weather in Paris?")}
		n++
		if _, err := eng.Do(ctx, turn); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 { // fill the window
		turn()
	}
	allocs := testing.AllocsPerRun(100, turn)
	// 23: the engine turn (TestEngineAllocationBudget, 14), the test's
	// user message, the turn's memory state and its hold, the window's
	// records (a token window is cut once the rest of the request is
	// known), the user message's record id, two copies of parts and one of
	// tool calls into the store, one string of ids for the tool round, and
	// the context that gives the round's tools the memory's key
	// (tool.MemoryID).
	const budget = 23 + raceSlack
	t.Logf("allocations per engine turn with memory: %v", allocs)
	if allocs > budget {
		t.Errorf("an engine turn with memory allocates %v times, budget %d", allocs, budget)
	}
}
