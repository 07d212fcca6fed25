// Package httpapi is the HTTP plumbing the provider drivers share: a POST
// of a JSON body with the provider's headers, and the mapping of transport
// failures and non-2xx answers to [*llm.Error]. Each driver keeps its own
// wire; what differs in its error answers is read by a hook.
package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/weftlabs/weft/internal/redact"
	"github.com/weftlabs/weft/llm"
)

// MaxErrorBody bounds how much of an error answer is read.
const MaxErrorBody = 64 << 10

// DefaultClient sends the requests of drivers given no HTTP client. It is
// http.DefaultClient's transport with room for maxIdlePerHost idle
// connections to each host instead of 2: a server running many turns at
// once against one HTTP/1.1 endpoint (a local Ollama or vLLM, a gateway,
// an OpenAI-compatible proxy) otherwise dials a new connection for most
// calls and closes it after, once more than two are in flight. (HTTP/2
// endpoints multiplex one connection either way.)
var DefaultClient = &http.Client{Transport: defaultTransport()}

// maxIdlePerHost is how many idle connections to one host DefaultClient
// keeps.
const maxIdlePerHost = 256

func defaultTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	t.MaxIdleConns = 4 * maxIdlePerHost
	return t
}

// Client posts requests to one provider's API. Its fields are set once, by
// the driver's constructor; it is then safe for concurrent use.
type Client struct {
	// Provider names the provider in errors ("openai", "anthropic", …).
	Provider string
	// HTTP sends the requests (nil: DefaultClient).
	HTTP *http.Client
	// Header is sent with every request, authentication included.
	Header http.Header
	// ErrorBody reads the body of a non-2xx answer (at most MaxErrorBody
	// bytes) into e, which arrives with the kind the status implies, the
	// status, the Retry-After delay and the status text as its message:
	// the provider's message and code, and a finer kind when the body tells
	// one (a context too long sent as 400, say). Nil keeps e as it is.
	ErrorBody func(e *llm.Error, resp *http.Response, body []byte)
	// Unreachable is the message of a failure to reach the server (empty:
	// the cause's text alone).
	Unreachable string
	// Now is the clock Retry-After dates are read against (nil: time.Now).
	Now func() time.Time
}

// Post sends body as JSON to url, asking for accept, and returns the
// response of a 2xx answer, whose body the caller closes. Any other answer
// and any transport failure become an [*llm.Error].
func (c *Client) Post(ctx context.Context, url string, body []byte, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: c.Provider, Message: "building the request", Err: err}
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	hc := c.HTTP
	if hc == nil {
		hc = DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, c.TransportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, c.StatusError(resp)
	}
	return resp, nil
}

// StatusError turns a non-2xx answer into an [*llm.Error], reading its
// body through ErrorBody.
func (c *Client) StatusError(resp *http.Response) error {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	e := &llm.Error{
		Kind:       llm.KindForStatus(resp.StatusCode),
		Provider:   c.Provider,
		StatusCode: resp.StatusCode,
		Message:    http.StatusText(resp.StatusCode),
		RetryAfter: llm.ParseRetryAfter(resp.Header, now()),
	}
	if c.ErrorBody != nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
		c.ErrorBody(e, resp, b)
	}
	return c.Redact(e)
}

// Redact returns err with the client's credentials removed from its text:
// the values of Header's credential headers (Authorization, and any header
// whose name speaks of a key, a token, a secret or auth), each value's
// token after its scheme ("Bearer …"), as they are and JSON- or
// URL-encoded, and any bearer token or credential header an echoing
// server quoted (see redact.Secrets). An upstream that quotes the request
// back in an error body then cannot put the key in front of whoever
// reads the error. An [*llm.Error] in err's chain is redacted in place
// (its message, code and cause), so that it keeps its type; nil stays nil.
func (c *Client) Redact(err error) error {
	if err == nil {
		return nil
	}
	var s redact.Secrets
	for k, vs := range c.Header {
		if !credentialHeader(k) {
			continue
		}
		for _, v := range vs {
			s.Add(v)
			if _, token, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				s.Add(token)
			}
		}
	}
	var e *llm.Error
	if errors.As(err, &e) {
		e.Message = s.Text(e.Message)
		e.Code = s.Text(e.Code)
		e.Err = s.Error(e.Err)
	}
	return s.Error(err)
}

// RedactYield returns yield with every error it is given passed through
// [Client.Redact], for a driver's Stream to yield through.
func (c *Client) RedactYield(yield func(llm.Chunk, error) bool) func(llm.Chunk, error) bool {
	return func(ch llm.Chunk, err error) bool { return yield(ch, c.Redact(err)) }
}

// credentialHeader reports whether a header of that name carries a
// credential.
func credentialHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// TransportError describes a failure to reach the server or to read its
// answer. A caller's cancellation or deadline keeps its cause, so that
// errors.Is(err, context.Canceled) holds, and an expired deadline is of
// kind [llm.ErrTimeout].
func (c *Client) TransportError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		kind := llm.ErrUnavailable
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			kind = llm.ErrTimeout
		}
		return &llm.Error{Kind: kind, Provider: c.Provider, Message: ctxErr.Error(), Err: ctxErr}
	}
	return &llm.Error{Kind: llm.ErrUnavailable, Provider: c.Provider, Message: c.Unreachable, Err: err}
}
