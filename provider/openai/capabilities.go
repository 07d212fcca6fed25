package openai

import (
	"strings"

	"github.com/weftlabs/weft/llm"
)

// baseModel strips a router's vendor prefix ("openai/gpt-4o" on OpenRouter)
// and lower-cases the name for the heuristics below.
func baseModel(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return m
}

// isOSeries reports OpenAI's reasoning models: o1, o3-mini, o4-mini, …
func isOSeries(m string) bool {
	return len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9'
}

// usesMaxCompletionTokens reports models that reject max_tokens. Only
// OpenAI's own names are matched: routers translate max_tokens themselves.
func usesMaxCompletionTokens(model string) bool {
	m := strings.ToLower(model)
	return isOSeries(m) || strings.HasPrefix(m, "gpt-5")
}

// capabilitiesFor guesses a model's abilities from its name. Unknown models
// of OpenAI-compatible servers are assumed to stream, call tools and accept
// json_object, which most do; vision, JSON Schema and reasoning are claimed
// only for families known to have them.
func capabilitiesFor(model string) llm.Capabilities {
	m := baseModel(model)
	c := llm.Capabilities{Tools: true, Streaming: true, JSONMode: true}
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(m, p) {
				return true
			}
		}
		return false
	}
	contains := func(subs ...string) bool { return containsAny(m, subs...) }

	switch {
	case has("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-5"):
		c.Vision, c.JSONSchema = true, true
	case isOSeries(m):
		c.JSONSchema = true
		c.Reasoning = true
		// o1-mini and o1-preview take neither images nor tools nor schemas.
		if has("o1-mini", "o1-preview") {
			c.JSONSchema, c.Tools, c.JSONMode = false, false, false
		} else {
			c.Vision = true
		}
	case has("gpt-4-turbo", "gpt-4-vision"):
		c.Vision = true
	}
	if has("gpt-5") && !contains("chat") {
		c.Reasoning = true
	}
	if contains("deepseek-reasoner", "deepseek-r1", "qwq", "thinking", "gpt-oss", "magistral", "grok-3-mini", "-r1") {
		c.Reasoning = true
	}
	if contains("vision", "-vl", "llava", "gemma3", "gemma-3", "llama-4", "pixtral", "grok-4") {
		c.Vision = true
	}
	if has("gpt-oss", "kimi-k2", "llama-4") {
		c.JSONSchema = true
	}
	if contains("embedding", "dall-e", "gpt-image", "moderation", "whisper", "tts") {
		c = llm.Capabilities{}
	}
	c.ContextWindow = contextWindow(m)
	return c
}

// contextWindow returns the context size of well-known models, or 0.
func contextWindow(m string) int {
	table := []struct {
		prefix string
		tokens int
	}{
		{"gpt-4.1", 1_047_576},
		{"gpt-5", 400_000},
		{"gpt-4o", 128_000},
		{"chatgpt-4o", 128_000},
		{"gpt-4-turbo", 128_000},
		{"gpt-4-32k", 32_768},
		{"gpt-4", 8_192},
		{"gpt-3.5-turbo", 16_385},
		{"o1-mini", 128_000},
		{"o1-preview", 128_000},
		{"o1", 200_000},
		{"o3", 200_000},
		{"o4", 200_000},
		{"deepseek-chat", 128_000},
		{"deepseek-reasoner", 128_000},
	}
	for _, e := range table {
		if strings.HasPrefix(m, e.prefix) {
			return e.tokens
		}
	}
	return 0
}
