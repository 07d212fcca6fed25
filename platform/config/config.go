// Package config reads Weft's declarative configuration — the weft.yaml of
// `weft serve --config` and the files of `weft apply -f DIR` — and applies
// it to a server by name.
//
// A file declares, in YAML (or JSON):
//
//	default_model: fast                   # a model alias or provider/model
//	providers:                            # serve only: how to reach them
//	  openai:
//	    api_key: ${OPENAI_API_KEY}        # from the environment
//	  anthropic:
//	    api_key: ${file:/run/secrets/anthropic_api_key}
//	models:                               # serve only: aliases
//	  fast: openai/gpt-4o-mini
//	secrets:                              # tenant secrets (write-only values)
//	  CRM_TOKEN: ${CRM_TOKEN}
//	knowledge_bases:
//	  - name: handbook
//	tools:
//	  - name: weather
//	    kind: http
//	    http: {method: GET, url: https://api.example.com/weather}
//	agents:
//	  - name: support
//	    model: fast
//	    knowledge_base_ids: [handbook]    # names or ids
//	    tool_ids: [weather]
//
// Objects carry the API's fields (docs/api.md) and refer to each other by
// name. Only provider settings and secret values are interpolated:
// ${NAME} reads the environment and ${file:PATH} a file (Docker and
// Kubernetes secrets); elsewhere ${…} is passed to the server as written,
// where ${secret:NAME} in a tool header is a tenant secret.
//
// Applying is idempotent: each object is looked up by name, created when
// absent, updated when a declared field differs, and otherwise left alone;
// the [Report] says which. Objects the files do not declare are left alone.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxFileBytes bounds one configuration file, and MaxTotalBytes all the
// files of a directory; both are enforced while reading.
const (
	MaxFileBytes  = 4 << 20
	MaxTotalBytes = 32 << 20
	// maxRefBytes bounds a file read by ${file:PATH}.
	maxRefBytes = 64 << 10
)

// File is a declarative configuration.
type File struct {
	// DefaultModel is the model of agents that name none: a provider/model
	// or an alias of Models (serve only).
	DefaultModel string `json:"default_model,omitempty"`
	// Providers configure model providers by name (serve only).
	Providers map[string]Provider `json:"providers,omitempty"`
	// Models are model aliases: name → provider/model (serve only).
	Models map[string]string `json:"models,omitempty"`
	// Secrets are tenant secrets: name → value, interpolated.
	Secrets map[string]string `json:"secrets,omitempty"`
	// KnowledgeBases, Tools, Agents and Workflows are the tenant's
	// objects, by name, with the API's fields.
	KnowledgeBases []Object `json:"knowledge_bases,omitempty"`
	Tools          []Object `json:"tools,omitempty"`
	Agents         []Object `json:"agents,omitempty"`
	Workflows      []Object `json:"workflows,omitempty"`
}

// Provider is how the server reaches a model provider. Empty fields leave
// the provider's standard variables (OPENAI_API_KEY, …) in charge.
type Provider struct {
	APIKey  string `json:"api_key,omitempty"`
	BaseURL string `json:"base_url,omitempty"`
}

// Object is a declared object: the API's fields, "name" required.
type Object map[string]any

// Name is the object's name.
func (o Object) Name() string {
	s, _ := o["name"].(string)
	return strings.TrimSpace(s)
}

// sections are the top-level keys of a file, in the order they apply.
var sections = []string{"default_model", "providers", "models", "secrets", "knowledge_bases", "tools", "agents", "workflows"}

// Load reads a file, or every *.yaml, *.yml and *.json file of a directory
// (not its subdirectories) in name order, and merges them. "-" reads r.
func Load(path string, stdin io.Reader) (*File, error) {
	if path == "-" {
		data, err := readLimited(stdin, MaxFileBytes, "standard input")
		if err != nil {
			return nil, err
		}
		return Parse(data, "standard input")
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		data, err := readLimited(f, MaxFileBytes, path)
		if err != nil {
			return nil, err
		}
		return Parse(data, path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	out := &File{}
	total, n := 0, 0
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		name := filepath.Join(path, e.Name())
		fh, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		data, err := readLimited(fh, min(MaxFileBytes, MaxTotalBytes-total), name)
		fh.Close()
		if err != nil {
			return nil, err
		}
		total += len(data)
		f, err := Parse(data, name)
		if err != nil {
			return nil, err
		}
		if err := out.merge(f, name); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s holds no .yaml, .yml or .json file", path)
	}
	return out, nil
}

// readLimited reads r, failing once it passes limit bytes.
func readLimited(r io.Reader, limit int, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes", name, limit)
	}
	return data, nil
}

// Parse reads the configuration in data (YAML or JSON, several YAML
// documents allowed). A document without any section key but with a
// "name" is one agent, as `weft agent apply` files are. name is for
// messages. Data over MaxFileBytes is refused.
func Parse(data []byte, name string) (*File, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes", name, MaxFileBytes)
	}
	out := &File{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		var doc any
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		where := name
		if i > 1 {
			where += " (document " + strconv.Itoa(i) + ")"
		}
		if doc == nil {
			continue
		}
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: want a mapping of sections (%s), got %s", where, strings.Join(sections, ", "), kindOf(doc))
		}
		if !slices.ContainsFunc(sections, func(s string) bool { _, ok := m[s]; return ok }) {
			if _, named := m["name"]; named {
				m = map[string]any{"agents": []any{m}}
			}
		}
		// Through JSON, so that the API's field names and types apply.
		j, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		jd := json.NewDecoder(bytes.NewReader(j))
		jd.DisallowUnknownFields()
		jd.UseNumber()
		var f File
		if err := jd.Decode(&f); err != nil {
			return nil, fmt.Errorf("%s: %s", where, strings.TrimPrefix(err.Error(), "json: "))
		}
		if err := f.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if err := out.merge(&f, where); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	}
	return fmt.Sprintf("%T", v)
}

// fields are the fields each kind of object may declare (the API's
// writable fields); a misspelt field is an error, not silently ignored.
// Workflows are checked by the server.
var fields = map[string][]string{
	"knowledge_bases": {"name", "chunk_size", "chunk_overlap", "embedding_model"},
	"tools":           {"name", "description", "kind", "parameters", "http", "mcp", "sql"},
	"agents": {"name", "system_prompt", "model", "temperature", "max_tokens", "context_window_tokens",
		"reserve_tokens", "knowledge_base_ids", "retrieval", "tool_ids", "delegate_agent_ids",
		"max_tool_rounds", "max_delegate_depth", "enabled", "timeouts", "remote"},
}

// secretName is the API's rule for secret names.
var secretName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,127}$`)

// check validates what the file can tell without a server.
func (f *File) check() error {
	for section, objs := range f.objects() {
		seen := map[string]bool{}
		for i, o := range objs {
			n := o.Name()
			if n == "" {
				return fmt.Errorf("%s[%d]: field \"name\" is required", section, i)
			}
			if seen[n] {
				return fmt.Errorf("%s: %q is declared twice", section, n)
			}
			seen[n] = true
			if allowed, ok := fields[section]; ok {
				for k := range o {
					if !slices.Contains(allowed, k) {
						return fmt.Errorf("%s %q: unknown field %q (known: %s)", section, n, k, strings.Join(allowed, ", "))
					}
				}
			}
		}
	}
	for n := range f.Secrets {
		if !secretName.MatchString(n) {
			return fmt.Errorf("secrets: %q: want a letter or _ followed by up to 127 letters, digits, _ or -", n)
		}
	}
	for alias, spec := range f.Models {
		if strings.Contains(alias, "/") || alias == "" {
			return fmt.Errorf("models: alias %q: an alias has no \"/\" (it would read as provider/model)", alias)
		}
		if !strings.Contains(spec, "/") {
			return fmt.Errorf("models: %s: %q: want provider/model", alias, spec)
		}
	}
	return nil
}

// objects returns the declared objects by section, in the order they apply.
func (f *File) objects() map[string][]Object {
	return map[string][]Object{"knowledge_bases": f.KnowledgeBases, "tools": f.Tools, "agents": f.Agents, "workflows": f.Workflows}
}

// merge adds g's declarations to f; a name declared in both is an error.
func (f *File) merge(g *File, where string) error {
	if g.DefaultModel != "" {
		if f.DefaultModel != "" && f.DefaultModel != g.DefaultModel {
			return fmt.Errorf("%s: default_model is declared twice (%q and %q)", where, f.DefaultModel, g.DefaultModel)
		}
		f.DefaultModel = g.DefaultModel
	}
	if err := mergeMap(&f.Providers, g.Providers, "providers", where); err != nil {
		return err
	}
	if err := mergeMap(&f.Models, g.Models, "models", where); err != nil {
		return err
	}
	if err := mergeMap(&f.Secrets, g.Secrets, "secrets", where); err != nil {
		return err
	}
	for _, l := range []struct {
		dst     *[]Object
		src     []Object
		section string
	}{{&f.KnowledgeBases, g.KnowledgeBases, "knowledge_bases"}, {&f.Tools, g.Tools, "tools"}, {&f.Agents, g.Agents, "agents"}, {&f.Workflows, g.Workflows, "workflows"}} {
		for _, o := range l.src {
			if slices.ContainsFunc(*l.dst, func(x Object) bool { return x.Name() == o.Name() }) {
				return fmt.Errorf("%s: %s %q is declared twice", where, l.section, o.Name())
			}
			*l.dst = append(*l.dst, o)
		}
	}
	return nil
}

func mergeMap[V any](dst *map[string]V, src map[string]V, section, where string) error {
	for k, v := range src {
		if *dst == nil {
			*dst = map[string]V{}
		}
		if _, dup := (*dst)[k]; dup {
			return fmt.Errorf("%s: %s %q is declared twice", where, section, k)
		}
		(*dst)[k] = v
	}
	return nil
}

// Env reads what ${…} references: Getenv the environment, ReadFile files.
type Env struct {
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
}

// refPattern matches ${NAME} and ${file:PATH}.
var refPattern = regexp.MustCompile(`\$\{(file:[^}]+|[A-Za-z_][A-Za-z0-9_]*)\}`)

// Expand replaces the ${NAME} and ${file:PATH} references of s. An unset
// variable or unreadable file is an error naming it; a file's content is
// taken without its trailing newline.
func (e Env) Expand(s string) (string, error) {
	var err error
	out := refPattern.ReplaceAllStringFunc(s, func(ref string) string {
		inner := ref[2 : len(ref)-1]
		if path, ok := strings.CutPrefix(inner, "file:"); ok {
			v, ferr := e.readFile(path)
			if ferr != nil && err == nil {
				err = ferr
			}
			return v
		}
		v := ""
		if e.Getenv != nil {
			v = e.Getenv(inner)
		}
		if v == "" && err == nil {
			err = fmt.Errorf("${%s}: the environment variable is not set", inner)
		}
		return v
	})
	return out, err
}

func (e Env) readFile(path string) (string, error) {
	read := e.ReadFile
	if read == nil {
		read = func(p string) ([]byte, error) {
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return readLimited(f, maxRefBytes, p)
		}
	}
	b, err := read(path)
	if err != nil {
		return "", fmt.Errorf("${file:%s}: %w", path, err)
	}
	if len(b) > maxRefBytes {
		return "", fmt.Errorf("${file:%s}: larger than %d bytes", path, maxRefBytes)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// ResolvedProviders returns the providers with their references expanded.
func (f *File) ResolvedProviders(e Env) (map[string]Provider, error) {
	out := make(map[string]Provider, len(f.Providers))
	for name, p := range f.Providers {
		var err error
		if p.APIKey, err = e.Expand(p.APIKey); err != nil {
			return nil, fmt.Errorf("providers: %s: api_key: %w", name, err)
		}
		if p.BaseURL, err = e.Expand(p.BaseURL); err != nil {
			return nil, fmt.Errorf("providers: %s: base_url: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}

// ErrServerSettings marks the sections only `weft serve --config` applies.
var ErrServerSettings = errors.New("default_model, providers and models are settings of the server: give this file to weft serve --config")

// ServerSettings reports whether the file sets anything only the server
// can apply (default_model, providers, models).
func (f *File) ServerSettings() bool {
	return f.DefaultModel != "" || len(f.Providers) > 0 || len(f.Models) > 0
}

// Alias returns the provider/model an alias of the file's models names.
// A nil File has no aliases.
func (f *File) Alias(name string) (string, bool) {
	if f == nil {
		return "", false
	}
	spec, ok := f.Models[name]
	return spec, ok
}
