package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
	"github.com/weftlabs/weft/provider/internal/httpapi"
)

// DefaultBaseURL is the address of Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultModel is the model used when none is named.
const DefaultModel = "claude-sonnet-4-5"

// APIVersion is the value of the anthropic-version header.
const APIVersion = "2023-06-01"

// DefaultMaxTokens is the max_tokens sent when a request leaves MaxTokens 0;
// the API requires the field.
const DefaultMaxTokens = 4096

const providerName = "anthropic"

// Client is a driver for one Anthropic model. It implements
// [llm.ChatModel], [llm.CapabilityReporter] and [llm.Namer], and is safe for
// concurrent use. Wrap it in an [llm.Model] for retries and fallbacks.
type Client struct {
	model    string
	endpoint string // …/v1/messages
	apiKey   string
	client   *http.Client
	headers  http.Header
	api      httpapi.Client
}

// Option configures a [Client].
type Option func(*Client)

// WithModel sets the model name, e.g. "claude-sonnet-4-5" (default
// [DefaultModel]).
func WithModel(name string) Option { return func(m *Client) { m.model = name } }

// WithAPIKey sets the API key sent as x-api-key. It is required.
func WithAPIKey(key string) Option { return func(m *Client) { m.apiKey = key } }

// WithBaseURL sets the API's base URL (default [DefaultBaseURL]), for a proxy
// or a compatible gateway. A trailing "/v1" is accepted.
func WithBaseURL(u string) Option { return func(m *Client) { m.endpoint = u } }

// WithHTTPClient sets the HTTP client (default: one sharing
// http.DefaultTransport's settings but keeping up to 256 idle connections
// per host instead of 2). Requests
// follow the caller's context; a client timeout would also cut long streams.
func WithHTTPClient(c *http.Client) Option { return func(m *Client) { m.client = c } }

// WithBeta adds an anthropic-beta header value, enabling a beta feature
// (for example "context-1m-2025-08-07").
func WithBeta(feature string) Option {
	return func(m *Client) { m.headers.Add("anthropic-beta", feature) }
}

// WithHeader adds a header sent with every request.
func WithHeader(key, value string) Option {
	return func(m *Client) { m.headers.Add(key, value) }
}

// New returns a driver for an Anthropic model. It fails with an error of kind
// [llm.ErrAuthentication] when no API key is given, and when the base URL is
// not an http(s) URL.
func New(opts ...Option) (*Client, error) {
	m := &Client{model: DefaultModel, endpoint: DefaultBaseURL, headers: http.Header{}}
	for _, o := range opts {
		o(m)
	}
	if m.model == "" {
		m.model = DefaultModel
	}
	if m.client == nil {
		m.client = httpapi.DefaultClient
	}
	if strings.TrimSpace(m.apiKey) == "" {
		return nil, &llm.Error{Kind: llm.ErrAuthentication, Provider: providerName,
			Message: "no API key: set ANTHROPIC_API_KEY (from console.anthropic.com) or pass WithAPIKey"}
	}
	base := strings.TrimRight(strings.TrimSpace(m.endpoint), "/")
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: invalid base URL %q: want an http(s) URL such as %s", m.endpoint, DefaultBaseURL)
	}
	base = strings.TrimSuffix(base, "/v1")
	m.endpoint = base + "/v1/messages"
	h := m.headers.Clone()
	h.Set("X-Api-Key", m.apiKey)
	h.Set("Anthropic-Version", APIVersion)
	m.api = httpapi.Client{Provider: providerName, HTTP: m.client, Header: h, ErrorBody: errorBody, Unreachable: "cannot reach the API"}
	return m, nil
}

// Name returns "anthropic/<model>".
func (m *Client) Name() string { return providerName + "/" + m.model }

// Capabilities reports tools, vision and streaming for every model;
// reasoning (extended thinking) for Claude 3.7 Sonnet and Claude 4 and
// later; JSON Schema output for the models Anthropic's structured outputs
// support (Opus, Sonnet and Haiku 4.5 and later); and a 200k-token context
// window for Claude models.
func (m *Client) Capabilities() llm.Capabilities {
	family, major, minor, ok := parseClaude(m.model)
	c := llm.Capabilities{Tools: true, Vision: true, Streaming: true}
	if !ok {
		return c
	}
	c.ContextWindow = 200_000
	version := major*100 + minor
	c.Reasoning = version >= 400 || (version == 307 && family == "sonnet")
	c.JSONSchema = version >= 405 && family != ""
	return c
}

var (
	// claude-<family>-<major>[-<minor>][-<date>], the naming since Claude 4.
	newName = regexp.MustCompile(`^claude-(opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?:-|@|$)`)
	// claude-<major>[-<minor>]-<family>[-<date>], the Claude 3 naming.
	oldName = regexp.MustCompile(`^claude-(\d+)(?:-(\d{1,2}))?-(opus|sonnet|haiku)(?:-|@|$)`)
)

// parseClaude reads the family and version from a Claude model id. It
// accepts ids with a provider prefix ("anthropic.claude-…", "…/claude-…").
func parseClaude(name string) (family string, major, minor int, ok bool) {
	name = strings.ToLower(name)
	if i := strings.Index(name, "claude-"); i >= 0 {
		name = name[i:]
	}
	if s := newName.FindStringSubmatch(name); s != nil {
		major, _ = strconv.Atoi(s[2])
		minor, _ = strconv.Atoi(s[3])
		return s[1], major, minor, true
	}
	if s := oldName.FindStringSubmatch(name); s != nil {
		major, _ = strconv.Atoi(s[1])
		minor, _ = strconv.Atoi(s[2])
		return s[3], major, minor, true
	}
	return "", 0, 0, false
}

// post sends body to the Messages endpoint and returns the response of a
// 2xx answer; any other answer becomes an [*llm.Error].
func (m *Client) post(ctx context.Context, body []byte, stream bool) (*http.Response, error) {
	accept := "application/json"
	if stream {
		accept = "text/event-stream"
	}
	return m.api.Post(ctx, m.endpoint, body, accept)
}

// wireError is the "error" object of an error body or an error event.
type wireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// errorBody reads a non-2xx answer's body, normally
// {"type":"error","error":{"type":…,"message":…}}, into e.
func errorBody(e *llm.Error, resp *http.Response, raw []byte) {
	var body struct {
		Error wireError `json:"error"`
	}
	if json.Unmarshal(raw, &body) != nil || body.Error.Message == "" && body.Error.Type == "" {
		body.Error.Message = strings.TrimSpace(string(raw))
		if len(body.Error.Message) > 512 {
			body.Error.Message = body.Error.Message[:512] + "…"
		}
	}
	if body.Error.Message != "" {
		e.Message = body.Error.Message
	}
	e.Code = body.Error.Type
	if resp.StatusCode == http.StatusUnauthorized {
		e.Message += " (check ANTHROPIC_API_KEY)"
	}
	if isContextError(body.Error.Type, body.Error.Message) {
		e.Kind = llm.ErrContextTooLong
	}
}

// isContextError reports the answers that mean the prompt does not fit.
func isContextError(typ, msg string) bool {
	msg = strings.ToLower(msg)
	return typ == "request_too_large" ||
		strings.Contains(msg, "prompt is too long") ||
		strings.Contains(msg, "context window") ||
		strings.Contains(msg, "context length")
}

// eventError types an error event sent inside a stream, after HTTP 200.
func eventError(we wireError) *llm.Error {
	e := &llm.Error{Provider: providerName, Code: we.Type, Message: we.Message}
	switch we.Type {
	case "overloaded_error", "api_error":
		e.Kind = llm.ErrUnavailable
	case "rate_limit_error":
		e.Kind = llm.ErrRateLimited
	case "authentication_error", "permission_error":
		e.Kind = llm.ErrAuthentication
	case "invalid_request_error", "not_found_error":
		e.Kind = llm.ErrBadRequest
	case "request_too_large":
		e.Kind = llm.ErrContextTooLong
	case "timeout_error":
		e.Kind = llm.ErrTimeout
		// A timeout the server reports may pass on a retry.
		e.StatusCode = http.StatusGatewayTimeout
	default:
		e.Kind = llm.ErrStreamBroken
	}
	if isContextError(we.Type, we.Message) {
		e.Kind = llm.ErrContextTooLong
	}
	if e.Message == "" {
		e.Message = "error event in the stream"
	}
	return e
}

func init() {
	provider.Register(providerName, provider.Provider{
		Open:         open,
		Status:       status,
		Env:          []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"},
		DefaultModel: DefaultModel,
		Description:  "Anthropic Messages API (Claude; tools, vision, thinking, structured outputs)",
	})
}

func open(cfg provider.Config) (llm.ChatModel, error) {
	key := cfg.APIKey
	if key == "" {
		key = cfg.Getenv("ANTHROPIC_API_KEY")
	}
	if strings.TrimSpace(key) == "" {
		return nil, &llm.Error{Kind: llm.ErrAuthentication, Provider: providerName,
			Message: "ANTHROPIC_API_KEY is not set: set it to a key from console.anthropic.com, or pass provider.WithAPIKey"}
	}
	base := cfg.BaseURL
	if base == "" {
		base = cfg.Getenv("ANTHROPIC_BASE_URL")
	}
	opts := []Option{WithModel(cfg.Model), WithAPIKey(key), WithBaseURL(base)}
	if cfg.HTTPClient != nil {
		opts = append(opts, WithHTTPClient(cfg.HTTPClient))
	}
	return New(opts...)
}

func status(getenv func(string) string) provider.Status {
	if strings.TrimSpace(getenv("ANTHROPIC_API_KEY")) == "" {
		return provider.Status{Detail: "ANTHROPIC_API_KEY not set"}
	}
	base := getenv("ANTHROPIC_BASE_URL")
	if base == "" {
		base = DefaultBaseURL
	}
	return provider.Status{Configured: true, Detail: "ANTHROPIC_API_KEY set; " + base}
}
