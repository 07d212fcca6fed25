package llm

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"testing"
	"time"
)

// step scripts one attempt of fakeDriver.
type step struct {
	chunks []Chunk // streamed before err; Generate collects them
	err    error   // returned (Generate) or yielded after the chunks (Stream)
	block  bool    // wait for the attempt's context to end, then fail with its error
	during func()  // called when the attempt starts (e.g. to cancel the caller)
}

// fakeDriver is a ChatModel that plays a script of attempts and counts
// them. Attempts past the script fail the test.
type fakeDriver struct {
	t     *testing.T
	name  string
	log   *callLog
	mu    sync.Mutex
	steps []step
	n     int
	ctxs  []context.Context
}

// callLog records which driver ran each attempt, across fallbacks.
type callLog struct {
	mu    sync.Mutex
	names []string
}

func (l *callLog) add(name string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.names = append(l.names, name)
	l.mu.Unlock()
}

func newFake(t *testing.T, steps ...step) *fakeDriver {
	return &fakeDriver{t: t, name: "fake", steps: steps}
}

func (d *fakeDriver) next(ctx context.Context) step {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctxs = append(d.ctxs, ctx)
	d.log.add(d.name)
	if d.n >= len(d.steps) {
		d.t.Errorf("%s: unexpected attempt %d (script has %d)", d.name, d.n+1, len(d.steps))
		return step{err: &Error{Kind: ErrBadRequest, Message: "script exhausted"}}
	}
	s := d.steps[d.n]
	d.n++
	return s
}

func (d *fakeDriver) attempts() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

func (d *fakeDriver) Generate(ctx context.Context, req *Request) (*Response, error) {
	s := d.next(ctx)
	if s.during != nil {
		s.during()
	}
	if s.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if s.err != nil {
		return nil, s.err
	}
	var a Accumulator
	for _, c := range s.chunks {
		a.Add(c)
	}
	return a.Response(), nil
}

func (d *fakeDriver) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		s := d.next(ctx)
		if s.during != nil {
			s.during()
		}
		for _, c := range s.chunks {
			if !yield(c, nil) {
				return
			}
		}
		if s.block {
			<-ctx.Done()
			yield(Chunk{}, ctx.Err())
			return
		}
		if s.err != nil {
			yield(Chunk{}, s.err)
		}
	}
}

func ok(text string) step {
	return step{chunks: []Chunk{TextChunk(text), FinishChunk(FinishStop)}}
}

func fail(kind error, status int) step {
	return step{err: &Error{Kind: kind, Provider: "fake", StatusCode: status, Message: fmt.Sprintf("status %d", status)}}
}

// sleeps records the delays the model asked to wait, without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) option() Option {
	return withSleep(func(ctx context.Context, d time.Duration) error {
		s.mu.Lock()
		s.d = append(s.d, d)
		s.mu.Unlock()
		return ctx.Err()
	})
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.d)
}

var req = &Request{Messages: []Message{UserMessage("hi")}}

// call runs the model in one of two ways and returns the text the caller
// received and the error.
type callFunc func(ctx context.Context, m *Model) (string, error)

var calls = map[string]callFunc{
	"generate": func(ctx context.Context, m *Model) (string, error) {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			return "", err
		}
		return resp.Text(), nil
	},
	"stream": func(ctx context.Context, m *Model) (string, error) {
		resp, err := Collect(m.Stream(ctx, req))
		return resp.Text(), err
	},
}

func TestRetryByKind(t *testing.T) {
	t.Parallel()
	connRefused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	tests := []struct {
		name     string
		err      error
		retried  bool
		wantKind error
	}{
		{"408", fail(ErrTimeout, 408).err, true, ErrTimeout},
		{"409", fail(ErrUnavailable, 409).err, true, ErrUnavailable},
		{"429", fail(ErrRateLimited, 429).err, true, ErrRateLimited},
		{"500", fail(ErrUnavailable, 500).err, true, ErrUnavailable},
		{"502", fail(ErrUnavailable, 502).err, true, ErrUnavailable},
		{"503", fail(ErrUnavailable, 503).err, true, ErrUnavailable},
		{"504", fail(ErrTimeout, 504).err, true, ErrTimeout},
		{"connection error (untyped)", connRefused, true, ErrUnavailable},
		{"connection error (typed)", &Error{Kind: ErrUnavailable, Err: connRefused}, true, ErrUnavailable},
		{"broken stream", &Error{Kind: ErrStreamBroken, Message: "EOF without finish"}, true, ErrStreamBroken},
		{"400", fail(ErrBadRequest, 400).err, false, ErrBadRequest},
		{"401", fail(ErrAuthentication, 401).err, false, ErrAuthentication},
		{"403", fail(ErrAuthentication, 403).err, false, ErrAuthentication},
		{"413 context too long", fail(ErrContextTooLong, 413).err, false, ErrContextTooLong},
		{"content filtered", fail(ErrContentFiltered, 400).err, false, ErrContentFiltered},
	}
	for _, tt := range tests {
		for op, call := range calls {
			t.Run(tt.name+"/"+op, func(t *testing.T) {
				t.Parallel()
				// Fails for good: 1 attempt, or 1 + 2 retries.
				want := 1
				if tt.retried {
					want = 3
				}
				script := make([]step, want)
				for i := range script {
					script[i] = step{err: tt.err}
				}
				d := newFake(t, script...)
				var s sleeps
				_, err := call(context.Background(), New(d, WithRetries(2), s.option()))
				if !errors.Is(err, tt.wantKind) {
					t.Fatalf("err = %v, want kind %v", err, tt.wantKind)
				}
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("err %T is not an *Error", err)
				}
				if tt.err == connRefused && !errors.Is(err, connRefused) {
					t.Errorf("cause lost: %v", err)
				}
				if d.attempts() != want || len(s.all()) != want-1 {
					t.Errorf("attempts %d sleeps %d, want %d and %d", d.attempts(), len(s.all()), want, want-1)
				}
				if !tt.retried {
					return
				}
				// Retryable: fails twice, then succeeds.
				d = newFake(t, step{err: tt.err}, step{err: tt.err}, ok("at last"))
				text, err := call(context.Background(), New(d, WithRetries(2), s.option()))
				if err != nil || text != "at last" || d.attempts() != 3 {
					t.Errorf("after retries: %q %v (%d attempts)", text, err, d.attempts())
				}
			})
		}
	}
}

func TestRetriesDisabled(t *testing.T) {
	t.Parallel()
	d := newFake(t, fail(ErrUnavailable, 503))
	if _, err := New(d, WithRetries(0), withSleep(nil)).Generate(context.Background(), req); !errors.Is(err, ErrUnavailable) || d.attempts() != 1 {
		t.Errorf("err %v after %d attempts", err, d.attempts())
	}
	d = newFake(t, fail(ErrUnavailable, 503))
	if _, err := New(d, WithRetries(-3), withSleep(nil)).Generate(context.Background(), req); err == nil || d.attempts() != 1 {
		t.Errorf("negative retries: err %v after %d attempts", err, d.attempts())
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			limited := func(d time.Duration) step {
				return step{err: &Error{Kind: ErrRateLimited, StatusCode: 429, RetryAfter: d}}
			}
			d := newFake(t, limited(1500*time.Millisecond), limited(3*time.Second), ok("done"))
			var s sleeps
			// The backoff would be far shorter; the provider's delays win,
			// even past the backoff cap.
			m := New(d, WithBackoff(time.Millisecond, 2*time.Second), s.option())
			if text, err := call(context.Background(), m); err != nil || text != "done" {
				t.Fatalf("%q %v", text, err)
			}
			if got := s.all(); !slices.Equal(got, []time.Duration{1500 * time.Millisecond, 3 * time.Second}) {
				t.Errorf("delays = %v, want the Retry-After values", got)
			}

			// A delay longer than WithMaxRetryAfter is not waited out.
			d = newFake(t, limited(2*time.Minute))
			s = sleeps{}
			m = New(d, WithMaxRetryAfter(time.Minute), s.option())
			if _, err := call(context.Background(), m); !errors.Is(err, ErrRateLimited) || d.attempts() != 1 || len(s.all()) != 0 {
				t.Errorf("long Retry-After: %v after %d attempts, sleeps %v", err, d.attempts(), s.all())
			}
		})
	}
}

func TestBackoffCappedAndJittered(t *testing.T) {
	t.Parallel()
	const base, maxDelay, retries = 100 * time.Millisecond, time.Second, 6
	seen := map[time.Duration]bool{}
	for range 40 {
		script := make([]step, retries+1)
		for i := range script {
			script[i] = fail(ErrUnavailable, 500)
		}
		d := newFake(t, script...)
		var s sleeps
		if _, err := New(d, WithRetries(retries), WithBackoff(base, maxDelay), s.option()).Generate(context.Background(), req); err == nil {
			t.Fatal("want an error")
		}
		got := s.all()
		if len(got) != retries {
			t.Fatalf("%d delays, want %d", len(got), retries)
		}
		for i, delay := range got {
			ceil := min(maxDelay, base<<i)
			if delay < ceil/2 || delay > ceil {
				t.Errorf("retry %d waited %v, want within [%v, %v]", i+1, delay, ceil/2, ceil)
			}
			seen[delay] = true
		}
	}
	if len(seen) < 100 {
		t.Errorf("only %d distinct delays in 240: no jitter?", len(seen))
	}
}

func TestNoRetryPastCallerDeadline(t *testing.T) {
	t.Parallel()
	// The next backoff (about an hour) would outlive the caller's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := newFake(t, fail(ErrUnavailable, 503))
	var s sleeps
	_, err := New(d, WithBackoff(time.Hour, time.Hour), s.option()).Generate(ctx, req)
	if !errors.Is(err, ErrUnavailable) || d.attempts() != 1 || len(s.all()) != 0 {
		t.Errorf("err %v after %d attempts and sleeps %v", err, d.attempts(), s.all())
	}
}

func TestStreamNoRetryAfterFirstChunk(t *testing.T) {
	t.Parallel()
	broken := &Error{Kind: ErrStreamBroken, Message: "error after 200"}
	d := newFake(t, step{chunks: []Chunk{TextChunk("partial ")}, err: broken})
	fb := newFake(t)
	var got []Chunk
	var gotErr error
	for c, err := range New(d, WithFallbacks(New(fb)), withSleep(nil)).Stream(context.Background(), req) {
		if err != nil {
			gotErr = err
			continue
		}
		got = append(got, c)
	}
	if !errors.Is(gotErr, ErrStreamBroken) || len(got) != 1 || got[0].Text != "partial " {
		t.Errorf("chunks %v err %v", got, gotErr)
	}
	if d.attempts() != 1 || fb.attempts() != 0 {
		t.Errorf("attempts %d, fallback attempts %d: nothing may repeat once text reached the caller", d.attempts(), fb.attempts())
	}
}

func TestStreamHoldsBackMeta(t *testing.T) {
	t.Parallel()
	meta := func(id string) Chunk { return Chunk{Type: ChunkMeta, ResponseID: id, Model: "m-" + id} }
	d := newFake(t,
		step{chunks: []Chunk{meta("first")}, err: fail(ErrUnavailable, 502).err},
		step{chunks: []Chunk{meta("second"), TextChunk("hello"), FinishChunk(FinishStop)}},
	)
	var s sleeps
	var got []Chunk
	for c, err := range New(d, s.option()).Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	want := []Chunk{meta("second"), TextChunk("hello"), FinishChunk(FinishStop)}
	if !slices.Equal(got, want) {
		t.Errorf("chunks = %+v, want %+v", got, want)
	}

	// A stream with nothing but metadata still delivers it.
	d = newFake(t, step{chunks: []Chunk{meta("only")}})
	resp, err := Collect(New(d).Stream(context.Background(), req))
	if err != nil || resp.ID != "only" || resp.Model != "m-only" {
		t.Errorf("meta-only stream: %+v %v", resp, err)
	}
}

func TestFallbacks(t *testing.T) {
	t.Parallel()
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			log := &callLog{}
			primary := newFake(t, fail(ErrUnavailable, 500), fail(ErrUnavailable, 500))
			second := newFake(t, fail(ErrAuthentication, 401))
			third := newFake(t, ok("from third"))
			unused := newFake(t)
			for i, d := range []*fakeDriver{primary, second, third, unused} {
				d.name, d.log = fmt.Sprint("m", i), log
			}
			var events []string
			hook := func(_ context.Context, e Event) { events = append(events, fmt.Sprintf("%d:%s", e.Kind, e.Model)) }
			var s sleeps
			m := New(primary, WithName("m0"), WithRetries(1), s.option(), WithHook(hook), WithFallbacks(
				New(second, WithName("m1")),
				New(third, WithName("m2")),
				New(unused, WithName("m3")),
			))
			text, err := call(context.Background(), m)
			if err != nil || text != "from third" {
				t.Fatalf("%q %v", text, err)
			}
			if want := []string{"m0", "m0", "m1", "m2"}; !slices.Equal(log.names, want) {
				t.Errorf("attempts in order %v, want %v", log.names, want)
			}
			// The primary's hooks see its own attempts and each hand-over.
			want := []string{
				fmt.Sprintf("%d:m0", EventRequest), fmt.Sprintf("%d:m0", EventRetry),
				fmt.Sprintf("%d:m0", EventRequest), fmt.Sprintf("%d:m0", EventError),
				fmt.Sprintf("%d:m0", EventFallback), fmt.Sprintf("%d:m0", EventFallback),
			}
			if !slices.Equal(events, want) {
				t.Errorf("events %v, want %v", events, want)
			}
		})
	}
}

func TestFallbacksAllFail(t *testing.T) {
	t.Parallel()
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			m := New(newFake(t, fail(ErrAuthentication, 401)), WithFallbacks(New(newFake(t, fail(ErrBadRequest, 400)))))
			_, err := call(context.Background(), m)
			if !errors.Is(err, ErrBadRequest) {
				t.Errorf("err = %v, want the last fallback's error", err)
			}
		})
	}
}

func TestPerAttemptTimeoutRetried(t *testing.T) {
	t.Parallel()
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			d := newFake(t, step{block: true}, ok("second try"))
			var retryErr error
			hook := func(_ context.Context, e Event) {
				if e.Kind == EventRetry {
					retryErr = e.Err
				}
			}
			var s sleeps
			text, err := call(context.Background(), New(d, WithTimeout(5*time.Millisecond), WithHook(hook), s.option()))
			if err != nil || text != "second try" || d.attempts() != 2 {
				t.Fatalf("%q %v after %d attempts", text, err, d.attempts())
			}
			if !errors.Is(retryErr, ErrTimeout) || !errors.Is(retryErr, context.DeadlineExceeded) {
				t.Errorf("retried error = %v, want ErrTimeout wrapping the deadline", retryErr)
			}
			// Exhausted: the error says timeout.
			d = newFake(t, step{block: true}, step{block: true})
			_, err = call(context.Background(), New(d, WithRetries(1), WithTimeout(time.Millisecond), s.option()))
			if !errors.Is(err, ErrTimeout) || d.attempts() != 2 {
				t.Errorf("err %v after %d attempts", err, d.attempts())
			}
		})
	}
}

func TestCallerCancellationNotRetried(t *testing.T) {
	t.Parallel()
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			d := newFake(t, step{block: true, during: cancel})
			fb := newFake(t)
			var s sleeps
			_, err := call(ctx, New(d, s.option(), WithFallbacks(New(fb))))
			if !errors.Is(err, context.Canceled) || d.attempts() != 1 || fb.attempts() != 0 || len(s.all()) != 0 {
				t.Errorf("err %v, attempts %d, fallback %d, sleeps %v", err, d.attempts(), fb.attempts(), s.all())
			}
			if IsRetryable(err) {
				t.Errorf("cancellation reported retryable")
			}
		})
	}
}

func TestCallerCancellationReportedAsConnectionFailure(t *testing.T) {
	t.Parallel()
	// An HTTP driver sees the caller's cancellation as a failed request and
	// may report it as ErrUnavailable; the caller must still get its own
	// cancellation back, not a retryable provider failure.
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			d := newFake(t, step{during: cancel, err: &Error{Kind: ErrUnavailable, Provider: "fake", Message: "context canceled", Err: context.Canceled}})
			var s sleeps
			_, err := call(ctx, New(d, s.option()))
			if !errors.Is(err, context.Canceled) || IsRetryable(err) || errors.Is(err, ErrUnavailable) {
				t.Errorf("err = %v: want context.Canceled, not a retryable ErrUnavailable", err)
			}
			if d.attempts() != 1 || len(s.all()) != 0 {
				t.Errorf("%d attempts, sleeps %v", d.attempts(), s.all())
			}
		})
	}
}

func TestCallerDeadlineIsTimeout(t *testing.T) {
	t.Parallel()
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			d := newFake(t, step{block: true})
			var s sleeps
			_, err := call(ctx, New(d, s.option()))
			if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || d.attempts() != 1 || IsRetryable(err) {
				t.Errorf("err %v after %d attempts", err, d.attempts())
			}
		})
	}
}

func TestSleepInterruptedByCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	d := newFake(t, fail(ErrUnavailable, 503))
	m := New(d, withSleep(func(ctx context.Context, _ time.Duration) error {
		cancel()
		return ctx.Err()
	}))
	_, err := m.Generate(ctx, req)
	if !errors.Is(err, ErrUnavailable) || d.attempts() != 1 {
		t.Errorf("err %v after %d attempts", err, d.attempts())
	}
}

func TestHooks(t *testing.T) {
	t.Parallel()
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			var events []Event
			hook := func(_ context.Context, e Event) { events = append(events, e) }
			d := newFake(t, fail(ErrRateLimited, 429), ok("fine"))
			var s sleeps
			if _, err := call(context.Background(), New(d, WithName("fake/m"), WithHook(hook), s.option())); err != nil {
				t.Fatal(err)
			}
			kinds := make([]EventKind, len(events))
			for i, e := range events {
				kinds[i] = e.Kind
				if e.Model != "fake/m" || e.Operation != op || e.Request != req {
					t.Errorf("event %d = %+v", i, e)
				}
			}
			if want := []EventKind{EventRequest, EventRetry, EventRequest, EventResponse}; !slices.Equal(kinds, want) {
				t.Fatalf("kinds = %v, want %v", kinds, want)
			}
			if events[1].Attempt != 1 || !errors.Is(events[1].Err, ErrRateLimited) || events[1].Delay <= 0 {
				t.Errorf("retry event = %+v", events[1])
			}
			if e := events[3]; e.Attempt != 2 || e.Response == nil || e.Response.Text() != "fine" || e.Duration < 0 {
				t.Errorf("response event = %+v", e)
			}

			events = nil
			d = newFake(t, fail(ErrAuthentication, 401))
			if _, err := call(context.Background(), New(d, WithHook(hook))); err == nil {
				t.Fatal("want an error")
			}
			if len(events) != 2 || events[1].Kind != EventError || !errors.Is(events[1].Err, ErrAuthentication) {
				t.Errorf("error events = %+v", events)
			}
		})
	}
}

func TestStreamBreakCancelsAttempt(t *testing.T) {
	t.Parallel()
	d := newFake(t, step{chunks: []Chunk{TextChunk("a"), TextChunk("b"), FinishChunk(FinishStop)}})
	for range New(d).Stream(context.Background(), req) {
		break
	}
	if err := d.ctxs[0].Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("the attempt's context was not cancelled on break: %v", err)
	}
}

func TestOptionalAbilities(t *testing.T) {
	t.Parallel()
	m := New(newFake(t))
	ctx := context.Background()
	if _, err := m.Embed(ctx, &EmbedRequest{Inputs: []string{"x"}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Embed err = %v", err)
	}
	if _, err := m.Moderate(ctx, []string{"x"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Moderate err = %v", err)
	}
	if _, err := m.GenerateImage(ctx, &ImageRequest{Prompt: "x"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("GenerateImage err = %v", err)
	}
	if m.Name() != "model" || !m.Capabilities().Streaming || !m.Capabilities().Tools || m.Capabilities().JSONSchema {
		t.Errorf("defaults: name %q caps %+v", m.Name(), m.Capabilities())
	}
	if got := New(newFake(t), WithCapabilities(Capabilities{Vision: true})).Capabilities(); !got.Vision || got.Tools {
		t.Errorf("WithCapabilities: %+v", got)
	}

	e := &fullDriver{fakeDriver: newFake(t)}
	var s sleeps
	m = New(e, s.option())
	if m.Name() != "full/one" || !m.Capabilities().JSONSchema {
		t.Errorf("Namer/CapabilityReporter not used: %q %+v", m.Name(), m.Capabilities())
	}
	resp, err := m.Embed(ctx, &EmbedRequest{Inputs: []string{"x"}})
	if err != nil || len(resp.Vectors) != 1 || e.embeds != 2 {
		t.Errorf("Embed: %v, %d calls (want a retry after the 503)", err, e.embeds)
	}
	if res, err := m.Moderate(ctx, []string{"x"}); err != nil || !res[0].Flagged {
		t.Errorf("Moderate: %v %v", res, err)
	}
	if img, err := m.GenerateImage(ctx, &ImageRequest{Prompt: "x"}); err != nil || img.Images[0].URL != "u" {
		t.Errorf("GenerateImage: %v %v", img, err)
	}
}

type fullDriver struct {
	*fakeDriver
	embeds int
}

func (f *fullDriver) Name() string { return "full/one" }
func (f *fullDriver) Capabilities() Capabilities {
	return Capabilities{JSONSchema: true}
}
func (f *fullDriver) Embed(ctx context.Context, req *EmbedRequest) (*EmbedResponse, error) {
	f.embeds++
	if f.embeds == 1 {
		return nil, &Error{Kind: ErrUnavailable, StatusCode: 503}
	}
	return &EmbedResponse{Vectors: [][]float32{{1}}}, nil
}
func (f *fullDriver) Moderate(ctx context.Context, in []string) ([]ModerationResult, error) {
	return []ModerationResult{{Flagged: true}}, nil
}
func (f *fullDriver) GenerateImage(ctx context.Context, req *ImageRequest) (*ImageResponse, error) {
	return &ImageResponse{Images: []GeneratedImage{{URL: "u"}}}, nil
}

func TestStreamAllocations(t *testing.T) {
	// Without hooks the gateway adds a small constant per call, nothing per
	// chunk. The stall timeouts' watchdog is 4 of the constant (its state,
	// its timer and the timer's function).
	chunks := make([]Chunk, 0, 52)
	chunks = append(chunks, Chunk{Type: ChunkMeta, ResponseID: "r"})
	for range 50 {
		chunks = append(chunks, TextChunk("word "))
	}
	chunks = append(chunks, FinishChunk(FinishStop))
	d := &replayDriver{chunks: chunks}
	m := New(d)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		for _, err := range m.Stream(ctx, req) {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs > 16 {
		t.Errorf("a 52-chunk stream through the gateway allocates %v times, want at most 16", allocs)
	}
}

// replayDriver streams the same chunks every time.
type replayDriver struct{ chunks []Chunk }

func (d *replayDriver) Generate(ctx context.Context, req *Request) (*Response, error) {
	return nil, ErrUnsupported
}

func (d *replayDriver) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		for _, c := range d.chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
}
