package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
	"github.com/weftlabs/weft/provider/scripted"
)

func ask(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.UserMessage(text)}}
}

var addTool = llm.ToolSpec{
	Name:        "add",
	Description: "adds two numbers",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"number"}},"required":["a","b"]}`),
}

var weatherTool = llm.ToolSpec{
	Name:       "get_weather",
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer"},"alerts":{"type":"boolean"}}}`),
}

// withToolResult extends req with the assistant's call and the tool's answer.
func withToolResult(req *llm.Request, resp *llm.Response, result string) *llm.Request {
	out := *req
	out.Messages = append(append([]llm.Message(nil), req.Messages...), resp.Message)
	for _, tc := range resp.Message.ToolCalls {
		out.Messages = append(out.Messages, llm.ToolResultMessage(tc.ID, tc.Name, result, false))
	}
	return &out
}

func TestRules(t *testing.T) {
	t.Parallel()
	errBoom := &llm.Error{Kind: llm.ErrRateLimited, Provider: "scripted", Message: "slow down"}
	tests := []struct {
		name      string
		model     *scripted.Model
		req       *llm.Request
		wantText  string
		wantCalls []llm.ToolCall // IDs are not compared
		wantErr   error
	}{
		{name: "no rules echo", model: scripted.New(), req: ask("hello there"), wantText: "hello there"},
		{name: "reply", model: scripted.New(scripted.Reply("fixed")), req: ask("anything"), wantText: "fixed"},
		{name: "reply json", model: scripted.New(scripted.ReplyJSON(map[string]int{"n": 3})), req: ask("x"), wantText: `{"n":3}`},
		{name: "reply json unencodable", model: scripted.New(scripted.ReplyJSON(func() {})), req: ask("x"), wantErr: errAny},
		{name: "call tool", model: scripted.New(scripted.CallTool("add", `{"a":1,"b":2}`)), req: ask("x"),
			wantCalls: []llm.ToolCall{{Name: "add", Arguments: `{"a":1,"b":2}`}}},
		{name: "fail", model: scripted.New(scripted.Fail(errBoom)), req: ask("x"), wantErr: llm.ErrRateLimited},
		{name: "when user says matches", model: scripted.New(scripted.WhenUserSays(regexp.MustCompile(`(?i)hi`), scripted.Reply("hello!")), scripted.Echo()),
			req: ask("Hi bot"), wantText: "hello!"},
		{name: "when user says falls through", model: scripted.New(scripted.WhenUserSays(regexp.MustCompile(`(?i)^hi`), scripted.Reply("hello!")), scripted.Echo()),
			req: ask("bye"), wantText: "bye"},
		{name: "no rule matches", model: scripted.New(scripted.WhenUserSays(regexp.MustCompile(`x`), scripted.Reply("y"))),
			req: ask("z"), wantErr: llm.ErrBadRequest},
		{name: "call tool when", model: scripted.New(scripted.CallToolWhen(regexp.MustCompile(`weather`), "get_weather", `{"city":"Oslo"}`), scripted.Echo()),
			req: ask("weather please"), wantCalls: []llm.ToolCall{{Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
		{name: "demo names tool with numbers in schema order", model: scripted.Demo(),
			req:       &llm.Request{Messages: []llm.Message{llm.UserMessage("please add 2 and 3.5")}, Tools: []llm.ToolSpec{weatherTool, addTool}},
			wantCalls: []llm.ToolCall{{Name: "add", Arguments: `{"b":2,"a":3.5}`}}},
		{name: "demo tool name with spaces and string args", model: scripted.Demo(),
			req:       &llm.Request{Messages: []llm.Message{llm.UserMessage("Get weather: Paris for 3 days")}, Tools: []llm.ToolSpec{addTool, weatherTool}},
			wantCalls: []llm.ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris for 3 days","unit":"celsius","days":3,"alerts":false}`}}},
		{name: "demo quoted string arg", model: scripted.Demo(),
			req:       &llm.Request{Messages: []llm.Message{llm.UserMessage(`use get_weather for "New York"`)}, Tools: []llm.ToolSpec{weatherTool}},
			wantCalls: []llm.ToolCall{{Name: "get_weather", Arguments: `{"city":"New York","unit":"celsius","days":0,"alerts":false}`}}},
		{name: "demo unknown tool not called", model: scripted.Demo(),
			req:      &llm.Request{Messages: []llm.Message{llm.UserMessage("multiply 2 by 3")}, Tools: []llm.ToolSpec{addTool}},
			wantText: "This is Weft's offline demo model, so it repeats what you said: multiply 2 by 3"},
		{name: "demo quotes context", model: scripted.Demo(),
			req:      ask("When was the bridge built?\n\nAnswer using the following information:\nThe museum opens at 9.\nThe bridge was built in 1890 by Arrol.\nTickets cost 5 euros."),
			wantText: `According to the provided context: "The bridge was built in 1890 by Arrol."`},
		{name: "demo quotes and cites a numbered source", model: scripted.Demo(),
			req:      ask("How do I install on Linux?\n\nAnswer using the following information:\n[1] faq.md\nThe museum opens at 9.\n\n[2] handbook.md › Install > Linux (page 3)\nOn Linux, install with apt install weft.\n"),
			wantText: `According to the provided context [2]: "On Linux, install with apt install weft."`},
		{name: "demo quotes context tag", model: scripted.Demo(),
			req:      ask("<context>\nCats sleep 16 hours a day.\n</context>\nHow long do cats sleep?"),
			wantText: `According to the provided context: "Cats sleep 16 hours a day."`},
		{name: "demo echo", model: scripted.Demo(), req: ask("hello"),
			wantText: "This is Weft's offline demo model, so it repeats what you said: hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, err := tt.model.Generate(context.Background(), tt.req)
			checkResponse(t, resp, err, tt.wantText, tt.wantCalls, tt.wantErr)
			// The stream must say the same, chunk by chunk.
			sresp, serr := llm.Collect(tt.model.Stream(context.Background(), tt.req))
			if tt.wantErr != nil {
				checkResponse(t, nil, serr, tt.wantText, tt.wantCalls, tt.wantErr)
				return
			}
			checkResponse(t, sresp, serr, tt.wantText, tt.wantCalls, tt.wantErr)
			if sresp.Usage != resp.Usage || sresp.FinishReason != resp.FinishReason || sresp.Model != resp.Model {
				t.Errorf("stream usage/finish/model = %+v/%s/%s, generate %+v/%s/%s",
					sresp.Usage, sresp.FinishReason, sresp.Model, resp.Usage, resp.FinishReason, resp.Model)
			}
		})
	}
}

var errAny = errors.New("any error")

func checkResponse(t *testing.T, resp *llm.Response, err error, wantText string, wantCalls []llm.ToolCall, wantErr error) {
	t.Helper()
	if wantErr != nil {
		if err == nil || (wantErr != errAny && !errors.Is(err, wantErr)) {
			t.Fatalf("err = %v, want %v", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if got := resp.Text(); got != wantText {
		t.Errorf("text = %q, want %q", got, wantText)
	}
	if len(resp.Message.ToolCalls) != len(wantCalls) {
		t.Fatalf("tool calls = %+v, want %+v", resp.Message.ToolCalls, wantCalls)
	}
	for i, tc := range resp.Message.ToolCalls {
		if tc.Name != wantCalls[i].Name || tc.Arguments != wantCalls[i].Arguments || tc.ID == "" {
			t.Errorf("tool call %d = %+v, want %+v with an id", i, tc, wantCalls[i])
		}
	}
	wantFinish := llm.FinishStop
	if len(wantCalls) > 0 {
		wantFinish = llm.FinishToolCalls
	}
	if resp.FinishReason != wantFinish {
		t.Errorf("finish = %q, want %q", resp.FinishReason, wantFinish)
	}
	if resp.Usage.PromptTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage = %+v, want an estimate", resp.Usage)
	}
	if resp.Message.Role != llm.RoleAssistant || resp.ID == "" {
		t.Errorf("role %q id %q", resp.Message.Role, resp.ID)
	}
}

func TestToolRoundTerminates(t *testing.T) {
	t.Parallel()
	for _, m := range []*scripted.Model{
		scripted.Demo(),
		scripted.New(scripted.CallToolWhen(regexp.MustCompile(`add`), "add", `{"a":2,"b":3}`), scripted.SummarizeToolResults()),
	} {
		req := &llm.Request{Messages: []llm.Message{llm.UserMessage("add 2 and 3")}, Tools: []llm.ToolSpec{addTool}}
		resp, err := m.Generate(context.Background(), req)
		if err != nil || len(resp.Message.ToolCalls) != 1 {
			t.Fatalf("first turn: %v %+v", err, resp)
		}
		resp, err = m.Generate(context.Background(), withToolResult(req, resp, "5"))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Text(); got != "add returned: 5" || len(resp.Message.ToolCalls) != 0 {
			t.Errorf("second turn = %q %+v, want the summary and no call", got, resp.Message.ToolCalls)
		}
	}
}

func TestToolCallIDsDeterministic(t *testing.T) {
	t.Parallel()
	req := &llm.Request{Messages: []llm.Message{llm.UserMessage("add 1 and 2")}, Tools: []llm.ToolSpec{addTool}}
	a, _ := scripted.Demo().Generate(context.Background(), req)
	b, _ := scripted.Demo().Generate(context.Background(), req)
	if a.Message.ToolCalls[0].ID != b.Message.ToolCalls[0].ID || !strings.HasPrefix(a.Message.ToolCalls[0].ID, "call_") {
		t.Errorf("ids %q and %q differ for the same script", a.Message.ToolCalls[0].ID, b.Message.ToolCalls[0].ID)
	}
	later := withToolResult(req, a, "3")
	later.Messages = append(later.Messages, llm.UserMessage("add 1 and 2"))
	c, _ := scripted.Demo().Generate(context.Background(), later)
	if c.Message.ToolCalls[0].ID == a.Message.ToolCalls[0].ID {
		t.Errorf("a call on a later turn reused id %q", c.Message.ToolCalls[0].ID)
	}
}

func TestSequence(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Sequence(scripted.CallTool("add", `{"a":1}`), scripted.Reply("done")))
	ctx := context.Background()
	r1, err := m.Generate(ctx, ask("go"))
	if err != nil || len(r1.Message.ToolCalls) != 1 {
		t.Fatalf("step 1: %v %+v", err, r1)
	}
	r2, err := m.Generate(ctx, ask("go"))
	if err != nil || r2.Text() != "done" {
		t.Fatalf("step 2: %v %+v", err, r2)
	}
	if _, err := m.Generate(ctx, ask("go")); !errors.Is(err, llm.ErrBadRequest) {
		t.Fatalf("step 3: err = %v, want ErrBadRequest (sequence used up)", err)
	}
	if n := len(m.Requests()); n != 3 {
		t.Errorf("Requests() has %d, want 3", n)
	}
}

func TestStreamShape(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Sequence(
		scripted.Reply("one two  three"),
		scripted.CallTool("add", `{"a":1,"b":22}`),
	))
	var types []llm.ChunkType
	var texts []string
	for c, err := range m.Stream(context.Background(), ask("x")) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, c.Type)
		if c.Type == llm.ChunkText {
			texts = append(texts, c.Text)
		}
	}
	wantTypes := []llm.ChunkType{llm.ChunkMeta, llm.ChunkText, llm.ChunkText, llm.ChunkText, llm.ChunkUsage, llm.ChunkFinish}
	if !equal(types, wantTypes) {
		t.Errorf("chunk types = %v, want %v", types, wantTypes)
	}
	if want := []string{"one", " two", "  three"}; !equal(texts, want) {
		t.Errorf("texts = %q, want %q", texts, want)
	}
	types = types[:0]
	var args []string
	for c, err := range m.Stream(context.Background(), ask("x")) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, c.Type)
		if c.Type == llm.ChunkToolCallDelta {
			args = append(args, c.Text)
		}
	}
	wantTypes = []llm.ChunkType{llm.ChunkMeta, llm.ChunkToolCallStart, llm.ChunkToolCallDelta, llm.ChunkToolCallDelta, llm.ChunkToolCallDelta, llm.ChunkUsage, llm.ChunkFinish}
	if !equal(types, wantTypes) {
		t.Errorf("chunk types = %v, want %v", types, wantTypes)
	}
	if strings.Join(args, "") != `{"a":1,"b":22}` || len(args) != 3 {
		t.Errorf("argument fragments = %q", args)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStreamStopsAndCancels(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Reply("a b c d e f"))
	n := 0
	for range m.Stream(context.Background(), ask("x")) {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("got %d chunks after break", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := llm.Collect(m.Stream(ctx, ask("x"))); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled stream err = %v", err)
	}
	if _, err := m.Generate(ctx, ask("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled generate err = %v", err)
	}
}

func TestNilRequests(t *testing.T) {
	t.Parallel()
	m := scripted.New()
	if _, err := m.Generate(context.Background(), nil); !errors.Is(err, llm.ErrBadRequest) {
		t.Errorf("Generate(nil) err = %v", err)
	}
	if _, err := llm.Collect(m.Stream(context.Background(), nil)); !errors.Is(err, llm.ErrBadRequest) {
		t.Errorf("Stream(nil) err = %v", err)
	}
	if _, err := m.Embed(context.Background(), nil); !errors.Is(err, llm.ErrBadRequest) {
		t.Errorf("Embed(nil) err = %v", err)
	}
}

func TestCapabilitiesAndName(t *testing.T) {
	t.Parallel()
	def := scripted.New()
	if c := def.Capabilities(); !c.Tools || !c.JSONSchema || !c.Streaming {
		t.Errorf("default capabilities = %+v", c)
	}
	m := scripted.New(scripted.Capabilities(llm.Capabilities{Tools: true}), scripted.WithName("scripted/plain"))
	if c := m.Capabilities(); c.JSONSchema || !c.Tools {
		t.Errorf("capabilities = %+v", c)
	}
	g := llm.New(m)
	if g.Name() != "scripted/plain" || g.Capabilities().JSONSchema {
		t.Errorf("gateway name %q caps %+v", g.Name(), g.Capabilities())
	}
}

func cosine(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot
}

func TestEmbed(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Dimensions(64))
	resp, err := m.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{
		"The cat sat on the mat",
		"A cat sitting on a mat",
		"Quarterly revenue grew by ten percent",
		"",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Vectors) != 4 || len(resp.Vectors[0]) != 64 || resp.Usage.PromptTokens == 0 {
		t.Fatalf("got %d vectors of %d dims, usage %+v", len(resp.Vectors), len(resp.Vectors[0]), resp.Usage)
	}
	for i, v := range resp.Vectors[:3] {
		if n := cosine(v, v); math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d has squared norm %v, want 1", i, n)
		}
	}
	if cosine(resp.Vectors[3], resp.Vectors[3]) != 0 {
		t.Errorf("empty text should embed to the zero vector")
	}
	near, far := cosine(resp.Vectors[0], resp.Vectors[1]), cosine(resp.Vectors[0], resp.Vectors[2])
	if near <= far || near < 0.5 {
		t.Errorf("similar texts cosine %.3f, unrelated %.3f", near, far)
	}
	again := scripted.Vector("The cat sat on the mat", 64)
	if !equal(again, resp.Vectors[0]) {
		t.Errorf("Vector is not deterministic")
	}
	if got := len(scripted.Vector("x", 0)); got != scripted.DefaultDimensions {
		t.Errorf("default dims = %d", got)
	}
	r2, err := m.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{"x"}, Dimensions: 8})
	if err != nil || len(r2.Vectors[0]) != 8 {
		t.Errorf("Dimensions in request not honoured: %v", err)
	}
}

func TestRegistered(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ spec, prompt, want string }{
		{"scripted/echo", "hi", "hi"},
		{"scripted/embed", "hi", "hi"},
		{"scripted", "hi", "This is Weft's offline demo model, so it repeats what you said: hi"},
		{"scripted/demo", "hi", "This is Weft's offline demo model, so it repeats what you said: hi"},
	} {
		m, err := provider.Open(tt.spec)
		if err != nil {
			t.Fatalf("%s: %v", tt.spec, err)
		}
		resp, err := m.Generate(context.Background(), ask(tt.prompt))
		if err != nil || resp.Text() != tt.want {
			t.Errorf("%s: %v %q, want %q", tt.spec, err, resp.Text(), tt.want)
		}
	}
	m, _ := provider.Open("scripted/demo")
	for range 3 {
		m.Generate(context.Background(), ask("x"))
	}
	if n := len(m.Driver().(*scripted.Model).Requests()); n != 0 {
		t.Errorf("a registry model kept %d requests", n)
	}
	if _, err := provider.Open("scripted/nope"); err == nil || !strings.Contains(err.Error(), "echo, demo, embed") {
		t.Errorf("unknown model err = %v", err)
	}
	st, err := provider.StatusOf("scripted", func(string) string { return "" })
	if err != nil || !st.Configured {
		t.Errorf("status = %+v, %v", st, err)
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	m := scripted.Demo()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 20 {
				resp, err := llm.Collect(m.Stream(context.Background(), ask(strings.Repeat("w ", i))))
				if err != nil || resp.FinishReason != llm.FinishStop {
					t.Errorf("%v %+v", err, resp)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(m.Requests()); n != 160 {
		t.Errorf("recorded %d requests, want 160", n)
	}
}

func TestStreamAllocations(t *testing.T) {
	m := scripted.New(scripted.Reply(strings.Repeat("word ", 50)))
	req := ask("x")
	ctx := context.Background()
	allocs := testing.AllocsPerRun(50, func() {
		for _, err := range m.Stream(ctx, req) {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
	// The response and its bookkeeping; nothing per chunk (50 text chunks).
	if allocs > 16 {
		t.Errorf("a 50-chunk stream allocates %v times, want at most 16", allocs)
	}
}
