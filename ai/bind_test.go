package ai_test

import (
	"context"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
)

type Assistant struct {
	Chat      func(ctx context.Context, id ai.MemoryID, msg string) (string, error)
	Sentiment func(ctx context.Context, text string) (Sentiment, error)                                         `system:"Classify the sentiment."`
	Describe  func(ctx context.Context, who ai.UserName, img llm.Image, p ai.Params) (ai.Result[string], error) `user:"Describe the image."`
	Look      func(ctx context.Context, img *llm.Image) (string, error)
	Translate func(ctx context.Context, in Translate) (string, error) `user:"Translate {{.Text}} into {{.Language}}"`
	Stream    func(ctx context.Context, msg string) iter.Seq2[string, error]
	Events    func(ctx context.Context, msg string) iter.Seq2[ai.Event, error]
	NotAFunc  int
}

func TestBind(t *testing.T) {
	t.Parallel()
	m := scripted.New(respond(func(req *llm.Request) *llm.Response {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case req.Messages[0].Text() == "Classify the sentiment.":
			return text("negative")
		case last.HasImages():
			return text("an image for " + last.Name)
		}
		return text("echo: " + last.Text())
	}))
	var a Assistant
	if err := ai.Bind(&a, ai.Model(m), ai.MemoryPerID(memory.MessageWindow(10))); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got, err := a.Chat(ctx, "u1", "hello"); err != nil || got != "echo: hello" {
		t.Errorf("Chat = %q, %v", got, err)
	}
	if got, err := a.Sentiment(ctx, "awful"); err != nil || got != "negative" {
		t.Errorf("Sentiment = %q, %v", got, err)
	}
	res, err := a.Describe(ctx, "ada", llm.Image{URL: "https://example.com/a.png"}, ai.Params{MaxTokens: 7})
	if err != nil || res.Value != "an image for ada" || res.Usage.TotalTokens == 0 {
		t.Errorf("Describe = %+v, %v", res, err)
	}
	if got, err := a.Look(ctx, &llm.Image{URL: "https://example.com/b.png"}); err != nil || got != "an image for " {
		t.Errorf("Look = %q, %v", got, err)
	}
	if got, err := a.Translate(ctx, Translate{"hi", "Welsh"}); err != nil || got != "echo: Translate hi into Welsh" {
		t.Errorf("Translate = %q, %v", got, err)
	}
	var streamed []string
	for s, err := range a.Stream(ctx, "one two") {
		if err != nil {
			t.Fatal(err)
		}
		streamed = append(streamed, s)
	}
	if strings.Join(streamed, "") != "echo: one two" || len(streamed) < 2 {
		t.Errorf("Stream = %q", streamed)
	}
	var kinds []string
	for ev, err := range a.Events(ctx, "x") {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind.String())
	}
	if kinds[len(kinds)-1] != "done" {
		t.Errorf("Events = %q", kinds)
	}
	reqs := m.Requests()
	if r := reqs[2]; r.MaxTokens != 7 {
		t.Errorf("per-call params not applied: %+v", r)
	}
	// Chat used memory u1: a second call sees the first exchange.
	if _, err := a.Chat(ctx, "u1", "again"); err != nil {
		t.Fatal(err)
	}
	last := m.Requests()[len(m.Requests())-1]
	if got := texts(last.Messages); !slices.Equal(got, []string{"user:hello", "assistant:echo: hello", "user:again"}) {
		t.Errorf("memory: %q", got)
	}
}

func TestBindValidation(t *testing.T) {
	t.Parallel()
	m := scripted.New()
	tests := []struct {
		name string
		svc  any
		opts []ai.Option
		want []string
	}{
		{"not a pointer", Assistant{}, []ai.Option{ai.Model(m)}, []string{"pointer to a struct"}},
		{"no model", &struct {
			F func(context.Context, string) (string, error)
		}{}, nil, []string{"no model"}},
		{"all problems at once", &struct {
			NoCtx    func(string) (string, error)
			TwoData  func(context.Context, string, int) (string, error)
			BadRet   func(context.Context, string) string
			MemID    func(context.Context, ai.MemoryID, string) (string, error)
			BadTmpl  func(context.Context, Translate) (string, error) `user:"{{.Nope}}"`
			Variadic func(context.Context, ...string) (string, error)
		}{}, []ai.Option{ai.Model(m)}, []string{
			"NoCtx: the first argument must be a context.Context",
			"TwoData: two data arguments",
			"BadRet: must return",
			"MemID: has a MemoryID argument but no memory",
			"BadTmpl: user template",
			"Variadic: variadic",
		}},
		{"stream without streaming", &struct {
			S func(context.Context, string) iter.Seq2[string, error]
		}{}, []ai.Option{ai.Model(scripted.New(scripted.Capabilities(llm.Capabilities{})))}, []string{"no streaming support"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ai.Bind(tt.svc, tt.opts...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}
