package platform

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftlabs/weft/internal/redact"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform/console"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/secrets"
	"github.com/weftlabs/weft/provider"
)

// Config is what a Server is built from. Meta and Sessions are required;
// everything else has a default.
type Config struct {
	// Meta holds tenants, keys, agents and sessions' registrations.
	Meta meta.Store
	// Sessions holds the conversations' messages.
	Sessions memory.Store
	// Redis, when set, carries rate limits and cache invalidation between
	// replicas.
	Redis redis.UniversalClient
	// DefaultModel is the "provider/model" (or alias) of agents that name
	// none.
	DefaultModel string
	// ModelAliases maps names to "provider/model" specs (the "models" of a
	// configuration file): agents, and DefaultModel, may name an alias.
	ModelAliases map[string]string
	// DefaultEmbeddingModel embeds the chunks of knowledge bases created
	// without an embedding_model; empty makes them keyword-only.
	DefaultEmbeddingModel string
	// KnowledgeURL, when set, is the PostgreSQL database (a pgx DSN) that
	// keeps knowledge bases' chunks and searches them: pgvector HNSW
	// (cosine) and full text, fused by reciprocal rank fusion, with no
	// index in the replicas' memory, so every replica recalls what any
	// ingested at once. Without pgvector, recall is keyword-only. Empty
	// keeps chunks in the metadata store, indexed in each replica's memory.
	// weft serve sets it to --postgres.
	KnowledgeURL string
	// OpenModel opens a model by spec; nil means provider.Open.
	OpenModel func(spec string) (*llm.Model, error)
	// Logger receives the server's structured logs; nil means slog.Default().
	Logger *slog.Logger
	// RateLimit is the sustained requests per second allowed per API key
	// (default 20), with bursts of RateBurst (default 40). Negative disables.
	RateLimit float64
	RateBurst int
	// CacheTTL bounds how long an agent or key is served from the cache
	// without a look at the store (default 30 s). Updates made through any
	// replica invalidate at once when Redis is configured.
	CacheTTL time.Duration
	// Getenv reads environment variables (the outbound guard's allow list,
	// WEFT_ENV_SECRETS_ALLOW and the variables it allows); nil means
	// os.Getenv.
	Getenv func(string) string
	// SecretKey is the 32-byte key tenant secrets are encrypted under (see
	// package platform/secrets); nil means a random key for this process
	// only, so secrets do not survive a restart (fine for tests). weft
	// serve loads it from WEFT_SECRET_KEY or the data directory.
	SecretKey []byte
	// FrameDeadline bounds the write of one SSE frame (default 10 s): a
	// client that stops reading cannot hold a turn longer.
	FrameDeadline time.Duration
	// PingInterval is the SSE keep-alive period (default 10 s).
	PingInterval time.Duration
	// LockWait bounds how long a turn waits for its session (default 30 s).
	LockWait time.Duration
	// Ingestion bounds document ingestion: workers, per-tenant concurrency
	// and the loader's limits.
	Ingestion IngestOptions
	// Prices override or extend the price table of model costs (USD per
	// million tokens, see usage.go); weft serve reads WEFT_PRICES.
	Prices map[string]Price
	// TraceRetention is how long turn traces are kept (default
	// DefaultTraceRetention); negative keeps none. weft serve reads
	// WEFT_TRACE_RETENTION.
	TraceRetention time.Duration
	// TracerProvider and MeterProvider receive the server's spans and
	// OpenTelemetry metrics (see telemetry.go); nil means none. weft serve
	// sets them from the OTEL_* variables.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Instance names this server process in session leases (see
	// memory.Lease): stable across restarts, distinct between replicas
	// that share a store. weft serve keeps it in <data dir>/instance.id
	// (or takes WEFT_INSTANCE_ID) and drops the leases of its previous run
	// at start. Empty means a random id for this Server.
	Instance string
	// PublicURL is the URL clients reach the server at (scheme, host and
	// an optional path prefix, e.g. https://agents.example.com/weft): the
	// A2A cards name their endpoints under it. weft serve sets it from
	// --public-url (WEFT_PUBLIC_URL), else from its listen address. Empty
	// names the Host each request was addressed to; request headers such
	// as X-Forwarded-Proto are never trusted.
	PublicURL string
	// Secrets are more values the server removes from every error it
	// answers and every line it logs, with the API keys in the environment
	// (OPENAI_API_KEY, …), WEFT_ADMIN_KEY, WEFT_SECRET_KEY and the variables
	// WEFT_ENV_SECRETS_ALLOW lists, which it reads through Getenv: the keys
	// an OpenModel of the embedder's holds, say. weft serve adds the
	// configuration file's provider keys and secrets.
	Secrets []string
	// WorkflowLease is how long a workflow run's owner holds it without
	// renewing (default DefaultWorkflowLease): after an owner dies, another
	// replica (or the restarted one) resumes its runs within about this
	// long. The owner renews every third of it.
	WorkflowLease time.Duration
	// WorkflowLimits bound workflow runs: per tenant, and each run's
	// node runs, bytes and conditions. weft serve reads them from the
	// WEFT_WORKFLOW_* variables (see docs/api.md).
	WorkflowLimits WorkflowLimits
}

// Server is the agent platform's HTTP API (see docs/api.md). It is an
// http.Handler; the weft serve command runs it.
type Server struct {
	cfg      Config
	meta     meta.Store
	sessions memory.Store
	log      *slog.Logger
	mux      *http.ServeMux
	limiter  Limiter
	metrics  *metrics
	otel     *otelInstruments
	// accounting records usage and enforces budgets; nil when the
	// metadata store keeps no usage.
	accounting *accounting
	// traces keeps turn traces; nil when none are kept.
	traces *traces
	// ledger writes turns' usage and traces off their path (ledger.go).
	ledger *ledger
	bus    *bus

	keys   *cache[meta.APIKey]
	agents *cache[meta.Agent]
	// registry caches the session registry (meta sessions) for turns;
	// touches gathers their update times (sessions.go, touch.go).
	registry *cache[meta.Session]
	touches  *touches

	modelsMu sync.Mutex
	models   map[string]*llm.Model

	turns   *turnRegistry
	engines engines
	// access is the route table: each authenticated route's access
	// (access.go), as registered by handle.
	access map[string]access
	// getters are the GET routes' handlers by path, for the audit log's
	// before (audit.go); audit keeps the log, nil when the store has none.
	getters map[string]http.HandlerFunc
	audit   auditStore
	// versions keeps agents' versions (versions.go); nil when the store
	// has none.
	versions versionStore
	// a2aTasks are the A2A tasks: those this replica runs, and the store
	// (a2aserver.go).
	a2aTasks *a2aTaskStore

	knowledge knowledgeService
	tools     *tools
	// guard is the outbound guard of every request the server makes on a
	// user's behalf: HTTP tools, MCP over HTTP, remote agents.
	guard *netguard.Guard
	// remoteHTTP is the one HTTP client of remote agents (through guard),
	// made on first use so its connections are reused.
	remoteOnce    sync.Once
	remoteHTTP    *http.Client
	secrets       *secrets.Service // nil when the metadata store keeps no secrets
	envAllow      map[string]bool  // WEFT_ENV_SECRETS_ALLOW
	toolSources   []toolSource
	refValidators []func(context.Context, *meta.Agent) *apiError
	// workflows executes workflow runs; nil when the metadata store keeps
	// no workflows.
	workflows *workflowRunner
	// mcp serves /mcp: the tenant's agents as MCP tools (mcpserver.go).
	mcp *mcpHub
	// memories are agents' running summarizers and the background
	// extractions of long-term memory (memory.go).
	memories *memories
	// retention sweeps what tenants' retention let go (retention.go); nil
	// when the metadata store keeps no retention.
	retention *retention
}

// New returns a Server over cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Meta == nil || cfg.Sessions == nil {
		return nil, errors.New("platform: Config.Meta and Config.Sessions are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OpenModel == nil {
		cfg.OpenModel = func(spec string) (*llm.Model, error) { return provider.Open(spec) }
	}
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = "scripted/demo"
	}
	if cfg.Instance == "" {
		cfg.Instance = meta.NewID("weft")
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 30 * time.Second
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = 20
	}
	if cfg.RateBurst == 0 {
		cfg.RateBurst = int(2 * cfg.RateLimit)
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.PublicURL != "" {
		u, err := parsePublicURL(cfg.PublicURL)
		if err != nil {
			return nil, fmt.Errorf("platform: Config.PublicURL: %w", err)
		}
		cfg.PublicURL = u
	}
	addEnvSecrets(cfg.Getenv)
	addKeySecret(cfg.SecretKey)
	processSecrets.Add(cfg.Secrets...)
	cfg.Logger = slog.New(processSecrets.Handler(cfg.Logger.Handler()))
	s := &Server{
		cfg:      cfg,
		meta:     cfg.Meta,
		sessions: cfg.Sessions,
		log:      cfg.Logger,
		mux:      http.NewServeMux(),
		metrics:  newMetrics(),
		otel:     newOtelInstruments(cfg.TracerProvider, cfg.MeterProvider),
		models:   map[string]*llm.Model{},
		turns:    newTurnRegistry(),
		memories: newMemories(),
		access:   map[string]access{},
		getters:  map[string]http.HandlerFunc{},
	}
	s.bus = newBus(cfg.Redis, cfg.Logger)
	s.keys = newCache(cfg.CacheTTL, func(ctx context.Context, _, id string) (meta.APIKey, error) {
		return s.meta.KeyByID(ctx, id)
	})
	s.agents = newCache(cfg.CacheTTL, func(ctx context.Context, tenant, id string) (meta.Agent, error) {
		return s.meta.Agent(ctx, tenant, id)
	})
	s.bus.subscribe("key", s.keys.invalidate)
	s.bus.subscribe("agent", s.agents.invalidate)
	s.initSessions()
	// A cancelled A2A task is marked before its turn is cancelled, so that
	// it ends canceled (A2A tasks are kept as long as traces).
	tdb, _ := cfg.Meta.(a2aTaskDB)
	s.a2aTasks = newA2ATaskStore(tdb, cfg.Instance, cmp.Or(max(cfg.TraceRetention, 0), DefaultTraceRetention), cfg.Logger)
	s.bus.subscribe("cancel", s.a2aTasks.canceledByBus)
	s.bus.subscribe("cancel", func(tenant, key string) { s.turns.cancel(tenant+"\x00"+key, errCancelledByClient) })
	s.a2aRelayTopics()
	switch {
	case cfg.RateLimit < 0:
	case cfg.Redis != nil:
		s.limiter = &redisBucket{rdb: cfg.Redis, rate: cfg.RateLimit, burst: cfg.RateBurst}
	default:
		s.limiter = newTokenBucket(cfg.RateLimit, cfg.RateBurst)
	}
	// The allow list of the outbound guard comes through Getenv like every
	// other setting, so embedders and tests can set it per server.
	guard, err := netguard.New(netguard.WithAllow(cfg.Getenv(netguard.AllowEnv)))
	if err != nil {
		return nil, fmt.Errorf("platform: %w", err)
	}
	s.guard = guard
	s.envAllow = map[string]bool{}
	for _, name := range strings.Split(cfg.Getenv(EnvSecretsAllowEnv), ",") {
		if name = strings.TrimSpace(name); name != "" {
			s.envAllow[name] = true
		}
	}
	if ss, ok := cfg.Meta.(secrets.Store); ok {
		key := cfg.SecretKey
		if key == nil {
			key = make([]byte, secrets.KeySize)
			rand.Read(key)
		}
		box, err := secrets.NewBox(key)
		if err != nil {
			return nil, fmt.Errorf("platform: %w", err)
		}
		s.secrets = secrets.New(ss, box)
	}
	if as, ok := cfg.Meta.(auditStore); ok {
		s.audit = as
	}
	if vs, ok := cfg.Meta.(versionStore); ok {
		s.versions = vs
	}
	if ls, ok := cfg.Meta.(ledgerStore); ok {
		s.ledger = newLedger(ls, cfg.Logger)
	}
	if us, ok := cfg.Meta.(usageStore); ok {
		s.accounting = newAccounting(s, us, cfg.Prices)
	}
	if ts, ok := cfg.Meta.(traceStore); ok && cfg.TraceRetention >= 0 {
		s.traces = &traces{store: ts, retention: cmp.Or(cfg.TraceRetention, DefaultTraceRetention)}
	}
	s.toolSources = append(s.toolSources, s.delegateTools)
	if ts, ok := cfg.Meta.(toolStore); ok {
		s.tools = newTools(s, ts)
		s.toolSources = append(s.toolSources, s.tools.agentTools)
		s.refValidators = append(s.refValidators, s.tools.validateToolRefs)
	}
	if ks, ok := cfg.Meta.(kbStore); ok {
		var backend kbBackend = embeddedBackend{ks}
		if cfg.KnowledgeURL != "" {
			pb, err := newPGBackend(context.Background(), cfg.KnowledgeURL, ks, cfg.Logger)
			if err != nil {
				return nil, fmt.Errorf("platform: %w", err)
			}
			backend = pb
		}
		k := newKnowledge(s, ks, backend)
		s.knowledge = k
		s.bus.subscribe("kb", k.forget)
		s.refValidators = append(s.refValidators, k.validateKBRefs)
	}
	if ws, ok := cfg.Meta.(workflowStore); ok {
		s.workflows = newWorkflowRunner(s, ws)
		s.toolSources = append(s.toolSources, s.workflowTools)
		s.refValidators = append(s.refValidators, s.validateWorkflowRefs)
	}
	if s.mcp, err = newMCPHub(s); err != nil {
		return nil, fmt.Errorf("platform: %w", err)
	}
	s.routes()
	s.startRetention()
	if s.workflows != nil {
		s.workflows.start()
	}
	return s, nil
}

// Close stops the server's background work (the invalidation subscriber)
// and closes tool connections (MCP servers, SQL pools).
func (s *Server) Close() error {
	s.a2aTasks.shutdown()
	if s.workflows != nil {
		s.workflows.close()
	}
	s.mcp.close()
	s.memories.close()
	s.retention.close()
	s.bus.close()
	s.ledger.close()
	s.touches.close()
	if k, ok := s.knowledge.(*knowledge); ok {
		k.uploads.close()
		k.backend.close()
	}
	if s.tools != nil {
		s.tools.close()
	}
	return nil
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))

	s.handle("POST /v1/api-keys", need(owner), s.createKey)
	s.handle("GET /v1/api-keys", need(owner), s.listKeys)
	s.handle("PATCH /v1/api-keys/{id}", need(owner), s.updateKey)
	s.handle("DELETE /v1/api-keys/{id}", need(owner), s.deleteKey)
	s.handle("GET /v1/me", need(endUser), s.me)
	s.handle("GET /v1/provider-models", need(viewer), s.providerModels)
	if s.audit != nil {
		s.handle("GET /v1/audit", need(admin), s.listAudit)
	}

	s.handle("POST /v1/agents", need(builder), s.createAgent)
	s.handle("GET /v1/agents", need(viewer), s.listAgents)
	s.handle("GET /v1/agents/{id}", need(viewer), s.getAgent)
	s.handle("PUT /v1/agents/{id}", need(builder), s.updateAgent)
	s.handle("DELETE /v1/agents/{id}", need(builder), s.deleteAgent)
	if s.versions != nil {
		s.versionRoutes()
	}

	s.handle("GET /v1/sessions", need(viewer), s.listSessions)
	s.handle("GET /v1/sessions/{id}", need(viewer), s.getSession)
	s.handle("GET /v1/sessions/{id}/messages", need(viewer), s.sessionMessages)
	s.handle("DELETE /v1/sessions/{id}", need(admin), s.deleteSession)
	s.notesRoutes()
	s.handle("POST /v1/sessions/{id}/interrupts/{interrupt}/resume", need(builder), s.resumeTurn)

	s.extraRoutes()
	s.userRoutes()
	s.mcp.routes(s)
	if k, ok := s.knowledge.(*knowledge); ok {
		k.routes(s)
	}
	if s.tools != nil {
		s.tools.routes(s)
	}
	if s.secrets != nil {
		s.secretRoutes()
	}
	if s.workflows != nil {
		s.workflowRoutes()
	}

	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeRouteError(w, r, errorf(http.StatusNotFound, CodeNotFound, "no route for %s %s", r.Method, r.URL.Path))
	})
	s.mux.Handle("GET /", console.Handler(notFound)) // the web console: static assets; data only through /v1
	s.mux.Handle("/", notFound)
}

// handle registers an authenticated route with the access it needs (see
// access.go): the role checked before h runs.
func (s *Server) handle(pattern string, a access, h http.HandlerFunc) {
	s.handleOuter(pattern, a, h, nil)
}

// handleOuter is handle with outer run before the authentication (the
// MCP endpoint's Origin check). A route whose path takes an agent, tool,
// knowledge base or workflow id takes its name too (byName).
func (s *Server) handleOuter(pattern string, a access, h http.HandlerFunc, outer func(http.Handler) http.Handler) {
	if _, dup := s.access[pattern]; dup {
		panic("platform: route " + pattern + " registered twice")
	}
	s.access[pattern] = a
	if k, ok := refKindOf(pattern); ok {
		h = s.byName(k, h)
	}
	if path, ok := strings.CutPrefix(pattern, "GET "); ok {
		s.getters[path] = h
	}
	var in http.Handler = s.requireAuth(pattern, a, h)
	if outer != nil {
		in = outer(in)
	}
	s.mux.Handle(pattern, s.instrument(pattern, in))
}

// ServeHTTP implements http.Handler: request ids, panic recovery, logs.
// Every answer says nosniff: a browser takes it as the Content-Type it
// names (JSON, an SSE stream, the console's assets), never as HTML it
// guessed from a tenant's text.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rid := r.Header.Get("X-Request-Id")
	if rid == "" || len(rid) > 128 {
		rid = meta.NewID("req")
	}
	h := w.Header()
	h.Set("X-Request-Id", rid)
	h.Set("X-Content-Type-Options", "nosniff")
	ctx := context.WithValue(r.Context(), requestIDKey{}, rid)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(ctx, "panic serving request", "request_id", rid, "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			writeRouteError(w, r, errorf(http.StatusInternalServerError, CodeInternal, "internal error (request %s)", rid))
		}
	}()
	s.mux.ServeHTTP(w, r.WithContext(ctx))
}

type requestIDKey struct{}

// requestID returns the id of the request ctx belongs to.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// statusWriter records the status a handler answered with. It passes
// Flush through so streaming works, and Unwrap so http.ResponseController
// reaches the connection (write deadlines).
type statusWriter struct {
	http.ResponseWriter
	status int
	cause  error // of an internal error, for the log
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument counts and times a route, and logs each request once.
func (s *Server) instrument(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		r, span := s.otel.serverSpan(r, route)
		h.ServeHTTP(sw, r)
		d := time.Since(start)
		code := sw.status
		if code == 0 {
			code = http.StatusOK
		}
		endServerSpan(span, code)
		s.metrics.observeRequest(route, code, d)
		level := slog.LevelDebug
		attrs := []any{"request_id", requestID(r.Context()), "route", route, "status", code, "duration_ms", float64(d.Microseconds()) / 1000}
		if code >= 500 {
			level = slog.LevelError
			if sw.cause != nil {
				attrs = append(attrs, "err", redact.URLs(sw.cause.Error()))
			}
		}
		s.log.Log(r.Context(), level, "request", attrs...)
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz reports whether the stores answer: to anyone only ready or not,
// to an admin key which store failed and how (addresses and error texts are
// not for the public).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{}
	ok := true
	check := func(name string, err error) {
		if err != nil {
			checks[name], ok = redact.URLs(err.Error()), false
		} else {
			checks[name] = "ok"
		}
	}
	check("meta", s.meta.Ping(ctx))
	if p, isPinger := s.sessions.(interface{ Ping(context.Context) error }); isPinger {
		check("sessions", p.Ping(ctx))
	}
	if s.cfg.Redis != nil {
		check("redis", s.cfg.Redis.Ping(ctx).Err())
	}
	status, word := http.StatusOK, "ready"
	if !ok {
		status, word = http.StatusServiceUnavailable, "unavailable"
	}
	if r.Header.Get("Authorization") != "" {
		if p, err := s.authenticate(r); err == nil && p.Key.Admin {
			writeJSON(w, status, map[string]any{"status": word, "checks": checks})
			return
		}
	}
	writeJSON(w, status, map[string]string{"status": word})
}

// model returns the model for spec (the server default when empty), opened
// once and shared.
func (s *Server) model(spec string) (*llm.Model, error) {
	if spec == "" {
		spec = s.cfg.DefaultModel
	}
	if target, ok := s.cfg.ModelAliases[spec]; ok {
		spec = target
	}
	s.modelsMu.Lock()
	defer s.modelsMu.Unlock()
	if m, ok := s.models[spec]; ok {
		return m, nil
	}
	m, err := s.cfg.OpenModel(spec)
	if err != nil {
		return nil, err
	}
	s.models[spec] = m
	return m, nil
}

// Bootstrap prepares a store for its first use and rotates the configured
// admin key. When adminKey (from WEFT_ADMIN_KEY) is set, it becomes the one
// admin key of tenant "default": any string of 16 characters or more works,
// so replicas and restarts can share one configured key, and a new value
// revokes the previous admin key (environment-configured or generated).
// Otherwise, when the store has no admin key, it creates tenant "default"
// and a generated admin key. It returns the clear key it created, or ""
// when it created none (the configured key is not echoed back).
func Bootstrap(ctx context.Context, store meta.Store, adminKey string) (string, error) {
	res, err := bootstrap(ctx, store, adminKey)
	return res.generated, err
}

// bootstrapResult says what bootstrap changed, for the log.
type bootstrapResult struct {
	generated string   // the clear key generated, if any
	created   string   // the id of the admin key created, if any
	revoked   []string // the ids of the admin keys revoked
}

func bootstrap(ctx context.Context, store meta.Store, adminKey string) (bootstrapResult, error) {
	if adminKey != "" && len(adminKey) < 16 {
		return bootstrapResult{}, errors.New("platform: WEFT_ADMIN_KEY is too short: use 16 characters or more (or leave it unset to have one generated)")
	}
	t, err := store.EnsureTenant(ctx, "default")
	if err != nil {
		return bootstrapResult{}, err
	}
	if adminKey == "" {
		keys, err := store.ListKeys(ctx, t.ID)
		if err != nil {
			return bootstrapResult{}, err
		}
		for _, k := range keys {
			if k.Admin {
				return bootstrapResult{}, nil
			}
		}
		// No admin key (a new store, or one whose admin key a bug let go):
		// make one, so the operator is never locked out.
		clear, id, revoked, err := replaceAdminKey(ctx, store, t.ID)
		return bootstrapResult{generated: clear, created: id, revoked: revoked}, err
	}
	id, hash := envAdminKeyID, hashOf(adminKey)
	if kid, secret, ok := parseKey(adminKey); ok {
		id, hash = kid, hashOf(secret)
	}
	if k, err := store.KeyByID(ctx, id); err == nil && k.Admin && subtle.ConstantTimeCompare(k.Hash, hash) == 1 {
		// The configured key is in place: only revoke any other admin key.
		revoked, err := store.ReplaceAdminKeys(ctx, k)
		return bootstrapResult{revoked: revoked}, err
	} else if err != nil && !errors.Is(err, meta.ErrNotFound) {
		return bootstrapResult{}, err
	}
	k := meta.APIKey{ID: id, TenantID: t.ID, Name: "admin", Admin: true, Hash: hash, CreatedAt: time.Now().UTC()}
	revoked, err := replaceAdminKeys(ctx, store, k)
	return bootstrapResult{created: id, revoked: revoked}, err
}

// replaceAdminKey makes a newly generated key the admin key of tenant,
// revoking any other, and returns its clear text and id.
func replaceAdminKey(ctx context.Context, store meta.Store, tenant string) (clear, id string, revoked []string, err error) {
	clear, id, hash := newKey()
	k := meta.APIKey{ID: id, TenantID: tenant, Name: "admin", Admin: true, Hash: hash, CreatedAt: time.Now().UTC()}
	if revoked, err = replaceAdminKeys(ctx, store, k); err != nil {
		return "", "", nil, err
	}
	return clear, id, revoked, nil
}

// replaceAdminKeys is store.ReplaceAdminKeys, tried again once when another
// replica starting at the same moment stored the same key first.
func replaceAdminKeys(ctx context.Context, store meta.Store, k meta.APIKey) ([]string, error) {
	revoked, err := store.ReplaceAdminKeys(ctx, k)
	if errors.Is(err, meta.ErrConflict) {
		revoked, err = store.ReplaceAdminKeys(ctx, k)
	}
	if err != nil {
		return nil, fmt.Errorf("platform: admin key: %w", err)
	}
	return revoked, nil
}

// ResetAdminKey recovers a lost admin key offline (weft admin reset-key):
// it revokes every admin key of tenant "default" and makes a new one. It
// returns the new key's clear text (shown once: only its hash is stored),
// its id and the revoked keys' ids. A server running on the same store
// stops accepting a revoked key within its key cache's lifetime (Config.CacheTTL).
func ResetAdminKey(ctx context.Context, store meta.Store) (clear, id string, revoked []string, err error) {
	t, err := store.EnsureTenant(ctx, "default")
	if err != nil {
		return "", "", nil, err
	}
	return replaceAdminKey(ctx, store, t.ID)
}

func newMetricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
