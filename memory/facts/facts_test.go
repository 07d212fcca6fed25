package facts_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tokens"
	"github.com/weftlabs/weft/tool"
)

// embedder embeds with scripted's bags of words: texts that share words
// are near.
var embedder = rag.EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = scripted.Vector(t, 256)
	}
	return out, nil
})

var factLine = regexp.MustCompile(`(?m)^\[(\d+)\] (.*)$`)

// extractor is an extraction model with rules of thumb: it reads the
// numbered facts and the user's messages of its request and answers as a
// model would, in the extractor's JSON.
func extractor() *scripted.Model {
	return scripted.New(scripted.Rule{Respond: func(req *llm.Request) (*llm.Response, error) {
		in := req.Messages[1].Text()
		kept := map[string]string{} // text → id
		for _, m := range factLine.FindAllStringSubmatch(in, -1) {
			kept[m[2]] = m[1]
		}
		_, said, _ := strings.Cut(in, "\nMessages:\n")
		type op struct {
			Op   string `json:"op"`
			ID   string `json:"id"`
			Text string `json:"text"`
		}
		ops := []op{}
		switch {
		case strings.Contains(said, "moved to Berlin") && kept["Lives in Paris."] != "":
			ops = append(ops, op{"update", kept["Lives in Paris."], "Lives in Berlin."})
		case strings.Contains(said, "live in Paris"):
			ops = append(ops, op{"add", "", "Lives in Paris."})
		case strings.Contains(said, "live in Berlin"):
			ops = append(ops, op{"add", "", "lives in Berlin"}) // kept already, in other words
		case strings.Contains(said, "dog named Rex"):
			ops = append(ops, op{"add", "", "Has a dog named Rex."}, op{"none", kept["Lives in Paris."], ""})
		case strings.Contains(said, "forget my dog"):
			ops = append(ops, op{"delete", kept["Has a dog named Rex."], ""})
		case strings.Contains(said, "nonsense"):
			ops = append(ops, op{"update", "99", "Is someone else."}, op{"delete", "x", ""}, op{"add", "", strings.Repeat("long ", 300)}, op{"forget", "1", ""})
		}
		b, _ := json.Marshal(map[string]any{"operations": ops})
		return &llm.Response{Message: llm.AssistantMessage("```json\n" + string(b) + "\n```")}, nil
	}})
}

func texts(fs []facts.Fact) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Text
	}
	slices.Sort(out)
	return out
}

// TestLearn learns from four turns: facts are added, updated rather than
// appended ("moved to Berlin" replaces "lives in Paris"), not kept twice,
// and deleted; decisions that name no fact shown, or are invalid, change
// nothing.
func TestLearn(t *testing.T) {
	t.Parallel()
	model := extractor()
	m := facts.New(facts.NewInMemory(), embedder, facts.WithExtractor(facts.NewExtractor(model)))
	ctx := t.Context()
	ada := facts.Scope{Tenant: "t", User: "ada"}
	src := facts.Source{Kind: facts.SourceExtraction, Agent: "helper", Session: "s1", Message: "turn-1"}
	learn := func(said string) facts.Changes {
		t.Helper()
		ch, err := m.Learn(ctx, ada, []llm.Message{llm.SystemMessage("Be brief."), llm.UserMessage(said), llm.AssistantMessage("Noted.")}, src)
		if err != nil {
			t.Fatalf("Learn(%q): %v", said, err)
		}
		return ch
	}
	list := func() []facts.Fact {
		t.Helper()
		fs, err := m.Store().List(ctx, ada)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}

	ch := learn("I live in Paris.")
	if len(ch.Added) != 1 || ch.Added[0].Text != "Lives in Paris." || ch.Added[0].Source != src || ch.Added[0].Scope != ada {
		t.Fatalf("first turn's changes = %+v", ch)
	}
	paris := ch.Added[0]
	learn("I have a dog named Rex.")
	if got := texts(list()); !slices.Equal(got, []string{"Has a dog named Rex.", "Lives in Paris."}) {
		t.Fatalf("facts after two turns = %q", got)
	}

	ch = learn("I moved to Berlin last month.")
	if len(ch.Added) != 0 || len(ch.Updated) != 1 || ch.Updated[0].ID != paris.ID || ch.Updated[0].Text != "Lives in Berlin." {
		t.Fatalf("the move's changes = %+v, want Lives in Paris updated", ch)
	}
	if !ch.Updated[0].CreatedAt.Equal(paris.CreatedAt) || !ch.Updated[0].UpdatedAt.After(paris.UpdatedAt.Add(-1)) {
		t.Fatalf("the updated fact's times: %+v", ch.Updated[0])
	}
	if got := texts(list()); !slices.Equal(got, []string{"Has a dog named Rex.", "Lives in Berlin."}) {
		t.Fatalf("facts after the move = %q: Berlin replaces Paris", got)
	}

	// The same fact in other words is not kept twice.
	if ch := learn("I live in Berlin, as I said."); len(ch.Added)+len(ch.Updated)+len(ch.Deleted) != 0 {
		t.Fatalf("a fact kept already changed %+v", ch)
	}
	// Decisions naming facts the model was not shown, or invalid, are dropped.
	if ch := learn("nonsense"); len(ch.Added)+len(ch.Updated)+len(ch.Deleted) != 0 {
		t.Fatalf("invalid decisions changed %+v", ch)
	}
	ch = learn("Please forget my dog.")
	if len(ch.Deleted) != 1 || ch.Deleted[0].Text != "Has a dog named Rex." {
		t.Fatalf("forgetting's changes = %+v", ch)
	}
	if got := texts(list()); !slices.Equal(got, []string{"Lives in Berlin."}) {
		t.Fatalf("facts at the end = %q", got)
	}

	// The model was sent the answer's schema (it declares JSON Schema
	// support), the kept facts numbered, and no system message.
	reqs := model.Requests()
	last := reqs[len(reqs)-1]
	if last.ResponseFormat == nil || last.ResponseFormat.Type != llm.FormatJSONSchema {
		t.Fatalf("response format %+v", last.ResponseFormat)
	}
	if in := last.Messages[1].Text(); !strings.Contains(in, "] Has a dog named Rex.\n") || strings.Contains(in, "Be brief.") {
		t.Fatalf("extraction request:\n%s", in)
	}
	// Another user learned nothing.
	if fs, _ := m.Store().List(ctx, facts.Scope{Tenant: "t", User: "bob"}); len(fs) != 0 {
		t.Fatalf("bob has %d facts", len(fs))
	}
}

// TestLearnFailures: a model that fails or answers nonsense fails Learn
// and changes nothing; no user, no extractor, no user message.
func TestLearnFailures(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ada := facts.Scope{User: "ada"}
	msgs := []llm.Message{llm.UserMessage("I live in Paris.")}
	for name, model := range map[string]*scripted.Model{
		"down":     scripted.New(scripted.Fail(&llm.Error{Kind: llm.ErrUnavailable, Message: "down"})),
		"not json": scripted.New(scripted.Reply("I would remember that the user lives in Paris.")),
		"too long": scripted.New(scripted.Reply(`{"operations": [], "x": "` + strings.Repeat("x", facts.MaxAnswerBytes) + `"}`)),
	} {
		m := facts.New(facts.NewInMemory(), embedder, facts.WithExtractor(facts.NewExtractor(model)))
		if _, err := m.Learn(ctx, ada, msgs, facts.Source{}); err == nil {
			t.Errorf("%s: Learn succeeded", name)
		}
		if fs, _ := m.Store().List(ctx, ada); len(fs) != 0 {
			t.Errorf("%s: a failed Learn kept %d facts", name, len(fs))
		}
	}
	m := facts.New(facts.NewInMemory(), embedder)
	if _, err := m.Learn(ctx, ada, msgs, facts.Source{}); err == nil {
		t.Error("Learn without an extractor succeeded")
	}
	m = facts.New(facts.NewInMemory(), embedder, facts.WithExtractor(facts.NewExtractor(extractor())))
	if _, err := m.Learn(ctx, facts.Scope{Tenant: "t"}, msgs, facts.Source{}); err == nil {
		t.Error("Learn without a user succeeded")
	}
	if ch, err := m.Learn(ctx, ada, []llm.Message{llm.AssistantMessage("I live in Paris.")}, facts.Source{}); err != nil || len(ch.Added) != 0 {
		t.Errorf("Learn from no user message = %+v, %v", ch, err)
	}
}

// TestRecallBudget recalls the facts most relevant to a query, as many as
// fit the budget once rendered, none below the minimum similarity.
func TestRecallBudget(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	words := tokens.CounterFunc(func(s string) int { return len(strings.Fields(s)) })
	m := facts.New(facts.NewInMemory(), embedder, facts.WithCounter(words), facts.MinScore(0.2), facts.SameFact(0.99))
	ada := facts.Scope{User: "ada"}
	for _, f := range []string{"Lives in Berlin near the river.", "Works in Berlin as a nurse.", "Was born in Berlin.", "Plays the cello."} {
		if _, _, err := m.Remember(ctx, ada, f, facts.Source{Kind: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := m.Recall(ctx, ada, "Berlin river", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Facts) != 3 || all.Facts[0].Fact.Text != "Lives in Berlin near the river." {
		t.Fatalf("Recall without a budget = %+v: want the three Berlin facts, the river first", all.Facts)
	}
	if words.Count(all.Text) != all.Tokens {
		t.Fatalf("Tokens %d, the text counts %d", all.Tokens, words.Count(all.Text))
	}
	budget := all.Tokens - 1
	r, err := m.Recall(ctx, ada, "Berlin river", budget)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tokens > budget || words.Count(r.Text) != r.Tokens || len(r.Facts) != 2 {
		t.Fatalf("Recall within %d tokens = %d facts, %d tokens; want the best two", budget, len(r.Facts), r.Tokens)
	}
	// Exact: one token less than the third fact's line needs, and it
	// stays out.
	line := len(strings.Fields("- " + all.Facts[2].Fact.Text))
	if r, _ := m.Recall(ctx, ada, "Berlin river", r.Tokens+line-1); len(r.Facts) != 2 {
		t.Fatalf("a budget a token short of the third fact recalls %d", len(r.Facts))
	}
	if !strings.HasPrefix(r.Text, "<user_memory>\n") || !strings.Contains(r.Text, "\n- Lives in Berlin near the river.\n") {
		t.Fatalf("rendered:\n%s", r.Text)
	}
	if r, _ := m.Recall(ctx, ada, "", 0); len(r.Facts) != 0 || r.Text != "" {
		t.Fatalf("Recall of an empty query = %+v", r)
	}
	if r, _ := m.Recall(ctx, ada, "quantum chromodynamics", 0); len(r.Facts) != 0 {
		t.Fatalf("Recall of an unrelated query = %+v", r.Facts)
	}
	if r, _ := m.Recall(ctx, facts.Scope{User: "bob"}, "Berlin", 0); len(r.Facts) != 0 {
		t.Fatalf("bob recalls %+v", r.Facts)
	}
}

// call runs a tool with JSON arguments in ctx.
func call(t *testing.T, ctx context.Context, tl tool.Tool, args string) (string, error) {
	t.Helper()
	r, err := tl.Call(ctx, json.RawMessage(args))
	return r.Content, err
}

// TestTools checks that the memory tools work on the user of their
// context only: a second user sees nothing of the first's, cannot forget
// it by its id, and arguments naming a user are ignored.
func TestTools(t *testing.T) {
	t.Parallel()
	m := facts.New(facts.NewInMemory(), embedder)
	byName := map[string]tool.Tool{}
	for _, tl := range m.Tools("tenant-a") {
		byName[tl.Spec().Name] = tl
	}
	ada := tool.WithMemoryID(tool.WithUser(t.Context(), "ada"), "session-1")
	bob := tool.WithUser(t.Context(), "bob")

	out, err := call(t, ada, byName["remember"], `{"fact": "Is allergic to peanuts."}`)
	if err != nil {
		t.Fatal(err)
	}
	var kept struct {
		ID    string `json:"id"`
		Known bool   `json:"already_known"`
	}
	if err := json.Unmarshal([]byte(out), &kept); err != nil || kept.ID == "" || kept.Known {
		t.Fatalf("remember = %s, %v", out, err)
	}
	out, _ = call(t, ada, byName["remember"], `{"fact": "is allergic to peanuts"}`)
	if !strings.Contains(out, `"already_known":true`) || !strings.Contains(out, kept.ID) {
		t.Fatalf("remembering the same fact again = %s", out)
	}
	f, err := m.Store().Get(t.Context(), facts.Scope{Tenant: "tenant-a", User: "ada"}, kept.ID)
	if err != nil || f.Source != (facts.Source{Kind: facts.SourceTool, Session: "session-1"}) {
		t.Fatalf("stored %+v, %v", f, err)
	}
	if out, _ := call(t, ada, byName["recall"], `{"query": "peanuts allergy"}`); !strings.Contains(out, kept.ID) || !strings.Contains(out, "peanuts") {
		t.Fatalf("ada's recall = %s", out)
	}
	if out, err := call(t, bob, byName["recall"], `{"query": "peanuts allergy", "user": "ada"}`); err != nil && !errors.As(err, new(*tool.ArgumentError)) || strings.Contains(out, "peanuts") {
		t.Fatalf("bob's recall = %s, %v", out, err)
	}
	if out, _ := call(t, bob, byName["recall"], `{"query": "peanuts allergy"}`); out != "[]" {
		t.Fatalf("bob's recall = %s, want nothing", out)
	}
	if out, _ := call(t, bob, byName["forget"], fmt.Sprintf(`{"id": %q}`, kept.ID)); out != `{"forgotten":false}` {
		t.Fatalf("bob forgetting ada's fact = %s", out)
	}
	if _, err := m.Store().Get(t.Context(), facts.Scope{Tenant: "tenant-a", User: "ada"}, kept.ID); err != nil {
		t.Fatalf("ada's fact after bob's forget: %v", err)
	}
	// Another tenant's user of the same name is another user.
	other := facts.New(m.Store(), embedder).Tools("tenant-b")
	if out, _ := call(t, ada, other[1], `{"query": "peanuts allergy"}`); out != "[]" {
		t.Fatalf("ada of tenant b recalls %s", out)
	}
	for _, tl := range byName {
		if _, err := call(t, t.Context(), tl, `{"fact": "x", "query": "x", "id": "x"}`); err == nil || !strings.Contains(err.Error(), "no end user") {
			t.Errorf("%s without a user: %v", tl.Spec().Name, err)
		}
	}
	if out, _ := call(t, ada, byName["forget"], fmt.Sprintf(`{"id": %q}`, kept.ID)); out != `{"forgotten":true}` {
		t.Fatalf("ada forgetting her fact = %s", out)
	}
}

// TestExtract checks the extractor alone: its prompt overridden, the
// facts shown numbered, and the numbers of the answer mapped back to the
// facts' IDs.
func TestExtract(t *testing.T) {
	t.Parallel()
	model := scripted.New(scripted.Reply(`{"operations": [{"op": "update", "id": "2", "text": "Has two cats."}, {"op": "none", "id": "1", "text": ""}]}`),
		scripted.Capabilities(llm.Capabilities{}))
	e := facts.NewExtractor(model, facts.ExtractPrompt("Keep facts."))
	kept := []facts.Fact{{ID: "f-paris", Text: "Lives in Paris."}, {ID: "f-cat", Text: "Has a cat."}}
	ds, err := e.Extract(t.Context(), []llm.Message{llm.UserMessage("We adopted a second cat."), llm.ToolResultMessage("c", "pets", "2 cats", false)}, kept)
	if err != nil {
		t.Fatal(err)
	}
	want := []facts.Decision{{Op: facts.Update, ID: "f-cat", Text: "Has two cats."}, {Op: facts.None, ID: "f-paris"}}
	if !slices.Equal(ds, want) {
		t.Fatalf("decisions = %+v, want %+v", ds, want)
	}
	req := model.Requests()[0]
	if req.Messages[0].Text() != "Keep facts." || req.ResponseFormat != nil {
		t.Fatalf("request: system %q, format %+v (the model declares no JSON Schema)", req.Messages[0].Text(), req.ResponseFormat)
	}
	if got, want := req.Messages[1].Text(), "Remembered facts:\n[1] Lives in Paris.\n[2] Has a cat.\n\nMessages:\n[user] We adopted a second cat.\n[tool] 2 cats\n"; got != want {
		t.Fatalf("extraction request:\n%s\nwant:\n%s", got, want)
	}
}
