package ai_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
)

type Translate struct{ Text, Language string }

func TestFuncRendersTemplates(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Reply("Bonjour"))
	translate, err := ai.Func[Translate, string](m,
		ai.System("You translate into {{.Language}}."),
		ai.User("Translate: {{.Text}}"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := translate(context.Background(), Translate{Text: "Hello {{.Language}}", Language: "French"})
	if err != nil {
		t.Fatal(err)
	}
	if got != "Bonjour" {
		t.Errorf("got %q", got)
	}
	req := m.Requests()[0]
	want := []string{"system:You translate into French.", "user:Translate: Hello {{.Language}}"}
	if g := texts(req.Messages); !slices.Equal(g, want) {
		t.Errorf("messages = %q, want %q", g, want)
	}
}

func TestFuncStringArgumentIsMessage(t *testing.T) {
	t.Parallel()
	echo, err := ai.Func[string, string](scripted.New())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := echo(context.Background(), "hi {{.X}}"); err != nil || got != "hi {{.X}}" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestFuncValidation(t *testing.T) {
	t.Parallel()
	m := scripted.New()
	noStream := scripted.New(scripted.Capabilities(llm.Capabilities{}))
	type withID struct {
		ID  ai.MemoryID
		Msg string
	}
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"unknown field", func() error {
			_, err := ai.Func[Translate, string](m, ai.User("{{.Txt}}"))
			return err
		}, "names field Txt"},
		{"struct without user template", func() error {
			_, err := ai.Func[Translate, string](m)
			return err
		}, "add ai.User(template)"},
		{"memory id without memory", func() error {
			_, err := ai.Func[withID, string](m, ai.User("{{.Msg}}"))
			return err
		}, "no memory"},
		{"unsupported return", func() error {
			_, err := ai.Func[string, chan int](m)
			return err
		}, "cannot return chan int"},
		{"stream on non-streaming model", func() error {
			_, err := ai.StreamFunc[string](noStream)
			return err
		}, "no streaming support"},
		{"nil model", func() error {
			_, err := ai.Func[string, string](nil)
			return err
		}, "no model"},
		{"templates on engine", func() error {
			_, err := ai.NewEngine(m, ai.User("x"))
			return err
		}, "apply to Func and Bind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.err()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

type Sentiment string

func (Sentiment) EnumValues() []string { return []string{"positive", "neutral", "negative"} }

type Person struct {
	Name string `json:"name"`
	Age  int    `json:"age"`
}

func TestReturnTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	check := func(t *testing.T, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if !equal(got, want) {
			t.Errorf("got %#v, want %#v", got, want)
		}
	}
	t.Run("named string", func(t *testing.T) {
		type Answer string
		f, _ := ai.Func[string, Answer](scripted.New(scripted.Reply("hello")))
		v, err := f(ctx, "?")
		check(t, v, Answer("hello"), err)
	})
	t.Run("message", func(t *testing.T) {
		f, _ := ai.Func[string, llm.Message](scripted.New(scripted.Reply("hello")))
		v, err := f(ctx, "?")
		check(t, v.Text(), "hello", err)
	})
	t.Run("bool", func(t *testing.T) {
		f, _ := ai.Func[string, bool](scripted.New(scripted.Reply("**Yes.**")))
		v, err := f(ctx, "?")
		check(t, v, true, err)
	})
	t.Run("int", func(t *testing.T) {
		f, _ := ai.Func[string, int](scripted.New(scripted.Reply("The answer is 42.")))
		v, err := f(ctx, "?")
		check(t, v, 42, err)
	})
	t.Run("int8 overflow", func(t *testing.T) {
		f, _ := ai.Func[string, int8](scripted.New(scripted.Reply("300")), ai.ParseRetries(0))
		_, err := f(ctx, "?")
		var pe *ai.ParseError
		if !errors.As(err, &pe) || pe.Raw != "300" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("float", func(t *testing.T) {
		f, _ := ai.Func[string, float64](scripted.New(scripted.Reply("about -1.5e3 units")))
		v, err := f(ctx, "?")
		check(t, v, -1500.0, err)
	})
	t.Run("time", func(t *testing.T) {
		f, _ := ai.Func[string, time.Time](scripted.New(scripted.Reply("\"2026-03-04T05:06:07Z\"")))
		v, err := f(ctx, "?")
		check(t, v, time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), err)
	})
	t.Run("enum", func(t *testing.T) {
		f, _ := ai.Func[string, Sentiment](scripted.New(scripted.Reply("The sentiment is Positive.")))
		v, err := f(ctx, "?")
		check(t, v, Sentiment("positive"), err)
	})
	t.Run("struct with schema", func(t *testing.T) {
		m := scripted.New(scripted.Reply("```json\n{\"name\":\"Ada\",\"age\":36}\n```"))
		f, _ := ai.Func[string, Person](m)
		v, err := f(ctx, "who?")
		check(t, v, Person{"Ada", 36}, err)
		req := m.Requests()[0]
		if req.ResponseFormat == nil || req.ResponseFormat.Type != llm.FormatJSONSchema {
			t.Errorf("response format = %+v", req.ResponseFormat)
		}
		if got := req.Messages[len(req.Messages)-1].Text(); got != "who?" {
			t.Errorf("user text = %q, want no instructions", got)
		}
	})
	t.Run("slice with instructions", func(t *testing.T) {
		m := scripted.New(scripted.Capabilities(llm.Capabilities{}), scripted.Reply(`Sure! Here: [{"name":"A","age":1},{"name":"B","age":2}] Hope it helps.`))
		f, _ := ai.Func[string, []Person](m)
		v, err := f(ctx, "who?")
		check(t, v, []Person{{"A", 1}, {"B", 2}}, err)
		req := m.Requests()[0]
		if req.ResponseFormat != nil {
			t.Errorf("response format sent to a model without support")
		}
		if got := req.Messages[len(req.Messages)-1].Text(); !strings.HasPrefix(got, "who?\n\nAnswer with only a JSON value") {
			t.Errorf("user text = %q", got)
		}
	})
	t.Run("wrapped slice", func(t *testing.T) {
		f, _ := ai.Func[string, []int](scripted.New(scripted.Reply(`{"value":[1,2,3]}`)))
		v, err := f(ctx, "?")
		check(t, v, []int{1, 2, 3}, err)
	})
	t.Run("message", func(t *testing.T) {
		f, _ := ai.Func[string, llm.Message](scripted.New(scripted.Reply("hi")))
		v, err := f(ctx, "?")
		check(t, v.Text(), "hi", err)
	})
	t.Run("result", func(t *testing.T) {
		f, _ := ai.Func[string, ai.Result[Person]](scripted.New(respond(func(*llm.Request) *llm.Response { return text(`{"name":"Ada","age":36}`) })))
		v, err := f(ctx, "?")
		check(t, v.Value, Person{"Ada", 36}, err)
		if v.Usage.TotalTokens != 15 || v.Text == "" || v.FinishReason != llm.FinishStop {
			t.Errorf("outcome = %+v", v.Outcome)
		}
	})
}

func equal(a, b any) bool {
	switch a := a.(type) {
	case []Person:
		return slices.Equal(a, b.([]Person))
	case []int:
		return slices.Equal(a, b.([]int))
	case time.Time:
		return a.Equal(b.(time.Time))
	}
	return a == b
}

func TestParseRetry(t *testing.T) {
	t.Parallel()
	m := scripted.New(steps(text("not json"), text(`{"name":"Ada","age":36}`)))
	f, _ := ai.Func[string, Person](m)
	v, err := f(context.Background(), "who?")
	if err != nil || v.Name != "Ada" {
		t.Fatalf("got %+v, %v", v, err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1].Text()
	if !strings.Contains(last, "could not be used: no JSON value found") {
		t.Errorf("re-prompt = %q", last)
	}

	m2 := scripted.New(scripted.Reply("still not json"))
	f2, _ := ai.Func[string, Person](m2, ai.ParseRetries(2))
	_, err = f2(context.Background(), "who?")
	var pe *ai.ParseError
	if !errors.As(err, &pe) || pe.Raw != "still not json" || pe.Type != "ai_test.Person" {
		t.Fatalf("err = %#v", err)
	}
	if n := len(m2.Requests()); n != 3 {
		t.Errorf("%d requests, want 3 (1 + 2 retries)", n)
	}
}

func TestFuncStructRoles(t *testing.T) {
	t.Parallel()
	type Ask struct {
		Question string
		Who      ai.UserName
		Pic      llm.Image
		More     []llm.Image
		Opt      *llm.Image
		P        *ai.Params
		ID       ai.MemoryID
	}
	m := scripted.New(scripted.Reply("ok"))
	chats := memory.MessageWindow(10)
	f, err := ai.Func[Ask, string](m, ai.User("Q: {{.Question}} from {{.Who}}"), ai.MemoryPerID(chats))
	if err != nil {
		t.Fatal(err)
	}
	in := Ask{Question: "what?", Who: "ada", Pic: llm.Image{URL: "u1"}, More: []llm.Image{{URL: "u2"}, {URL: "u3"}}, P: &ai.Params{Seed: llm.Ptr[int64](7)}, ID: "m1"}
	if _, err := f(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	req := m.Requests()[0]
	msg := req.Messages[0]
	var urls []string
	for _, p := range msg.Parts {
		if p.Image != nil {
			urls = append(urls, p.Image.URL)
		}
	}
	if msg.Text() != "Q: what? from ada" || msg.Name != "ada" || !slices.Equal(urls, []string{"u1", "u2", "u3"}) {
		t.Errorf("message = %q name %q images %q", msg.Text(), msg.Name, urls)
	}
	if req.Seed == nil || *req.Seed != 7 {
		t.Errorf("params not applied")
	}
	if ids := chats.IDs(); !slices.Equal(ids, []string{"m1"}) {
		t.Errorf("memory IDs = %q", ids)
	}
}
