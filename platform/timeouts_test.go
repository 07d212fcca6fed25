package platform

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/openai"
)

// timeoutEnv is a server whose models all talk to srv, without retries.
func timeoutEnv(t *testing.T, srv *llmtest.Server) *testEnv {
	t.Helper()
	return newEnv(t, nil, func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) {
			d, err := openai.New(openai.WithBaseURL(srv.URL()), openai.WithAPIKey("sk-test"),
				openai.WithModel("gpt-test"), openai.WithHTTPClient(srv.Client()))
			if err != nil {
				return nil, err
			}
			return llm.New(d, llm.WithRetries(0)), nil
		}
	})
}

func TestAgentTimeoutsValidationAndDefaults(t *testing.T) {
	e := newEnv(t, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "d"})
	if a.Timeouts != (meta.Timeouts{FirstTokenMS: 60_000, IdleMS: 30_000, TurnMS: 300_000}) {
		t.Fatalf("default timeouts = %+v", a.Timeouts)
	}
	for field, v := range map[string]map[string]any{
		"timeouts.first_token_ms": {"first_token_ms": 5},
		"timeouts.idle_ms":        {"idle_ms": -1},
		"timeouts.turn_ms":        {"turn_ms": 4_000_000},
	} {
		eb := e.wantError(e.do(e.admin, "POST", "/v1/agents", map[string]any{"name": "bad", "timeouts": v}, nil), http.StatusBadRequest, CodeInvalidRequest)
		if !strings.Contains(eb.Error.Message, field) {
			t.Errorf("message %q does not name %s", eb.Error.Message, field)
		}
	}
}

// A model that never sends its first token ends a streamed turn with
// model_error (timeout); the user's message stays.
func TestChatFirstTokenTimeout(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Turn{Text: "never", ChunkDelay: time.Hour})
	defer srv.Close()
	e := timeoutEnv(t, srv)
	a := e.createAgent(e.admin, map[string]any{"name": "hung", "timeouts": map[string]any{"first_token_ms": 200}})
	ss, _ := e.srv.sessionFor(context.Background(), e.tenant(), a, "", "")
	resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hello?", "session_id": ss.ID, "stream": true}, nil)
	frames, _ := readSSE(t, resp.Body)
	last := frames[len(frames)-1]
	if last.Event != "error" || last.Data["code"] != CodeModelError || !strings.Contains(last.Data["message"].(string), "timeout") {
		t.Fatalf("last frame = %+v", last)
	}
	recs, err := e.sessions.Load(context.Background(), sessionKey(ss), memory.Window{})
	if err != nil || len(recs) != 1 || recs[0].Message.Text() != "hello?" {
		t.Fatalf("stored = %+v, %v", recs, err)
	}
}

// A model that stops mid-answer ends the turn with model_error (timeout);
// the user's message and the partial answer stay.
func TestChatIdleTimeoutKeepsPartial(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Turn{Text: "one two three four", Chunks: 4, StallAfter: 2})
	defer srv.Close()
	e := timeoutEnv(t, srv)
	a := e.createAgent(e.admin, map[string]any{"name": "stall", "timeouts": map[string]any{"idle_ms": 200}})
	ss, _ := e.srv.sessionFor(context.Background(), e.tenant(), a, "", "")
	resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "count", "session_id": ss.ID, "stream": true}, nil)
	frames, _ := readSSE(t, resp.Body)
	last := frames[len(frames)-1]
	if last.Event != "error" || last.Data["code"] != CodeModelError || !strings.Contains(last.Data["message"].(string), "timeout") {
		t.Fatalf("last frame = %+v", last)
	}
	recs, err := e.sessions.Load(context.Background(), sessionKey(ss), memory.Window{})
	if err != nil || len(recs) != 2 || recs[0].Message.Text() != "count" || !recs[1].Partial || !strings.HasPrefix("one two three four", recs[1].Message.Text()) || recs[1].Message.Text() == "" {
		t.Fatalf("stored = %+v, %v", recs, err)
	}
}

// A blocking turn whose model never answers ends at the agent's turn
// deadline with model_error (timeout), the user's message kept.
func TestChatTurnTimeoutBlocking(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Turn{Text: "late", Delay: time.Hour})
	defer srv.Close()
	e := timeoutEnv(t, srv)
	a := e.createAgent(e.admin, map[string]any{"name": "slow", "timeouts": map[string]any{"turn_ms": 300}})
	ss, _ := e.srv.sessionFor(context.Background(), e.tenant(), a, "", "")
	eb := e.wantError(e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hello?", "session_id": ss.ID}, nil), http.StatusBadGateway, CodeModelError)
	if !strings.Contains(eb.Error.Message, "timeout") || !strings.Contains(eb.Error.Message, "turn_ms") {
		t.Fatalf("message %q", eb.Error.Message)
	}
	recs, err := e.sessions.Load(context.Background(), sessionKey(ss), memory.Window{})
	if err != nil || len(recs) != 1 || recs[0].Message.Text() != "hello?" {
		t.Fatalf("stored = %+v, %v", recs, err)
	}
}

// A blocking turn is bounded by the same first-token and idle timeouts as a
// streamed one (the model is called streaming either way), not only by the
// turn deadline; the idle case keeps the partial answer.
func TestChatStallTimeoutsBlocking(t *testing.T) {
	cases := []struct {
		name     string
		turn     llmtest.Turn
		timeouts map[string]any
		partial  bool
	}{
		{"first token", llmtest.Turn{Text: "never", ChunkDelay: time.Hour}, map[string]any{"first_token_ms": 200}, false},
		{"idle", llmtest.Turn{Text: "one two three four", Chunks: 4, StallAfter: 2}, map[string]any{"idle_ms": 200}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.NewServer(c.turn)
			defer srv.Close()
			e := timeoutEnv(t, srv)
			a := e.createAgent(e.admin, map[string]any{"name": "stall", "timeouts": c.timeouts})
			ss, _ := e.srv.sessionFor(context.Background(), e.tenant(), a, "", "")
			eb := e.wantError(e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hello?", "session_id": ss.ID}, nil), http.StatusBadGateway, CodeModelError)
			if !strings.Contains(eb.Error.Message, "timeout") || strings.Contains(eb.Error.Message, "turn_ms") {
				t.Fatalf("message %q, want the stall timeout, not the turn deadline", eb.Error.Message)
			}
			recs, err := e.sessions.Load(context.Background(), sessionKey(ss), memory.Window{})
			if err != nil || recs[0].Message.Text() != "hello?" {
				t.Fatalf("stored = %+v, %v", recs, err)
			}
			if got := len(recs) == 2 && recs[1].Partial && recs[1].Message.Text() != ""; got != c.partial {
				t.Fatalf("partial answer stored = %v, want %v (records %+v)", got, c.partial, recs)
			}
		})
	}
}

// The first-token limit bounds a model call, its retries included: a model
// that never sends its first token ends a blocking turn once the limit has
// passed, after one request, though the model retries failed attempts
// (before, each attempt had the whole limit: with two retries a 5 s limit
// held a turn past a 15 s turn_ms).
func TestFirstTokenLimitSpansRetries(t *testing.T) {
	hung := llmtest.Turn{Text: "never", ChunkDelay: time.Hour}
	srv := llmtest.NewServer(hung, hung, hung)
	defer srv.Close()
	e := newEnv(t, nil, func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) {
			d, err := openai.New(openai.WithBaseURL(srv.URL()), openai.WithAPIKey("sk-test"),
				openai.WithModel("gpt-test"), openai.WithHTTPClient(srv.Client()))
			if err != nil {
				return nil, err
			}
			return llm.New(d, llm.WithRetries(2), llm.WithBackoff(time.Millisecond, time.Millisecond)), nil
		}
	})
	a := e.createAgent(e.admin, map[string]any{"name": "hung", "timeouts": map[string]any{"first_token_ms": 200, "turn_ms": 60_000}})
	eb := e.wantError(e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hello?"}, nil), http.StatusBadGateway, CodeModelError)
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times; the first-token limit ends the call, retries included", n)
	}
	if !strings.Contains(eb.Error.Message, "no first token within 200ms") || !strings.Contains(eb.Error.Message, "first_token_ms") {
		t.Fatalf("message %q, want the first-token limit", eb.Error.Message)
	}
}
