package ai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/tool"
)

func ExampleFunc() {
	// A scripted model stands in for a real one (provider.Open("openai/gpt-4o-mini")).
	model := scripted.New(scripted.Reply("Bonjour"))

	type Translate struct{ Text, Language string }
	translate, err := ai.Func[Translate, string](model,
		ai.System("You are a professional translator into {{.Language}}."),
		ai.User("Translate the following text: {{.Text}}"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fr, err := translate(context.Background(), Translate{Text: "Hello", Language: "French"})
	fmt.Println(fr, err)
	fmt.Println(model.Requests()[0].Messages[1].Text())
	// Output:
	// Bonjour <nil>
	// Translate the following text: Hello
}

func ExampleFunc_structuredOutput() {
	model := scripted.New(scripted.Reply("```json\n{\"name\": \"Ada Lovelace\", \"born\": 1815}\n```"))

	type Person struct {
		Name string `json:"name" description:"full name"`
		Born int    `json:"born" description:"year of birth"`
	}
	extract, err := ai.Func[string, ai.Result[Person]](model)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := extract(context.Background(), "Ada Lovelace, born 1815, wrote the first program.")
	fmt.Printf("%+v %v\n", res.Value, err)
	fmt.Println(model.Requests()[0].ResponseFormat.Type, res.Usage.TotalTokens > 0)
	// Output:
	// {Name:Ada Lovelace Born:1815} <nil>
	// json_schema true
}

func ExampleFunc_tools() {
	type City struct {
		Name string `json:"name" description:"the city's name"`
	}
	weather := tool.Func("weather", "Current temperature of a city in °C.",
		func(ctx context.Context, c City) (int, error) { return 21, nil })

	// The model calls the tool, then answers with what it learned.
	model := scripted.New(scripted.Sequence(
		scripted.CallTool("weather", `{"name":"Paris"}`),
		scripted.SummarizeToolResults(),
	))
	ask, err := ai.Func[string, ai.Result[string]](model, ai.Tools(weather))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := ask(context.Background(), "How warm is it in Paris?")
	if err != nil {
		fmt.Println(err)
		return
	}
	x := res.ToolExecutions[0]
	fmt.Println(x.Call.Name, x.Call.Arguments, "->", x.Content)
	// Output:
	// weather {"name":"Paris"} -> 21
}

func ExampleStreamFunc() {
	model := scripted.New(scripted.Reply("Once upon a time"))
	story, err := ai.StreamFunc[string](model)
	if err != nil {
		fmt.Println(err)
		return
	}
	for piece, err := range story(context.Background(), "Tell me a story") {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("[%s]", piece)
	}
	fmt.Println()
	// Output: [Once][ upon][ a][ time]
}

func ExampleBind() {
	type Assistant struct {
		Chat   func(ctx context.Context, id ai.MemoryID, msg string) (string, error)
		IsSpam func(ctx context.Context, text string) (bool, error) `system:"Is this message spam?"`
		Stream func(ctx context.Context, msg string) iter.Seq2[string, error]
	}
	model := scripted.New(
		scripted.WhenUserSays(regexpMust("WIN"), scripted.Reply("true")),
		scripted.Echo(),
	)
	var a Assistant
	if err := ai.Bind(&a, ai.Model(model), ai.MemoryPerID(memory.MessageWindow(20))); err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	spam, _ := a.IsSpam(ctx, "WIN A PRIZE")
	reply, _ := a.Chat(ctx, "user-1", "hello")
	fmt.Println(spam, reply)
	// Output: true hello
}

func ExampleMemoryPerID() {
	model := scripted.New(scripted.Echo())
	type Chat struct {
		ID  ai.MemoryID
		Msg string
	}
	chats := memory.MessageWindow(20)
	chat, err := ai.Func[Chat, string](model, ai.MemoryPerID(chats), ai.User("{{.Msg}}"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	_, _ = chat(ctx, Chat{ID: "alice", Msg: "My name is Alice."})
	_, _ = chat(ctx, Chat{ID: "bob", Msg: "I am Bob."})
	_, _ = chat(ctx, Chat{ID: "alice", Msg: "What is my name?"})

	// The third call saw Alice's first exchange, not Bob's.
	for _, m := range model.Requests()[2].Messages {
		fmt.Println(m.Role, m.Text())
	}
	fmt.Println(chats.IDs())
	// Output:
	// user My name is Alice.
	// assistant My name is Alice.
	// user What is my name?
	// [alice bob]
}

func ExampleEngine_Run() {
	// What a server does for one chat turn: history it loaded itself, a
	// system prompt, and events to forward to its client.
	model := scripted.New(scripted.Reply("Hi there"))
	eng, err := ai.NewEngine(model, ai.MaxToolRounds(5))
	if err != nil {
		fmt.Println(err)
		return
	}
	turn := ai.Turn{
		System:  "You are helpful.",
		History: []llm.Message{llm.UserMessage("Hello"), llm.AssistantMessage("Hello!")},
		Message: llm.UserMessage("How are you?"),
	}
	for ev, err := range eng.Run(context.Background(), turn) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev.Kind {
		case ai.EventText:
			fmt.Printf("text %q\n", ev.Text)
		case ai.EventDone:
			fmt.Println("persist", len(ev.Outcome.Messages), "messages")
		}
	}
	// Output:
	// text "Hi"
	// text " there"
	// persist 2 messages
}

// A tool learns the conversation it runs for from its context (LangChain4j's
// @ToolMemoryId): here a cart per user, whatever the model puts in the
// arguments.
func ExampleFunc_toolMemoryID() {
	carts := map[string][]string{}
	type Item struct {
		Name string `json:"name"`
	}
	addToCart := tool.Func("add_to_cart", "Adds an item to the user's cart.",
		func(ctx context.Context, it Item) (string, error) {
			id := tool.MemoryID(ctx)
			carts[id] = append(carts[id], it.Name)
			return fmt.Sprintf("%d items in the cart", len(carts[id])), nil
		})
	model := scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("add_to_cart", `{"name":"tea"}`))
	type Chat struct {
		ID  ai.MemoryID
		Msg string
	}
	shop, err := ai.Func[Chat, string](model, ai.Tools(addToCart),
		ai.MemoryPerID(memory.MessageWindow(20)), ai.User("{{.Msg}}"))
	if err != nil {
		fmt.Println(err)
		return
	}
	answer, err := shop(context.Background(), Chat{ID: "user-42", Msg: "Add tea to my cart."})
	fmt.Println(answer, err)
	fmt.Println(carts)
	// Output:
	// add_to_cart returned: 1 items in the cart <nil>
	// map[user-42:[tea]]
}

// UnknownToolAnswer replaces what the model is told when it calls a tool
// that does not exist (LangChain4j's hallucinatedToolNameStrategy).
func ExampleUnknownToolAnswer() {
	weather := tool.Func("weather", "Current temperature of a city in °C.",
		func(ctx context.Context, in struct{}) (int, error) { return 21, nil })
	model := scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("forecast", `{}`))
	ask, err := ai.Func[string, string](model, ai.Tools(weather),
		ai.UnknownToolAnswer(func(name string, tools *tool.Set) string {
			return name + " is not a tool; use " + tools.Names() + "."
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	answer, err := ask(context.Background(), "Tomorrow's weather?")
	fmt.Println(answer, err)
	// Output: forecast failed: forecast is not a tool; use weather. <nil>
}

// Clock pins the date the templates see, so that a test of a function whose
// prompt names the date gets the same prompt every day.
func ExampleClock() {
	model := scripted.New(scripted.Echo())
	today := func() time.Time { return time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC) }
	ask, err := ai.Func[string, string](model, ai.Clock(today),
		ai.User("Today is {{currentDate}}. {{.}}"))
	if err != nil {
		fmt.Println(err)
		return
	}
	answer, err := ask(context.Background(), "What day is it?")
	fmt.Println(answer, err)
	// Output: Today is 2026-03-04. What day is it? <nil>
}

func ExampleApproval() {
	type Transfer struct {
		To     string `json:"to"`
		Amount int    `json:"amount"`
	}
	transfer := tool.Func("transfer", "Send money.", func(ctx context.Context, t Transfer) (string, error) {
		return fmt.Sprintf("sent %d to %s", t.Amount, t.To), nil
	})
	model := scripted.New(scripted.Sequence(
		scripted.CallTool("transfer", `{"to":"bob","amount":500}`),
		scripted.SummarizeToolResults(),
	))
	// Transfers above 100 wait for a person.
	pay, err := ai.Func[string, string](model, ai.Tools(transfer),
		ai.Approval(tool.Approvals{"transfer": tool.When(func(t Transfer) bool { return t.Amount > 100 })}))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	_, err = pay(ctx, "Send bob 500 euros.")
	var ie *ai.InterruptError
	if !errors.As(err, &ie) {
		fmt.Println(err)
		return
	}
	call := ie.Interrupt.Calls[0]
	fmt.Println("waiting:", call.Name, call.Arguments)

	// The person lowers the amount; the same call resumes the turn.
	answer, err := pay(ai.Resume(ctx, ie, ai.Edit(call.ID, json.RawMessage(`{"to":"bob","amount":300}`))), "Send bob 500 euros.")
	fmt.Println(answer, err)
	// Output:
	// waiting: transfer {"to":"bob","amount":500}
	// transfer returned: [The call ran with arguments a person edited: {"to":"bob","amount":300}]
	// sent 300 to bob <nil>
}
