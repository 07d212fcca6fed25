package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/internal/httpapi"
)

// DefaultBaseURL is OpenAI's API endpoint, used when no base URL is given.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultMaxResponseSize bounds a response body, and each line of a stream,
// unless [WithMaxResponseSize] says otherwise.
const DefaultMaxResponseSize = 64 << 20

// Client is a driver for one model on an OpenAI-compatible server. It
// implements llm.ChatModel, llm.EmbeddingModel, llm.ModerationModel,
// llm.ImageModel, llm.CapabilityReporter and llm.Namer. It is safe for
// concurrent use and does not retry; wrap it in an llm.Model for retries,
// timeouts and fallbacks.
type Client struct {
	provider        string
	model           string
	apiKey          string
	baseURL         string
	base            *url.URL
	chatURL         string
	http            *http.Client
	header          http.Header
	includeUsage    bool
	caps            llm.Capabilities
	capsSet         bool
	moderationModel string
	maxResponse     int
	now             func() time.Time
	api             httpapi.Client
}

// Option configures a [Client].
type Option func(*Client)

// WithModel sets the model name sent with every request, e.g. "gpt-4o-mini".
// It is required.
func WithModel(name string) Option { return func(c *Client) { c.model = name } }

// WithAPIKey sets the key sent as "Authorization: Bearer <key>". Servers
// that need none (a local vLLM, llama.cpp or Ollama) may go without.
func WithAPIKey(key string) Option { return func(c *Client) { c.apiKey = key } }

// WithBaseURL sets the API root, e.g. "http://localhost:8000/v1" (default
// [DefaultBaseURL]). Endpoint paths such as "chat/completions" are
// appended to its path; its query, if any, is kept on every request.
func WithBaseURL(u string) Option { return func(c *Client) { c.baseURL = u } }

// WithHTTPClient sets the HTTP client (default: one sharing
// http.DefaultTransport's settings but keeping up to 256 idle connections
// per host instead of 2). Request
// deadlines come from the context, so the client needs no Timeout.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithHeader adds a header sent with every request, e.g. OpenRouter's
// "HTTP-Referer" or an Azure "api-key".
func WithHeader(key, value string) Option {
	return func(c *Client) { c.header.Add(key, value) }
}

// WithOrganization sets the "OpenAI-Organization" header.
func WithOrganization(org string) Option {
	return func(c *Client) {
		if org != "" {
			c.header.Set("OpenAI-Organization", org)
		}
	}
}

// WithProject sets the "OpenAI-Project" header.
func WithProject(project string) Option {
	return func(c *Client) {
		if project != "" {
			c.header.Set("OpenAI-Project", project)
		}
	}
}

// WithStreamUsage sets whether streaming requests ask for a final usage
// chunk with stream_options.include_usage (default true). Turn it off for
// servers that reject the field.
func WithStreamUsage(on bool) Option { return func(c *Client) { c.includeUsage = on } }

// WithCapabilities replaces the capabilities guessed from the model name.
func WithCapabilities(caps llm.Capabilities) Option {
	return func(c *Client) { c.caps, c.capsSet = caps, true }
}

// WithModerationModel sets the model sent to /moderations (default: the
// client's model when its name contains "moderation", else none, which
// lets the server choose).
func WithModerationModel(name string) Option { return func(c *Client) { c.moderationModel = name } }

// WithProviderName sets the provider name used in errors and in Name
// (default "openai"); the registered presets set it to "deepseek", "groq"
// and "openrouter".
func WithProviderName(name string) Option { return func(c *Client) { c.provider = name } }

// WithMaxResponseSize bounds a response body and each line of a stream, in
// bytes (default [DefaultMaxResponseSize]). A larger one fails instead of
// exhausting memory.
func WithMaxResponseSize(n int) Option {
	return func(c *Client) {
		if n > 0 {
			c.maxResponse = n
		}
	}
}

// New returns a driver configured by opts. It fails when no model is set,
// when the base URL is not an http(s) URL, and with an error of kind
// llm.ErrAuthentication when no API key is set for OpenAI's public API.
func New(opts ...Option) (*Client, error) {
	c := &Client{
		provider:     "openai",
		baseURL:      DefaultBaseURL,
		http:         httpapi.DefaultClient,
		header:       make(http.Header),
		includeUsage: true,
		maxResponse:  DefaultMaxResponseSize,
		now:          time.Now,
	}
	for _, o := range opts {
		o(c)
	}
	if c.model == "" {
		return nil, fmt.Errorf("%s: no model set: use openai.WithModel", c.provider)
	}
	c.baseURL = strings.TrimRight(c.baseURL, "/")
	u, err := url.Parse(c.baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q: want an http(s) URL such as %s", c.provider, c.baseURL, DefaultBaseURL)
	}
	if c.apiKey == "" && c.baseURL == DefaultBaseURL {
		return nil, &llm.Error{Kind: llm.ErrAuthentication, Provider: c.provider,
			Message: "no API key for " + DefaultBaseURL + ": use openai.WithAPIKey, or WithBaseURL for a server that needs none"}
	}
	if c.http == nil {
		c.http = httpapi.DefaultClient
	}
	if !c.capsSet {
		c.caps = capabilitiesFor(c.model)
	}
	c.base = u
	c.chatURL = c.endpoint("chat/completions")
	h := c.header.Clone()
	if c.apiKey != "" {
		h.Set("Authorization", "Bearer "+c.apiKey)
	}
	c.api = httpapi.Client{Provider: c.provider, HTTP: c.http, Header: h, ErrorBody: c.errorBody, Now: c.now}
	return c, nil
}

// endpoint returns the URL of an API path under the base URL, keeping the
// base URL's query (Azure's api-version, for one).
func (c *Client) endpoint(path string) string { return c.base.JoinPath(path).String() }

// Name returns "provider/model", e.g. "openai/gpt-4o-mini".
func (c *Client) Name() string { return c.provider + "/" + c.model }

// Capabilities returns the model's abilities, guessed from its name unless
// set with [WithCapabilities].
func (c *Client) Capabilities() llm.Capabilities { return c.caps }

// post sends body to url and returns the response of a 2xx answer. Any
// other answer, and any transport failure, becomes an *llm.Error.
func (c *Client) post(ctx context.Context, target string, body []byte, stream bool) (*http.Response, error) {
	accept := "application/json"
	if stream {
		accept = "text/event-stream"
	}
	resp, err := c.api.Post(ctx, target, body, accept)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" {
		// A web page, not an API answer: typically a base URL that points
		// at a site or a login proxy rather than at the API root.
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxSnippet+1))
		return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: c.provider, StatusCode: resp.StatusCode,
			Message: fmt.Sprintf("the server answered %s with an HTML page, not the API: check the base URL %s (page starts %s)",
				target, c.baseURL, snippet(b))}
	}
	return resp, nil
}

// transportError describes a failure to reach the server or to read its
// answer (see httpapi.Client.TransportError).
func (c *Client) transportError(ctx context.Context, err error) error {
	return c.api.TransportError(ctx, err)
}

// readBody reads a 2xx body whole, within the size bound.
func (c *Client) readBody(ctx context.Context, resp *http.Response) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.maxResponse)+1))
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	if len(b) > c.maxResponse {
		return nil, &llm.Error{Kind: llm.ErrUnavailable, Provider: c.provider, StatusCode: resp.StatusCode,
			Message: fmt.Sprintf("response body exceeds %d bytes (see openai.WithMaxResponseSize)", c.maxResponse)}
	}
	return b, nil
}

// decodeJSON decodes a 2xx body into v, describing a body that is not JSON
// (often an HTML page from a wrong base URL) in the error.
func (c *Client) decodeJSON(resp *http.Response, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &llm.Error{Kind: llm.ErrUnavailable, Provider: c.provider, StatusCode: resp.StatusCode,
			Message: fmt.Sprintf("response is not the expected JSON (content-type %q; is the base URL %s right?): %s",
				resp.Header.Get("Content-Type"), c.baseURL, snippet(body)),
			Err: err}
	}
	return nil
}

func (c *Client) postJSON(ctx context.Context, path string, in, out any) (*http.Response, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: c.provider, Message: "encoding the request", Err: err}
	}
	resp, err := c.post(ctx, c.endpoint(path), body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := c.readBody(ctx, resp)
	if err != nil {
		return nil, err
	}
	return resp, c.decodeJSON(resp, b, out)
}
