package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
)

// Open returns a model whose every request is answered by the given turns,
// in order: the driver under test, pointed at a fake of its provider that
// serves the turns on the provider's own wire. For an OpenAI-compatible
// driver that fake is a [Server]; a driver of another wire brings a fake
// that writes each turn in that wire (see [Conformance]). Open may call
// t.Fatal and register cleanups with t.Cleanup.
type Open func(t *testing.T, turns ...Turn) llm.ChatModel

// Conformance runs the provider conformance suite on the driver that open
// returns: what every [llm.ChatModel] owes its callers, whatever wire it
// speaks. It checks
//
//   - Generate and Stream answer text, and a stream arrives in pieces;
//   - tool calls, whose arguments arrive split across chunks, are
//     assembled with their names, ids and arguments, in order, with finish
//     reason tool_calls, streamed and not;
//   - HTTP errors become [*llm.Error]s of the right kind: authentication
//     (401), rate limit (429, with the Retry-After delay), context too long
//     (400), and unavailable (500), streamed and not;
//   - an error sent after HTTP 200, in the middle of a stream, ends the
//     stream with an [*llm.Error];
//   - wrapped in an [llm.Model], failed attempts are retried (a 500, then a
//     429 with Retry-After) until the answer;
//   - a cancelled or expired context ends a call, also in the middle of a
//     stream, with an error that matches the context's.
//
// The fake behind open must honour these fields of [Turn]: Text and Chunks,
// ToolCalls and ArgChunks (as far as the wire splits arguments), Status,
// Error and Header (an error answer; Error.Code "context_length_exceeded",
// "invalid_api_key" or "rate_limit_exceeded" names the condition, which the
// fake words as its provider does), Error with FailAfter after HTTP 200 (a
// stream that breaks), Delay and ChunkDelay.
func Conformance(t *testing.T, open Open) {
	t.Helper()
	user := func() *llm.Request {
		return &llm.Request{Messages: []llm.Message{llm.UserMessage("What is the weather in Paris?")}}
	}
	calls := []ToolCall{
		{ID: "call_weather", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`},
		{ID: "call_time", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
	}
	both := func(t *testing.T, m llm.ChatModel, stream bool) (*llm.Response, error) {
		if stream {
			return llm.Collect(m.Stream(t.Context(), user()))
		}
		return m.Generate(t.Context(), user())
	}
	modes := []struct {
		name   string
		stream bool
	}{{"Generate", false}, {"Stream", true}}

	t.Run("Text", func(t *testing.T) {
		for _, mode := range modes {
			t.Run(mode.name, func(t *testing.T) {
				m := open(t, Reply("Hello, world."))
				resp, err := both(t, m, mode.stream)
				if err != nil {
					t.Fatalf("%s: %v", mode.name, err)
				}
				if resp.Text() != "Hello, world." || resp.FinishReason != llm.FinishStop {
					t.Errorf("%s = %q, finish %q; want %q, stop", mode.name, resp.Text(), resp.FinishReason, "Hello, world.")
				}
			})
		}
	})

	t.Run("StreamInPieces", func(t *testing.T) {
		m := open(t, Turn{Text: "The quick brown fox jumps over the lazy dog.", Chunks: 5})
		var text strings.Builder
		pieces := 0
		for c, err := range m.Stream(t.Context(), user()) {
			if err != nil {
				t.Fatal(err)
			}
			if c.Type == llm.ChunkText {
				pieces++
				text.WriteString(c.Text)
			}
		}
		if text.String() != "The quick brown fox jumps over the lazy dog." || pieces < 2 {
			t.Errorf("stream = %q in %d text chunks, want the text in several", text.String(), pieces)
		}
	})

	t.Run("ToolCalls", func(t *testing.T) {
		for _, mode := range modes {
			t.Run(mode.name, func(t *testing.T) {
				m := open(t, Turn{ToolCalls: calls, ArgChunks: 4})
				resp, err := both(t, m, mode.stream)
				if err != nil {
					t.Fatal(err)
				}
				checkCalls(t, resp, calls)
			})
		}
	})

	t.Run("Errors", func(t *testing.T) {
		tests := []struct {
			name       string
			turn       Turn
			kind       error
			status     int
			retryAfter bool
		}{
			{"Authentication", Unauthorized(), llm.ErrAuthentication, http.StatusUnauthorized, false},
			{"RateLimit", RateLimited(1500 * time.Millisecond), llm.ErrRateLimited, http.StatusTooManyRequests, true},
			{"ContextTooLong", ContextTooLong(), llm.ErrContextTooLong, http.StatusBadRequest, false},
			{"ServerError", ServerError(), llm.ErrUnavailable, http.StatusInternalServerError, false},
		}
		for _, tt := range tests {
			for _, mode := range modes {
				t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
					m := open(t, tt.turn)
					_, err := both(t, m, mode.stream)
					var e *llm.Error
					if !errors.As(err, &e) || !errors.Is(err, tt.kind) {
						t.Fatalf("err = %v, want an *llm.Error of kind %v", err, tt.kind)
					}
					if e.StatusCode != tt.status {
						t.Errorf("StatusCode = %d, want %d", e.StatusCode, tt.status)
					}
					if tt.retryAfter && e.RetryAfter <= 0 {
						t.Errorf("RetryAfter = %v, want the delay the server asked for", e.RetryAfter)
					}
					if got, want := llm.IsRetryable(err), tt.kind == llm.ErrRateLimited || tt.kind == llm.ErrUnavailable; got != want {
						t.Errorf("IsRetryable = %v, want %v", got, want)
					}
				})
			}
		}
	})

	t.Run("StreamBreaksAfter200", func(t *testing.T) {
		m := open(t, StreamError("one two three four five six", 2, "The server had an error while processing your request."))
		var text strings.Builder
		var err error
		for c, e := range m.Stream(t.Context(), user()) {
			if e != nil {
				err = e
				break
			}
			if c.Type == llm.ChunkText {
				text.WriteString(c.Text)
			}
		}
		var le *llm.Error
		if !errors.As(err, &le) {
			t.Fatalf("stream ended with %v after %q, want an *llm.Error", err, text.String())
		}
		if !strings.HasPrefix("one two three four five six", text.String()) {
			t.Errorf("text before the error = %q, not a prefix of the answer", text.String())
		}
	})

	t.Run("Retries", func(t *testing.T) {
		for _, mode := range modes {
			t.Run(mode.name, func(t *testing.T) {
				driver := open(t, ServerError(), RateLimited(10*time.Millisecond), Reply("ok"))
				m := llm.New(driver, llm.WithRetries(2), llm.WithBackoff(time.Millisecond, time.Millisecond))
				resp, err := both(t, m, mode.stream)
				if err != nil {
					t.Fatalf("after retries: %v", err)
				}
				if resp.Text() != "ok" {
					t.Errorf("after retries = %q, want %q", resp.Text(), "ok")
				}
			})
		}
	})

	t.Run("Cancellation", func(t *testing.T) {
		t.Run("BeforeTheCall", func(t *testing.T) {
			m := open(t, Reply("never"))
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if _, err := m.Generate(ctx, user()); !errors.Is(err, context.Canceled) {
				t.Errorf("Generate with a cancelled context: err = %v, want context.Canceled", err)
			}
		})
		t.Run("MidStream", func(t *testing.T) {
			m := open(t, Turn{Text: strings.Repeat("word ", 50), ChunkDelay: 20 * time.Millisecond})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var err error
			texts := 0
			for c, e := range m.Stream(ctx, user()) {
				if e != nil {
					err = e
					break
				}
				if c.Type == llm.ChunkText {
					texts++
					cancel()
				}
			}
			if texts == 0 || !errors.Is(err, context.Canceled) {
				t.Errorf("stream cancelled after its first text: %d text chunks, err = %v; want context.Canceled", texts, err)
			}
		})
		t.Run("Deadline", func(t *testing.T) {
			m := open(t, Turn{Text: "late", Delay: time.Minute})
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			if _, err := m.Generate(ctx, user()); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Generate past its deadline: err = %v, want context.DeadlineExceeded", err)
			}
		})
		t.Run("BreakStopsTheStream", func(t *testing.T) {
			m := open(t, Turn{Text: strings.Repeat("word ", 50), ChunkDelay: 20 * time.Millisecond})
			for c, err := range m.Stream(t.Context(), user()) {
				if err != nil {
					t.Fatal(err)
				}
				if c.Type == llm.ChunkText {
					break // the stream must stop here; its fake's cleanup waits for the connection
				}
			}
		})
	})
}

// checkCalls compares the tool calls of resp with want: names and
// arguments (as JSON values) exactly, ids present and distinct.
func checkCalls(t *testing.T, resp *llm.Response, want []ToolCall) {
	t.Helper()
	got := resp.Message.ToolCalls
	if len(got) != len(want) {
		t.Fatalf("tool calls = %+v, want %+v", got, want)
	}
	ids := map[string]bool{}
	for i, w := range want {
		g := got[i]
		var ga, wa any
		if err := json.Unmarshal([]byte(g.Arguments), &ga); err != nil {
			t.Errorf("tool call %d: arguments %q are not JSON: %v", i, g.Arguments, err)
		}
		_ = json.Unmarshal([]byte(w.Arguments), &wa)
		if g.Name != w.Name || !reflect.DeepEqual(ga, wa) {
			t.Errorf("tool call %d = %s(%s), want %s(%s)", i, g.Name, g.Arguments, w.Name, w.Arguments)
		}
		if g.ID == "" || ids[g.ID] {
			t.Errorf("tool call %d: id %q is empty or repeated", i, g.ID)
		}
		ids[g.ID] = true
	}
	if resp.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish reason = %q, want %q", resp.FinishReason, llm.FinishToolCalls)
	}
}
