// Command serve-client talks to a running `weft serve` with the Go client
// (package platform/client): it declares an agent, streams a chat with it
// and reads the session back.
//
//	go run ./cmd/weft serve &
//	WEFT_KEY=$(cat weft-data/admin.key) go run ./examples/serve-client "Hello there"
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/weftlabs/weft/platform/client"
)

func main() {
	key := os.Getenv("WEFT_KEY")
	if key == "" {
		b, err := os.ReadFile("weft-data/admin.key")
		if err != nil {
			log.Fatal("set WEFT_KEY to an API key of the server (the first start writes one to weft-data/admin.key)")
		}
		key = strings.TrimSpace(string(b))
	}
	url := cmp.Or(os.Getenv("WEFT_URL"), "http://localhost:8080")
	if err := run(context.Background(), os.Stdout, url, key, strings.Join(os.Args[1:], " ")); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, url, key, query string) error {
	c := client.New(url, key)
	// ApplyAgent creates the agent or updates it in place: running the
	// program twice is safe.
	agent, _, err := c.ApplyAgent(ctx, client.Agent{Name: "example-helper", SystemPrompt: "You are helpful and brief."})
	if err != nil {
		return fmt.Errorf("declare agent: %w", err)
	}
	query = cmp.Or(query, "Hello there")
	var session string
	for ev, err := range c.ChatStream(ctx, agent.ID, client.ChatRequest{Query: query}) {
		if err != nil {
			return fmt.Errorf("chat: %w", err)
		}
		switch ev.Type {
		case client.EventCreated:
			session = ev.SessionID
		case client.EventMessageDelta:
			fmt.Fprint(w, ev.Text)
		case client.EventCompleted:
			fmt.Fprintln(w)
		}
	}
	msgs, err := c.Messages(ctx, session)
	if err != nil {
		return fmt.Errorf("read session: %w", err)
	}
	fmt.Fprintf(w, "session %s holds %d messages\n", session, len(msgs))
	return nil
}
