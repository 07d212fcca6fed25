package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/internal/redact"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/redisstore"
	"github.com/weftlabs/weft/memory/sqlstore"
	"github.com/weftlabs/weft/platform/config"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/secrets"
	"github.com/weftlabs/weft/provider"
)

// Options are the settings of `weft serve` (flags and environment, see docs/api.md).
type Options struct {
	// Addr is the listen address (default 127.0.0.1:8080).
	Addr string
	// PublicURL is the URL clients reach the server at (Config.PublicURL);
	// empty means http:// and the listen address (the host's name when it
	// listens on every address).
	PublicURL string
	// DataDir holds the embedded stores and admin.key (default ./weft-data).
	DataDir string
	// PostgresURL moves metadata (and sessions, unless Redis is set) to PostgreSQL.
	PostgresURL string
	// RedisURL moves sessions, locks, rate limits and cache invalidation to Redis.
	RedisURL string
	// AdminKey is WEFT_ADMIN_KEY: the admin key to accept (and create).
	AdminKey string
	// DefaultModel is the model of agents that name none; empty chooses from
	// the configured providers, else the offline scripted demo.
	DefaultModel string
	// RateLimit and RateBurst per API key (see Config).
	RateLimit float64
	RateBurst int
	// ShutdownTimeout bounds graceful shutdown (default 10 s).
	ShutdownTimeout time.Duration
	// Config is the declarative configuration (weft serve --config): its
	// providers and model aliases configure the server, and its secrets,
	// knowledge bases, tools and agents are applied to tenant "default" at
	// start. Its default_model applies when DefaultModel is empty.
	Config *config.File
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Logger receives logs; nil means slog.Default().
	Logger *slog.Logger
	// Ready, when set, receives the bound address once the server listens.
	Ready func(addr string)
}

// bootstrapAndLog runs Bootstrap and says in the log what it did, by key id
// (a configured key's secret is never logged; a generated one is shown once
// and written to <data>/admin.key, mode 0600).
func bootstrapAndLog(ctx context.Context, store meta.Store, adminKey, dataDir string, log *slog.Logger) error {
	res, err := bootstrap(ctx, store, adminKey)
	if err != nil {
		return err
	}
	path := filepath.Join(dataDir, "admin.key")
	for _, id := range res.revoked {
		log.Warn("revoked the previous admin key: WEFT_ADMIN_KEY changed", "key_id", id)
	}
	if len(res.revoked) > 0 && adminKey != "" {
		// admin.key held a generated key that is now revoked.
		if err := os.Remove(path); err == nil {
			log.Info("removed " + path + ": it held a revoked admin key")
		}
	}
	switch {
	case res.generated != "":
		if err := os.WriteFile(path, []byte(res.generated+"\n"), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		log.Info("created the admin key of tenant \"default\"; it is shown once here and kept in "+path, "key_id", res.created, "admin_key", res.generated)
	case res.created != "":
		log.Info("WEFT_ADMIN_KEY is now the admin key of tenant \"default\"", "key_id", res.created)
	}
	return nil
}

// configuredModels returns how the server opens models: provider.Open
// with the API key and base URL f sets for each provider (references
// expanded), and f's model aliases.
func configuredModels(f *config.File, getenv func(string) string) (func(string) (*llm.Model, error), map[string]string, error) {
	if f == nil {
		return func(spec string) (*llm.Model, error) { return provider.Open(spec) }, nil, nil
	}
	providers, err := f.ResolvedProviders(config.Env{Getenv: getenv})
	if err != nil {
		return nil, nil, err
	}
	for name := range providers {
		if _, ok := provider.Lookup(name); !ok {
			return nil, nil, fmt.Errorf("providers: unknown provider %q (known: %s)", name, strings.Join(provider.Names(), ", "))
		}
	}
	for alias, spec := range f.Models {
		name, _, err := provider.ParseSpec(spec)
		if err != nil {
			return nil, nil, fmt.Errorf("models: %s: %w", alias, err)
		}
		if _, ok := provider.Lookup(name); !ok {
			return nil, nil, fmt.Errorf("models: %s: unknown provider %q (known: %s)", alias, name, strings.Join(provider.Names(), ", "))
		}
	}
	open := func(spec string) (*llm.Model, error) {
		name, _, err := provider.ParseSpec(spec)
		if err != nil {
			return nil, err
		}
		var opts []provider.Option
		if p, ok := providers[name]; ok {
			if p.APIKey != "" {
				opts = append(opts, provider.WithAPIKey(p.APIKey))
			}
			if p.BaseURL != "" {
				opts = append(opts, provider.WithBaseURL(p.BaseURL))
			}
		}
		return provider.Open(spec, opts...)
	}
	return open, f.Models, nil
}

// defaultEmbeddingModel picks the embedding model of new knowledge
// bases: WEFT_DEFAULT_EMBEDDING_MODEL ("none" for keyword-only), else
// OpenAI's text-embedding-3-small when an OpenAI key is configured (in the
// environment or the configuration file), else Ollama's nomic-embed-text
// when the default model (spec) is Ollama's, else none: a compatible
// server behind OPENAI_BASE_URL alone may have no embeddings.
func defaultEmbeddingModel(getenv func(string) string, spec string, f *config.File) string {
	if v := strings.TrimSpace(getenv("WEFT_DEFAULT_EMBEDDING_MODEL")); v != "" {
		if v == "none" {
			return ""
		}
		return v
	}
	if getenv("OPENAI_API_KEY") != "" || (f != nil && f.Providers["openai"].APIKey != "") {
		return "openai/text-embedding-3-small"
	}
	if specProvider(spec) == "ollama" {
		return "ollama/nomic-embed-text"
	}
	return ""
}

// DetectDefaultModel picks the default model from the configured providers:
// OpenAI, then Anthropic, DeepSeek, Ollama; else the offline scripted demo.
// ok is false when it fell back to the demo.
func DetectDefaultModel(getenv func(string) string) (spec string, ok bool) {
	switch {
	case getenv("WEFT_DEFAULT_MODEL") != "":
		return getenv("WEFT_DEFAULT_MODEL"), true
	case getenv("OPENAI_API_KEY") != "" || getenv("OPENAI_BASE_URL") != "":
		return "openai/gpt-4o-mini", true
	case getenv("ANTHROPIC_API_KEY") != "":
		return "anthropic", true
	case getenv("DEEPSEEK_API_KEY") != "":
		return "deepseek/deepseek-chat", true
	case getenv("OLLAMA_HOST") != "":
		return "ollama/llama3.2", true
	}
	return "scripted/demo", false
}

// Run opens the stores, bootstraps the admin key, and serves until ctx ends;
// then it shuts down gracefully: it stops accepting, ends open streams with
// a terminal event, saves partial answers, and returns within the shutdown
// timeout.
//
// A URL or DSN in the error it returns has its password masked, and the
// process's secrets (API keys, the admin key) are removed from it as from
// every log line.
func Run(ctx context.Context, o Options) error {
	return processSecrets.Error(run(ctx, o))
}

func run(ctx context.Context, o Options) error {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:8080"
	}
	if o.DataDir == "" {
		o.DataDir = "weft-data"
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	// The process's secrets are known before anything is logged.
	addEnvSecrets(o.Getenv)
	processSecrets.Add(o.AdminKey)
	addConfigSecrets(o.Config, config.Env{Getenv: o.Getenv})
	log := slog.New(processSecrets.Handler(o.Logger.Handler()))
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}

	var metaStore meta.Store
	var sessions memory.Store
	var err error
	if o.PostgresURL != "" {
		metaStore, err = meta.OpenPostgres(ctx, o.PostgresURL)
	} else {
		metaStore, err = meta.OpenSQLite(ctx, filepath.Join(o.DataDir, "weft.db"))
	}
	if err != nil {
		return err
	}
	defer metaStore.Close()

	var rdb *redis.Client
	if o.RedisURL != "" {
		ropts, err := redis.ParseURL(o.RedisURL)
		if err != nil {
			return fmt.Errorf("--redis: %w", err)
		}
		rdb = redis.NewClient(ropts)
		defer rdb.Close()
		if err := rdb.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis at %s: %w", ropts.Addr, err)
		}
		rs, err := redisstore.New(rdb)
		if err != nil {
			return err
		}
		sessions = rs
	} else if o.PostgresURL != "" {
		ps, err := sqlstore.OpenPostgres(ctx, o.PostgresURL)
		if err != nil {
			return err
		}
		defer ps.Close()
		sessions = ps
	} else {
		ls, err := sqlstore.OpenSQLite(ctx, filepath.Join(o.DataDir, "sessions.db"))
		if err != nil {
			return err
		}
		defer ls.Close()
		sessions = ls
	}

	instance, err := instanceID(o.DataDir, o.Getenv)
	if err != nil {
		return err
	}
	if l, ok := sessions.(memory.Locker); ok {
		// A turn that this instance was running when it died holds its
		// session until the lease lapses; it is dead, so free it now.
		if err := l.Drop(ctx, instance); err != nil {
			return fmt.Errorf("session store: %w", err)
		}
	}

	if err := bootstrapAndLog(ctx, metaStore, o.AdminKey, o.DataDir, log); err != nil {
		return err
	}

	open, aliases, err := configuredModels(o.Config, o.Getenv)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	model := o.DefaultModel
	if model == "" && o.Config != nil {
		model = o.Config.DefaultModel
	}
	if model == "" && o.Config != nil && len(o.Config.Providers) > 0 {
		// The configured provider (OpenAI first), with its default model.
		names := slices.Sorted(maps.Keys(o.Config.Providers))
		if slices.Contains(names, "openai") {
			names = []string{"openai"}
		}
		model = names[0]
	}
	if model == "" {
		var ok bool
		model, ok = DetectDefaultModel(o.Getenv)
		if !ok {
			log.Info("no model provider configured: agents default to the offline demo model scripted/demo; set OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server), ANTHROPIC_API_KEY, DEEPSEEK_API_KEY or OLLAMA_HOST to use a real model")
		}
	}
	spec := model
	if target, ok := aliases[model]; ok {
		spec = target
	}
	embedding := defaultEmbeddingModel(o.Getenv, spec, o.Config)
	if embedding != "" {
		log.Info("new knowledge bases embed with "+embedding+" (hybrid search); set WEFT_DEFAULT_EMBEDDING_MODEL to change it, or to none for keyword-only", "default_embedding_model", embedding)
	}
	if _, err := open(spec); err != nil {
		return fmt.Errorf("default model %s: %w", model, err)
	}

	secretKey, created, err := secrets.LoadKey(o.Getenv(secrets.KeyEnv), o.DataDir)
	if err != nil {
		return err
	}
	if created {
		log.Info("generated the key tenant secrets are encrypted under", "path", filepath.Join(o.DataDir, secrets.KeyFile))
	}

	prices, err := ParsePrices(o.Getenv("WEFT_PRICES"))
	if err != nil {
		return err
	}
	retention, err := parseRetention(o.Getenv("WEFT_TRACE_RETENTION"))
	if err != nil {
		return err
	}
	var lease time.Duration
	if v := strings.TrimSpace(o.Getenv("WEFT_WORKFLOW_LEASE")); v != "" {
		if lease, err = time.ParseDuration(v); err != nil || lease < time.Second || lease > time.Hour {
			return fmt.Errorf("WEFT_WORKFLOW_LEASE=%q: want a duration from 1s to 1h (default %v)", v, DefaultWorkflowLease)
		}
	}
	wfLimits, err := parseWorkflowLimits(o.Getenv)
	if err != nil {
		return err
	}
	tel, err := startTelemetry(ctx, o.Getenv)
	if err != nil {
		return err
	}
	defer func() {
		// Flush what is buffered, within bounds.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tel.close(fctx); err != nil {
			log.Warn("opentelemetry export not flushed", "err", redact.URLs(err.Error()))
		}
	}()

	// Listen first: without --public-url, the address bound is the public
	// one (a port of 0 is chosen here).
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	publicURL := o.PublicURL
	if publicURL == "" {
		publicURL = listenURL(ln.Addr(), log)
	}
	cfg := Config{Meta: metaStore, Sessions: sessions, DefaultModel: model, DefaultEmbeddingModel: embedding, ModelAliases: aliases, OpenModel: open, Logger: log, KnowledgeURL: o.PostgresURL,
		RateLimit: o.RateLimit, RateBurst: o.RateBurst, Getenv: o.Getenv, Instance: instance, SecretKey: secretKey,
		TracerProvider: tel.tracerProvider, MeterProvider: tel.meterProvider, Prices: prices,
		TraceRetention: retention, WorkflowLease: lease, PublicURL: publicURL, WorkflowLimits: wfLimits}
	if rdb != nil {
		cfg.Redis = rdb
	}
	srv, err := New(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	tel.gatherer.bind(srv.metrics.reg)

	if o.Config != nil {
		report, err := srv.applyConfig(ctx, o.Config, config.Env{Getenv: o.Getenv})
		for _, c := range report {
			log.Info("config: "+c.Kind+" "+c.Name+" "+c.Action, "id", c.ID, "note", c.Note)
		}
		if err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		log.Info("config applied", "created", report.Count(config.Created), "updated", report.Count(config.Updated),
			"unchanged", report.Count(config.Unchanged), "differs", report.Count(config.Differs))
	}

	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	store := "embedded (SQLite under " + o.DataDir + ")"
	if o.PostgresURL != "" {
		store = "PostgreSQL"
	}
	if rdb != nil {
		store += " + Redis sessions"
	}
	console := strings.TrimSuffix(srv.cfg.PublicURL, "/") + "/"
	log.Info("console: "+console+" (sign in with an API key)", "console", console)
	log.Info("weft serve listening", "addr", ln.Addr().String(), "public_url", srv.cfg.PublicURL, "stores", store, "default_model", model,
		"otel_traces", otelSignalOn(o.Getenv, "TRACES"), "otel_metrics", otelSignalOn(o.Getenv, "METRICS"))
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: ending open streams and saving partial answers")
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	ended := make(chan struct{})
	go func() { srv.Shutdown(sctx); close(ended) }()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	<-ended
	return nil
}

// listenURL is the public URL of a server listening at addr, when none is
// configured: http:// and the address, with the host's name for an
// address that listens on every interface (logged, since clients elsewhere
// may know the host by another name).
func listenURL(addr net.Addr, log *slog.Logger) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if host, err = os.Hostname(); err != nil || host == "" {
			host = "localhost"
		}
		log.Warn("no public URL set: A2A agent cards name this server by its host name; set --public-url (WEFT_PUBLIC_URL) to the URL clients reach it at",
			"public_url", "http://"+net.JoinHostPort(host, port))
	}
	return "http://" + net.JoinHostPort(host, port)
}

// instanceID returns the id of this server in session leases:
// WEFT_INSTANCE_ID when set, else the one kept in <dataDir>/instance.id,
// made at first start. Replicas must not share a data directory (or an
// id): each drops the leases of its id at start.
func instanceID(dataDir string, getenv func(string) string) (string, error) {
	if id := getenv("WEFT_INSTANCE_ID"); id != "" {
		return id, nil
	}
	path := filepath.Join(dataDir, "instance.id")
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("instance id: %w", err)
	}
	id := meta.NewID("weft")
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("instance id: %w", err)
	}
	return id, nil
}
