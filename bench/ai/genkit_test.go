package ai_test

import (
	"context"
	"testing"

	gai "github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

func BenchmarkGenkit(b *testing.B) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	callMsg := &gai.Message{Role: gai.RoleModel, Content: []*gai.Part{gai.NewToolRequestPart(&gai.ToolRequest{Name: "weather", Ref: "c1", Input: map[string]any{"city": "Paris"}})}}
	model := genkit.DefineModel(g, "fake/model", &gai.ModelOptions{Supports: &gai.ModelSupports{Tools: true, Multiturn: true, SystemRole: true}},
		func(ctx context.Context, req *gai.ModelRequest, _ gai.ModelStreamCallback) (*gai.ModelResponse, error) {
			if req.Messages[len(req.Messages)-1].Role == gai.RoleUser {
				return &gai.ModelResponse{Message: callMsg, FinishReason: gai.FinishReasonStop}, nil
			}
			return &gai.ModelResponse{Message: gai.NewModelTextMessage(answer), FinishReason: gai.FinishReasonStop}, nil
		})
	weatherTool := genkit.DefineTool(g, "weather", "Current weather of a city.",
		func(tc *gai.ToolContext, in cityArgs) (weather, error) { return currentWeather(tc, in) })
	// Genkit has no chat memory: the application keeps the window.
	var history []*gai.Message
	b.ReportAllocs()
	for b.Loop() {
		if len(history) > 20 {
			history = append(history[:0:0], history[len(history)-20:]...)
		}
		user := gai.NewUserTextMessage(question)
		resp, err := genkit.Generate(ctx, g,
			gai.WithModel(model),
			gai.WithSystem(system),
			gai.WithMessages(append(history, user)...),
			gai.WithTools(weatherTool))
		if err != nil || resp.Text() != answer {
			b.Fatal(resp, err)
		}
		history = append(history, user, resp.Message)
	}
}
