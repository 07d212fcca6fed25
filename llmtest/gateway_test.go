package llmtest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/provider/openai"
)

// These tests drive a real llm.Model over the OpenAI driver against the fake
// server: the gateway's retry rules meeting real wire behaviour.

func openaiModel(t testing.TB, srv *llmtest.Server, opts ...llm.Option) *llm.Model {
	t.Helper()
	d, err := openai.New(
		openai.WithBaseURL(srv.URL()),
		openai.WithAPIKey("sk-test"),
		openai.WithModel("gpt-test"),
		openai.WithHTTPClient(srv.Client()),
	)
	if err != nil {
		t.Fatal(err)
	}
	return llm.New(d, opts...)
}

// retries records the gateway's retry events.
type retries struct {
	mu     sync.Mutex
	events []llm.Event
}

func (r *retries) hook() llm.Option {
	return llm.WithHook(func(_ context.Context, e llm.Event) {
		if e.Kind == llm.EventRetry {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		}
	})
}

func (r *retries) delays() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for _, e := range r.events {
		out = append(out, e.Delay)
	}
	return out
}

var hello = &llm.Request{Messages: []llm.Message{llm.UserMessage("hello")}}

func TestGatewayWaitsOutRateLimit(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		srv := llmtest.NewServer(llmtest.RateLimited(15*time.Millisecond), llmtest.RateLimited(25*time.Millisecond), llmtest.Reply("finally"))
		var r retries
		m := openaiModel(t, srv, r.hook(), llm.WithBackoff(time.Hour, time.Hour)) // only Retry-After can make this pass quickly
		var resp *llm.Response
		var err error
		if stream {
			resp, err = llm.Collect(m.Stream(context.Background(), hello))
		} else {
			resp, err = m.Generate(context.Background(), hello)
		}
		if err != nil || resp.Text() != "finally" {
			t.Fatalf("stream=%v: %v %+v", stream, err, resp)
		}
		if got := r.delays(); len(got) != 2 || got[0] != 15*time.Millisecond || got[1] != 25*time.Millisecond {
			t.Errorf("stream=%v: retry delays %v, want the Retry-After-Ms values", stream, got)
		}
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("stream=%v: %d requests", stream, n)
		}
		srv.Close()
	}
}

func TestGatewayRateLimitTooLong(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.RateLimited(2 * time.Minute))
	defer srv.Close()
	_, err := openaiModel(t, srv, llm.WithMaxRetryAfter(time.Minute)).Generate(context.Background(), hello)
	var e *llm.Error
	if !errors.As(err, &e) || !errors.Is(err, llm.ErrRateLimited) || e.RetryAfter != 2*time.Minute || e.StatusCode != 429 {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (a 2-minute Retry-After is over the 1-minute cap)", n)
	}
}

func TestGatewayErrorAfter200(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{Text: "one two three four", FailAfter: 2, Error: &llmtest.APIError{Message: "stream interrupted"}},
		llmtest.Reply("must not be requested"),
	)
	defer srv.Close()
	var texts []string
	var gotErr error
	for c, err := range openaiModel(t, srv).Stream(context.Background(), hello) {
		if err != nil {
			gotErr = err
			break
		}
		if c.Type == llm.ChunkText {
			texts = append(texts, c.Text)
		}
	}
	if !errors.Is(gotErr, llm.ErrStreamBroken) || !strings.Contains(gotErr.Error(), "stream interrupted") {
		t.Errorf("err = %v, want ErrStreamBroken with the server's message", gotErr)
	}
	if strings.Join(texts, "") != "one two" {
		t.Errorf("text before the error = %q", texts)
	}
	if n, p := len(srv.Requests()), srv.Pending(); n != 1 || p != 1 {
		t.Errorf("%d requests, %d turns left: a stream must not be retried once text reached the caller", n, p)
	}
}

func TestGatewayServerErrorAfter200(t *testing.T) {
	t.Parallel()
	// OpenAI's own mid-stream failure names server_error; whatever kind the
	// driver gives it, text already shown means no retry.
	srv := llmtest.NewServer(llmtest.StreamError("one two three", 1, "The server had an error while processing your request."), llmtest.Reply("never"))
	defer srv.Close()
	resp, err := llm.Collect(openaiModel(t, srv).Stream(context.Background(), hello))
	if err == nil || !llm.IsRetryable(err) || resp.Text() != "one" {
		t.Errorf("err %v text %q", err, resp.Text())
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestGatewayRetriesBeforeFirstChunk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		first llmtest.Turn
	}{
		{"error after 200 before any text", llmtest.Turn{Text: "lost", Error: &llmtest.APIError{Message: "overloaded"}}},
		{"EOF without finish and no text", llmtest.Turn{NoFinish: true}},
		{"500", llmtest.ServerError()},
		{"503", llmtest.Turn{Status: 503}},
		{"409", llmtest.HTTPError(409, "conflict", "try again")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(tt.first, llmtest.Turn{Text: "recovered", Model: "gpt-test-2"})
			defer srv.Close()
			m := openaiModel(t, srv, llm.WithBackoff(time.Millisecond, time.Millisecond))
			var metas int
			var acc llm.Accumulator
			for c, err := range m.Stream(context.Background(), hello) {
				if err != nil {
					t.Fatal(err)
				}
				if c.Type == llm.ChunkMeta {
					metas++
				}
				acc.Add(c)
			}
			resp := acc.Response()
			if resp.Text() != "recovered" || resp.FinishReason != llm.FinishStop {
				t.Errorf("response %+v", resp)
			}
			if metas > 1 || (metas == 1 && resp.Model != "gpt-test-2") {
				t.Errorf("%d meta chunks, model %q: the failed attempt's metadata leaked", metas, resp.Model)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

func TestGatewayEOFAfterTextIsBroken(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "cut off here", NoFinish: true}, llmtest.Reply("never"))
	defer srv.Close()
	resp, err := llm.Collect(openaiModel(t, srv).Stream(context.Background(), hello))
	if !errors.Is(err, llm.ErrStreamBroken) || resp.Text() != "cut off here" || len(srv.Requests()) != 1 {
		t.Errorf("err %v text %q requests %d", err, resp.Text(), len(srv.Requests()))
	}
}

func TestGatewayNoRetryOnClientErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		turn llmtest.Turn
		kind error
	}{
		{llmtest.Unauthorized(), llm.ErrAuthentication},
		{llmtest.HTTPError(400, "invalid_request_error", "bad"), llm.ErrBadRequest},
	} {
		srv := llmtest.NewServer(tt.turn, llmtest.Reply("never"))
		_, err := openaiModel(t, srv).Generate(context.Background(), hello)
		if !errors.Is(err, tt.kind) || len(srv.Requests()) != 1 {
			t.Errorf("err %v after %d requests, want %v after 1", err, len(srv.Requests()), tt.kind)
		}
		srv.Close()
	}
}

func TestGatewaySlowFirstByteTimesOut(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Delay: time.Hour}, llmtest.Reply("second attempt"))
	defer srv.Close()
	var r retries
	m := openaiModel(t, srv, llm.WithTimeout(50*time.Millisecond), llm.WithBackoff(time.Millisecond, time.Millisecond), r.hook())
	resp, err := m.Generate(context.Background(), hello)
	if err != nil || resp.Text() != "second attempt" {
		t.Fatalf("%v %+v", err, resp)
	}
	if len(r.events) != 1 || !errors.Is(r.events[0].Err, llm.ErrTimeout) {
		t.Errorf("retry events %+v, want one ErrTimeout", r.events)
	}
}

func TestGatewayFallbackToSecondServer(t *testing.T) {
	t.Parallel()
	down := llmtest.NewServer(llmtest.Turn{Status: 503}, llmtest.Turn{Status: 503})
	defer down.Close()
	up := llmtest.NewServer(llmtest.Reply("from the fallback"))
	defer up.Close()
	m := openaiModel(t, down, llm.WithRetries(1), llm.WithBackoff(time.Millisecond, time.Millisecond),
		llm.WithFallbacks(openaiModel(t, up)))
	resp, err := llm.Collect(m.Stream(context.Background(), hello))
	if err != nil || resp.Text() != "from the fallback" || len(down.Requests()) != 2 || len(up.Requests()) != 1 {
		t.Errorf("%v %q; requests %d and %d", err, resp.Text(), len(down.Requests()), len(up.Requests()))
	}
}

func TestGatewayToolCallsOverTheWire(t *testing.T) {
	t.Parallel()
	turn := llmtest.Turn{
		Text:      "Let me compute.",
		ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "add", Arguments: `{"a":2,"b":3}`}, {ID: "call_2", Name: "mul", Arguments: `{"a":"é✓"}`}},
		ArgChunks: 5,
		KeepAlive: true,
		Usage:     llm.Usage{PromptTokens: 20, CompletionTokens: 9, TotalTokens: 29},
	}
	srv := llmtest.NewServer(turn, turn)
	defer srv.Close()
	m := openaiModel(t, srv)
	streamed, err := llm.Collect(m.Stream(context.Background(), hello))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := m.Generate(context.Background(), hello)
	if err != nil {
		t.Fatal(err)
	}
	for _, resp := range []*llm.Response{streamed, whole} {
		calls := resp.Message.ToolCalls
		if resp.Text() != "Let me compute." || len(calls) != 2 || resp.FinishReason != llm.FinishToolCalls || resp.Usage != turn.Usage {
			t.Fatalf("response %+v", resp)
		}
		if calls[0] != (llm.ToolCall{ID: "call_1", Name: "add", Arguments: `{"a":2,"b":3}`}) || calls[1].Arguments != `{"a":"é✓"}` {
			t.Errorf("tool calls %+v", calls)
		}
	}
	if !srv.Requests()[0].IncludeUsage {
		t.Errorf("the driver did not ask for usage in the stream")
	}
}

func TestGatewayCallerCancel(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "a b c d", ChunkDelay: time.Hour})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	m := openaiModel(t, srv)
	errc := make(chan error, 1)
	go func() {
		_, err := llm.Collect(m.Stream(ctx, hello))
		errc <- err
	}()
	for len(srv.Requests()) == 0 {
		time.Sleep(time.Millisecond) // waiting for the request to arrive, not timing it
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || llm.IsRetryable(err) {
		t.Errorf("err = %v, want the caller's cancellation, not retried", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests after a cancel", n)
	}
}

// The fake server also checks what clients send.
func TestGatewaySendsAuth(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	if _, err := openaiModel(t, srv).Generate(context.Background(), hello); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Header.Get("Authorization") != "Bearer sk-test" || r.Method != http.MethodPost || r.Model != "gpt-test" {
		t.Errorf("request %+v", r)
	}
}

func TestGatewayEmbedRetries(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	srv.EnqueueEmbed(llmtest.RateLimited(5*time.Millisecond), llmtest.Turn{Status: 502})
	var r retries
	m := openaiModel(t, srv, r.hook(), llm.WithBackoff(time.Millisecond, time.Millisecond))
	resp, err := m.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{"red apples", "green apples"}, Dimensions: 32})
	if err != nil || len(resp.Vectors) != 2 || len(resp.Vectors[0]) != 32 {
		t.Fatalf("%v %+v", err, resp)
	}
	if len(r.events) != 2 || !errors.Is(r.events[0].Err, llm.ErrRateLimited) || !errors.Is(r.events[1].Err, llm.ErrUnavailable) {
		t.Errorf("retry events %+v", r.events)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests", n)
	}

	srv.EnqueueEmbed(llmtest.Unauthorized())
	if _, err := m.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{"x"}}); !errors.Is(err, llm.ErrAuthentication) {
		t.Errorf("err = %v", err)
	}
}

func TestGatewayConcurrentStreams(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	var mu sync.Mutex
	responses := 0
	m := openaiModel(t, srv, llm.WithHook(func(_ context.Context, e llm.Event) {
		if e.Kind == llm.EventResponse {
			mu.Lock()
			responses++
			mu.Unlock()
		}
	}))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				prompt := strings.Repeat("w ", g+i+1)
				resp, err := llm.Collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage(prompt)}}))
				if err != nil || resp.Text() != prompt {
					t.Errorf("%v %q for %q", err, resp.Text(), prompt)
					return
				}
			}
		})
	}
	wg.Wait()
	if responses != 80 || len(srv.Requests()) != 80 {
		t.Errorf("%d response events, %d requests; want 80", responses, len(srv.Requests()))
	}
}

func TestGatewayStreamFirstTokenTimeout(t *testing.T) {
	t.Parallel()
	// The headers come at once, then nothing: a model that never starts.
	srv := llmtest.NewServer(llmtest.Turn{Text: "never", ChunkDelay: time.Hour})
	defer srv.Close()
	m := openaiModel(t, srv, llm.WithRetries(0), llm.WithStallTimeouts(50*time.Millisecond, time.Hour))
	_, err := llm.Collect(m.Stream(context.Background(), hello))
	if !errors.Is(err, llm.ErrTimeout) || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "no first token within 50ms") {
		t.Fatalf("err = %v, want a first-token ErrTimeout", err)
	}
}

func TestGatewayStreamFirstTokenTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "never", ChunkDelay: time.Hour}, llmtest.Reply("second attempt"))
	defer srv.Close()
	var r retries
	// The first attempt never sends a chunk; the second answers at once. The
	// timeout is generous so that a loaded machine (race detector, parallel
	// packages) cannot time out the second attempt too.
	m := openaiModel(t, srv, llm.WithStallTimeouts(time.Second, time.Hour), llm.WithBackoff(time.Millisecond, time.Millisecond), r.hook())
	resp, err := llm.Collect(m.Stream(context.Background(), hello))
	if err != nil || resp.Text() != "second attempt" {
		t.Fatalf("%v %+v", err, resp)
	}
	if len(r.events) != 1 || !errors.Is(r.events[0].Err, llm.ErrTimeout) {
		t.Errorf("retry events %+v, want one ErrTimeout", r.events)
	}
}

func TestGatewayStreamIdleTimeoutKeepsPartial(t *testing.T) {
	t.Parallel()
	// Two pieces of text, then the model hangs.
	srv := llmtest.NewServer(llmtest.Turn{Text: "one two three four", Chunks: 4, StallAfter: 2}, llmtest.Reply("never retried"))
	defer srv.Close()
	m := openaiModel(t, srv, llm.WithStallTimeouts(time.Hour, 500*time.Millisecond), llm.WithBackoff(time.Millisecond, time.Millisecond))
	var text strings.Builder
	var err error
	for c, e := range m.Stream(context.Background(), hello) {
		if e != nil {
			err = e
			break
		}
		text.WriteString(c.Text)
	}
	if !errors.Is(err, llm.ErrTimeout) || !strings.Contains(err.Error(), "no next chunk within 500ms") {
		t.Fatalf("err = %v, want an idle ErrTimeout", err)
	}
	if got := text.String(); got == "" || !strings.HasPrefix("one two three four", got) || len(got) == len("one two three four") || len(srv.Requests()) != 1 {
		t.Errorf("got %q after %d requests, want the two pieces before the stall and no retry", text.String(), len(srv.Requests()))
	}
}

func TestGatewayStreamSlowConsumerIsNotIdle(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "one two three", Chunks: 3})
	defer srv.Close()
	m := openaiModel(t, srv, llm.WithRetries(0), llm.WithStallTimeouts(time.Hour, time.Second))
	var text strings.Builder
	for c, err := range m.Stream(context.Background(), hello) {
		if err != nil {
			t.Fatalf("a caller slower than the idle timeout: %v", err)
		}
		text.WriteString(c.Text)
		time.Sleep(1500 * time.Millisecond) // the caller's time is not the model's silence
	}
	if text.String() != "one two three" {
		t.Errorf("text %q", text.String())
	}
}

func TestGatewayTotalTimeout(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "late", Delay: time.Hour}, llmtest.Turn{Text: "late", Delay: time.Hour})
	defer srv.Close()
	m := openaiModel(t, srv, llm.WithTotalTimeout(80*time.Millisecond))
	_, err := m.Generate(context.Background(), hello)
	if !errors.Is(err, llm.ErrTimeout) || !strings.Contains(err.Error(), "no complete answer within 80ms") {
		t.Fatalf("Generate: err = %v, want the total deadline as ErrTimeout", err)
	}
	_, err = llm.Collect(m.Stream(context.Background(), hello))
	if !errors.Is(err, llm.ErrTimeout) || !strings.Contains(err.Error(), "no complete answer within 80ms") {
		t.Fatalf("Stream: err = %v, want the total deadline as ErrTimeout", err)
	}
}

func TestModelWithLeavesTheOriginal(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "slow", Delay: 100 * time.Millisecond}, llmtest.Turn{Text: "slow", Delay: 100 * time.Millisecond})
	defer srv.Close()
	base := openaiModel(t, srv, llm.WithRetries(0))
	tight := base.With(llm.WithTotalTimeout(20 * time.Millisecond))
	if _, err := tight.Generate(context.Background(), hello); !errors.Is(err, llm.ErrTimeout) {
		t.Fatalf("the copy's own timeout: err = %v, want ErrTimeout", err)
	}
	if resp, err := base.Generate(context.Background(), hello); err != nil || resp.Text() != "slow" {
		t.Fatalf("the original: %v %+v", err, resp)
	}
}
