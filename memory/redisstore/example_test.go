package redisstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/redisstore"
)

// The example needs a Redis server, so it is compiled but not run.
func ExampleOpen() {
	s, err := redisstore.Open("redis://127.0.0.1:6379/0", redisstore.WithTTL(24*time.Hour))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()
	key := memory.Key{Tenant: "acme", Agent: "support", Session: "s-1"}

	// One turn at a time per conversation, across replicas.
	release, err := s.Lock(ctx, key, memory.Lease{Owner: "replica-1"})
	if err != nil {
		fmt.Println(err) // matches memory.ErrLockTimeout when ctx ends first
		return
	}
	defer release()

	// A 128k-token model: 4000 tokens kept for the reply, 1200 for the
	// system prompt and the query.
	history, err := memory.Window{MaxTokens: 128000, Reserve: 4000 + 1200}.Load(ctx, s, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(history), "records of history fit")
	_, err = s.Append(ctx, key,
		memory.Record{ID: "client-msg-17", Message: llm.UserMessage("Where is my order?"), Tokens: 12},
		memory.Record{Message: llm.AssistantMessage("It ships today."), Tokens: 9},
	)
	if err != nil {
		fmt.Println(err)
	}
}
