package tool_test

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

func ExampleFunc() {
	type Args struct {
		City string `json:"city" description:"the city"`
	}
	weather := tool.Func("weather", "Current temperature of a city in °C.",
		func(ctx context.Context, a Args) (int, error) { return 21, nil })
	set, err := tool.NewSet(weather)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(set.Specs()[0].Parameters))

	exec := tool.Executor{Tools: set}
	out, _ := exec.Run(context.Background(), []llm.ToolCall{
		{ID: "1", Name: "weather", Arguments: `{"city":"Oslo"}`},
		{ID: "2", Name: "weather", Arguments: `{"town":"Oslo"}`},
		{ID: "3", Name: "forecast", Arguments: `{}`},
	}, nil)
	for _, x := range out {
		fmt.Println(x.Content)
	}
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"the city"}},"required":["city"],"additionalProperties":false}
	// 21
	// Error: tool weather: argument "city": required but missing
	// Error: there is no tool named "forecast". Available tools: weather.
}
