package platform

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"log/slog"

	"github.com/weftlabs/weft/platform/config"
)

// TestProviderModels: the configured providers' models are listed, the
// default model and embedding model first, aliases with their targets,
// priced models of the configured providers only.
func TestProviderModels(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) {
		c.DefaultModel = "fast"
		c.DefaultEmbeddingModel = "openai/text-embedding-3-small"
		c.ModelAliases = map[string]string{"fast": "openai/gpt-4o-mini"}
	})
	var got providerModelsAnswer
	if resp := e.do(e.admin, "GET", "/v1/provider-models", nil, &got); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body(resp))
	}
	if got.DefaultModel != "fast" || got.DefaultEmbeddingModel != "openai/text-embedding-3-small" || strings.Join(got.Providers, ",") != "openai" {
		t.Fatalf("answer %+v", got)
	}
	if len(got.Models) < 4 || got.Models[0] != (providerModel{ID: "fast", Provider: "openai", Kind: "chat", AliasOf: "openai/gpt-4o-mini"}) ||
		got.Models[1] != (providerModel{ID: "openai/text-embedding-3-small", Provider: "openai", Kind: "embedding"}) {
		t.Fatalf("models %+v", got.Models)
	}
	kinds := map[string]string{}
	for _, m := range got.Models {
		if m.Provider != "openai" {
			t.Errorf("a model of an unconfigured provider: %+v", m)
		}
		kinds[m.ID] = m.Kind
	}
	if kinds["openai/gpt-4.1"] != "chat" || kinds["openai/text-embedding-3-large"] != "embedding" {
		t.Errorf("priced models: %v", kinds)
	}
	e.wantError(e.do("", "GET", "/v1/provider-models", nil, nil), http.StatusUnauthorized, CodeUnauthorized)
}

// TestDefaultEmbeddingModel: new knowledge bases embed when a provider
// that embeds is configured, and stay keyword-only otherwise.
func TestDefaultEmbeddingModel(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		getenv func(string) string
		spec   string
		file   *config.File
		want   string
	}{
		{env(), "scripted/demo", nil, ""},
		{env("OPENAI_API_KEY", "sk-x"), "openai/gpt-4o-mini", nil, "openai/text-embedding-3-small"},
		{env("OPENAI_BASE_URL", "http://vllm:8000/v1"), "openai/gpt-4o-mini", nil, ""},
		{env("ANTHROPIC_API_KEY", "x", "OPENAI_API_KEY", "sk-x"), "anthropic", nil, "openai/text-embedding-3-small"},
		{env(), "ollama/llama3.2", nil, "ollama/nomic-embed-text"},
		{env(), "openai", &config.File{Providers: map[string]config.Provider{"openai": {APIKey: "sk-y"}}}, "openai/text-embedding-3-small"},
		{env("WEFT_DEFAULT_EMBEDDING_MODEL", "none", "OPENAI_API_KEY", "sk-x"), "openai/gpt-4o-mini", nil, ""},
		{env("WEFT_DEFAULT_EMBEDDING_MODEL", "ollama/mxbai-embed-large"), "scripted/demo", nil, "ollama/mxbai-embed-large"},
	} {
		if got := defaultEmbeddingModel(c.getenv, c.spec, c.file); got != c.want {
			t.Errorf("%s: got %q, want %q", c.spec, got, c.want)
		}
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeLogsConsoleURL: weft serve says where its console is.
func TestServeLogsConsoleURL(t *testing.T) {
	var logs lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var addr string
	err := Run(ctx, Options{
		Addr: "127.0.0.1:0", DataDir: t.TempDir(), Getenv: func(string) string { return "" },
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), ShutdownTimeout: 5 * time.Second,
		Ready: func(a string) { addr = a; cancel() },
	})
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(addr, ":")
	if want := "console: http://127.0.0.1:" + port + "/"; !strings.Contains(logs.String(), want) {
		t.Fatalf("no %q in the log:\n%s", want, logs.String())
	}
}
