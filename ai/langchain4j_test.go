package ai_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/tool"
)

// The features LangChain4j users reach for (docs/langchain4j.md), each
// through the typed layer.

// TestToolMemoryID: a tool reads the call's memory ID (and the end user
// the caller put on the context) from its context; the model's arguments
// cannot change it. Without memory it is "", with a single memory its key.
func TestToolMemoryID(t *testing.T) {
	t.Parallel()
	type Args struct {
		MemoryID string `json:"memory_id,omitempty"`
	}
	var mu sync.Mutex
	var seen []string
	whoami := tool.Func("whoami", "Who the user is.", func(ctx context.Context, _ Args) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, tool.MemoryID(ctx)+"/"+tool.User(ctx))
		return "ok", nil
	})
	newModel := func() *scripted.Model {
		return scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("whoami", `{"memory_id":"bob"}`))
	}

	type Chat struct {
		ID  ai.MemoryID
		Msg string
	}
	perID, err := ai.Func[Chat, string](newModel(), ai.Tools(whoami), ai.MemoryPerID(memory.MessageWindow(10)), ai.User("{{.Msg}}"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := perID(ctx, Chat{ID: "alice", Msg: "who am I?"}); err != nil {
		t.Fatal(err)
	}
	if _, err := perID(tool.WithUser(ctx, "alice@example.com"), Chat{ID: "alice", Msg: "who am I?"}); err != nil {
		t.Fatal(err)
	}
	one := memory.NewChat(memory.NewInMemory(), memory.Key{Session: "the-one"}, memory.Window{MaxMessages: 10})
	single, err := ai.Func[string, string](newModel(), ai.Tools(whoami), ai.Memory(one))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := single(ctx, "who am I?"); err != nil {
		t.Fatal(err)
	}
	none, err := ai.Func[string, string](newModel(), ai.Tools(whoami))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := none(ctx, "who am I?"); err != nil {
		t.Fatal(err)
	}
	// Streamed: the tools run under the forwarding context too.
	stream, err := ai.StreamFunc[Chat](newModel(), ai.Tools(whoami), ai.MemoryPerID(memory.MessageWindow(10)), ai.User("{{.Msg}}"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range stream(ctx, Chat{ID: "carol", Msg: "who am I?"}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"alice/", "alice/alice@example.com", "the-one/", "/", "carol/"}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("tools saw %q, want %q", seen, want)
	}
}

// TestUnknownToolAnswer: the answer to a call of a tool that does not exist
// is what the UnknownToolAnswer function says, given the name and the
// tools.
func TestUnknownToolAnswer(t *testing.T) {
	t.Parallel()
	m := scripted.New(steps(calls(call("1", "forecast", CityArgs{"Oslo"})), text("done")))
	answer := func(name string, tools *tool.Set) string {
		return "No " + name + "; ask with " + tools.Names() + "."
	}
	f, err := ai.Func[string, ai.Result[string]](m, ai.Tools(weatherTool()), ai.UnknownToolAnswer(answer))
	if err != nil {
		t.Fatal(err)
	}
	res, err := f(context.Background(), "forecast?")
	if err != nil {
		t.Fatal(err)
	}
	msgs := m.Requests()[1].Messages
	got := msgs[len(msgs)-1]
	if got.Role != llm.RoleTool || got.Text() != "No forecast; ask with weather." || !got.IsError || res.ToolExecutions[0].Content != got.Text() {
		t.Errorf("tool result %q (error %v)", got.Text(), got.IsError)
	}
}

// TestWindowPerID: memory.PerID gives each memory ID the window a function
// of the ID chooses; the model sees a premium user's longer history.
func TestWindowPerID(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Echo())
	type Chat struct {
		ID  ai.MemoryID
		Msg string
	}
	chats := memory.PerID(func(id string) memory.Window {
		if strings.HasPrefix(id, "premium-") {
			return memory.Window{MaxMessages: 6}
		}
		return memory.Window{MaxMessages: 2}
	})
	f, err := ai.Func[Chat, string](m, ai.MemoryPerID(chats), ai.User("{{.Msg}}"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []ai.MemoryID{"premium-ada", "basic-bob"} {
		for _, msg := range []string{"one", "two", "three"} {
			if _, err := f(ctx, Chat{ID: id, Msg: msg}); err != nil {
				t.Fatal(err)
			}
		}
	}
	reqs := m.Requests()
	premium, basic := texts(reqs[2].Messages), texts(reqs[5].Messages)
	if len(premium) != 5 || len(basic) != 3 {
		t.Errorf("third turn sent\npremium %q\nbasic   %q\nwant 4 and 2 messages of history", premium, basic)
	}
}

// TestClock: ai.Clock pins the templates' date and time functions, in Func
// and in Bind; an Engine, which renders no template, refuses it.
func TestClock(t *testing.T) {
	t.Parallel()
	day := func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }
	m := scripted.New(scripted.Echo())
	f, err := ai.Func[string, string](m, ai.Clock(day), ai.System("Today is {{currentDate}}."), ai.User("{{currentDateTime}}: {{.}}"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f(context.Background(), "hi"); err != nil || got != "2026-03-04T05:06:07Z: hi" {
		t.Errorf("Func = %q, %v", got, err)
	}
	if sys := m.Requests()[0].Messages[0].Text(); sys != "Today is 2026-03-04." {
		t.Errorf("system message %q", sys)
	}
	var svc struct {
		When func(ctx context.Context, q string) (string, error) `user:"At {{currentTime}}: {{.}}"`
	}
	if err := ai.Bind(&svc, ai.Model(m), ai.Clock(day)); err != nil {
		t.Fatal(err)
	}
	if got, err := svc.When(context.Background(), "hi"); err != nil || got != "At 05:06:07: hi" {
		t.Errorf("Bind = %q, %v", got, err)
	}
	if _, err := ai.NewEngine(m, ai.Clock(day)); err == nil || !strings.Contains(err.Error(), "Clock") {
		t.Errorf("NewEngine(Clock) err = %v", err)
	}
	if _, err := ai.Func[string, string](m, ai.Clock(nil)); err == nil {
		t.Error("ai.Clock(nil) was accepted")
	}
}
