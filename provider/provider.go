// Package provider is Weft's registry of model providers, in the style of
// database/sql: a provider registers itself by name in an init function, and
// users open models by "provider/model" strings:
//
//	import _ "github.com/weftlabs/weft/provider/openai"
//
//	m, err := provider.Open("openai/gpt-4o-mini")
//
// Configuration comes from the provider's standard environment variables
// (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, OLLAMA_HOST, …) unless
// options override them. Import github.com/weftlabs/weft/provider/all to
// register every provider Weft ships.
package provider

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/weftlabs/weft/llm"
)

// Config is what a provider's Open function receives.
type Config struct {
	// Model is the part of the spec after "provider/", e.g. "gpt-4o-mini".
	Model string
	// APIKey and BaseURL override the provider's environment variables when set.
	APIKey  string
	BaseURL string
	// HTTPClient is the client to use; nil means a default client.
	HTTPClient *http.Client
	// Getenv reads configuration variables; it is never nil.
	Getenv func(string) string
}

// Status is a provider's configuration state, as `weft models` shows it.
type Status struct {
	// Configured reports whether the provider can be used as configured.
	Configured bool
	// Detail says what was found or what to set, e.g. "OPENAI_API_KEY not set".
	Detail string
}

// Provider describes a registered provider.
type Provider struct {
	// Open returns a driver for cfg.Model. It must fail with an error that
	// says what to set when configuration is missing.
	Open func(cfg Config) (llm.ChatModel, error)
	// Status reports whether the provider is configured. Nil means always.
	Status func(getenv func(string) string) Status
	// Env lists the environment variables the provider reads, for help text.
	Env []string
	// DefaultModel is the model used when a spec names only the provider.
	DefaultModel string
	// Description is one line for listings.
	Description string
}

var (
	mu        sync.RWMutex
	providers = map[string]Provider{}
)

// Register makes a provider available by name. It panics if name is empty,
// already registered, or p has no Open function, like sql.Register.
func Register(name string, p Provider) {
	mu.Lock()
	defer mu.Unlock()
	if name == "" || strings.Contains(name, "/") {
		panic(fmt.Sprintf("provider: invalid name %q", name))
	}
	if p.Open == nil {
		panic("provider: Register of " + name + " without Open")
	}
	if _, dup := providers[name]; dup {
		panic("provider: Register called twice for " + name)
	}
	providers[name] = p
}

// Names returns the registered providers' names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(providers))
	for n := range providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the provider registered under name.
func Lookup(name string) (Provider, bool) {
	mu.RLock()
	defer mu.RUnlock()
	p, ok := providers[name]
	return p, ok
}

// ErrUnknownProvider is returned by Open for a provider name nobody registered.
var ErrUnknownProvider = errors.New("unknown provider")

// Option configures Open.
type Option func(*openConfig)

type openConfig struct {
	cfg       Config
	modelOpts []llm.Option
}

// WithAPIKey overrides the provider's API key variable.
func WithAPIKey(key string) Option { return func(o *openConfig) { o.cfg.APIKey = key } }

// WithBaseURL overrides the provider's base URL variable.
func WithBaseURL(url string) Option { return func(o *openConfig) { o.cfg.BaseURL = url } }

// WithHTTPClient sets the HTTP client the provider uses.
func WithHTTPClient(c *http.Client) Option { return func(o *openConfig) { o.cfg.HTTPClient = c } }

// WithGetenv replaces os.Getenv as the source of configuration variables.
func WithGetenv(getenv func(string) string) Option {
	return func(o *openConfig) { o.cfg.Getenv = getenv }
}

// WithModelOptions passes options (retries, timeout, fallbacks, hooks) to the
// returned llm.Model.
func WithModelOptions(opts ...llm.Option) Option {
	return func(o *openConfig) { o.modelOpts = append(o.modelOpts, opts...) }
}

// ParseSpec splits "provider/model" into its parts. The model part may itself
// contain slashes ("openrouter/anthropic/claude-3.5-sonnet").
func ParseSpec(spec string) (provider, model string, err error) {
	provider, model, _ = strings.Cut(strings.TrimSpace(spec), "/")
	if provider == "" {
		return "", "", fmt.Errorf("provider: model spec %q: want provider/model, e.g. openai/gpt-4o-mini", spec)
	}
	return provider, model, nil
}

// Open returns the model named by spec ("provider/model"). A spec that names
// only a provider uses its default model.
func Open(spec string, opts ...Option) (*llm.Model, error) {
	name, model, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	p, ok := Lookup(name)
	if !ok {
		known := Names()
		return nil, fmt.Errorf("provider: %q in model spec %q: %w (registered: %s; import github.com/weftlabs/weft/provider/all to register every provider)",
			name, spec, ErrUnknownProvider, strings.Join(known, ", "))
	}
	o := openConfig{cfg: Config{Model: model, Getenv: os.Getenv}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.cfg.Getenv == nil {
		o.cfg.Getenv = os.Getenv
	}
	if o.cfg.Model == "" {
		o.cfg.Model = p.DefaultModel
	}
	if o.cfg.Model == "" {
		return nil, fmt.Errorf("provider: model spec %q names no model and %s has no default", spec, name)
	}
	d, err := p.Open(o.cfg)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", name, err)
	}
	mopts := append([]llm.Option{llm.WithName(name + "/" + o.cfg.Model)}, o.modelOpts...)
	return llm.New(d, mopts...), nil
}

// StatusOf reports the configuration state of the named provider.
func StatusOf(name string, getenv func(string) string) (Status, error) {
	p, ok := Lookup(name)
	if !ok {
		return Status{}, fmt.Errorf("provider: %q: %w", name, ErrUnknownProvider)
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if p.Status == nil {
		return Status{Configured: true, Detail: "no configuration needed"}, nil
	}
	return p.Status(getenv), nil
}
