package openai

import (
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
)

// preset is an OpenAI-compatible service registered under its own name.
type preset struct {
	name         string
	keyEnv       string
	baseURLEnv   string
	baseURL      string
	defaultModel string
	description  string
	// extraEnv lists further variables and the options they set.
	extraEnv []envOption
}

type envOption struct {
	env string
	opt func(string) Option
}

var presets = []preset{
	{
		name: "openai", keyEnv: "OPENAI_API_KEY", baseURLEnv: "OPENAI_BASE_URL", baseURL: DefaultBaseURL,
		defaultModel: "gpt-4o-mini",
		description:  "OpenAI, or any OpenAI-compatible server via OPENAI_BASE_URL (vLLM, llama.cpp, Ollama /v1, LM Studio)",
		extraEnv: []envOption{
			{"OPENAI_ORG_ID", WithOrganization},
			{"OPENAI_PROJECT_ID", WithProject},
		},
	},
	{
		name: "deepseek", keyEnv: "DEEPSEEK_API_KEY", baseURLEnv: "DEEPSEEK_BASE_URL", baseURL: "https://api.deepseek.com/v1",
		defaultModel: "deepseek-chat", description: "DeepSeek (OpenAI-compatible API)",
	},
	{
		name: "groq", keyEnv: "GROQ_API_KEY", baseURLEnv: "GROQ_BASE_URL", baseURL: "https://api.groq.com/openai/v1",
		defaultModel: "llama-3.3-70b-versatile", description: "Groq (OpenAI-compatible API)",
	},
	{
		name: "openrouter", keyEnv: "OPENROUTER_API_KEY", baseURLEnv: "OPENROUTER_BASE_URL", baseURL: "https://openrouter.ai/api/v1",
		defaultModel: "openai/gpt-4o-mini", description: "OpenRouter (OpenAI-compatible API to many vendors' models)",
	},
}

func init() {
	for _, p := range presets {
		provider.Register(p.name, p.provider())
	}
}

func (p preset) provider() provider.Provider {
	env := []string{p.keyEnv, p.baseURLEnv}
	for _, e := range p.extraEnv {
		env = append(env, e.env)
	}
	return provider.Provider{
		Open:         p.open,
		Status:       p.status,
		Env:          env,
		DefaultModel: p.defaultModel,
		Description:  p.description,
	}
}

// settings resolves the key and base URL: explicit configuration first,
// then the environment, then the preset's default URL.
func (p preset) settings(cfg provider.Config) (key, baseURL string, custom bool) {
	key = firstNonEmpty(cfg.APIKey, cfg.Getenv(p.keyEnv))
	baseURL = firstNonEmpty(cfg.BaseURL, cfg.Getenv(p.baseURLEnv))
	if baseURL == "" || trimSlash(baseURL) == p.baseURL {
		return key, p.baseURL, false
	}
	return key, baseURL, true
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

func (p preset) open(cfg provider.Config) (llm.ChatModel, error) {
	key, baseURL, custom := p.settings(cfg)
	if key == "" && !custom {
		return nil, &llm.Error{Kind: llm.ErrAuthentication, Provider: p.name,
			Message: p.keyEnv + " is not set: set it to your API key" + p.localHint()}
	}
	opts := []Option{
		WithProviderName(p.name), WithModel(cfg.Model), WithAPIKey(key),
		WithBaseURL(baseURL), WithHTTPClient(cfg.HTTPClient),
	}
	for _, e := range p.extraEnv {
		if v := cfg.Getenv(e.env); v != "" {
			opts = append(opts, e.opt(v))
		}
	}
	return New(opts...)
}

func (p preset) localHint() string {
	if p.name == "openai" {
		return ", or set OPENAI_BASE_URL to a local OpenAI-compatible server (which needs no key)"
	}
	return ""
}

func (p preset) status(getenv func(string) string) provider.Status {
	key, baseURL, custom := p.settings(provider.Config{Getenv: getenv})
	switch {
	case key != "" && custom:
		return provider.Status{Configured: true, Detail: p.keyEnv + " set; " + p.baseURLEnv + "=" + baseURL}
	case key != "":
		return provider.Status{Configured: true, Detail: p.keyEnv + " set"}
	case custom:
		return provider.Status{Configured: true, Detail: p.baseURLEnv + "=" + baseURL + " (no key)"}
	}
	return provider.Status{Detail: p.keyEnv + " not set"}
}
