package openai

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestRegisteredProviders(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"openai", "deepseek", "groq", "openrouter"} {
		if _, ok := provider.Lookup(name); !ok {
			t.Errorf("provider %q not registered", name)
		}
	}
}

func TestOpenMissingKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, variable string }{
		{"openai", "OPENAI_API_KEY"}, {"deepseek", "DEEPSEEK_API_KEY"}, {"groq", "GROQ_API_KEY"}, {"openrouter", "OPENROUTER_API_KEY"},
	}
	for _, tt := range tests {
		_, err := provider.Open(tt.name+"/some-model", provider.WithGetenv(env(nil)))
		if !errors.Is(err, llm.ErrAuthentication) || !strings.Contains(err.Error(), tt.variable) {
			t.Errorf("%s: err = %v, want ErrAuthentication naming %s", tt.name, err, tt.variable)
		}
		st, err := provider.StatusOf(tt.name, env(nil))
		if err != nil || st.Configured || !strings.Contains(st.Detail, tt.variable) {
			t.Errorf("%s: status = %+v, %v", tt.name, st, err)
		}
	}
}

func TestOpenFromEnvironment(t *testing.T) {
	t.Parallel()
	rec := &recorder{answer: okCompletion}
	url := serve(t, rec)
	tests := []struct {
		name string
		spec string
		env  map[string]string
		opts []provider.Option
		auth string
		want string // Name of the driver
	}{
		{name: "openai custom base url without key", spec: "openai/llama3", env: map[string]string{"OPENAI_BASE_URL": url}, want: "openai/llama3"},
		{name: "openai key and org", spec: "openai/gpt-4o", env: map[string]string{"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-1", "OPENAI_ORG_ID": "org-9"}, auth: "Bearer sk-1", want: "openai/gpt-4o"},
		{name: "options override env", spec: "openai/gpt-4o", env: map[string]string{"OPENAI_BASE_URL": "http://unused.invalid", "OPENAI_API_KEY": "sk-env"},
			opts: []provider.Option{provider.WithBaseURL(url), provider.WithAPIKey("sk-opt")}, auth: "Bearer sk-opt", want: "openai/gpt-4o"},
		{name: "deepseek preset", spec: "deepseek", env: map[string]string{"DEEPSEEK_BASE_URL": url, "DEEPSEEK_API_KEY": "ds"}, auth: "Bearer ds", want: "deepseek/deepseek-chat"},
		{name: "groq preset", spec: "groq/llama-3.1-8b-instant", env: map[string]string{"GROQ_BASE_URL": url, "GROQ_API_KEY": "gq"}, auth: "Bearer gq", want: "groq/llama-3.1-8b-instant"},
		{name: "openrouter model with slash", spec: "openrouter/anthropic/claude-3.5-sonnet", env: map[string]string{"OPENROUTER_BASE_URL": url, "OPENROUTER_API_KEY": "or"}, auth: "Bearer or", want: "openrouter/anthropic/claude-3.5-sonnet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := provider.Open(tt.spec, append([]provider.Option{provider.WithGetenv(env(tt.env))}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			n, ok := m.Driver().(llm.Namer)
			if !ok || n.Name() != tt.want {
				t.Errorf("driver name = %v, want %q", n, tt.want)
			}
			if _, err := m.Generate(context.Background(), hi); err != nil {
				t.Fatal(err)
			}
			rec.mu.Lock()
			h := rec.headers[len(rec.headers)-1]
			rec.mu.Unlock()
			if got := h.Get("Authorization"); got != tt.auth {
				t.Errorf("Authorization = %q, want %q", got, tt.auth)
			}
			if org := tt.env["OPENAI_ORG_ID"]; org != "" && h.Get("OpenAI-Organization") != org {
				t.Errorf("organization header = %q", h.Get("OpenAI-Organization"))
			}
		})
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env        map[string]string
		configured bool
		detail     string
	}{
		{map[string]string{"OPENAI_API_KEY": "k"}, true, "OPENAI_API_KEY set"},
		{map[string]string{"OPENAI_BASE_URL": "http://localhost:8000/v1"}, true, "OPENAI_BASE_URL=http://localhost:8000/v1 (no key)"},
		{map[string]string{"OPENAI_BASE_URL": DefaultBaseURL + "/"}, false, "OPENAI_API_KEY not set"},
		{map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://h/v1"}, true, "OPENAI_API_KEY set; OPENAI_BASE_URL=http://h/v1"},
	}
	for _, tt := range tests {
		st, err := provider.StatusOf("openai", env(tt.env))
		if err != nil || st.Configured != tt.configured || st.Detail != tt.detail {
			t.Errorf("%v: status = %+v, %v; want %v %q", tt.env, st, err, tt.configured, tt.detail)
		}
	}
	p, _ := provider.Lookup("openai")
	if strings.Join(p.Env, ",") != "OPENAI_API_KEY,OPENAI_BASE_URL,OPENAI_ORG_ID,OPENAI_PROJECT_ID" {
		t.Errorf("Env = %v", p.Env)
	}
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	if _, err := New(WithAPIKey("k")); err == nil || !strings.Contains(err.Error(), "WithModel") {
		t.Errorf("no model: err = %v", err)
	}
	if _, err := New(WithModel("m")); !errors.Is(err, llm.ErrAuthentication) {
		t.Errorf("no key for the public API: err = %v", err)
	}
	for _, u := range []string{"localhost:8000", "ftp://x/v1", "http://", "::"} {
		if _, err := New(WithModel("m"), WithBaseURL(u)); err == nil {
			t.Errorf("base URL %q accepted", u)
		}
	}
	c, err := New(WithModel("m"), WithBaseURL("http://localhost:1/v1"), WithProviderName("local"), WithHTTPClient(nil))
	if err != nil || c.Name() != "local/m" {
		t.Errorf("New = %v, %v", c, err)
	}
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model string
		want  llm.Capabilities
	}{
		{"gpt-4o-mini", llm.Capabilities{Tools: true, Streaming: true, JSONMode: true, JSONSchema: true, Vision: true, ContextWindow: 128_000}},
		{"gpt-4.1-nano", llm.Capabilities{Tools: true, Streaming: true, JSONMode: true, JSONSchema: true, Vision: true, ContextWindow: 1_047_576}},
		{"gpt-5", llm.Capabilities{Tools: true, Streaming: true, JSONMode: true, JSONSchema: true, Vision: true, Reasoning: true, ContextWindow: 400_000}},
		{"o3-mini", llm.Capabilities{Tools: true, Streaming: true, JSONMode: true, JSONSchema: true, Vision: true, Reasoning: true, ContextWindow: 200_000}},
		{"o1-mini", llm.Capabilities{Streaming: true, Reasoning: true, ContextWindow: 128_000}},
		{"openai/gpt-4o", llm.Capabilities{Tools: true, Streaming: true, JSONMode: true, JSONSchema: true, Vision: true, ContextWindow: 128_000}},
		{"deepseek-reasoner", llm.Capabilities{Tools: true, Streaming: true, JSONMode: true, Reasoning: true, ContextWindow: 128_000}},
		{"gpt-3.5-turbo", llm.Capabilities{Tools: true, Streaming: true, JSONMode: true, ContextWindow: 16_385}},
		{"llama3.2", llm.Capabilities{Tools: true, Streaming: true, JSONMode: true}},
		{"qwen2.5-vl-7b", llm.Capabilities{Tools: true, Streaming: true, JSONMode: true, Vision: true}},
		{"text-embedding-3-small", llm.Capabilities{}},
	}
	for _, tt := range tests {
		c := newTestClient(t, "http://localhost:1/v1", WithModel(tt.model))
		if got := c.Capabilities(); got != tt.want {
			t.Errorf("%s: capabilities = %+v, want %+v", tt.model, got, tt.want)
		}
	}
	override := llm.Capabilities{Tools: true, Vision: true}
	if got := newTestClient(t, "http://localhost:1/v1", WithModel("llama3"), WithCapabilities(override)).Capabilities(); got != override {
		t.Errorf("override ignored: %+v", got)
	}
}
