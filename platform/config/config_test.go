package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `
default_model: fast
providers:
  openai:
    api_key: ${OPENAI_API_KEY}
    base_url: ${file:BASE}
models:
  fast: openai/gpt-4o-mini
secrets:
  CRM_TOKEN: ${CRM_TOKEN}
knowledge_bases:
  - name: handbook
    chunk_size: 256
tools:
  - name: weather
    kind: http
    http: {method: GET, url: "https://api.example.com/w", headers: {Authorization: "Bearer ${secret:CRM_TOKEN}"}}
agents:
  - name: support
    model: fast
    knowledge_base_ids: [handbook]
    tool_ids: [weather]
---
name: helper
system_prompt: a bare agent document
`

func TestParse(t *testing.T) {
	f, err := Parse([]byte(sample), "weft.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.DefaultModel != "fast" || f.Models["fast"] != "openai/gpt-4o-mini" || len(f.KnowledgeBases) != 1 || len(f.Tools) != 1 || len(f.Agents) != 2 || f.Agents[1].Name() != "helper" {
		t.Fatalf("parsed %+v", f)
	}
	if !f.ServerSettings() {
		t.Error("ServerSettings = false")
	}
	// ${secret:…} in a tool is left for the server.
	if h := f.Tools[0]["http"].(map[string]any)["headers"].(map[string]any)["Authorization"]; h != "Bearer ${secret:CRM_TOKEN}" {
		t.Errorf("tool header %q", h)
	}
	env := Env{Getenv: func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-1"}[k] },
		ReadFile: func(p string) ([]byte, error) {
			if p == "BASE" {
				return []byte("https://llm.internal/v1\n"), nil
			}
			return nil, os.ErrNotExist
		}}
	ps, err := f.ResolvedProviders(env)
	if err != nil || ps["openai"].APIKey != "sk-1" || ps["openai"].BaseURL != "https://llm.internal/v1" {
		t.Fatalf("providers %+v, %v", ps, err)
	}
	if _, err := (Env{Getenv: func(string) string { return "" }}).Expand("${NOPE}"); err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Errorf("unset variable: %v", err)
	}
	if spec, ok := f.Alias("fast"); !ok || spec != "openai/gpt-4o-mini" {
		t.Errorf("Alias = %q %v", spec, ok)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"agents: [{name: a, temprature: 1}]", `unknown field "temprature"`},
		{"agentz: []", `unknown field "agentz"`},
		{"agents: [{system_prompt: x}]", `"name" is required`},
		{"agents: [{name: a}, {name: a}]", "declared twice"},
		{"tools: [{name: t, kind: http, url: x}]", `unknown field "url"`},
		{"secrets: {'9x': v}", "want a letter"},
		{"models: {a/b: openai/x}", "has no \"/\""},
		{"models: {fast: gpt-4o}", "want provider/model"},
		{"- a\n- b", "want a mapping"},
		{"agents: [{name: a}]\n---\nagents: [{name: a}]", "declared twice"},
		{"agents: {name: a}", "cannot unmarshal"},
	} {
		if _, err := Parse([]byte(c.in), "f.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.in, err, c.want)
		}
	}
	big := make([]byte, MaxFileBytes+1)
	if _, err := Parse(big, "big.yaml"); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized: %v", err)
	}
}

func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("10-kb.yaml", "knowledge_bases: [{name: handbook}]")
	write("20-agents.yml", "agents: [{name: support, knowledge_base_ids: [handbook]}]")
	write("30-tools.json", `{"tools": [{"name": "weather", "kind": "http", "http": {"method": "GET", "url": "https://x.example"}}]}`)
	write("README.md", "not configuration")
	f, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.KnowledgeBases) != 1 || len(f.Agents) != 1 || len(f.Tools) != 1 {
		t.Fatalf("loaded %+v", f)
	}
	write("40-dup.yaml", "agents: [{name: support}]")
	if _, err := Load(dir, nil); err == nil || !strings.Contains(err.Error(), "declared twice") {
		t.Errorf("duplicate across files: %v", err)
	}
	// A file over the limit is refused while reading.
	if err := os.WriteFile(filepath.Join(dir, "40-dup.yaml"), make([]byte, MaxFileBytes+10), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, nil); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized file: %v", err)
	}
	if _, err := Load(t.TempDir(), nil); err == nil {
		t.Error("an empty directory loads")
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if f, err := Load("-", strings.NewReader("agents: [{name: a}]")); err != nil || len(f.Agents) != 1 {
		t.Errorf("stdin: %+v %v", f, err)
	}
}

// FuzzParse: a configuration file is outside input; Parse must not panic
// or hang, and what it accepts has named, unique objects.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("agents: [{name: a}]"))
	f.Add([]byte("{}"))
	f.Add([]byte("a: &a [*a, *a]"))
	f.Add([]byte("secrets: {A: '${file:/etc/passwd}'}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		for section, objs := range cfg.objects() {
			seen := map[string]bool{}
			for _, o := range objs {
				if o.Name() == "" || seen[o.Name()] {
					t.Fatalf("%s: accepted an unnamed or duplicate object %v", section, o)
				}
				seen[o.Name()] = true
			}
		}
	})
}
