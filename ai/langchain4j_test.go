package ai_test

import (
	"context"
	"testing"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
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
