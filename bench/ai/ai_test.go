// Package ai_test compares the overhead of a typed call in Weft with the
// same work in langchaingo, Eino and Genkit, each with an in-process fake
// model of its own: one user turn with a memory window of 20 messages and
// one tool round (the model asks for a tool, the tool decodes its JSON
// arguments and encodes a result, the model answers with text).
//
//	cd bench && go test -run='^$' -bench=. -benchmem ./ai/
package ai_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"testing"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/tool"
)

const (
	system   = "You are a weather assistant."
	question = "What is the weather in Paris?"
	answer   = "It is 21 degrees in Paris."
	args     = `{"city":"Paris"}`
)

type cityArgs struct {
	City string `json:"city" description:"the city"`
}

type weather struct {
	City  string `json:"city"`
	TempC int    `json:"temp_c"`
}

func currentWeather(_ context.Context, in cityArgs) (weather, error) {
	if in.City == "" {
		return weather{}, errors.New("no city")
	}
	return weather{City: in.City, TempC: 21}, nil
}

// weftModel is Weft's fake: a tool call for a user message, text after a
// tool result.
type weftModel struct{ call, text llm.Response }

func (m *weftModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	if req.Messages[len(req.Messages)-1].Role == llm.RoleUser {
		return &m.call, nil
	}
	return &m.text, nil
}

func (m *weftModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		r, _ := m.Generate(ctx, req)
		yield(llm.TextChunk(r.Text()), nil)
	}
}

type weftIn struct {
	ID  ai.MemoryID
	Msg string
}

func BenchmarkWeft(b *testing.B) {
	model := &weftModel{
		call: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: args}}}, FinishReason: llm.FinishToolCalls},
		text: llm.Response{Message: llm.AssistantMessage(answer), FinishReason: llm.FinishStop},
	}
	ask, err := ai.Func[weftIn, string](model,
		ai.System(system),
		ai.User("{{.Msg}}"),
		ai.MemoryPerID(memory.MessageWindow(20)),
		ai.Tools(tool.Func("weather", "Current weather of a city.", currentWeather)))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	in := weftIn{ID: "bench", Msg: question}
	b.ReportAllocs()
	for b.Loop() {
		out, err := ask(ctx, in)
		if err != nil || out != answer {
			b.Fatal(out, err)
		}
	}
}

// decodeWeather is what a peer's string-typed tool does to match Weft's
// typed tool: decode the JSON arguments, call, encode the result.
func decodeWeather(ctx context.Context, input string) (string, error) {
	var in cityArgs
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return "", err
	}
	out, err := currentWeather(ctx, in)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// BenchmarkWeftEngineHistory is the same turn through Weft's untyped
// engine with history kept by the application, as the Eino and Genkit
// benchmarks keep it (and as the platform does): the pipeline without a
// memory store.
func BenchmarkWeftEngineHistory(b *testing.B) {
	model := &weftModel{
		call: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: args}}}, FinishReason: llm.FinishToolCalls},
		text: llm.Response{Message: llm.AssistantMessage(answer), FinishReason: llm.FinishStop},
	}
	eng, err := ai.NewEngine(model, ai.Tools(tool.Func("weather", "Current weather of a city.", currentWeather)))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var history []llm.Message
	user := llm.UserMessage(question)
	b.ReportAllocs()
	for b.Loop() {
		if len(history) > 20 {
			history = append(history[:0:0], history[len(history)-20:]...)
		}
		out, err := eng.Do(ctx, ai.Turn{System: system, History: history, Message: user})
		if err != nil || out.Text != answer {
			b.Fatal(out, err)
		}
		history = append(history, out.Messages...)
	}
}
