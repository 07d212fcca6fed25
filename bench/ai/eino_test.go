package ai_test

import (
	"context"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// einoModel is Eino's fake model.
type einoModel struct{ call, text schema.Message }

func (m *einoModel) Generate(_ context.Context, msgs []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if msgs[len(msgs)-1].Role == schema.User {
		c := m.call
		return &c, nil
	}
	t := m.text
	return &t, nil
}

func (m *einoModel) Stream(ctx context.Context, msgs []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, msgs, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *einoModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

func BenchmarkEino(b *testing.B) {
	ctx := context.Background()
	model := &einoModel{
		call: schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{{ID: "c1", Type: "function", Function: schema.FunctionCall{Name: "weather", Arguments: args}}}},
		text: schema.Message{Role: schema.Assistant, Content: answer},
	}
	weatherTool, err := utils.InferTool("weather", "Current weather of a city.", currentWeather)
	if err != nil {
		b.Fatal(err)
	}
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: model,
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{weatherTool}},
	})
	if err != nil {
		b.Fatal(err)
	}
	// Eino has no chat memory: the application keeps the window.
	var history []*schema.Message
	b.ReportAllocs()
	for b.Loop() {
		if len(history) > 20 {
			history = append(history[:0:0], history[len(history)-20:]...)
		}
		input := make([]*schema.Message, 0, len(history)+2)
		input = append(input, schema.SystemMessage(system))
		input = append(input, history...)
		user := schema.UserMessage(question)
		input = append(input, user)
		out, err := agent.Generate(ctx, input)
		if err != nil || out.Content != answer {
			b.Fatal(out, err)
		}
		history = append(history, user, out)
	}
}
