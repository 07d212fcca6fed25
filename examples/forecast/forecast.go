// Package forecast is the code under test of docs/testing.md: a typed
// function that answers with a struct and may call a tool. Its test file
// shows the ways to test such a function offline.
package forecast

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// Forecast is the answer.
type Forecast struct {
	City    string `json:"city"`
	TempC   int    `json:"temp_c"`
	Summary string `json:"summary"`
}

// CityArgs are the tool's parameters.
type CityArgs struct {
	City string `json:"city"`
}

// Lookup returns a city's temperature; the application gives the real one.
type Lookup func(ctx context.Context, city string) (int, error)

// New declares the function over model, with lookup as the model's tool.
func New(model llm.ChatModel, lookup Lookup) (func(ctx context.Context, question string) (Forecast, error), error) {
	temperature := tool.Func("temperature", "The current temperature of a city, in °C.",
		func(ctx context.Context, in CityArgs) (int, error) {
			t, err := lookup(ctx, in.City)
			if err != nil {
				return 0, fmt.Errorf("temperature of %s: %w", in.City, err)
			}
			return t, nil
		})
	return ai.Func[string, Forecast](model,
		ai.System("You forecast the weather. Use the temperature tool."),
		ai.Tools(temperature))
}
