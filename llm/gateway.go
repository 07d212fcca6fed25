package llm

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Model is the model type users hold. It wraps a provider's [ChatModel] and
// adds, the same way for every provider:
//
//   - retries of connection errors, 408, 409, 429 and 5xx answers and broken
//     streams, with capped exponential backoff and full jitter, honouring the
//     provider's Retry-After / Retry-After-Ms; a stream is never retried once
//     a chunk has reached the caller;
//   - timeouts: per attempt, per call (a total deadline), and for streams a
//     first-token and an idle-between-chunks timeout, on by default (see
//     [WithStallTimeouts] and [WithTotalTimeout]);
//   - ordered fallbacks to other models, tried when this one fails before its
//     first chunk;
//   - hooks that see every request, response, retry and error.
//
// A Model is safe for concurrent use. Build one with [New], or with
// provider.Open from a "provider/model" string.
type Model struct {
	driver     ChatModel
	name       string
	maxRetries int
	baseDelay  time.Duration
	maxDelay   time.Duration
	maxWait    time.Duration
	timeout    time.Duration
	firstToken time.Duration
	idle       time.Duration
	total      time.Duration
	fallbacks  []*Model
	hooks      []Hook
	caps       Capabilities
	sleep      func(ctx context.Context, d time.Duration) error
}

// Option configures a [Model].
type Option func(*Model)

// WithName sets the name reported by Name and in events (default: the
// driver's Name, or "model").
func WithName(name string) Option { return func(m *Model) { m.name = name } }

// WithRetries sets how many times a failed call is retried (default 2; 0
// disables retries).
func WithRetries(n int) Option {
	return func(m *Model) { m.maxRetries = max(n, 0) }
}

// WithBackoff sets the first retry delay and the cap of the exponential
// backoff (defaults 500ms and 20s). Each delay is drawn uniformly from
// [d/2, d] where d = min(cap, base·2^attempt).
func WithBackoff(base, maxDelay time.Duration) Option {
	return func(m *Model) { m.baseDelay, m.maxDelay = base, maxDelay }
}

// WithMaxRetryAfter caps how long the model waits when the provider asks for
// a delay with Retry-After (default 60s). A longer request is not waited out:
// the rate-limit error is returned (or the next fallback tried).
func WithMaxRetryAfter(d time.Duration) Option { return func(m *Model) { m.maxWait = d } }

// WithTimeout bounds each attempt, a whole stream included (default: none
// beyond the caller's context). An attempt that times out is retried while
// the caller's context lives.
func WithTimeout(d time.Duration) Option { return func(m *Model) { m.timeout = d } }

// The default stall timeouts of a [Model]'s streams (see
// [WithStallTimeouts]). A stream from a hung provider ends with an
// [ErrTimeout] error after at most these times.
const (
	// DefaultFirstTokenTimeout bounds the wait for a stream's first content
	// chunk (text, reasoning or a tool call): the model's time to think.
	DefaultFirstTokenTimeout = 60 * time.Second
	// DefaultIdleTimeout bounds the silence between two chunks of a stream
	// once its content has begun.
	DefaultIdleTimeout = 30 * time.Second
)

// WithStallTimeouts sets how long a stream may wait for its first content
// chunk (text, reasoning or a tool call; default
// DefaultFirstTokenTimeout) and how long it may then stay silent between
// two chunks (default DefaultIdleTimeout). Zero or less disables the
// timeout. A stream that stalls ends with an [ErrTimeout] error, retried
// like a failed attempt while nothing has reached the caller. Time the
// caller spends handling a chunk does not count. A non-streamed call
// yields its whole answer at once, so only its total deadline applies (see
// [WithTotalTimeout]).
func WithStallTimeouts(firstToken, idle time.Duration) Option {
	return func(m *Model) { m.firstToken, m.idle = firstToken, idle }
}

// WithTotalTimeout bounds each Generate and Stream call as a whole,
// attempts, backoff and fallbacks included (default: none beyond the
// caller's context, so that a call costs no timer; zero or less disables
// it). A call that overruns ends with an [ErrTimeout] error; a stream
// keeps what it already yielded. weft serve bounds each turn instead (5
// minutes unless the agent says otherwise).
func WithTotalTimeout(d time.Duration) Option { return func(m *Model) { m.total = d } }

// WithFallbacks sets models tried in order when this one fails (after its
// own retries) before any chunk reached the caller. A fallback applies its
// own retries and hooks.
func WithFallbacks(models ...*Model) Option {
	return func(m *Model) { m.fallbacks = append(m.fallbacks, models...) }
}

// WithHook adds a hook called for every request, response, retry and error.
func WithHook(h Hook) Option { return func(m *Model) { m.hooks = append(m.hooks, h) } }

// WithCapabilities overrides the capabilities the driver declares.
func WithCapabilities(c Capabilities) Option { return func(m *Model) { m.caps = c } }

// withSleep replaces the backoff sleep (tests).
func withSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(m *Model) { m.sleep = f }
}

// New returns a Model over a provider's driver.
func New(driver ChatModel, opts ...Option) *Model {
	m := &Model{
		driver:     driver,
		maxRetries: 2,
		baseDelay:  500 * time.Millisecond,
		maxDelay:   20 * time.Second,
		maxWait:    60 * time.Second,
		firstToken: DefaultFirstTokenTimeout,
		idle:       DefaultIdleTimeout,
		sleep:      sleepCtx,
	}
	if n, ok := driver.(Namer); ok {
		m.name = n.Name()
	}
	if r, ok := driver.(CapabilityReporter); ok {
		m.caps = r.Capabilities()
	} else {
		m.caps = Capabilities{Tools: true, Streaming: true}
	}
	for _, o := range opts {
		o(m)
	}
	if m.name == "" {
		m.name = "model"
	}
	return m
}

// With returns a copy of m with opts applied over m's configuration, for
// example an agent's own timeouts over a shared model; m is unchanged.
func (m *Model) With(opts ...Option) *Model {
	c := *m
	c.fallbacks = slices.Clone(m.fallbacks)
	c.hooks = slices.Clone(m.hooks)
	for _, o := range opts {
		o(&c)
	}
	return &c
}

// Name returns the model's name, normally "provider/model".
func (m *Model) Name() string { return m.name }

// Driver returns the provider driver the model wraps.
func (m *Model) Driver() ChatModel { return m.driver }

// Capabilities returns what the model declares it can do.
func (m *Model) Capabilities() Capabilities { return m.caps }

// EventKind says what an [Event] reports.
type EventKind uint8

// The kinds of model event.
const (
	// EventRequest: an attempt is about to be sent.
	EventRequest EventKind = iota + 1
	// EventResponse: a call completed (for streams: the stream ended cleanly).
	EventResponse
	// EventRetry: an attempt failed and will be retried after Delay.
	EventRetry
	// EventFallback: the model failed and the next fallback will be tried.
	EventFallback
	// EventError: the call failed for good.
	EventError
)

// Event is what a [Hook] sees. Fields that do not apply to the kind are zero.
type Event struct {
	Kind EventKind
	// Model is the name of the model the event concerns.
	Model string
	// Operation is "generate", "stream", "embed", "moderate" or "image".
	Operation string
	// Attempt counts from 1.
	Attempt  int
	Request  *Request
	Response *Response
	Err      error
	// Delay is the wait before a retry.
	Delay time.Duration
	// Duration is how long the attempt took, for responses and errors.
	Duration time.Duration
}

// Hook observes a model's calls. Hooks run synchronously on the caller's
// goroutine and must be quick; they must not modify the request.
type Hook func(ctx context.Context, e Event)

func (m *Model) emit(ctx context.Context, e Event) {
	if len(m.hooks) == 0 {
		return
	}
	e.Model = m.name
	for _, h := range m.hooks {
		h(ctx, e)
	}
}

// Generate sends req and returns the complete answer, retrying and falling
// back as configured.
func (m *Model) Generate(ctx context.Context, req *Request) (*Response, error) {
	ctx, cancel := m.callContext(ctx)
	defer cancel()
	var firstErr error
	for i, mm := range m.chain() {
		resp, err := mm.generateOnce(ctx, req)
		if err == nil {
			return resp, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil || i == len(m.fallbacks) {
			return nil, err
		}
		m.emit(ctx, Event{Kind: EventFallback, Operation: "generate", Err: err})
	}
	return nil, firstErr
}

func (m *Model) chain() []*Model {
	if len(m.fallbacks) == 0 {
		return []*Model{m}
	}
	return append([]*Model{m}, m.fallbacks...)
}

func (m *Model) generateOnce(ctx context.Context, req *Request) (*Response, error) {
	return retry(ctx, m, "generate", req, func(ctx context.Context) (*Response, error) {
		return m.driver.Generate(ctx, req)
	}, func(r *Response) *Response { return r })
}

// retry runs call until it succeeds, fails for good, or retries run out.
func retry[T any](ctx context.Context, m *Model, op string, req *Request, call func(context.Context) (T, error), asResp func(T) *Response) (T, error) {
	var zero T
	for attempt := 1; ; attempt++ {
		m.emit(ctx, Event{Kind: EventRequest, Operation: op, Attempt: attempt, Request: req})
		start := time.Now()
		actx, cancel := m.attemptContext(ctx)
		v, err := call(actx)
		err = m.classify(ctx, actx, err)
		cancel(nil)
		if err == nil {
			m.emit(ctx, Event{Kind: EventResponse, Operation: op, Attempt: attempt, Request: req, Response: asResp(v), Duration: time.Since(start)})
			return v, nil
		}
		delay, ok := m.retryDelay(ctx, err, attempt)
		if !ok {
			m.emit(ctx, Event{Kind: EventError, Operation: op, Attempt: attempt, Request: req, Err: err, Duration: time.Since(start)})
			return zero, err
		}
		m.emit(ctx, Event{Kind: EventRetry, Operation: op, Attempt: attempt, Request: req, Err: err, Delay: delay, Duration: time.Since(start)})
		if serr := m.sleep(ctx, delay); serr != nil {
			return zero, err
		}
	}
}

// callContext applies the total deadline of one call.
func (m *Model) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if m.total > 0 {
		return context.WithTimeoutCause(ctx, m.total, &timeoutError{what: "complete answer", d: m.total})
	}
	return ctx, noCancel
}

func noCancel() {}

// timeoutError is the cause of a context that a Model's own timeout ended.
type timeoutError struct {
	what string // "complete answer", "first token", "next chunk"
	d    time.Duration
}

func (e *timeoutError) Error() string { return fmt.Sprintf("no %s within %v", e.what, e.d) }

// attemptContext returns the context of one attempt and the function that
// ends it, with a cause when a stream's watchdog ends it.
func (m *Model) attemptContext(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	if m.timeout > 0 {
		tctx, cancelT := context.WithTimeout(ctx, m.timeout)
		actx, cancel := context.WithCancelCause(tctx)
		return actx, func(cause error) { cancel(cause); cancelT() }
	}
	return context.WithCancelCause(ctx)
}

// classify turns context errors into typed errors: the caller's own
// cancellation stays as it is; an attempt that hit the model's timeout
// becomes a retryable ErrTimeout.
func (m *Model) classify(parent, attempt context.Context, err error) error {
	if err == nil || parent.Err() != nil {
		if err != nil && errors.Is(parent.Err(), context.DeadlineExceeded) {
			var te *timeoutError
			if errors.As(context.Cause(parent), &te) {
				// The model's total deadline, not the caller's.
				return &Error{Kind: ErrTimeout, Message: te.Error(), Err: err}
			}
			if !errors.Is(err, ErrTimeout) {
				return &Error{Kind: ErrTimeout, Message: "deadline exceeded", Err: err}
			}
		}
		if err != nil && errors.Is(parent.Err(), context.Canceled) && IsRetryable(err) {
			// An HTTP driver may report the caller's cancellation as a
			// failed connection; it is the caller's cancellation.
			return parent.Err()
		}
		return err
	}
	var te *timeoutError
	if attempt.Err() != nil && errors.As(context.Cause(attempt), &te) {
		// The stream's watchdog ended the attempt. The driver's error only
		// says that its context was cancelled: it is not kept, so that the
		// timeout never reads as the caller's cancellation.
		return &Error{Kind: ErrTimeout, Message: te.Error(), StatusCode: -1}
	}
	if attempt.Err() != nil && errors.Is(attempt.Err(), context.DeadlineExceeded) {
		return &Error{Kind: ErrTimeout, Message: fmt.Sprintf("no answer within %v", m.timeout), Err: err, StatusCode: -1}
	}
	var e *Error
	if !errors.As(err, &e) {
		// Drivers should return *Error; an untyped failure is treated as
		// the provider being unreachable.
		return &Error{Kind: ErrUnavailable, Err: err}
	}
	return err
}

// retryDelay says whether err is worth another attempt and how long to wait.
func (m *Model) retryDelay(ctx context.Context, err error, attempt int) (time.Duration, bool) {
	if attempt > m.maxRetries || ctx.Err() != nil {
		return 0, false
	}
	var e *Error
	if !errors.As(err, &e) || !e.Retryable() {
		return 0, false
	}
	if e.RetryAfter > 0 {
		if e.RetryAfter > m.maxWait {
			return 0, false
		}
		return e.RetryAfter, true
	}
	d := m.baseDelay << (attempt - 1)
	if d > m.maxDelay || d <= 0 {
		d = m.maxDelay
	}
	d = d/2 + rand.N(d/2+1)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return 0, false
	}
	return d, true
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stream sends req and yields the answer as it is produced. Failures before
// the first chunk are retried, then handed to the fallbacks; once a chunk has
// been yielded, an error ends the stream as it is. Breaking out of the loop
// cancels the request.
func (m *Model) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		ctx, cancel := m.callContext(ctx)
		defer cancel()
		var wd watchdog
		defer wd.stop()
		chain := m.chain()
		for i, mm := range chain {
			delivered, err, stopped := mm.streamOnce(ctx, req, &wd, yield)
			if err == nil || stopped {
				return
			}
			if delivered || ctx.Err() != nil || i == len(chain)-1 {
				yield(Chunk{}, err)
				return
			}
			m.emit(ctx, Event{Kind: EventFallback, Operation: "stream", Err: err})
		}
	}
}

// streamOnce runs one model's attempts. delivered reports whether a chunk
// reached the caller; stopped whether the caller broke out of the loop.
func (m *Model) streamOnce(ctx context.Context, req *Request, wd *watchdog, yield func(Chunk, error) bool) (delivered bool, err error, stopped bool) {
	var metas []Chunk
	for attempt := 1; ; attempt++ {
		m.emit(ctx, Event{Kind: EventRequest, Operation: "stream", Attempt: attempt, Request: req})
		start := time.Now()
		actx, cancel := m.attemptContext(ctx)
		wd.begin(m, cancel)
		var acc *Accumulator
		if len(m.hooks) > 0 {
			acc = new(Accumulator)
		}
		metas = metas[:0]
		var serr error
		for c, e := range m.driver.Stream(actx, req) {
			if e != nil {
				serr = e
				break
			}
			wd.pause(c.Type != ChunkMeta)
			if acc != nil {
				acc.Add(c)
			}
			if !delivered && c.Type == ChunkMeta {
				// Held back so that a retry cannot show the caller two
				// responses' metadata.
				metas = append(metas, c)
				wd.resume()
				continue
			}
			if !delivered {
				delivered = true
				for _, mc := range metas {
					if !yield(mc, nil) {
						cancel(nil)
						return true, nil, true
					}
				}
			}
			if !yield(c, nil) {
				cancel(nil)
				return true, nil, true
			}
			wd.resume()
		}
		wd.stop()
		if serr == nil && actx.Err() != nil && ctx.Err() == nil {
			// A driver that ends quietly when cancelled did not finish.
			serr = actx.Err()
		}
		serr = m.classify(ctx, actx, serr)
		cancel(nil)
		if serr == nil {
			if !delivered {
				for _, mc := range metas {
					if !yield(mc, nil) {
						return true, nil, true
					}
				}
			}
			var resp *Response
			if acc != nil {
				resp = acc.Response()
			}
			m.emit(ctx, Event{Kind: EventResponse, Operation: "stream", Attempt: attempt, Request: req, Response: resp, Duration: time.Since(start)})
			return true, nil, false
		}
		delay, ok := m.retryDelay(ctx, serr, attempt)
		if delivered || !ok {
			m.emit(ctx, Event{Kind: EventError, Operation: "stream", Attempt: attempt, Request: req, Err: serr, Duration: time.Since(start)})
			return delivered, serr, false
		}
		m.emit(ctx, Event{Kind: EventRetry, Operation: "stream", Attempt: attempt, Request: req, Err: serr, Delay: delay, Duration: time.Since(start)})
		if e := m.sleep(ctx, delay); e != nil {
			return false, serr, false
		}
	}
}

// watchdog ends a stream attempt whose model goes quiet: no content chunk
// within the first-token timeout, or no chunk within the idle timeout once
// content has begun. It is paused while the caller handles a chunk. One
// watchdog (and one timer) serves every attempt of a call.
type watchdog struct {
	mu      sync.Mutex
	m       *Model                  // whose timeouts apply
	stall   context.CancelCauseFunc // ends the current attempt
	t       *time.Timer
	started bool // content has begun: the idle timeout applies
	armed   bool
}

// begin arms the watchdog for an attempt of m that stall ends.
func (w *watchdog) begin(m *Model, stall context.CancelCauseFunc) {
	w.mu.Lock()
	w.m, w.stall, w.started = m, stall, false
	w.mu.Unlock()
	w.resume()
}

func (w *watchdog) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.armed {
		return // stopped after the timer had begun to fire
	}
	w.armed = false
	if w.started {
		w.stall(&timeoutError{what: "next chunk", d: w.m.idle})
		return
	}
	w.stall(&timeoutError{what: "first token", d: w.m.firstToken})
}

// pause stops the clock while the caller handles a chunk; content says
// whether the chunk is part of the answer.
func (w *watchdog) pause(content bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked()
	if content {
		w.started = true
	}
}

// resume restarts the clock after a chunk was handled.
func (w *watchdog) resume() {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.m.firstToken
	if w.started {
		d = w.m.idle
	}
	switch {
	case d <= 0:
		return
	case w.t == nil:
		w.t = time.AfterFunc(d, w.fire)
	default:
		w.t.Reset(d)
	}
	w.armed = true
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked()
}

func (w *watchdog) stopLocked() {
	if w.t != nil {
		w.t.Stop()
	}
	w.armed = false
}

// Embed returns embeddings, retrying as configured. It returns an error
// matching ErrUnsupported when the driver cannot embed.
func (m *Model) Embed(ctx context.Context, req *EmbedRequest) (*EmbedResponse, error) {
	e, ok := m.driver.(EmbeddingModel)
	if !ok {
		return nil, fmt.Errorf("%s: embeddings: %w", m.name, ErrUnsupported)
	}
	return retry(ctx, m, "embed", nil, func(ctx context.Context) (*EmbedResponse, error) {
		return e.Embed(ctx, req)
	}, func(*EmbedResponse) *Response { return nil })
}

// Moderate classifies inputs, retrying as configured. It returns an error
// matching ErrUnsupported when the driver cannot moderate.
func (m *Model) Moderate(ctx context.Context, inputs []string) ([]ModerationResult, error) {
	mm, ok := m.driver.(ModerationModel)
	if !ok {
		return nil, fmt.Errorf("%s: moderation: %w", m.name, ErrUnsupported)
	}
	return retry(ctx, m, "moderate", nil, func(ctx context.Context) ([]ModerationResult, error) {
		return mm.Moderate(ctx, inputs)
	}, func([]ModerationResult) *Response { return nil })
}

// GenerateImage generates images, retrying as configured. It returns an error
// matching ErrUnsupported when the driver cannot generate images.
func (m *Model) GenerateImage(ctx context.Context, req *ImageRequest) (*ImageResponse, error) {
	im, ok := m.driver.(ImageModel)
	if !ok {
		return nil, fmt.Errorf("%s: images: %w", m.name, ErrUnsupported)
	}
	return retry(ctx, m, "image", nil, func(ctx context.Context) (*ImageResponse, error) {
		return im.GenerateImage(ctx, req)
	}, func(*ImageResponse) *Response { return nil })
}
