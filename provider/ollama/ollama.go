package ollama

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
	"github.com/weftlabs/weft/provider/internal/httpapi"
)

// DefaultHost is the address of a local Ollama server.
const DefaultHost = "http://127.0.0.1:11434"

// DefaultModel is the model used when none is named.
const DefaultModel = "llama3.2"

const providerName = "ollama"

// Client is a driver for one Ollama model. It implements [llm.ChatModel],
// [llm.EmbeddingModel], [llm.CapabilityReporter] and [llm.Namer], and is safe
// for concurrent use. Wrap it in an [llm.Model] for retries and fallbacks.
type Client struct {
	model   string
	base    string // no trailing slash
	apiKey  string
	client  *http.Client
	headers http.Header
	api     httpapi.Client
}

// Option configures a [Client].
type Option func(*Client)

// WithModel sets the model name, e.g. "llama3.2" or "qwen3:8b" (default
// [DefaultModel]).
func WithModel(name string) Option { return func(m *Client) { m.model = name } }

// WithHost sets the server address: a URL ("http://gpu-box:11434") or a bare
// host[:port] as OLLAMA_HOST accepts it (default [DefaultHost]).
func WithHost(host string) Option { return func(m *Client) { m.base = host } }

// WithAPIKey sets a key sent as "Authorization: Bearer <key>", for hosted
// Ollama or an authenticating proxy. A local server needs none.
func WithAPIKey(key string) Option { return func(m *Client) { m.apiKey = key } }

// WithHTTPClient sets the HTTP client (default: one sharing
// http.DefaultTransport's settings but keeping up to 256 idle connections
// per host instead of 2). Requests
// follow the caller's context; a client timeout would also cut long streams.
func WithHTTPClient(c *http.Client) Option { return func(m *Client) { m.client = c } }

// WithHeader adds a header sent with every request.
func WithHeader(key, value string) Option {
	return func(m *Client) { m.headers.Add(key, value) }
}

// New returns a driver for an Ollama model. It fails when the host is not a
// valid address.
func New(opts ...Option) (*Client, error) {
	m := &Client{model: DefaultModel, base: DefaultHost, headers: http.Header{}}
	for _, o := range opts {
		o(m)
	}
	if m.model == "" {
		m.model = DefaultModel
	}
	if m.client == nil {
		m.client = httpapi.DefaultClient
	}
	base, err := ParseHost(m.base)
	if err != nil {
		return nil, err
	}
	m.base = base
	h := m.headers.Clone()
	if m.apiKey != "" {
		h.Set("Authorization", "Bearer "+m.apiKey)
	}
	m.api = httpapi.Client{Provider: providerName, HTTP: m.client, Header: h, ErrorBody: m.errorBody,
		Unreachable: fmt.Sprintf("cannot reach %s (is Ollama running? start it with `ollama serve` or set OLLAMA_HOST)", m.base)}
	return m, nil
}

// ParseHost turns an OLLAMA_HOST value into a base URL. It accepts a full URL
// or a bare host, host:port or :port; a missing scheme means http, and a
// missing port with a missing scheme means 11434. Empty means [DefaultHost].
func ParseHost(host string) (string, error) {
	host = strings.TrimSpace(host)
	if host == "" {
		return DefaultHost, nil
	}
	hasScheme := strings.Contains(host, "://")
	if !hasScheme {
		host = "http://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" && u.Port() == "" {
		return "", fmt.Errorf("ollama: invalid host %q: want a URL such as http://127.0.0.1:11434 or host:port", strings.TrimPrefix(host, "http://"))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("ollama: invalid host %q: scheme must be http or https", host)
	}
	hostname, port := u.Hostname(), u.Port()
	if hostname == "" {
		hostname = "127.0.0.1"
	}
	if port == "" && !hasScheme {
		port = "11434"
	}
	if port != "" {
		u.Host = net.JoinHostPort(hostname, port)
	} else if strings.Contains(hostname, ":") {
		u.Host = "[" + hostname + "]"
	} else {
		u.Host = hostname
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Name returns "ollama/<model>".
func (m *Client) Name() string { return providerName + "/" + m.model }

// Capabilities reports tools, JSON mode and JSON Schema output and streaming
// for every model, vision for known vision model families (llava, gemma3,
// llama3.2-vision, qwen2.5vl, …) and reasoning for known thinking families
// (deepseek-r1, qwen3, gpt-oss, …). Whether a given model really calls tools
// is known only to the server, which answers 400 when it cannot.
func (m *Client) Capabilities() llm.Capabilities {
	family := modelFamily(m.model)
	return llm.Capabilities{
		Tools:      true,
		JSONSchema: true,
		JSONMode:   true,
		Streaming:  true,
		Vision:     hasPrefix(family, visionFamilies) && !isTextOnlyVariant(m.model),
		Reasoning:  hasPrefix(family, reasoningFamilies),
	}
}

var visionFamilies = []string{
	"llava", "bakllava", "llama3.2-vision", "llama4", "gemma3", "qwen2.5vl",
	"qwen2.5-vl", "qwen3-vl", "minicpm-v", "moondream", "granite3.2-vision",
	"mistral-small3.1", "mistral-small3.2", "mistral-small:24b-3.1", "llama-guard3:11b",
}

var reasoningFamilies = []string{
	"deepseek-r1", "qwen3", "gpt-oss", "magistral", "deepseek-v3.1", "phi4-reasoning", "cogito",
}

// modelFamily strips a registry namespace ("library/", "hf.co/user/") from
// a model name, keeping the tag.
func modelFamily(name string) string {
	name = strings.ToLower(name)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// isTextOnlyVariant reports the gemma3 sizes that have no vision encoder.
func isTextOnlyVariant(name string) bool {
	f := modelFamily(name)
	return strings.HasPrefix(f, "gemma3:1b") || strings.HasPrefix(f, "gemma3:270m")
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// post sends body as JSON to path and returns the response of a 2xx
// answer; any other answer becomes an [*llm.Error].
func (m *Client) post(ctx context.Context, path string, body []byte) (*http.Response, error) {
	return m.api.Post(ctx, m.base+path, body, "application/x-ndjson, application/json")
}

// errorBody reads a non-2xx answer's body, normally {"error": "..."},
// into e.
func (m *Client) errorBody(e *llm.Error, resp *http.Response, raw []byte) {
	msg := errorText(raw)
	if msg == "" {
		return
	}
	e.Message = msg
	lower := strings.ToLower(msg)
	switch {
	case resp.StatusCode == http.StatusNotFound && strings.Contains(lower, "not found"):
		e.Message = fmt.Sprintf("%s (pull it with `ollama pull %s`)", msg, m.model)
	case strings.Contains(lower, "context length") || strings.Contains(lower, "context window"):
		e.Kind = llm.ErrContextTooLong
	}
}

// errorText extracts the message of an {"error": ...} body, or returns the
// trimmed body when it is not one.
func errorText(raw []byte) string {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && len(body.Error) > 0 {
		var s string
		if json.Unmarshal(body.Error, &s) == nil {
			return s
		}
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		return string(body.Error)
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	return s
}

func init() {
	provider.Register(providerName, provider.Provider{
		Open:         open,
		Status:       status,
		Env:          []string{"OLLAMA_HOST", "OLLAMA_API_KEY"},
		DefaultModel: DefaultModel,
		Description:  "Ollama native API (local models; chat, tools, vision, embeddings)",
	})
}

func open(cfg provider.Config) (llm.ChatModel, error) {
	host := cfg.BaseURL
	if host == "" {
		host = cfg.Getenv("OLLAMA_HOST")
	}
	key := cfg.APIKey
	if key == "" {
		key = cfg.Getenv("OLLAMA_API_KEY")
	}
	opts := []Option{WithModel(cfg.Model), WithHost(host), WithAPIKey(key)}
	if cfg.HTTPClient != nil {
		opts = append(opts, WithHTTPClient(cfg.HTTPClient))
	}
	return New(opts...)
}

// status reports the provider configured when OLLAMA_HOST is set. It does not
// probe the network: a listing must not wait on a server.
func status(getenv func(string) string) provider.Status {
	host := getenv("OLLAMA_HOST")
	if host == "" {
		return provider.Status{Detail: "OLLAMA_HOST not set (a local server is used at " + DefaultHost + ")"}
	}
	base, err := ParseHost(host)
	if err != nil {
		return provider.Status{Detail: err.Error()}
	}
	return provider.Status{Configured: true, Detail: "OLLAMA_HOST=" + base}
}
