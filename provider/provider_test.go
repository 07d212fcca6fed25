package provider_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
)

// stubDriver answers with the configuration it was opened with.
type stubDriver struct{ cfg provider.Config }

func (d *stubDriver) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return &llm.Response{Message: llm.AssistantMessage(d.cfg.Model + "|" + d.cfg.APIKey + "|" + d.cfg.BaseURL + "|" + d.cfg.Getenv("STUB_VAR"))}, nil
}

func (d *stubDriver) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {}
}

func init() {
	provider.Register("stubtest", provider.Provider{
		Open: func(cfg provider.Config) (llm.ChatModel, error) {
			if cfg.Model == "fail" {
				return nil, errors.New("STUB_KEY is not set")
			}
			return &stubDriver{cfg: cfg}, nil
		},
		Status: func(getenv func(string) string) provider.Status {
			if getenv("STUB_KEY") == "" {
				return provider.Status{Detail: "STUB_KEY not set"}
			}
			return provider.Status{Configured: true, Detail: "STUB_KEY set"}
		},
		Env:          []string{"STUB_KEY"},
		DefaultModel: "small",
		Description:  "a stub for tests",
	})
	provider.Register("nodefault", provider.Provider{
		Open: func(cfg provider.Config) (llm.ChatModel, error) { return &stubDriver{cfg: cfg}, nil },
	})
}

func TestRegisterRejects(t *testing.T) {
	t.Parallel()
	open := func(provider.Config) (llm.ChatModel, error) { return nil, nil }
	for _, tt := range []struct {
		name string
		p    provider.Provider
		msg  string
	}{
		{"", provider.Provider{Open: open}, "invalid name"},
		{"a/b", provider.Provider{Open: open}, "invalid name"},
		{"noopen", provider.Provider{}, "without Open"},
		{"stubtest", provider.Provider{Open: open}, "twice"},
	} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tt.msg) {
					t.Errorf("Register(%q) panicked with %v, want %q", tt.name, r, tt.msg)
				}
			}()
			provider.Register(tt.name, tt.p)
		}()
	}
	if _, ok := provider.Lookup("noopen"); ok {
		t.Error("a rejected provider was registered")
	}
}

func TestNamesAndLookup(t *testing.T) {
	t.Parallel()
	names := provider.Names()
	if !slices.IsSorted(names) || !slices.Contains(names, "stubtest") || !slices.Contains(names, "nodefault") {
		t.Errorf("Names() = %v", names)
	}
	p, ok := provider.Lookup("stubtest")
	if !ok || p.DefaultModel != "small" || p.Description == "" {
		t.Errorf("Lookup = %+v %v", p, ok)
	}
	if _, ok := provider.Lookup("missing"); ok {
		t.Error("Lookup found a missing provider")
	}
}

func TestParseSpec(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ spec, provider, model string }{
		{"openai/gpt-4o-mini", "openai", "gpt-4o-mini"},
		{"openrouter/anthropic/claude-3.5-sonnet", "openrouter", "anthropic/claude-3.5-sonnet"},
		{"  ollama/qwen3:8b ", "ollama", "qwen3:8b"},
		{"anthropic", "anthropic", ""},
	} {
		p, m, err := provider.ParseSpec(tt.spec)
		if err != nil || p != tt.provider || m != tt.model {
			t.Errorf("ParseSpec(%q) = %q %q %v", tt.spec, p, m, err)
		}
	}
	for _, bad := range []string{"", "/gpt", "  "} {
		if _, _, err := provider.ParseSpec(bad); err == nil || !strings.Contains(err.Error(), "provider/model") {
			t.Errorf("ParseSpec(%q) err = %v", bad, err)
		}
	}
}

func generate(t *testing.T, m *llm.Model) string {
	t.Helper()
	resp, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("x")}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Text()
}

func TestOpen(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string { return map[string]string{"STUB_VAR": "from-env"}[k] }

	m, err := provider.Open("stubtest/big", provider.WithGetenv(getenv))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "stubtest/big" || generate(t, m) != "big|||from-env" {
		t.Errorf("name %q answer %q", m.Name(), generate(t, m))
	}

	// A spec without a model takes the default; options reach the provider.
	hc := &http.Client{}
	var hooked bool
	m, err = provider.Open("stubtest", provider.WithAPIKey("k"), provider.WithBaseURL("http://x"), provider.WithHTTPClient(hc),
		provider.WithGetenv(getenv), provider.WithModelOptions(llm.WithHook(func(context.Context, llm.Event) { hooked = true })))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "stubtest/small" || generate(t, m) != "small|k|http://x|from-env" || !hooked {
		t.Errorf("name %q answer %q hooked %v", m.Name(), generate(t, m), hooked)
	}
	if d := m.Driver().(*stubDriver); d.cfg.HTTPClient != hc {
		t.Error("HTTP client not passed")
	}
}

func TestOpenReadsProcessEnvironment(t *testing.T) {
	// Not parallel: it sets a process environment variable.
	t.Setenv("STUB_VAR", "from-os")
	for _, opts := range [][]provider.Option{nil, {provider.WithGetenv(nil)}} {
		m, err := provider.Open("stubtest/m", opts...)
		if err != nil || generate(t, m) != "m|||from-os" {
			t.Errorf("os getenv: %v", err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	_, err := provider.Open("nosuch/model")
	if !errors.Is(err, provider.ErrUnknownProvider) || !strings.Contains(err.Error(), "stubtest") || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("unknown provider err = %v", err)
	}
	_, err = provider.Open("nodefault")
	if err == nil || !strings.Contains(err.Error(), "no default") {
		t.Errorf("no default model err = %v", err)
	}
	_, err = provider.Open("stubtest/fail")
	if err == nil || !strings.Contains(err.Error(), "provider stubtest: STUB_KEY is not set") {
		t.Errorf("open failure err = %v", err)
	}
	if _, err = provider.Open("/x"); err == nil {
		t.Error("a bad spec opened")
	}
}

func TestStatusOf(t *testing.T) {
	t.Parallel()
	st, err := provider.StatusOf("stubtest", func(k string) string { return map[string]string{"STUB_KEY": "k"}[k] })
	if err != nil || !st.Configured || st.Detail != "STUB_KEY set" {
		t.Errorf("configured: %+v %v", st, err)
	}
	st, err = provider.StatusOf("stubtest", func(string) string { return "" })
	if err != nil || st.Configured || st.Detail != "STUB_KEY not set" {
		t.Errorf("unconfigured: %+v %v", st, err)
	}
	st, err = provider.StatusOf("nodefault", nil)
	if err != nil || !st.Configured || st.Detail == "" {
		t.Errorf("no Status func: %+v %v", st, err)
	}
	if _, err := provider.StatusOf("nosuch", nil); !errors.Is(err, provider.ErrUnknownProvider) {
		t.Errorf("unknown: %v", err)
	}
}
