package llm_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
)

func ExampleNew() {
	// Any driver works; scripted is the offline one.
	model := llm.New(scripted.New(scripted.Reply("Bonjour !")),
		llm.WithRetries(3),
		llm.WithTimeout(30*time.Second),
	)
	resp, err := model.Generate(context.Background(), &llm.Request{
		Messages: []llm.Message{
			llm.SystemMessage("Translate into French."),
			llm.UserMessage("Hello!"),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Text(), resp.FinishReason)
	// Output: Bonjour ! stop
}

func ExampleModel_Stream() {
	model := llm.New(scripted.New(scripted.Reply("Tokens arrive as they are made.")))
	req := &llm.Request{Messages: []llm.Message{llm.UserMessage("Stream, please.")}}
	for chunk, err := range model.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println("\nerror:", err)
			return
		}
		switch chunk.Type {
		case llm.ChunkText:
			fmt.Print(chunk.Text)
		case llm.ChunkFinish:
			fmt.Println("\nfinished:", chunk.FinishReason)
		}
	}
	// Output:
	// Tokens arrive as they are made.
	// finished: stop
}

func ExampleWithFallbacks() {
	primary := scripted.New(scripted.Fail(&llm.Error{Kind: llm.ErrUnavailable, Provider: "primary", StatusCode: 503}))
	backup := scripted.New(scripted.Reply("answered by the backup"))
	model := llm.New(primary,
		llm.WithRetries(0),
		llm.WithFallbacks(llm.New(backup)),
		llm.WithHook(func(_ context.Context, e llm.Event) {
			if e.Kind == llm.EventFallback {
				fmt.Println("falling back after:", e.Err)
			}
		}),
	)
	resp, _ := model.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}})
	fmt.Println(resp.Text())
	// Output:
	// falling back after: primary: provider unavailable (HTTP 503)
	// answered by the backup
}

func ExampleError() {
	model := llm.New(scripted.New(scripted.Fail(&llm.Error{
		Kind: llm.ErrAuthentication, Provider: "openai", StatusCode: 401, Message: "Incorrect API key provided",
	})))
	_, err := model.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}})

	var e *llm.Error
	switch {
	case errors.Is(err, llm.ErrAuthentication) && errors.As(err, &e):
		fmt.Printf("check the %s API key (HTTP %d)\n", e.Provider, e.StatusCode)
	case errors.Is(err, llm.ErrRateLimited):
		fmt.Println("slow down")
	}
	fmt.Println(llm.IsRetryable(err))
	// Output:
	// check the openai API key (HTTP 401)
	// false
}

func ExampleCollect() {
	model := llm.New(scripted.New(scripted.CallTool("get_weather", `{"city":"Oslo"}`)))
	resp, err := llm.Collect(model.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("Weather in Oslo?")}}))
	if err != nil {
		fmt.Println(err)
		return
	}
	call := resp.Message.ToolCalls[0]
	fmt.Println(resp.FinishReason, call.Name, call.Arguments)
	// Output: tool_calls get_weather {"city":"Oslo"}
}
