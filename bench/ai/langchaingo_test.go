package ai_test

import (
	"context"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/tools"
)

// lcModel is langchaingo's fake model.
type lcModel struct{ call, text llms.ContentResponse }

func (m *lcModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	if msgs[len(msgs)-1].Role == llms.ChatMessageTypeHuman {
		return &m.call, nil
	}
	return &m.text, nil
}

func (m *lcModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

type lcWeather struct{}

func (lcWeather) Name() string        { return "weather" }
func (lcWeather) Description() string { return "Current weather of a city." }
func (lcWeather) Call(ctx context.Context, input string) (string, error) {
	return decodeWeather(ctx, input)
}

// BenchmarkLangchaingo does the turn the way langchaingo's tool-calling
// examples do: its window memory for history, GenerateContent with tool
// definitions, the tool run by the application, a second GenerateContent.
// (Its agents executor cannot combine a tool-calling agent with message
// memory: the executor rejects non-string memory values.)
func BenchmarkLangchaingo(b *testing.B) {
	model := &lcModel{
		call: llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: args}}}}}},
		text: llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: answer, StopReason: "stop"}}},
	}
	// The window counts exchanges of two messages: 10 is 20 messages.
	mem := memory.NewConversationWindowBuffer(10, memory.WithReturnMessages(true))
	available := map[string]tools.Tool{"weather": lcWeather{}}
	toolDefs := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
		Name: "weather", Description: "Current weather of a city.",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string", "description": "the city"}},
			"required":   []string{"city"},
		},
	}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		vars, err := mem.LoadMemoryVariables(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		history := vars[mem.MemoryKey].([]llms.ChatMessage)
		msgs := make([]llms.MessageContent, 0, len(history)+4)
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeSystem, system))
		for _, h := range history {
			msgs = append(msgs, llms.TextParts(h.GetType(), h.GetContent()))
		}
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, question))
		var out string
		for round := 0; ; round++ {
			resp, err := model.GenerateContent(ctx, msgs, llms.WithTools(toolDefs))
			if err != nil {
				b.Fatal(err)
			}
			choice := resp.Choices[0]
			if len(choice.ToolCalls) == 0 {
				out = choice.Content
				break
			}
			if round == 10 {
				b.Fatal("too many rounds")
			}
			call := llms.MessageContent{Role: llms.ChatMessageTypeAI}
			for _, tc := range choice.ToolCalls {
				call.Parts = append(call.Parts, tc)
			}
			msgs = append(msgs, call)
			for _, tc := range choice.ToolCalls {
				result, err := available[tc.FunctionCall.Name].Call(ctx, tc.FunctionCall.Arguments)
				if err != nil {
					result = "Error: " + err.Error()
				}
				msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
					llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: result},
				}})
			}
		}
		if out != answer {
			b.Fatal(out)
		}
		if err := mem.SaveContext(ctx, map[string]any{"input": question}, map[string]any{"output": out}); err != nil {
			b.Fatal(err)
		}
	}
}
