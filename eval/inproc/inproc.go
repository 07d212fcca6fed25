// Package inproc runs a Weft server inside the process for eval suites:
// the platform's handler on a loopback listener, over temporary SQLite
// stores, with a declarative configuration (a weft.yaml) applied to
// tenant "default". It is the target of `weft eval run --config`.
//
// Every model call of the server goes through the [eval.Cassettes] it is
// given (recorded once, then replayed offline), and every HTTP tool is
// answered by the running case's mocks ([eval.Mock]): the tools keep their
// names, descriptions and parameters, so the model sees them unchanged, but
// their calls go to a mock server in the process instead of their URLs. A
// call no mock matches is answered with an error result saying so. MCP and
// SQL tools run as configured.
package inproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/eval"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/config"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider"
)

// Options configure [Start].
type Options struct {
	// Config is the configuration applied to the server (required): its
	// providers, models and default_model configure how models are
	// opened, and its secrets, knowledge bases, tools, workflows and
	// agents are created in tenant "default".
	Config *config.File
	// Cassettes carries every model call of the server; nil sends them to
	// the providers directly.
	Cassettes *eval.Cassettes
	// Getenv reads the environment (provider keys, ${NAME} references of
	// the configuration); nil means os.Getenv.
	Getenv func(string) string
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
}

// Server is a Weft server running in the process. It is an [eval.Target]
// that mocks tools ([eval.Mocker]) and lists what it serves
// ([eval.Cataloger]). Close it when done.
type Server struct {
	eval.Target
	client *client.Client
	srv    *platform.Server
	hs     *httptest.Server
	mocks  *mockServer
	store  meta.Store
	dir    string
	cas    *eval.Cassettes
	loaded map[string]bool // setup documents uploaded, by knowledge base and path

	open    func(string) (*llm.Model, error)
	aliases map[string]string
}

// Start starts a server over temporary stores and applies o.Config.
func Start(ctx context.Context, o Options) (_ *Server, err error) {
	if o.Config == nil {
		return nil, errors.New("inproc: Options.Config is required")
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	open, err := opener(o)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "weft-eval-")
	if err != nil {
		return nil, fmt.Errorf("inproc: %w", err)
	}
	s := &Server{dir: dir, cas: o.Cassettes, loaded: map[string]bool{}, mocks: newMockServer(), open: open, aliases: o.Config.Models}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.store, err = meta.OpenSQLite(ctx, filepath.Join(dir, "weft.db"))
	if err != nil {
		return nil, err
	}
	admin, err := platform.Bootstrap(ctx, s.store, "")
	if err != nil {
		return nil, err
	}
	// The mock server is on loopback: the outbound guard of HTTP tools
	// must let calls reach it, and nothing else that is internal.
	getenv := func(name string) string {
		if name == netguard.AllowEnv {
			return "127.0.0.1"
		}
		return o.Getenv(name)
	}
	model := o.Config.DefaultModel
	if model == "" {
		model = "scripted/demo"
	}
	s.srv, err = platform.New(platform.Config{
		Meta: s.store, Sessions: memory.NewInMemory(), DefaultModel: model, ModelAliases: o.Config.Models,
		OpenModel: open, RateLimit: -1, Getenv: getenv, Logger: o.Logger, TraceRetention: -1,
	})
	if err != nil {
		return nil, err
	}
	s.hs = httptest.NewServer(s.srv)
	s.client = client.New(s.hs.URL, admin)
	s.Target = eval.ClientTarget(s.client)
	cfg := mockTools(o.Config, s.mocks.url())
	if _, err := config.Apply(ctx, config.Target{BaseURL: s.hs.URL, Key: admin}, cfg, config.Env{Getenv: o.Getenv}); err != nil {
		return nil, fmt.Errorf("inproc: applying the configuration: %w", err)
	}
	return s, nil
}

// opener returns how the server opens models: provider.Open with the
// configuration's key and base URL for the provider, through the
// cassettes. In replay a provider without a key gets a placeholder: its
// requests never leave the process.
func opener(o Options) (func(string) (*llm.Model, error), error) {
	providers, err := o.Config.ResolvedProviders(config.Env{Getenv: o.Getenv})
	if err != nil {
		return nil, fmt.Errorf("inproc: %w", err)
	}
	for name := range providers {
		if _, ok := provider.Lookup(name); !ok {
			return nil, fmt.Errorf("inproc: providers: unknown provider %q (known: %s)", name, strings.Join(provider.Names(), ", "))
		}
	}
	return func(spec string) (*llm.Model, error) {
		name, _, err := provider.ParseSpec(spec)
		if err != nil {
			return nil, err
		}
		opts := []provider.Option{provider.WithGetenv(o.Getenv)}
		p := providers[name]
		if p.BaseURL != "" {
			opts = append(opts, provider.WithBaseURL(p.BaseURL))
		}
		switch {
		case p.APIKey != "":
			opts = append(opts, provider.WithAPIKey(p.APIKey))
		case o.Cassettes != nil && !o.Cassettes.Recording():
			opts = append(opts, provider.WithAPIKey("replayed-from-cassette"))
		}
		if o.Cassettes != nil {
			opts = append(opts, provider.WithHTTPClient(o.Cassettes.Client()))
		}
		return provider.Open(spec, opts...)
	}, nil
}

// OpenModel opens a model as the server does (the judge, for example):
// with the configuration's providers and aliases, through the cassettes.
func (s *Server) OpenModel(spec string) (*llm.Model, error) {
	if target, ok := s.aliases[spec]; ok {
		spec = target
	}
	return s.open(spec)
}

// mockTools returns a copy of cfg whose HTTP tools call the mock server:
// POST <mock>/tools/<name>, the arguments as the JSON body. The tools'
// names, descriptions and parameters, all the model sees, are unchanged.
func mockTools(cfg *config.File, base string) *config.File {
	out := *cfg
	out.Tools = make([]config.Object, len(cfg.Tools))
	for i, t := range cfg.Tools {
		o := maps.Clone(t)
		if kind, _ := o["kind"].(string); kind == "http" {
			o["http"] = map[string]any{"method": http.MethodPost, "url": base + "/tools/" + t.Name()}
		}
		out.Tools[i] = o
	}
	return &out
}

// Catalog lists the agents, workflows and tools the server serves.
func (s *Server) Catalog(ctx context.Context) (*eval.Catalog, error) {
	return s.Target.(eval.Cataloger).Catalog(ctx)
}

// SetMocks sets the mocks that answer tool calls until the next call.
func (s *Server) SetMocks(m []eval.Mock) { s.mocks.set(m) }

// Setup uploads the suite's setup documents (once per knowledge base and
// path for the server's life) and waits for their ingestion. Model calls
// of the ingestion (embeddings) go to the suite's "_setup" cassette.
func (s *Server) Setup(ctx context.Context, suite *eval.Suite) (err error) {
	if suite.Setup == nil || len(suite.Setup.Documents) == 0 {
		return nil
	}
	base := filepath.Dir(suite.Path)
	type upload struct{ kb, kbID, path, name string }
	var todo []upload
	for _, d := range suite.Setup.Documents {
		kb, err := s.client.FindKnowledgeBase(ctx, d.KnowledgeBase)
		if err != nil {
			return fmt.Errorf("setup: knowledge base %q: %w", d.KnowledgeBase, err)
		}
		for _, pattern := range d.Paths {
			if !filepath.IsAbs(pattern) {
				pattern = filepath.Join(base, pattern)
			}
			paths, err := filepath.Glob(pattern)
			if err != nil || len(paths) == 0 {
				return fmt.Errorf("setup: knowledge base %q: no file matches %s", d.KnowledgeBase, pattern)
			}
			sort.Strings(paths)
			for _, p := range paths {
				if key := kb.ID + "\x00" + p; !s.loaded[key] {
					s.loaded[key] = true
					todo = append(todo, upload{d.KnowledgeBase, kb.ID, p, filepath.Base(p)})
				}
			}
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if s.cas != nil {
		s.cas.Begin(suite.Name, "_setup")
		defer func() {
			if end := s.cas.End(); err == nil {
				err = end
			}
		}()
	}
	// One at a time, in name order: chunks are made in the same order
	// every run.
	for _, u := range todo {
		f, err := os.Open(u.path)
		if err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		doc, err := s.client.UploadDocument(ctx, u.kbID, u.name, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("setup: uploading %s to %s: %w", u.path, u.kb, err)
		}
		doc, err = s.client.WaitDocument(ctx, u.kbID, doc.ID, 20*time.Millisecond)
		if err != nil {
			return fmt.Errorf("setup: ingesting %s: %w", u.path, err)
		}
		if doc.Error != "" {
			return fmt.Errorf("setup: ingesting %s into %s failed: %s", u.path, u.kb, doc.Error)
		}
	}
	return nil
}

// Close stops the server and removes its stores.
func (s *Server) Close() error {
	if s.hs != nil {
		s.hs.Close()
	}
	if s.srv != nil {
		s.srv.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
	s.mocks.close()
	return os.RemoveAll(s.dir)
}

// mockServer answers the calls of HTTP tools from the current mocks.
type mockServer struct {
	hs *httptest.Server
	mu sync.Mutex
	m  []eval.Mock
}

// maxArgsBytes bounds the arguments of a mocked call.
const maxArgsBytes = 1 << 20

func newMockServer() *mockServer {
	ms := &mockServer{}
	ms.hs = httptest.NewServer(http.HandlerFunc(ms.serve))
	return ms
}

func (ms *mockServer) url() string { return ms.hs.URL }

func (ms *mockServer) close() { ms.hs.Close() }

func (ms *mockServer) set(m []eval.Mock) {
	ms.mu.Lock()
	ms.m = m
	ms.mu.Unlock()
}

func (ms *mockServer) serve(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/tools/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxArgsBytes+1))
	if err != nil || len(body) > maxArgsBytes {
		http.Error(w, "mock: arguments too large", http.StatusRequestEntityTooLarge)
		return
	}
	var args any = map[string]any{}
	if len(bytes.TrimSpace(body)) > 0 && json.Unmarshal(body, &args) != nil {
		http.Error(w, "mock: arguments are not JSON", http.StatusBadRequest)
		return
	}
	ms.mu.Lock()
	mocks := ms.m
	ms.mu.Unlock()
	for _, m := range mocks {
		if !m.Matches(name, args) {
			continue
		}
		if m.Error != "" {
			http.Error(w, m.Error, http.StatusInternalServerError)
			return
		}
		if s, isString := m.Result.(string); isString {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, s)
			return
		}
		b, err := json.Marshal(m.Result)
		if err != nil {
			http.Error(w, "mock: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	}
	http.Error(w, fmt.Sprintf("no mock of tool %s in this case matches the arguments %s", name, bytes.TrimSpace(body)), http.StatusNotFound)
}
