package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

func Example() {
	// A platform server in the process, over embedded stores, whose model
	// is scripted. A real program would point the client at `weft serve`.
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "weft-example")
	defer os.RemoveAll(dir)
	store, _ := meta.OpenSQLite(ctx, filepath.Join(dir, "meta.db"))
	defer store.Close()
	adminKey, _ := platform.Bootstrap(ctx, store, "")
	srv, _ := platform.New(platform.Config{
		Meta: store, Sessions: memory.NewInMemory(),
		OpenModel: func(spec string) (*llm.Model, error) {
			return llm.New(scripted.New(scripted.Reply("Hello! How can I help?")), llm.WithName(spec)), nil
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	c := client.New(hs.URL, adminKey)
	agent, created, err := c.ApplyAgent(ctx, client.Agent{Name: "greeter", SystemPrompt: "Greet warmly."})
	if err != nil {
		fmt.Println("apply:", err)
		return
	}
	fmt.Println("created:", created, agent.Name)

	var session string
	for ev, err := range c.ChatStream(ctx, agent.ID, client.ChatRequest{Query: "Hi"}) {
		if err != nil {
			fmt.Println("chat:", err)
			return
		}
		switch ev.Type {
		case client.EventCreated:
			session = ev.SessionID
		case client.EventMessageDelta:
			fmt.Print(ev.Text)
		case client.EventCompleted:
			fmt.Println()
		}
	}
	msgs, _ := c.Messages(ctx, session)
	for _, m := range msgs {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	// Output:
	// created: true greeter
	// Hello! How can I help?
	// user: Hi
	// assistant: Hello! How can I help?
}
