package scripted_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
)

type Person struct {
	Name    string   `json:"name"`
	Age     int      `json:"age"`
	City    string   `json:"city,omitempty"`
	Tags    []string `json:"tags"`
	Adult   bool     `json:"adult"`
	Address struct {
		Street string `json:"street"`
	} `json:"address"`
}

type Sentiment string

func (Sentiment) EnumValues() []string { return []string{"positive", "neutral", "negative"} }

// TestDemoAnswersStructuredOutput: the offline demo model answers typed
// calls, with and without a JSON Schema response format.
func TestDemoAnswersStructuredOutput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, m := range map[string]*scripted.Model{
		"response format": scripted.Demo(),
		"instructions":    scripted.Demo(scripted.Capabilities(llm.Capabilities{Streaming: true, Tools: true})),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			person, err := ai.Func[string, Person](m, ai.ParseRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			p, err := person(ctx, "Alice Smith is 30 years old, city: Paris. Yes, an adult.")
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != "Alice Smith" || p.Age != 30 || p.City != "Paris" || len(p.Tags) != 1 || !p.Adult {
				t.Errorf("person = %+v", p)
			}
			check(t, m, "how many? 42 of them", 42)
			check(t, m, "is it? no", false)
			check(t, m, "is it? yes", true)
			check(t, m, "pi is 3.14", 3.14)
			check(t, m, "this is negative", Sentiment("negative"))
			check(t, m, "due 2026-05-01", time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
			check(t, m, "list 1 and 2", []int{1})
			check(t, m, "a map", map[string]int{})
		})
	}
}

func check[T any](t *testing.T, m *scripted.Model, in string, want T) {
	t.Helper()
	f, err := ai.Func[string, T](m, ai.ParseRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f(context.Background(), in)
	if err != nil {
		t.Errorf("%T from %q: %v", want, in, err)
		return
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%T from %q = %s, want %s", want, in, g, w)
	}
}

// FuzzAnswerSchema: a schema from a user's message (the instructions path)
// yields a bounded answer and never a panic.
func FuzzAnswerSchema(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"array","minItems":1000000000,"items":{"type":"array","minItems":1000,"items":{"type":"string"}}}}}`, "text 1 2")
	f.Add(`{"type":["null","integer"]}`, "x")
	f.Add(`{"enum":[]}`, "")
	m := scripted.Demo()
	f.Fuzz(func(t *testing.T, schema, text string) {
		req := &llm.Request{Messages: []llm.Message{llm.UserMessage(text + "\n\nAnswer with only a JSON value that matches this JSON Schema, without any other text:\n" + schema)}}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			return
		}
		if n := len(resp.Message.Text()); n > 1<<20+len(text)*4096 {
			t.Errorf("answer of %d bytes", n)
		}
	})
}
