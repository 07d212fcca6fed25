// Package client is a Go client of Weft's agent platform, the HTTP API that
// `weft serve` exposes (see docs/api.md): agents, chat (blocking and streamed),
// sessions, cancellation and API keys.
//
//	c := client.New("http://127.0.0.1:8080", os.Getenv("WEFT_API_KEY"))
//	agent, _, err := c.ApplyAgent(ctx, client.Agent{Name: "support", SystemPrompt: "Be brief."})
//	for ev, err := range c.ChatStream(ctx, agent.ID, client.ChatRequest{Query: "Hello"}) {
//		if err != nil { ... }
//		if ev.Type == client.EventMessageDelta { fmt.Print(ev.Text) }
//	}
//
// Every method takes a context first and honours it for the whole exchange,
// including the reading of a stream. Failures the server reports come back
// as *[Error], with the HTTP status and the API's stable error code.
//
// A request the server rate-limits (429) is retried after the wait its
// Retry-After header asks for, at most [DefaultRetries] times and only for
// waits up to [MaxRetryWait] (see [WithRetries]); uploads are retried when
// their reader can seek back.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/platform/api"
)

// Client talks to one Weft platform server with one API key. It is safe for
// concurrent use.
type Client struct {
	base      string
	key       string
	hc        *http.Client
	userAgent string
	retries   int
}

// Retries of rate-limited requests (see [WithRetries]).
const (
	// DefaultRetries is how many times a 429 answer is retried.
	DefaultRetries = 5
	// MaxRetryWait is the longest Retry-After the client waits out; a
	// longer one is returned as the error at once.
	MaxRetryWait = time.Minute
)

// Option configures a [Client].
type Option func(*Client)

// WithHTTPClient sets the HTTP client requests go through (default
// http.DefaultClient). Give it no overall Timeout if you stream: contexts
// bound each call instead.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// WithRetries sets how many times a request answered 429 is retried after
// its Retry-After wait (default [DefaultRetries]; 0 disables retries).
func WithRetries(n int) Option {
	return func(c *Client) {
		if n >= 0 {
			c.retries = n
		}
	}
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the server at baseURL (e.g.
// "http://127.0.0.1:8080"; a trailing "/" or "/v1" is accepted) that
// authenticates with apiKey.
func New(baseURL, apiKey string, opts ...Option) *Client {
	base := strings.TrimRight(strings.TrimSpace(baseURL), "/")
	base = strings.TrimSuffix(base, "/v1")
	c := &Client{base: base, key: apiKey, hc: http.DefaultClient, userAgent: "weft-client-go", retries: DefaultRetries}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL returns the server's base URL, without a trailing "/".
func (c *Client) BaseURL() string { return c.base }

// Error is a failure reported by the server: a non-2xx answer, or the
// terminal "error" event of a stream (then Status is 0).
type Error struct {
	// Status is the HTTP status; 0 for an error event of a stream.
	Status int `json:"-"`
	// Code is the API's stable error code, e.g. "not_found",
	// "unauthorized", "model_error" (see docs/api.md, "Errors").
	Code string `json:"code"`
	// Message says what went wrong, naming the offending field of a bad
	// request.
	Message string `json:"message"`
	// RequestID is the server's X-Request-Id of the failed request, for
	// its logs.
	RequestID string `json:"-"`
	// RetryAfter is the wait the server asked for with Retry-After (429,
	// 503), zero when it did not.
	RetryAfter time.Duration `json:"-"`
	// Answer is, on the 409 of an interrupt answered already, the answer
	// stored.
	Answer json.RawMessage `json:"answer,omitempty"`
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Status != 0 {
		fmt.Fprintf(&b, "%d ", e.Status)
	}
	b.WriteString(e.Code)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// The error codes of docs/api.md that callers commonly branch on.
const (
	CodeInvalidRequest = api.CodeInvalidRequest
	CodeUnauthorized   = api.CodeUnauthorized
	CodeNotFound       = api.CodeNotFound
	CodeConflict       = api.CodeConflict
	CodeRateLimited    = api.CodeRateLimited
	CodeModelError     = api.CodeModelError
	CodeContextTooLong = api.CodeContextTooLong
	CodeCancelled      = api.CodeCancelled
	CodeUnavailable    = api.CodeUnavailable
)

// IsNotFound reports whether err is the server's not_found.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeNotFound
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// newRequest builds an authenticated request; body, when not nil, is sent
// as JSON.
func (c *Client) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	if ctx == nil {
		return nil, errors.New("client: nil context")
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("client: encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	return req, nil
}

// send performs req and returns the response when it is a 2xx; otherwise it
// reads the error body and returns an *Error. A 429 is retried after its
// Retry-After (one second without one) when the body can be replayed.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := c.hc.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		e := errorFrom(resp)
		resp.Body.Close()
		wait := e.RetryAfter
		if wait <= 0 {
			wait = time.Second
		}
		if e.Status != http.StatusTooManyRequests || attempt >= c.retries || wait > MaxRetryWait ||
			req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
			return nil, e
		}
		t := time.NewTimer(wait)
		select {
		case <-req.Context().Done():
			t.Stop()
			return nil, e
		case <-t.C:
		}
		next := req.Clone(req.Context())
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, e
			}
			next.Body = body
		}
		req = next
	}
}

// errorFrom reads a non-2xx answer into an *Error.
func errorFrom(resp *http.Response) *Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id"), RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	var body struct {
		Error *Error `json:"error"`
	}
	text := http.StatusText(resp.StatusCode)
	code := "http_" + strings.ReplaceAll(strings.ToLower(text), " ", "_")
	if text == "" {
		code, text = "http_"+strconv.Itoa(resp.StatusCode), "HTTP "+strconv.Itoa(resp.StatusCode)
	}
	if json.Unmarshal(b, &body) == nil && body.Error != nil && body.Error.Code != "" {
		e.Code, e.Message, e.Answer = body.Error.Code, body.Error.Message, body.Error.Answer
		if e.Message == "" {
			e.Message = text
		}
		return e
	}
	// Not the API's error shape: a proxy, or not a Weft server at all.
	e.Code = code
	e.Message = strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD")
	if r := []rune(e.Message); len(r) > 200 {
		e.Message = string(r[:200]) + "…"
	}
	if e.Message == "" {
		e.Message = text
	}
	return e
}

// do sends a JSON request and decodes a JSON answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	req, err := c.newRequest(ctx, method, path, in)
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// Ready reports whether the server is up and its stores answer
// (GET /readyz). It needs no API key.
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/readyz", nil, nil)
}

func pathEscape(s string) string { return url.PathEscape(s) }

// retryAfter parses a Retry-After header: delay seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 || secs > int64(24*time.Hour/time.Second) {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
