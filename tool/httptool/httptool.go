// Package httptool turns an HTTP endpoint into a [tool.Tool]: the model's
// arguments fill the URL's path template and go into the query string (GET,
// DELETE, HEAD) or a JSON body (other methods), and the response body is the
// result.
//
// # Safety
//
// A tool's URL is configured by users of the platform and partly filled by a
// model, so every request goes through the outbound guard of package
// [netguard]: loopback, private, link-local, metadata and other internal
// destinations are refused, after DNS resolution and on every redirect (at
// most [netguard.MaxRedirects]), unless allowed by WEFT_HTTP_TOOLS_ALLOW
// ([netguard.AllowEnv]) or the guard given with [WithGuard]. Placeholders
// may not appear in the URL's scheme or host.
//
// Header values may reference secrets as ${secret:NAME} or ${NAME} (see
// package secretref); they are resolved on every call through the lookup
// given with [WithLookup] (by default: ${NAME} from the environment,
// ${secret:NAME} refused), so the configuration never holds the secret
// itself. A failed lookup fails the call with an error naming the
// reference. The values resolved for a call are redacted from its result
// and its error ([secretref.Placeholder]), so that an endpoint that echoes
// its request cannot hand the secret to the model or the user.
//
// # Results
//
// The response body, up to [Config.MaxResponseBytes] (default 64 KiB), is
// the result. A longer body is cut (at a UTF-8 boundary) and followed by the
// line "[response truncated: it exceeded N bytes]". A status outside 2xx is
// an error result giving the status and the start of the body; so are
// timeouts ([Config.Timeout], default 15 s) and refused destinations.
package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/internal/toolargs"
	"github.com/weftlabs/weft/tool/secretref"
)

// Defaults of a Config's zero fields.
const (
	DefaultTimeout          = 15 * time.Second
	DefaultMaxResponseBytes = 64 << 10
)

// errSnippetBytes is how much of a failed response's body the error shows.
const errSnippetBytes = 512

// Config describes an HTTP tool.
type Config struct {
	// Name is the tool's name (^[a-zA-Z0-9_-]{1,64}$).
	Name string
	// Description tells the model what the tool does.
	Description string
	// Method is the HTTP method; empty means GET.
	Method string
	// URL is an http or https URL whose path and query may hold
	// placeholders {param}, filled from the arguments of the same name
	// (escaped for their position).
	URL string
	// Headers are sent with every request. Values may reference secrets as
	// ${secret:NAME} or ${NAME}, resolved on each call (see [WithLookup]).
	Headers map[string]string
	// Parameters is the JSON Schema object of the arguments; empty means
	// none.
	Parameters json.RawMessage
	// Timeout bounds a whole call, redirects and body included; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes caps the result; zero means DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// Option configures New.
type Option func(*options)

type options struct {
	guard  *netguard.Guard
	lookup secretref.Lookup
}

// WithGuard sets the outbound guard of the tool's requests; the default is
// netguard.New() (allow list from [netguard.AllowEnv]).
func WithGuard(g *netguard.Guard) Option {
	return func(o *options) { o.guard = g }
}

// WithLookup sets how ${secret:NAME} and ${NAME} references in header
// values are resolved; the default is [secretref.Env].
func WithLookup(lookup secretref.Lookup) Option {
	return func(o *options) { o.lookup = lookup }
}

// Tool is an HTTP tool. It is safe for concurrent use.
type Tool struct {
	cfg     Config
	spec    llm.ToolSpec
	schema  toolargs.Schema
	method  string
	tmpl    *template
	lookup  secretref.Lookup
	client  *http.Client
	maxBody int64
	timeout time.Duration
}

var _ tool.Tool = (*Tool)(nil)

var (
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// New checks cfg and returns the tool. It fails on an invalid name, method,
// URL, header or parameter schema, and (without [WithGuard]) on an
// unparsable allow list in the environment.
func New(cfg Config, opts ...Option) (*Tool, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if !tool.ValidName(cfg.Name) {
		return nil, fmt.Errorf("httptool: tool name %q must match ^[a-zA-Z0-9_-]{1,64}$", cfg.Name)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("httptool: tool %s: "+format, append([]any{cfg.Name}, a...)...)
	}
	method := strings.ToUpper(cfg.Method)
	if method == "" {
		method = http.MethodGet
	}
	if !slices.Contains([]string{"GET", "HEAD", "DELETE", "POST", "PUT", "PATCH"}, method) {
		return nil, fail("method %q: want GET, HEAD, DELETE, POST, PUT or PATCH", cfg.Method)
	}
	tmpl, err := parseTemplate(cfg.URL)
	if err != nil {
		return nil, fail("%w", err)
	}
	for k, v := range cfg.Headers {
		if !headerName.MatchString(k) {
			return nil, fail("header name %q is not valid", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fail("header %s: value holds a line break", k)
		}
	}
	schema, err := toolargs.ParseSchema(cfg.Parameters)
	if err != nil {
		return nil, fail("%w", err)
	}
	params := cfg.Parameters
	if len(bytes.TrimSpace(params)) == 0 {
		params = toolargs.DefaultParameters
	}
	if o.guard == nil {
		g, err := netguard.New()
		if err != nil {
			return nil, fail("%w", err)
		}
		o.guard = g
	}
	if o.lookup == nil {
		o.lookup = secretref.Env
	}
	t := &Tool{
		cfg:     cfg,
		spec:    llm.ToolSpec{Name: cfg.Name, Description: cfg.Description, Parameters: params},
		schema:  schema,
		method:  method,
		tmpl:    tmpl,
		lookup:  o.lookup,
		maxBody: cfg.MaxResponseBytes,
		timeout: cfg.Timeout,
	}
	if t.maxBody <= 0 {
		t.maxBody = DefaultMaxResponseBytes
	}
	if t.timeout <= 0 {
		t.timeout = DefaultTimeout
	}
	tr := o.guard.Transport()
	tr.ResponseHeaderTimeout = t.timeout
	t.client = &http.Client{Transport: tr, CheckRedirect: o.guard.CheckRedirect}
	return t, nil
}

// Close releases the tool's idle connections. The tool stays usable.
func (t *Tool) Close() error {
	t.client.CloseIdleConnections()
	return nil
}

// Config returns the tool's configuration as given, header references
// unresolved.
func (t *Tool) Config() Config { return t.cfg }

// Spec describes the tool.
func (t *Tool) Spec() llm.ToolSpec { return t.spec }

// Call sends the request and returns the response body. Failures — bad
// arguments, a missing header secret, a refused destination, a timeout, a
// status outside 2xx — are returned as errors for the model to see. Secret
// values resolved for the call are redacted from both.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var red secretref.Redactor
	res, err := t.call(ctx, args, &red)
	if red.Empty() {
		return res, err
	}
	res.Content = red.Redact(res.Content)
	var se *StatusError
	if errors.As(err, &se) {
		se.Body = red.Redact(se.Body)
	}
	return res, red.RedactError(err)
}

func (t *Tool) call(ctx context.Context, args json.RawMessage, red *secretref.Redactor) (tool.Result, error) {
	obj, err := toolargs.Object(t.cfg.Name, t.schema, args)
	if err != nil {
		return tool.Result{}, err
	}
	u, rest, err := t.tmpl.fill(obj)
	if err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return tool.Result{}, &tool.ArgumentError{Tool: t.cfg.Name, Field: fe.field, Err: fe.err}
		}
		return tool.Result{}, fmt.Errorf("tool %s: %w", t.cfg.Name, err)
	}
	var body io.Reader
	switch t.method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
		if u, err = addQuery(u, rest); err != nil {
			var fe *fieldError
			errors.As(err, &fe)
			return tool.Result{}, &tool.ArgumentError{Tool: t.cfg.Name, Field: fe.field, Err: fe.err}
		}
	default:
		b, err := json.Marshal(rest)
		if err != nil {
			return tool.Result{}, &tool.ArgumentError{Tool: t.cfg.Name, Err: err}
		}
		body = bytes.NewReader(b)
	}

	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, t.method, u, body)
	if err != nil {
		return tool.Result{}, fmt.Errorf("tool %s: %w", t.cfg.Name, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/*;q=0.9, */*;q=0.5")
	req.Header.Set("User-Agent", "weft-httptool")
	for k, v := range t.cfg.Headers {
		val, err := t.expand(ctx, v, red)
		if err != nil {
			return tool.Result{}, fmt.Errorf("tool %s: header %s: %w", t.cfg.Name, k, err)
		}
		if k == "Host" || strings.EqualFold(k, "host") {
			req.Host = val
			continue
		}
		req.Header.Set(k, val)
	}

	resp, err := t.client.Do(req)
	if err != nil {
		return tool.Result{}, t.callError(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, t.maxBody+1))
	if err != nil {
		return tool.Result{}, t.callError(ctx, fmt.Errorf("read response: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return tool.Result{}, &StatusError{Tool: t.cfg.Name, StatusCode: resp.StatusCode, Status: resp.Status, Body: snippet(data, errSnippetBytes)}
	}
	if len(data) == 0 {
		return tool.Result{Content: "(empty response, HTTP " + resp.Status + ")"}, nil
	}
	truncated := int64(len(data)) > t.maxBody
	if truncated {
		data = cutUTF8(data, int(t.maxBody))
	}
	content := strings.ToValidUTF8(string(data), "\uFFFD")
	if truncated {
		content += fmt.Sprintf("\n[response truncated: it exceeded %d bytes]", t.maxBody)
	}
	return tool.Result{Content: content}, nil
}

func (t *Tool) callError(ctx context.Context, err error) error {
	var be *netguard.BlockedError
	if errors.As(err, &be) {
		return fmt.Errorf("tool %s: %w", t.cfg.Name, be)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("tool %s: no complete response within %v: %w", t.cfg.Name, t.timeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("tool %s: %w", t.cfg.Name, err)
}

// expand resolves the references of a header value.
func (t *Tool) expand(ctx context.Context, v string, red *secretref.Redactor) (string, error) {
	out, err := secretref.Expand(ctx, v, t.lookup, red)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(out, "\r\n\x00") {
		return "", errors.New("resolved value holds a line break")
	}
	return out, nil
}

// StatusError is a response whose status is not 2xx.
type StatusError struct {
	Tool       string
	StatusCode int
	Status     string
	// Body is the start of the response body.
	Body string
}

// Error gives the status and the start of the body.
func (e *StatusError) Error() string {
	s := "tool " + e.Tool + ": HTTP " + e.Status
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

func snippet(b []byte, n int) string {
	cut := len(b) > n
	if cut {
		b = cutUTF8(b, n)
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if cut {
		s += "…"
	}
	return s
}

// cutUTF8 returns at most n bytes of b, not splitting a UTF-8 sequence.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[:n]
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		r, size := utf8.DecodeLastRune(b)
		if r != utf8.RuneError || size > 1 {
			break
		}
		// An incomplete sequence at the end: drop its bytes only if they
		// start a multi-byte rune.
		if b[len(b)-1] < utf8.RuneSelf {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

// addQuery adds the arguments to u's query string. Arrays of scalars give
// repeated keys; objects are sent as JSON text.
func addQuery(u string, args map[string]json.RawMessage) (string, error) {
	if len(args) == 0 {
		return u, nil
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var q strings.Builder
	add := func(k, v string) {
		if q.Len() > 0 {
			q.WriteByte('&')
		}
		q.WriteString(url.QueryEscape(k))
		q.WriteByte('=')
		q.WriteString(url.QueryEscape(v))
	}
	for _, k := range keys {
		v := bytes.TrimSpace(args[k])
		switch {
		case string(v) == "null":
			continue
		case len(v) > 0 && v[0] == '[':
			var items []json.RawMessage
			if err := json.Unmarshal(v, &items); err != nil {
				return "", &fieldError{k, err}
			}
			for _, it := range items {
				s, err := toolargs.Scalar(it)
				if err != nil {
					return "", &fieldError{k, fmt.Errorf("array items: %w", err)}
				}
				add(k, s)
			}
		case len(v) > 0 && v[0] == '{':
			add(k, string(v))
		default:
			s, err := toolargs.Scalar(v)
			if err != nil {
				return "", &fieldError{k, err}
			}
			add(k, s)
		}
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
		if strings.HasSuffix(u, "?") || strings.HasSuffix(u, "&") {
			sep = ""
		}
	}
	return u + sep + q.String(), nil
}
