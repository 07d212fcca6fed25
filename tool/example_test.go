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

// A tool finds the conversation it runs for in its context, never in the
// model's arguments (LangChain4j's @ToolMemoryId). Package ai sets it for
// the tools of a turn; here the context is made by hand.
func ExampleMemoryID() {
	carts := map[string][]string{}
	type Item struct {
		Name string `json:"name"`
	}
	addToCart := tool.Func("add_to_cart", "Adds an item to the user's cart.",
		func(ctx context.Context, it Item) (string, error) {
			id := tool.MemoryID(ctx)
			carts[id] = append(carts[id], it.Name)
			return fmt.Sprintf("%d items", len(carts[id])), nil
		})
	ctx := tool.WithMemoryID(context.Background(), "user-42")
	res, err := addToCart.Call(ctx, []byte(`{"name":"tea"}`))
	fmt.Println(res.Content, err, carts)
	// Output:
	// 1 items <nil> map[user-42:[tea]]
}

// A `default` tag declares a parameter's default (LangChain4j's
// @P(defaultValue = …)): the model sees it in the schema, the parameter is
// optional, and a call that leaves it out gets it.
func ExampleFunc_defaults() {
	type Args struct {
		Query string `json:"query"`
		Limit int    `json:"limit" default:"5" description:"how many results"`
	}
	search := tool.Func("search", "Searches the catalogue.",
		func(ctx context.Context, a Args) (string, error) {
			return fmt.Sprintf("%d results for %s", a.Limit, a.Query), nil
		})
	fmt.Println(string(search.Spec().Parameters))
	res, _ := search.Call(context.Background(), []byte(`{"query":"tea"}`))
	fmt.Println(res.Content)
	res, _ = search.Call(context.Background(), []byte(`{"query":"tea","limit":0}`))
	fmt.Println(res.Content)
	// Output:
	// {"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","description":"how many results","default":5}},"required":["query"],"additionalProperties":false}
	// 5 results for tea
	// 0 results for tea
}

// UnknownAnswer replaces what the model is told when it calls a tool that
// does not exist (LangChain4j's hallucinatedToolNameStrategy).
func ExampleExecutor_unknownAnswer() {
	set, _ := tool.NewSet(tool.Func("weather", "", func(ctx context.Context, in struct{}) (int, error) { return 21, nil }))
	exec := tool.Executor{Tools: set, UnknownAnswer: func(name string, tools *tool.Set) string {
		return "There is no " + name + ". Use only: " + tools.Names() + "."
	}}
	out, _ := exec.Run(context.Background(), []llm.ToolCall{{ID: "1", Name: "forecast"}}, nil)
	fmt.Println(out[0].Content, out[0].IsError)
	// Output:
	// There is no forecast. Use only: weather. true
}
