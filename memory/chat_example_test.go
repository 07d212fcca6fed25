package memory_test

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

func ExampleMessageWindow() {
	chats := memory.MessageWindow(2) // an in-process store by default
	chat := chats.Chat("alice")
	ctx := context.Background()
	_ = chat.Add(ctx, llm.SystemMessage("Be brief."), llm.UserMessage("Hi"), llm.AssistantMessage("Hello!"))
	_ = chat.Add(ctx, llm.UserMessage("How are you?"))

	msgs, _ := chat.Messages(ctx, nil)
	for _, m := range msgs {
		fmt.Println(m.Role, m.Text())
	}
	// Output:
	// system Be brief.
	// assistant Hello!
	// user How are you?
}
