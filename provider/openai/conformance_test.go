package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
)

// expectedStream is one entry of the fixture folder's expected.json.
type expectedStream struct {
	SSEComments    int    `json:"sse_comments"`
	JSONEvents     int    `json:"json_events"`
	SawDone        bool   `json:"saw_done"`
	FinishReason   string `json:"finish_reason"`
	ContentChars   int    `json:"content_chars"`
	ContentPrefix  string `json:"content_prefix"`
	ReasoningChars int    `json:"reasoning_chars"`
	ToolCalls      []struct {
		Index     int    `json:"index"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"tool_calls"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// fixtureDir is the folder of recorded streams: WEFT_SSE_FIXTURES, else the
// shared fixtures beside the repository.
func fixtureDir() string {
	if d := os.Getenv("WEFT_SSE_FIXTURES"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "fixtures", "sse")
}

func loadExpected(t testing.TB) (string, map[string]expectedStream) {
	t.Helper()
	dir := fixtureDir()
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("no stream fixtures at %s (set WEFT_SSE_FIXTURES)", dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	var exp map[string]expectedStream
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	return dir, exp
}

var cassetteContentType = regexp.MustCompile(`Content-Type:\n\s+- (text/event-stream[^\n]*)`)

// fixtureContentType reads the streamed response's content type from the
// cassette beside a body, defaulting to text/event-stream.
func fixtureContentType(dir, name string) string {
	base := strings.TrimSuffix(name, ".body.sse")
	if b, err := os.ReadFile(filepath.Join(dir, base+".yaml")); err == nil {
		if m := cassetteContentType.FindSubmatch(b); m != nil {
			return string(m[1])
		}
	}
	return "text/event-stream"
}

// TestStreamConformance feeds every recorded stream through the whole
// client (HTTP included) and compares the result with expected.json.
func TestStreamConformance(t *testing.T) {
	t.Parallel()
	dir, exp := loadExpected(t)
	for name, want := range exp {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			ct := fixtureContentType(dir, name)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", ct)
				w.Write(body)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL)

			resp, err := llm.Collect(c.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}}))
			if len(want.Error) > 0 && string(want.Error) != "null" {
				if err == nil {
					t.Fatalf("want error %s, got none", want.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.FinishReason) != want.FinishReason {
				t.Errorf("finish reason = %q, want %q", resp.FinishReason, want.FinishReason)
			}
			text := resp.Text()
			if n := utf8.RuneCountInString(text); n != want.ContentChars {
				t.Errorf("content chars = %d, want %d", n, want.ContentChars)
			}
			if !strings.HasPrefix(text, want.ContentPrefix) {
				t.Errorf("content = %.60q, want prefix %q", text, want.ContentPrefix)
			}
			if n := utf8.RuneCountInString(resp.Message.Reasoning); n != want.ReasoningChars {
				t.Errorf("reasoning chars = %d, want %d", n, want.ReasoningChars)
			}
			if len(resp.Message.ToolCalls) != len(want.ToolCalls) {
				t.Fatalf("tool calls = %+v, want %+v", resp.Message.ToolCalls, want.ToolCalls)
			}
			for i, w := range want.ToolCalls {
				got := resp.Message.ToolCalls[i]
				if got.ID != w.ID || got.Name != w.Name || got.Arguments != w.Arguments {
					t.Errorf("tool call %d = %+v, want %+v", w.Index, got, w)
				}
			}
			u := resp.Usage
			if u.PromptTokens != want.Usage.PromptTokens || u.CompletionTokens != want.Usage.CompletionTokens || u.TotalTokens != want.Usage.TotalTokens {
				t.Errorf("usage = %+v, want %+v", u, want.Usage)
			}

			// The parser's own counters, on the raw body.
			p := &streamParser{c: c, ctx: context.Background(), status: 200}
			p.events = newEvents(bytes.NewReader(body), c.maxResponse)
			for {
				_, err := p.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if p.sawDone != want.SawDone || p.jsonEvents != want.JSONEvents || p.events.Comments() != want.SSEComments {
				t.Errorf("saw_done=%v json_events=%d comments=%d, want %v %d %d",
					p.sawDone, p.jsonEvents, p.events.Comments(), want.SawDone, want.JSONEvents, want.SSEComments)
			}
		})
	}
}

func newTestClient(t testing.TB, baseURL string, opts ...Option) *Client {
	t.Helper()
	c, err := New(append([]Option{WithModel("gpt-4o-mini"), WithAPIKey("sk-test"), WithBaseURL(baseURL)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
