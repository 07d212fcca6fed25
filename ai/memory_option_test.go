package ai_test

import (
	"context"
	"testing"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
)

// TestMemoryOption checks that ai.Memory gives every call one conversation:
// the second call sends the first exchange as history.
func TestMemoryOption(t *testing.T) {
	m := scripted.New(scripted.Echo())
	chat := memory.NewChat(memory.NewInMemory(), memory.Key{Session: "one"}, memory.Window{MaxMessages: 10})
	f, err := ai.Func[string, string](m, ai.User("{{.}}"), ai.Memory(chat))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{"first", "second"} {
		if _, err := f(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	var texts []string
	for _, msg := range reqs[1].Messages {
		texts = append(texts, msg.Text())
	}
	if len(texts) != 3 || texts[0] != "first" || texts[1] != "first" || texts[2] != "second" {
		t.Errorf("second call sent %q, want the first exchange then the new question", texts)
	}
	if _, err := ai.Func[string, string](m, ai.Memory(nil)); err == nil {
		t.Error("ai.Memory(nil) was accepted")
	}
}
