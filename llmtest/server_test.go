package llmtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
)

const chatBody = `{"model":"gpt-test","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"}]}`
const streamBody = `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hello there"}]}`
const streamUsageBody = `{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello there"}]}`

func post(t *testing.T, srv *llmtest.Server, path, body string) *http.Response {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// wireChunk is the part of a chat.completion.chunk the tests read.
type wireChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Role             string `json:"role"`
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *llm.Usage        `json:"usage"`
	Error *llmtest.APIError `json:"error"`
}

// stream is a stream read by the accumulator rules of the SSE fixtures'
// INDEX.md.
type stream struct {
	events    []wireChunk
	comments  int
	done      bool
	err       *llmtest.APIError
	text      string
	reasoning string
	calls     map[int]*llm.ToolCall
	finishes  []string
	usage     *llm.Usage
	contents  int // events with text, reasoning or tool call fragments
}

func readStream(t *testing.T, r io.Reader) *stream {
	t.Helper()
	s := &stream{calls: map[int]*llm.ToolCall{}}
	sc := bufio.NewScanner(r)
	var data []string
	dispatch := func() {
		if len(data) == 0 {
			return
		}
		payload := strings.Join(data, "\n")
		data = nil
		if payload == "[DONE]" {
			s.done = true
			return
		}
		var c wireChunk
		if err := json.Unmarshal([]byte(payload), &c); err != nil {
			t.Fatalf("bad event %q: %v", payload, err)
		}
		s.events = append(s.events, c)
		if c.Error != nil {
			s.err = c.Error
			return
		}
		for _, ch := range c.Choices {
			d := ch.Delta
			s.text += d.Content
			s.reasoning += d.ReasoningContent
			if d.Content != "" || d.ReasoningContent != "" || len(d.ToolCalls) > 0 {
				s.contents++
			}
			for _, tc := range d.ToolCalls {
				call := s.calls[tc.Index]
				if call == nil {
					call = &llm.ToolCall{}
					s.calls[tc.Index] = call
				}
				if call.ID == "" {
					call.ID = tc.ID
				}
				if call.Name == "" {
					call.Name = tc.Function.Name
				}
				call.Arguments += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				s.finishes = append(s.finishes, *ch.FinishReason)
			}
		}
		if c.Usage != nil {
			s.usage = c.Usage
		}
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			dispatch()
		case strings.HasPrefix(line, ":"):
			s.comments++
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	dispatch()
	return s
}

func TestStreamWireShapes(t *testing.T) {
	t.Parallel()
	usage := llm.Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18}
	tests := []struct {
		name string
		turn llmtest.Turn
		body string
		// want
		text, reasoning string
		calls           []llm.ToolCall
		finishes        []string
		contents        int
		usage           *llm.Usage
		done            bool
		comments        int
		err             string
		// firstFragmentOnly: ids and names appear only in the first fragment of each call.
	}{
		{name: "words", turn: llmtest.Reply("Hello, brave new world"), body: streamBody,
			text: "Hello, brave new world", contents: 4, finishes: []string{"stop"}, done: true},
		{name: "chunks", turn: llmtest.Turn{Text: "abcdefghij", Chunks: 3}, body: streamBody,
			text: "abcdefghij", contents: 3, finishes: []string{"stop"}, done: true},
		{name: "chunks cut at runes", turn: llmtest.Turn{Text: "héllo wörld ✓", Chunks: 13}, body: streamBody,
			text: "héllo wörld ✓", contents: 13, finishes: []string{"stop"}, done: true},
		{name: "more chunks than runes", turn: llmtest.Turn{Text: "ab", Chunks: 50}, body: streamBody,
			text: "ab", contents: 2, finishes: []string{"stop"}, done: true},
		{name: "json escaping", turn: llmtest.Turn{Text: "quote \" back \\ nl \n tab \t ctl \x01 bad \xff end", Chunks: 1}, body: streamBody,
			text: "quote \" back \\ nl \n tab \t ctl \x01 bad \ufffd end", contents: 1, finishes: []string{"stop"}, done: true},
		{name: "usage chunk when asked", turn: llmtest.Turn{Text: "hi", Usage: usage}, body: streamUsageBody,
			text: "hi", contents: 1, finishes: []string{"stop"}, usage: &usage, done: true},
		{name: "no usage chunk unless asked", turn: llmtest.Turn{Text: "hi", Usage: usage}, body: streamBody,
			text: "hi", contents: 1, finishes: []string{"stop"}, done: true},
		{name: "usage in finish", turn: llmtest.Turn{Text: "hi", Usage: usage, UsageInFinish: true}, body: streamBody,
			text: "hi", contents: 1, finishes: []string{"stop"}, usage: &usage, done: true},
		{name: "reasoning then text", turn: llmtest.Turn{Reasoning: "let me think", Text: "42"}, body: streamBody,
			reasoning: "let me think", text: "42", contents: 4, finishes: []string{"stop"}, done: true},
		{name: "text before tool calls, split arguments", turn: llmtest.Turn{
			Text:      "Let me add.",
			ToolCalls: []llmtest.ToolCall{{ID: "call_a", Name: "add", Arguments: `{"a":2,"b":3}`}, {Name: "mul", Arguments: `{"a":2,"b":3}`}},
			ArgChunks: 4,
		}, body: streamBody,
			text:     "Let me add.",
			calls:    []llm.ToolCall{{ID: "call_a", Name: "add", Arguments: `{"a":2,"b":3}`}, {ID: "call_1", Name: "mul", Arguments: `{"a":2,"b":3}`}},
			contents: 3 + 2*5, finishes: []string{"tool_calls"}, done: true},
		{name: "keep-alive comments", turn: llmtest.Turn{Text: "a b", KeepAlive: true}, body: streamBody,
			text: "a b", contents: 2, finishes: []string{"stop"}, done: true, comments: 5},
		{name: "duplicate finish", turn: llmtest.Turn{Text: "a", DuplicateFinish: true, FinishReason: "length"}, body: streamBody,
			text: "a", contents: 1, finishes: []string{"length", "length"}, done: true},
		{name: "error after 200", turn: llmtest.StreamError("one two three four", 2, "model overloaded"), body: streamBody,
			text: "one two", contents: 2, err: "model overloaded"},
		{name: "error after all content", turn: llmtest.StreamError("one two", 5, "late failure"), body: streamBody,
			text: "one two", contents: 2, err: "late failure"},
		{name: "error before content", turn: llmtest.StreamError("one two", 0, "early failure"), body: streamBody,
			err: "early failure"},
		{name: "no finish", turn: llmtest.Turn{Text: "cut off", NoFinish: true}, body: streamBody,
			text: "cut off", contents: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(tt.turn)
			defer srv.Close()
			resp := post(t, srv, "/chat/completions", tt.body)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			s := readStream(t, resp.Body)
			if s.text != tt.text || s.reasoning != tt.reasoning {
				t.Errorf("text %q reasoning %q, want %q %q", s.text, s.reasoning, tt.text, tt.reasoning)
			}
			if s.contents != tt.contents {
				t.Errorf("%d content events, want %d", s.contents, tt.contents)
			}
			if strings.Join(s.finishes, ",") != strings.Join(tt.finishes, ",") {
				t.Errorf("finishes %q, want %q", s.finishes, tt.finishes)
			}
			if s.done != tt.done {
				t.Errorf("[DONE] seen = %v, want %v", s.done, tt.done)
			}
			if s.comments != tt.comments {
				t.Errorf("%d comments, want %d", s.comments, tt.comments)
			}
			if (s.usage == nil) != (tt.usage == nil) || (s.usage != nil && *s.usage != *tt.usage) {
				t.Errorf("usage %+v, want %+v", s.usage, tt.usage)
			}
			if tt.err != "" {
				if s.err == nil || s.err.Message != tt.err {
					t.Errorf("error event %+v, want message %q", s.err, tt.err)
				}
				if last := s.events[len(s.events)-1]; last.Error == nil {
					t.Errorf("the error event is not the last")
				}
			} else if s.err != nil {
				t.Errorf("unexpected error event %+v", s.err)
			}
			if len(s.calls) != len(tt.calls) {
				t.Fatalf("calls %v, want %v", s.calls, tt.calls)
			}
			for i, want := range tt.calls {
				if got := s.calls[i]; got == nil || *got != want {
					t.Errorf("call %d = %+v, want %+v", i, got, want)
				}
			}
			// Every chunk carries the same id and the request's model; ids
			// and names come only in a call's first fragment.
			seen := map[int]bool{}
			for _, ev := range s.events {
				if ev.Error != nil {
					continue
				}
				if ev.ID != s.events[0].ID || ev.Model != "gpt-test" || ev.Object != "chat.completion.chunk" {
					t.Errorf("chunk id %q model %q object %q", ev.ID, ev.Model, ev.Object)
				}
				for _, ch := range ev.Choices {
					for _, tc := range ch.Delta.ToolCalls {
						if seen[tc.Index] && (tc.ID != "" || tc.Function.Name != "") {
							t.Errorf("id/name repeated in a later fragment of call %d", tc.Index)
						}
						if !seen[tc.Index] && (tc.ID == "" || tc.Function.Name == "" || tc.Type != "function") {
							t.Errorf("first fragment of call %d lacks id, name or type", tc.Index)
						}
						seen[tc.Index] = true
					}
				}
			}
			if len(s.events) > 0 && s.events[0].Choices[0].Delta.Role != "assistant" {
				t.Errorf("first chunk has no assistant role")
			}
		})
	}
}

func TestUsageChunkIsLastWithEmptyChoices(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	resp := post(t, srv, "/chat/completions", streamUsageBody)
	s := readStream(t, resp.Body)
	last := s.events[len(s.events)-1]
	if last.Usage == nil || len(last.Choices) != 0 {
		t.Fatalf("last chunk = %+v, want usage with choices []", last)
	}
	if last.Usage.TotalTokens != last.Usage.PromptTokens+last.Usage.CompletionTokens || last.Usage.CompletionTokens == 0 {
		t.Errorf("estimated usage %+v", last.Usage)
	}
	if s.text != "hello there" {
		t.Errorf("default turn echoed %q", s.text)
	}
}

type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent string  `json:"reasoning_content"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage llm.Usage         `json:"usage"`
	Error *llmtest.APIError `json:"error"`
}

func TestNonStreamed(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{Text: "Hi!", Reasoning: "greet", Model: "gpt-4o-mini-2024-07-18"},
		llmtest.CallTools(llmtest.ToolCall{ID: "call_x", Name: "add", Arguments: `{"a":1}`}),
		llmtest.Turn{Error: &llmtest.APIError{Message: "oops", Type: "server_error"}},
		llmtest.Turn{Text: "truncated answer", NoFinish: true},
	)
	defer srv.Close()

	var c completion
	resp := post(t, srv, "/chat/completions", chatBody)
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	m := c.Choices[0].Message
	if c.Object != "chat.completion" || c.Model != "gpt-4o-mini-2024-07-18" || m.Role != "assistant" || *m.Content != "Hi!" ||
		m.ReasoningContent != "greet" || c.Choices[0].FinishReason != "stop" {
		t.Errorf("completion = %+v", c)
	}
	c = completion{}
	resp = post(t, srv, "/chat/completions", chatBody)
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	m = c.Choices[0].Message
	if m.Content != nil || len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "call_x" || m.ToolCalls[0].Type != "function" ||
		m.ToolCalls[0].Function.Name != "add" || m.ToolCalls[0].Function.Arguments != `{"a":1}` || c.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("tool call completion = %s", body)
	}
	if c.Model != "gpt-test" || c.Usage.PromptTokens == 0 {
		t.Errorf("model %q usage %+v (want the request's model and an estimate)", c.Model, c.Usage)
	}

	c = completion{}
	resp = post(t, srv, "/chat/completions", chatBody)
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != 200 || c.Error == nil || c.Error.Message != "oops" {
		t.Errorf("error after 200: status %d err %v body %+v", resp.StatusCode, err, c)
	}

	resp = post(t, srv, "/chat/completions", chatBody)
	if err := json.NewDecoder(resp.Body).Decode(&c); err == nil {
		t.Errorf("a NoFinish answer decoded whole")
	}
}

func TestUsageDetails(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "x", Usage: llm.Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7, CachedTokens: 3, ReasoningTokens: 1}})
	defer srv.Close()
	var c struct {
		Usage struct {
			PromptDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
			CompletionDetails struct {
				ReasoningTokens int `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(post(t, srv, "/chat/completions", chatBody).Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Usage.PromptDetails.CachedTokens != 3 || c.Usage.CompletionDetails.ReasoningTokens != 1 {
		t.Errorf("usage details = %+v", c.Usage)
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		turn       llmtest.Turn
		status     int
		header     map[string]string
		errType    string
		errCode    string
		msgContain string
	}{
		{turn: llmtest.RateLimited(1500 * time.Millisecond), status: 429,
			header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}, errType: "requests", errCode: "rate_limit_exceeded", msgContain: "Rate limit"},
		{turn: llmtest.Unauthorized(), status: 401, errType: "invalid_request_error", errCode: "invalid_api_key", msgContain: "Incorrect API key"},
		{turn: llmtest.ServerError(), status: 500, errType: "server_error", msgContain: "server had an error"},
		{turn: llmtest.HTTPError(400, "invalid_request_error", "bad tools"), status: 400, errType: "invalid_request_error", msgContain: "bad tools"},
		{turn: llmtest.Turn{Status: 503}, status: 503, errType: "server_error", msgContain: "Service Unavailable"},
	}
	for _, tt := range tests {
		srv := llmtest.NewServer(tt.turn)
		resp := post(t, srv, "/chat/completions", streamBody)
		var body struct{ Error llmtest.APIError }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tt.status || body.Error.Type != tt.errType || body.Error.Code != tt.errCode || !strings.Contains(body.Error.Message, tt.msgContain) {
			t.Errorf("status %d body %+v, want %d %s %s %q", resp.StatusCode, body, tt.status, tt.errType, tt.errCode, tt.msgContain)
		}
		for k, v := range tt.header {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		if got := llm.ParseRetryAfter(resp.Header, time.Now()); tt.status == 429 && got != 1500*time.Millisecond {
			t.Errorf("ParseRetryAfter = %v", got)
		}
		srv.Close()
	}
}

func TestSlowFirstByte(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "late", Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL()+"/chat/completions", strings.NewReader(chatBody))
	errc := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	// The request is held before its headers; cancelling must end it.
	for srv.Pending() != 0 || len(srv.Requests()) == 0 {
		time.Sleep(time.Millisecond) // waiting for the server to take the turn, not timing it
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	srv.Close() // must not wait out the hour
}

func TestCloseEndsStalledStreams(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "a b c", ChunkDelay: time.Hour})
	resp := post(t, srv, "/chat/completions", streamBody)
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, resp.Body)
		close(done)
	}()
	srv.Close()
	<-done
}

func TestRaw(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("../../shared/fixtures/sse/fantasy__openai-gpt-4o-mini__multi_tool_streaming.body.sse")
	if err != nil {
		body = []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}
	srv := llmtest.NewServer(llmtest.Turn{Raw: string(body)})
	defer srv.Close()
	resp := post(t, srv, "/chat/completions", streamBody)
	got, _ := io.ReadAll(resp.Body)
	if string(got) != string(body) || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("raw body not served verbatim (content type %q)", resp.Header.Get("Content-Type"))
	}
}

func TestRequestsRecorded(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Reply("a"))
	defer srv.Close()
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},
		"messages":[{"role":"user","content":[{"type":"text","text":"look at "},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"this"}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"42"}],
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
	req, _ := http.NewRequest("POST", srv.URL()+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-1")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-1" || r.Model != "m" || !r.Stream || !r.IncludeUsage {
		t.Errorf("request = %+v", r)
	}
	if r.LastUserText() != "look at this" || r.Messages[1].Text() != "" || r.Messages[1].ToolCalls[0].Function.Name != "f" ||
		r.Messages[2].ToolCallID != "c1" || r.Messages[2].Text() != "42" || r.Tools[0].Function.Name != "f" {
		t.Errorf("decoded messages = %+v tools %+v", r.Messages, r.Tools)
	}
	var generic map[string]any
	if err := r.Decode(&generic); err != nil || generic["model"] != "m" {
		t.Errorf("Decode: %v %v", err, generic)
	}

	srv.SetRecording(false)
	post(t, srv, "/chat/completions", chatBody)
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("recorded %d requests with recording off", n)
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	for _, tt := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/chat/completions", "{not json", 400},
		{"GET", "/chat/completions", "", 405},
		{"POST", "/nope", "{}", 404},
		{"POST", "/embeddings", `{"input":42}`, 400},
	} {
		req, _ := http.NewRequest(tt.method, srv.URL()+tt.path, strings.NewReader(tt.body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error *llmtest.APIError }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || body.Error == nil || body.Error.Message == "" {
			t.Errorf("%s %s: status %d body %+v, want %d with an error", tt.method, tt.path, resp.StatusCode, body.Error, tt.status)
		}
	}
}

func TestEmbeddingsAndModels(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	type embResp struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Model string
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	var a, b embResp
	json.NewDecoder(post(t, srv, "/embeddings", `{"model":"e","input":["red apples","green apples"]}`).Body).Decode(&a)
	json.NewDecoder(post(t, srv, "/embeddings", `{"model":"e","input":"red apples","dimensions":16}`).Body).Decode(&b)
	if len(a.Data) != 2 || len(a.Data[0].Embedding) != llmtest.DefaultEmbeddingDims || a.Data[1].Index != 1 || a.Model != "e" || a.Usage.PromptTokens == 0 {
		t.Fatalf("embeddings = %+v", a)
	}
	if len(b.Data) != 1 || len(b.Data[0].Embedding) != 16 {
		t.Fatalf("dimensions not honoured: %+v", b)
	}
	var norm float64
	for _, f := range a.Data[0].Embedding {
		norm += f * f
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Errorf("squared norm %v", norm)
	}

	srv.SetModels("m1", "m2")
	resp, err := srv.Client().Get(srv.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var models struct {
		Object string
		Data   []struct{ ID string }
	}
	json.NewDecoder(resp.Body).Decode(&models)
	if models.Object != "list" || len(models.Data) != 2 || models.Data[1].ID != "m2" {
		t.Errorf("models = %+v", models)
	}
}

func TestConcurrentScript(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	const n = 20
	for range n {
		srv.Enqueue(llmtest.Reply("scripted"))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	for range 2 * n {
		wg.Go(func() {
			resp, err := srv.Client().Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(streamBody))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			s := readStream(t, resp.Body)
			mu.Lock()
			counts[s.text]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if counts["scripted"] != n || counts["hello there"] != n || srv.Pending() != 0 || len(srv.Requests()) != 2*n {
		t.Errorf("answers %v, pending %d, requests %d", counts, srv.Pending(), len(srv.Requests()))
	}
}

// TestResponder pins that a responder answers once the script is empty,
// from the decoded request, and that nil restores the echo.
func TestResponder(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Reply("scripted"))
	defer srv.Close()
	srv.SetResponder(func(r *llmtest.Request) llmtest.Turn {
		return llmtest.Reply(r.Model + " heard " + r.LastUserText())
	})
	answer := func() string {
		var c completion
		if err := json.NewDecoder(post(t, srv, "/chat/completions", chatBody).Body).Decode(&c); err != nil {
			t.Fatal(err)
		}
		return *c.Choices[0].Message.Content
	}
	if got := answer(); got != "scripted" {
		t.Errorf("first answer = %q, want the script's", got)
	}
	heard := answer()
	if !strings.HasPrefix(heard, "gpt-test heard ") {
		t.Errorf("responder answer = %q", heard)
	}
	srv.SetResponder(nil)
	if got := answer(); got != strings.TrimPrefix(heard, "gpt-test heard ") {
		t.Errorf("echo after SetResponder(nil) = %q", got)
	}
}
