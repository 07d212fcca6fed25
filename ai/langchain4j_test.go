package ai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/tool"
)

// The features LangChain4j users reach for (docs/langchain4j.md), each
// through the typed layer.

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
