package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/weftlabs/weft/llm"
)

var update = flag.Bool("update", false, "rewrite the golden request bodies in testdata")

// recorder is a test server that records request bodies and headers and
// answers with a fixed response.
type recorder struct {
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	paths   []string
	status  int
	ctype   string
	answer  string
	header  http.Header
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	r.headers = append(r.headers, req.Header.Clone())
	r.paths = append(r.paths, req.URL.Path)
	r.mu.Unlock()
	for k, v := range r.header {
		w.Header()[k] = v
	}
	ct := r.ctype
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	if r.status != 0 {
		w.WriteHeader(r.status)
	}
	io.WriteString(w, r.answer)
}

func (r *recorder) lastBody(t *testing.T) []byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bodies) == 0 {
		t.Fatal("no request reached the server")
	}
	return r.bodies[len(r.bodies)-1]
}

func serve(t *testing.T, r *recorder) string {
	t.Helper()
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv.URL
}

const okCompletion = `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`

// TestRequestGolden checks the wire body of each request shape against
// testdata/<name>.json. Run with -update to rewrite the files.
func TestRequestGolden(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	tests := []struct {
		name   string
		model  string
		stream bool
		opts   []Option
		req    llm.Request
	}{
		{name: "basic", req: llm.Request{Messages: []llm.Message{llm.SystemMessage("be brief"), llm.UserMessage("hi")}}},
		{name: "sampling", req: llm.Request{
			Messages: []llm.Message{llm.UserMessage("hi")}, Temperature: llm.Ptr(0.2), TopP: llm.Ptr(0.9),
			MaxTokens: 100, Stop: []string{"END"}, Seed: llm.Ptr(int64(7)),
		}},
		{name: "max_completion_tokens", model: "o3-mini", req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}, MaxTokens: 100}},
		{name: "max_completion_tokens_gpt5", model: "gpt-5-mini", req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}, MaxTokens: 50}},
		{name: "images", req: llm.Request{Messages: []llm.Message{llm.UserParts(
			llm.TextPart("what is this?"),
			llm.ImageURLPart("https://example.com/cat.png"),
			llm.ImageDataPart("image/png", []byte("\x89PNG\r\n\x1a\nrest")),
			llm.Part{Kind: llm.PartImage, Image: &llm.Image{Data: []byte("\xff\xd8\xff\xe0jpeg"), Detail: "low"}},
		)}}},
		{name: "user_name_and_multi_text", req: llm.Request{Messages: []llm.Message{
			{Role: llm.RoleUser, Name: "ann", Parts: []llm.Part{llm.TextPart("a"), llm.TextPart("b")}},
		}}},
		{name: "tools", req: llm.Request{
			Messages: []llm.Message{
				llm.UserMessage("weather in Paris and Rome?"),
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
					{ID: "call_1", Name: "weather", Arguments: `{"city":"Paris"}`},
					{ID: "call_2", Name: "now", Arguments: ""},
				}},
				llm.ToolResultMessage("call_1", "weather", "sunny", false),
				llm.ToolResultMessage("call_2", "now", "clock broken", true),
				{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("Let me check.")}, Reasoning: "not sent back",
					ToolCalls: []llm.ToolCall{{ID: "call_3", Name: "weather", Arguments: `{"city":"Rome"}`}}},
			},
			Tools: []llm.ToolSpec{
				{Name: "weather", Description: "Current weather", Parameters: schema},
				{Name: "now"},
			},
			ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceAuto},
		}},
		{name: "tool_choice_none", req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}, Tools: []llm.ToolSpec{{Name: "now"}}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}}},
		{name: "tool_choice_required", req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}, Tools: []llm.ToolSpec{{Name: "now"}}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}}},
		{name: "tool_choice_named", req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}, Tools: []llm.ToolSpec{{Name: "now"}}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "now"}}},
		{name: "format_text", req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}, ResponseFormat: &llm.ResponseFormat{Type: llm.FormatText}}},
		{name: "format_json", req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}, ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSON}}},
		{name: "format_json_schema", req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}, ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "city", Schema: schema, Strict: true}}},
		{name: "format_json_schema_default_name", req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}, ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONSchema, Schema: schema}}},
		{name: "extra", req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}, Temperature: llm.Ptr(1.0),
			Extra: map[string]any{"reasoning_effort": "low", "temperature": 0.5, "metadata": map[string]string{"k": "v"}}}},
		{name: "stream", stream: true, req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}}},
		{name: "stream_without_usage", stream: true, opts: []Option{WithStreamUsage(false)}, req: llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{answer: okCompletion}
			model := tt.model
			if model == "" {
				model = "gpt-4o-mini"
			}
			c := newTestClient(t, serve(t, rec), append([]Option{WithModel(model)}, tt.opts...)...)
			if tt.stream {
				rec.ctype = "text/event-stream"
				rec.answer = "data: " + `{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
				if _, err := llm.Collect(c.Stream(context.Background(), &tt.req)); err != nil {
					t.Fatal(err)
				}
			} else if _, err := c.Generate(context.Background(), &tt.req); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.name, rec.lastBody(t))
		})
	}
}

func checkGolden(t *testing.T, name string, body []byte) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, body)
	}
	pretty.WriteByte('\n')
	path := filepath.Join("testdata", "request_"+name+".json")
	if *update {
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestRequestGolden -update to create it)", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("request body for %s differs from %s:\n got: %s\nwant: %s", name, path, pretty.Bytes(), want)
	}
}

func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	rec := &recorder{answer: okCompletion}
	c := newTestClient(t, serve(t, rec), WithOrganization("org-1"), WithProject("proj-1"), WithHeader("X-Title", "weft"))
	if _, err := c.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}}); err != nil {
		t.Fatal(err)
	}
	h := rec.headers[0]
	for k, want := range map[string]string{
		"Authorization": "Bearer sk-test", "Openai-Organization": "org-1", "Openai-Project": "proj-1",
		"X-Title": "weft", "Content-Type": "application/json",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if rec.paths[0] != "/chat/completions" {
		t.Errorf("path = %q", rec.paths[0])
	}

	// No key, no Authorization header.
	rec2 := &recorder{answer: okCompletion}
	c2, err := New(WithModel("llama3"), WithBaseURL(serve(t, rec2)+"/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}}); err != nil {
		t.Fatal(err)
	}
	if got := rec2.headers[0].Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q without a key", got)
	}
	if rec2.paths[0] != "/chat/completions" {
		t.Errorf("trailing slash of the base URL gave path %q", rec2.paths[0])
	}
}

func TestRequestInvalid(t *testing.T) {
	t.Parallel()
	rec := &recorder{answer: okCompletion}
	c := newTestClient(t, serve(t, rec))
	tests := []struct {
		name string
		req  *llm.Request
	}{
		{"nil", nil},
		{"unknown role", &llm.Request{Messages: []llm.Message{{Role: "robot"}}}},
		{"tool message without id", &llm.Request{Messages: []llm.Message{{Role: llm.RoleTool, Parts: []llm.Part{llm.TextPart("x")}}}}},
		{"empty image", &llm.Request{Messages: []llm.Message{llm.UserParts(llm.Part{Kind: llm.PartImage, Image: &llm.Image{}})}}},
		{"nil image", &llm.Request{Messages: []llm.Message{llm.UserParts(llm.Part{Kind: llm.PartImage})}}},
		{"unknown part", &llm.Request{Messages: []llm.Message{llm.UserParts(llm.TextPart("a"), llm.Part{Kind: "audio"})}}},
		{"named tool choice without name", &llm.Request{ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool}}},
		{"unknown tool choice", &llm.Request{ToolChoice: llm.ToolChoice{Mode: "sometimes"}}},
		{"schema without schema", &llm.Request{ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONSchema}}},
		{"unknown format", &llm.Request{ResponseFormat: &llm.ResponseFormat{Type: "yaml"}}},
		{"unencodable extra", &llm.Request{Extra: map[string]any{"f": func() {}}}},
	}
	for _, tt := range tests {
		_, err := c.Generate(context.Background(), tt.req)
		if !errors.Is(err, llm.ErrBadRequest) {
			t.Errorf("%s: err = %v, want ErrBadRequest", tt.name, err)
		}
		for _, err := range c.Stream(context.Background(), tt.req) {
			if !errors.Is(err, llm.ErrBadRequest) {
				t.Errorf("%s: stream err = %v, want ErrBadRequest", tt.name, err)
			}
		}
	}
	if len(rec.bodies) != 0 {
		t.Errorf("%d invalid requests reached the server", len(rec.bodies))
	}
}
