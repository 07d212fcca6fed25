package memory_test

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

func ExampleNewInMemory() {
	ctx := context.Background()
	s := memory.NewInMemory()
	key := memory.Key{Tenant: "acme", Agent: "support", Session: "s-1"}
	_, _ = s.Append(ctx, key,
		memory.Record{Message: llm.SystemMessage("You are terse."), Tokens: 8},
		memory.Record{ID: "u-1", Message: llm.UserMessage("Hi"), Tokens: 5},
		memory.Record{Message: llm.AssistantMessage("Hello."), Tokens: 6},
	)
	// A retried append with the same client id adds nothing.
	again, _ := s.Append(ctx, key, memory.Record{ID: "u-1", Message: llm.UserMessage("Hi"), Tokens: 5})
	fmt.Println("retry got seq", again[0].Seq)

	recs, _ := s.Load(ctx, key, memory.Window{MaxMessages: 1})
	for _, r := range recs {
		fmt.Println(r.Seq, r.Message.Role, r.Message.Text())
	}
	// Output:
	// retry got seq 1
	// 0 system You are terse.
	// 2 assistant Hello.
}
