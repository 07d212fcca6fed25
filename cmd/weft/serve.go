package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/config"
)

type serveOptions struct {
	addr, data, postgres, redis, model string
	publicURL                          string
	config                             string
	rateLimit                          float64
	rateBurst                          int
	logFormat, logLevel                string
}

func newServeCmd(e *env) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the agent platform's HTTP API",
		Long: `Run Weft's agent platform: the HTTP API of agents, sessions and chat (see
docs/api.md), with an OpenAI-compatible endpoint at /v1/chat/completions.

By default everything lives in embedded stores under --data. --postgres moves
metadata (and sessions) to PostgreSQL and --redis moves sessions, rate limits
and cache invalidation to Redis; with both, any number of replicas can serve
the same tenants.

On first start with an empty store, serve creates tenant "default" and an
admin key: WEFT_ADMIN_KEY when set, else a generated one, printed once in the
log and written to <data>/admin.key (mode 0600). Model providers read their
standard variables (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY,
OLLAMA_HOST, …); with none, agents default to the offline demo model
scripted/demo.

--config weft.yaml declares, by name, model providers (keys from the
environment or secret files), model aliases, the default model, tenant
secrets, knowledge bases, tools and agents; the objects are applied to tenant
"default" at every start (created, updated or left unchanged; see weft apply,
which applies the same files to a running server).

SIGINT or SIGTERM shuts down gracefully: open streams end with an error event,
partial answers are saved, and the process exits within 10 s.`,
		Example: `  weft serve
  weft serve --addr 0.0.0.0:8080 --data /var/lib/weft --public-url https://agents.example.com
  weft serve --config weft.yaml
  WEFT_ADMIN_KEY=... weft serve --postgres postgres://weft@db/weft --redis redis://cache:6379/0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			if !f.Changed("postgres") {
				o.postgres = e.getenv("WEFT_POSTGRES_URL")
			}
			if !f.Changed("redis") {
				o.redis = e.getenv("WEFT_REDIS_URL")
			}
			if !f.Changed("public-url") {
				o.publicURL = e.getenv("WEFT_PUBLIC_URL")
			}
			log, err := newLogger(e.stderr, o.logFormat, o.logLevel)
			if err != nil {
				return err
			}
			if !f.Changed("model") {
				var warning string
				if o.model, warning = envModel(e.getenv); warning != "" {
					log.Warn(warning)
				}
			}
			var file *config.File
			if o.config != "" {
				if file, err = config.Load(o.config, e.stdin); err != nil {
					return fmt.Errorf("--config: %w", err)
				}
			}
			if _, alias := file.Alias(o.model); o.model != "" && !alias {
				if err := checkProvider(o.model); err != nil {
					return err
				}
			}
			err = platform.Run(cmd.Context(), platform.Options{
				Addr: o.addr, PublicURL: o.publicURL, DataDir: o.data, PostgresURL: o.postgres, RedisURL: o.redis,
				AdminKey: e.getenv("WEFT_ADMIN_KEY"), DefaultModel: o.model, Config: file,
				RateLimit: o.rateLimit, RateBurst: o.rateBurst,
				Getenv: e.getenv, Logger: log,
			})
			if err != nil && cmd.Context().Err() == nil {
				return fmt.Errorf("serve: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on")
	f.StringVar(&o.publicURL, "public-url", "", "URL clients reach the server at, named in A2A agent cards (default $WEFT_PUBLIC_URL, else http:// and the listen address)")
	f.StringVar(&o.data, "data", "weft-data", "directory of the embedded stores and admin.key")
	f.StringVar(&o.postgres, "postgres", "", "PostgreSQL DSN for metadata and sessions (default $WEFT_POSTGRES_URL)")
	f.StringVar(&o.redis, "redis", "", "Redis URL for sessions, rate limits and cache invalidation (default $WEFT_REDIS_URL)")
	f.StringVarP(&o.model, "model", "m", "", "default model of agents that name none (default $WEFT_DEFAULT_MODEL, else the config file's default_model, else the first configured provider, else scripted/demo)")
	f.StringVarP(&o.config, "config", "c", "", "configuration file (or directory) of providers, model aliases, secrets, knowledge bases, tools and agents, applied at start")
	f.Float64Var(&o.rateLimit, "rate-limit", 0, "requests per second allowed per API key (default 20; negative disables)")
	f.IntVar(&o.rateBurst, "rate-burst", 0, "burst of requests allowed per API key (default twice --rate-limit)")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}

// newLogger returns the structured logger of weft serve.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", level)}
	}
	ho := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format %q: want text or json", format)}
}
