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

// A window per ID, chosen by a function of the ID (LangChain4j's
// dynamicMaxMessages): premium users keep a longer history in the same
// store.
func ExamplePerID() {
	premium := map[string]bool{"alice": true}
	chats := memory.PerID(func(id string) memory.Window {
		if premium[id] {
			return memory.Window{MaxMessages: 3}
		}
		return memory.Window{MaxMessages: 1}
	})
	ctx := context.Background()
	for _, id := range []string{"alice", "bob"} {
		_ = chats.Chat(id).Add(ctx, llm.UserMessage("Hi"), llm.AssistantMessage("Hello!"), llm.UserMessage("How are you?"))
		msgs, _ := chats.Chat(id).Messages(ctx, nil)
		fmt.Println(id, len(msgs))
	}
	// Output:
	// alice 3
	// bob 1
}
