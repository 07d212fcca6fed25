// Command memory-sqlite keeps a conversation memory per user in a SQLite
// file: each call names its user with an ai.MemoryID field, the pipeline
// loads that user's last messages before the model call and stores the
// new ones after it, and the file keeps them across runs.
//
//	go run ./examples/memory-sqlite weft-memory.db
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/sqlstore"
	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/all"
)

// Turn is one user's message.
type Turn struct {
	User ai.MemoryID // whose memory to use
	Text string
}

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, args []string) error {
	path := "weft-memory.db"
	if len(args) > 0 {
		path = args[0]
	}
	store, err := sqlstore.OpenSQLite(ctx, path)
	if err != nil {
		return err
	}
	defer store.Close()
	model, err := provider.Open(cmp.Or(os.Getenv("WEFT_DEFAULT_MODEL"), "scripted/demo"))
	if err != nil {
		return err
	}
	// The last 20 messages of each user's conversation.
	chats := memory.MessageWindow(20, memory.WithStore(store))
	chat, err := ai.Func[Turn, string](model,
		ai.System("You are a friendly assistant."),
		ai.User("{{.Text}}"),
		ai.MemoryPerID(chats))
	if err != nil {
		return err
	}
	for _, t := range []Turn{
		{User: "alice", Text: "My name is Alice."},
		{User: "bob", Text: "My name is Bob."},
		{User: "alice", Text: "What is my name?"},
	} {
		answer, err := chat(ctx, t)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: %s\n  -> %s\n", t.User, t.Text, answer)
	}
	for _, user := range []string{"alice", "bob"} {
		msgs, err := chats.Chat(user).Messages(ctx, nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s's memory holds %d messages\n", user, len(msgs))
	}
	return nil
}
