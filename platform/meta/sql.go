package meta

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver

	"github.com/weftlabs/weft/internal/sqlgroup"
	"github.com/weftlabs/weft/memory/facts/sqlfacts"
)

// dialect is the little that differs between SQLite and PostgreSQL here.
type dialect struct {
	name  string
	blob  string
	int64 string
	// rebind turns ? placeholders into the dialect's.
	rebind func(string) string
}

var (
	sqliteDialect = dialect{name: "sqlite", blob: "BLOB", int64: "INTEGER", rebind: func(q string) string { return q }}
	pgDialect     = dialect{name: "postgres", blob: "BYTEA", int64: "BIGINT", rebind: dollarParams}
)

// dollarParams rewrites ? placeholders as $1, $2, … (queries here hold no
// literal question marks).
func dollarParams(q string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// SQL is the metadata store over database/sql, for SQLite and PostgreSQL.
type SQL struct {
	db    *sql.DB
	d     dialect
	stmts map[string]*sql.Stmt // SQLite: the hot queries, prepared at open, by their text; read-only after
	// creates group-commits new sessions on SQLite: a turn on a new
	// conversation stores its session before it answers, and at hundreds
	// of new conversations a second a commit each is most of the store's
	// work. Nil on PostgreSQL.
	creates *sqlgroup.Group
	// runWrites group-commits workflow checkpoints (on SQLite, in the
	// same group as creates: one writer): a run's writes, however many of
	// its nodes finish at once, hold one connection at a time, so the
	// other requests always find one (SQLite has two).
	runWrites *sqlgroup.Group
	// facts is the long-term memory store, made by FactStore on first use.
	factsMu sync.Mutex
	facts   *sqlfacts.Store
}

// Queries of every chat turn, prepared once on SQLite, whose driver otherwise
// parses and plans a statement on every call (pgx caches them itself).
const (
	qKeyByID       = `SELECT id, tenant_id, name, admin, role, hash, created_at FROM api_keys WHERE id = ?`
	qAgent         = `SELECT config FROM agents WHERE tenant_id = ? AND id = ?`
	qSession       = `SELECT id, agent_id, parent_id, user_id, created_at, updated_at, interrupt FROM sessions WHERE tenant_id = ? AND id = ?`
	qCreateSession = `INSERT INTO sessions (tenant_id, id, agent_id, parent_id, user_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`
	qTouchSession  = `UPDATE sessions SET updated_at = ? WHERE tenant_id = ? AND id = ? AND updated_at < ?`
)

// OpenSQLite opens (creating if needed) the SQLite database at path, in WAL
// mode, and applies the schema migrations.
func OpenSQLite(ctx context.Context, path string) (*SQL, error) {
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("meta: open sqlite %s: %w", path, err)
	}
	// Two connections, kept open: the default (unbounded, 2 idle) reopens
	// connections under load and lets many writers sleep in SQLite's busy
	// handler at once; two let a read (key or session lookup) proceed
	// beside a long write or a chunk scan. Nothing here holds a connection
	// while asking for another, so the bound cannot deadlock.
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	s, err := open(ctx, db, sqliteDialect)
	if err != nil {
		return nil, err
	}
	s.stmts = map[string]*sql.Stmt{}
	s.creates = sqlgroup.New(db)
	s.runWrites = s.creates
	for _, q := range []string{qKeyByID, qAgent, qSession, qCreateSession, qTouchSession, qAddUsage, qPutTrace, qCheckpointSeq, qSaveCheckpoint, qCheckpointInputs} {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("meta: open sqlite %s: prepare: %w", path, err)
		}
		s.stmts[q] = st
	}
	return s, nil
}

// OpenPostgres connects to PostgreSQL at dsn and applies the schema
// migrations. Several servers may share one database.
func OpenPostgres(ctx context.Context, dsn string) (*SQL, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("meta: open postgres: %w", err)
	}
	db.SetMaxOpenConns(20)
	return open(ctx, db, pgDialect)
}

func open(ctx context.Context, db *sql.DB, d dialect) (*SQL, error) {
	s := &SQL{db: db, d: d, runWrites: sqlgroup.New(db)}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// migrations are applied in order, once each, recorded in weft_meta_migrations.
// Append new steps; never edit a released one. {blob} and {int64} are the
// dialect's types. Agents keep their configuration as JSON so that new agent
// fields need no migration.
var migrations = []string{
	`CREATE TABLE tenants (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL UNIQUE,
		created_at {int64} NOT NULL
	);
	CREATE TABLE api_keys (
		id TEXT PRIMARY KEY,
		tenant_id TEXT NOT NULL REFERENCES tenants(id),
		name TEXT NOT NULL,
		admin INTEGER NOT NULL,
		hash {blob} NOT NULL,
		created_at {int64} NOT NULL
	);
	CREATE INDEX api_keys_tenant ON api_keys(tenant_id);
	CREATE TABLE agents (
		tenant_id TEXT NOT NULL,
		id TEXT NOT NULL,
		name TEXT NOT NULL,
		config TEXT NOT NULL,
		created_at {int64} NOT NULL,
		updated_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, id),
		UNIQUE (tenant_id, name)
	);
	CREATE TABLE sessions (
		tenant_id TEXT NOT NULL,
		id TEXT NOT NULL,
		agent_id TEXT NOT NULL,
		parent_id TEXT NOT NULL DEFAULT '',
		created_at {int64} NOT NULL,
		updated_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, id)
	);
	CREATE INDEX sessions_agent ON sessions(tenant_id, agent_id, updated_at);
	CREATE TABLE idempotency (
		tenant_id TEXT NOT NULL,
		key TEXT NOT NULL,
		status INTEGER NOT NULL,
		body {blob},
		expires_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, key)
	);`,
	// Knowledge bases, their documents and chunks, and the tool registry.
	`CREATE TABLE knowledge_bases (
		tenant_id TEXT NOT NULL,
		id TEXT NOT NULL,
		name TEXT NOT NULL,
		config TEXT NOT NULL,
		created_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, id),
		UNIQUE (tenant_id, name)
	);
	CREATE TABLE documents (
		tenant_id TEXT NOT NULL,
		kb_id TEXT NOT NULL,
		id TEXT NOT NULL,
		name TEXT NOT NULL,
		status TEXT NOT NULL,
		error TEXT NOT NULL,
		chunks INTEGER NOT NULL,
		bytes {int64} NOT NULL,
		created_at {int64} NOT NULL,
		updated_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, kb_id, id)
	);
	CREATE TABLE kb_chunks (
		tenant_id TEXT NOT NULL,
		kb_id TEXT NOT NULL,
		id TEXT NOT NULL,
		document_id TEXT NOT NULL,
		chunk TEXT NOT NULL,
		vector {blob},
		PRIMARY KEY (tenant_id, kb_id, id)
	);
	CREATE INDEX kb_chunks_doc ON kb_chunks(tenant_id, kb_id, document_id);
	CREATE TABLE tools (
		tenant_id TEXT NOT NULL,
		id TEXT NOT NULL,
		name TEXT NOT NULL,
		kind TEXT NOT NULL,
		parent_id TEXT NOT NULL,
		config TEXT NOT NULL,
		created_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, id),
		UNIQUE (tenant_id, name)
	);`,
	// Uploads awaiting ingestion, kept until their document is ready or
	// failed, so that ingestion survives a crash; the claim columns let one
	// replica at a time work on an upload.
	`CREATE TABLE document_uploads (
		tenant_id TEXT NOT NULL,
		kb_id TEXT NOT NULL,
		id TEXT NOT NULL,
		upload_id TEXT NOT NULL,
		data {blob} NOT NULL,
		claimed_by TEXT NOT NULL,
		claimed_until {int64} NOT NULL,
		created_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, kb_id, id)
	);`,
	// Tenant secrets: values sealed by package platform/secrets, never in
	// clear.
	`CREATE TABLE secrets (
		tenant_id TEXT NOT NULL,
		name TEXT NOT NULL,
		sealed {blob} NOT NULL,
		created_at {int64} NOT NULL,
		updated_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, name)
	);`,
	// A document's content hash (re-uploading the same bytes is a no-op),
	// the URL it was fetched from, and the format its stored upload is in
	// when the name does not tell (a web page stored as Markdown).
	`ALTER TABLE documents ADD COLUMN content_hash TEXT NOT NULL DEFAULT '';
	ALTER TABLE documents ADD COLUMN source_url TEXT NOT NULL DEFAULT '';
	ALTER TABLE documents ADD COLUMN format TEXT NOT NULL DEFAULT ''`,
	// Usage per tenant, day, agent, key and model; budgets per tenant or
	// key; the compact trace of each turn (see usage.go, traces.go).
	`CREATE TABLE usage_daily (
		tenant_id TEXT NOT NULL,
		day TEXT NOT NULL,
		agent_id TEXT NOT NULL,
		key_id TEXT NOT NULL,
		model TEXT NOT NULL,
		turns {int64} NOT NULL,
		prompt_tokens {int64} NOT NULL,
		completion_tokens {int64} NOT NULL,
		cost_nanos {int64} NOT NULL,
		PRIMARY KEY (tenant_id, day, agent_id, key_id, model)
	);
	CREATE TABLE budgets (
		tenant_id TEXT NOT NULL,
		id TEXT NOT NULL,
		key_id TEXT NOT NULL,
		period TEXT NOT NULL,
		max_tokens {int64} NOT NULL,
		max_cost_nanos {int64} NOT NULL,
		created_at {int64} NOT NULL,
		updated_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, id),
		UNIQUE (tenant_id, key_id, period)
	);
	CREATE TABLE turn_traces (
		tenant_id TEXT NOT NULL,
		session_id TEXT NOT NULL,
		message_id TEXT NOT NULL,
		agent_id TEXT NOT NULL,
		created_at {int64} NOT NULL,
		data TEXT NOT NULL,
		PRIMARY KEY (tenant_id, session_id, message_id)
	);
	CREATE INDEX turn_traces_created ON turn_traces(created_at);`,
	// Workflows (each version of a definition kept, so that a run reads
	// the version it started with), their runs — owned through a lease —
	// and each run's node checkpoints (see workflows.go).
	`CREATE TABLE workflows (
		tenant_id TEXT NOT NULL,
		id TEXT NOT NULL,
		name TEXT NOT NULL,
		version INTEGER NOT NULL,
		created_at {int64} NOT NULL,
		updated_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, id),
		UNIQUE (tenant_id, name)
	);
	CREATE TABLE workflow_versions (
		tenant_id TEXT NOT NULL,
		workflow_id TEXT NOT NULL,
		version INTEGER NOT NULL,
		definition TEXT NOT NULL,
		created_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, workflow_id, version)
	);
	CREATE TABLE workflow_runs (
		tenant_id TEXT NOT NULL,
		id TEXT NOT NULL,
		workflow_id TEXT NOT NULL,
		version INTEGER NOT NULL,
		key_id TEXT NOT NULL,
		status TEXT NOT NULL,
		inputs TEXT NOT NULL,
		outputs TEXT NOT NULL,
		error TEXT NOT NULL,
		cancel_requested INTEGER NOT NULL,
		owner TEXT NOT NULL,
		lease_until {int64} NOT NULL,
		created_at {int64} NOT NULL,
		started_at {int64} NOT NULL,
		finished_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, id)
	);
	CREATE INDEX workflow_runs_workflow ON workflow_runs(tenant_id, workflow_id, created_at);
	CREATE INDEX workflow_runs_lease ON workflow_runs(status, lease_until);
	CREATE TABLE workflow_checkpoints (
		tenant_id TEXT NOT NULL,
		run_id TEXT NOT NULL,
		key TEXT NOT NULL,
		node_id TEXT NOT NULL,
		inputs TEXT NOT NULL,
		outputs TEXT NOT NULL,
		error TEXT NOT NULL,
		usage TEXT NOT NULL,
		started_at {int64} NOT NULL,
		finished_at {int64} NOT NULL,
		seq {int64} NOT NULL,
		PRIMARY KEY (tenant_id, run_id, key)
	);`,
	// A2A tasks, shared by the replicas and kept across restarts: the
	// task as JSON, its state, the server instance running it and the
	// time after which an unfinished task is taken to be lost with it
	// (see a2atasks.go).
	`CREATE TABLE a2a_tasks (
		tenant_id TEXT NOT NULL,
		id TEXT NOT NULL,
		agent_id TEXT NOT NULL,
		context_id TEXT NOT NULL,
		state TEXT NOT NULL,
		final INTEGER NOT NULL,
		owner TEXT NOT NULL,
		data TEXT NOT NULL,
		created_at {int64} NOT NULL,
		updated_at {int64} NOT NULL,
		stale_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, id)
	);
	CREATE INDEX a2a_tasks_updated ON a2a_tasks(updated_at);`,
	// An agent's A2A tasks, newest first (A2A ListTasks).
	`CREATE INDEX a2a_tasks_agent ON a2a_tasks(tenant_id, agent_id, updated_at, id);`,
	// A run's checkpoints in the order of their first save: saving one
	// reads the run's largest seq, which without this index read every
	// checkpoint row of the run, so a run's checkpoints cost the square
	// of its node runs.
	`CREATE INDEX workflow_checkpoints_seq ON workflow_checkpoints(tenant_id, run_id, seq);`,
	// A person in the loop: a run that waits for answers (status
	// waiting) holds no lease; wake_at is the earliest deadline of its
	// open questions (0: none), when a replica runs it again to take the
	// timeout branch. A checkpoint's waiting is the question of a node
	// that waits, or the one an answer answers (JSON; '' for none).
	`ALTER TABLE workflow_runs ADD COLUMN wake_at {int64} NOT NULL DEFAULT 0;
	ALTER TABLE workflow_checkpoints ADD COLUMN waiting TEXT NOT NULL DEFAULT '';
	CREATE INDEX workflow_runs_waiting ON workflow_runs(tenant_id, status, created_at);
	CREATE INDEX workflow_runs_wake ON workflow_runs(status, wake_at);`,
	// Memory (issue S): the end user a session is for (the chat request's
	// user), so that forgetting a user finds their sessions; the audit
	// record of each forgetting, without the user's id (its hash) or
	// content; and each tenant's retention of sessions and traces.
	`ALTER TABLE sessions ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
	CREATE INDEX sessions_user ON sessions(tenant_id, user_id);
	CREATE INDEX sessions_parent ON sessions(tenant_id, parent_id);
	CREATE INDEX a2a_tasks_context ON a2a_tasks(tenant_id, context_id);
	CREATE INDEX turn_traces_session ON turn_traces(tenant_id, session_id);
	CREATE TABLE user_forgets (
		tenant_id TEXT NOT NULL,
		id TEXT NOT NULL,
		user_hash TEXT NOT NULL,
		key_id TEXT NOT NULL,
		counts TEXT NOT NULL,
		created_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, id)
	);
	CREATE TABLE tenant_retention (
		tenant_id TEXT PRIMARY KEY,
		sessions_seconds {int64} NOT NULL,
		traces_seconds {int64} NOT NULL,
		updated_at {int64} NOT NULL
	);`,
	// Roles of keys (see roles.go): the keys stored before keep what they
	// could do, an admin key as an owner, any other as an admin.
	`ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT '';
	UPDATE api_keys SET role = CASE WHEN admin <> 0 THEN 'owner' ELSE 'admin' END`,
	// The chat playground (see feedback.go): a session's title, and the
	// feedback on an answer, kept by session and message id beside the
	// session store (deleted with the session and when its user is
	// forgotten).
	`CREATE TABLE session_titles (
		tenant_id TEXT NOT NULL,
		session_id TEXT NOT NULL,
		title TEXT NOT NULL,
		PRIMARY KEY (tenant_id, session_id)
	);
	CREATE TABLE message_feedback (
		tenant_id TEXT NOT NULL,
		session_id TEXT NOT NULL,
		message_id TEXT NOT NULL,
		rating INTEGER NOT NULL,
		comment TEXT NOT NULL,
		key_id TEXT NOT NULL,
		created_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, session_id, message_id)
	);`,
	// A person in the loop, in a chat: a session whose turn paused for
	// approval of tool calls holds the interrupt (JSON; '' for none) and
	// its id, which the resume that answers it claims.
	`ALTER TABLE sessions ADD COLUMN interrupt_id TEXT NOT NULL DEFAULT '';
	ALTER TABLE sessions ADD COLUMN interrupt TEXT NOT NULL DEFAULT '';
	CREATE INDEX sessions_interrupted ON sessions(tenant_id, interrupt_id);`,
	// The audit log: every change made through the API, who made it and
	// the object before and after (see audit.go).
	`CREATE TABLE audit_log (
		tenant_id TEXT NOT NULL,
		id TEXT NOT NULL,
		at {int64} NOT NULL,
		actor_id TEXT NOT NULL,
		actor_name TEXT NOT NULL,
		actor_role TEXT NOT NULL,
		method TEXT NOT NULL,
		route TEXT NOT NULL,
		path TEXT NOT NULL,
		resource_type TEXT NOT NULL,
		resource_id TEXT NOT NULL,
		resource_name TEXT NOT NULL,
		status INTEGER NOT NULL,
		before_json TEXT NOT NULL,
		after_json TEXT NOT NULL,
		request_id TEXT NOT NULL,
		PRIMARY KEY (tenant_id, id)
	);
	CREATE INDEX audit_log_at ON audit_log(tenant_id, at, id);
	CREATE INDEX audit_log_resource ON audit_log(tenant_id, resource_id, at)`,
	// Versions of agents: every save is one; the agents row holds the
	// published one (see versions.go). The agents saved before become
	// their version 1, published.
	`CREATE TABLE agent_versions (
		tenant_id TEXT NOT NULL,
		agent_id TEXT NOT NULL,
		version INTEGER NOT NULL,
		config TEXT NOT NULL,
		created_at {int64} NOT NULL,
		created_by TEXT NOT NULL,
		published_at {int64} NOT NULL,
		PRIMARY KEY (tenant_id, agent_id, version)
	);
	INSERT INTO agent_versions (tenant_id, agent_id, version, config, created_at, created_by, published_at)
		SELECT tenant_id, id, 1, config, updated_at, '', updated_at FROM agents`,
}

func (s *SQL) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS weft_meta_migrations (version INTEGER PRIMARY KEY, applied_at `+s.d.int64+` NOT NULL)`); err != nil {
		return fmt.Errorf("meta: migrations table: %w", err)
	}
	for i, m := range migrations {
		version := i + 1
		err := s.tx(ctx, func(tx *sql.Tx) error {
			if s.d.name == "postgres" {
				// Several servers may start at once on one database.
				if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7215021)`); err != nil {
					return err
				}
			}
			var n int
			if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT COUNT(*) FROM weft_meta_migrations WHERE version = ?`), version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			ddl := strings.NewReplacer("{blob}", s.d.blob, "{int64}", s.d.int64).Replace(m)
			for _, stmt := range strings.Split(ddl, ";") {
				if strings.TrimSpace(stmt) == "" {
					continue
				}
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO weft_meta_migrations (version, applied_at) VALUES (?, ?)`), version, time.Now().Unix())
			return err
		})
		if err != nil {
			return fmt.Errorf("meta: migration %d: %w", version, err)
		}
	}
	return nil
}

// txExec is what a transaction offers the functions run in it.
type txExec = *sql.Tx

func (s *SQL) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// txExec returns a function that executes q in tx: through the statement
// prepared at open when there is one (SQLite: no parsing per call), else
// as text (pgx caches the statements it prepares per connection).
// Statements of a transaction close with it.
func (s *SQL) txExec(ctx context.Context, tx *sql.Tx, q string) func(args ...any) error {
	if p := s.stmts[q]; p != nil {
		var st *sql.Stmt // bound to tx at the first call: a batch may have no row for q
		return func(args ...any) error {
			if st == nil {
				st = tx.StmtContext(ctx, p)
			}
			_, err := st.ExecContext(ctx, args...)
			return err
		}
	}
	q = s.d.rebind(q)
	return func(args ...any) error { _, err := tx.ExecContext(ctx, q, args...); return err }
}

func (s *SQL) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := s.stmts[q]; st != nil {
		return st.ExecContext(ctx, args...)
	}
	return s.db.ExecContext(ctx, s.d.rebind(q), args...)
}

func (s *SQL) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if st := s.stmts[q]; st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.db.QueryRowContext(ctx, s.d.rebind(q), args...)
}

func (s *SQL) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return s.db.QueryContext(ctx, s.d.rebind(q), args...)
}

// isUnique reports whether err is a unique-constraint violation.
func isUnique(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505"
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("meta: %s: %w", op, ErrNotFound)
	case isUnique(err):
		return fmt.Errorf("meta: %s: %w", op, ErrConflict)
	}
	return fmt.Errorf("meta: %s: %w", op, err)
}

func micros(t time.Time) int64     { return t.UnixMicro() }
func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

// Ping implements [Store].
func (s *SQL) Ping(ctx context.Context) error { return wrap("ping", s.db.PingContext(ctx)) }

// Close implements [Store].
func (s *SQL) Close() error {
	for _, st := range s.stmts {
		st.Close()
	}
	return s.db.Close()
}

// EnsureTenant implements [Store]: it returns the tenant named name,
// creating it if needed.
func (s *SQL) EnsureTenant(ctx context.Context, name string) (Tenant, error) {
	t := Tenant{ID: NewID("ten"), Name: name, CreatedAt: time.Now().UTC()}
	if _, err := s.exec(ctx, `INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`, t.ID, t.Name, micros(t.CreatedAt)); err != nil {
		return Tenant{}, wrap("ensure tenant", err)
	}
	var created int64
	err := s.queryRow(ctx, `SELECT id, name, created_at FROM tenants WHERE name = ?`, name).Scan(&t.ID, &t.Name, &created)
	t.CreatedAt = fromMicros(created)
	return t, wrap("ensure tenant", err)
}

// TenantByID implements [Store].
func (s *SQL) TenantByID(ctx context.Context, id string) (Tenant, error) {
	var t Tenant
	var created int64
	err := s.queryRow(ctx, `SELECT id, name, created_at FROM tenants WHERE id = ?`, id).Scan(&t.ID, &t.Name, &created)
	t.CreatedAt = fromMicros(created)
	return t, wrap("tenant "+id, err)
}

// TenantByName implements [Store].
func (s *SQL) TenantByName(ctx context.Context, name string) (Tenant, error) {
	var t Tenant
	var created int64
	err := s.queryRow(ctx, `SELECT id, name, created_at FROM tenants WHERE name = ?`, name).Scan(&t.ID, &t.Name, &created)
	t.CreatedAt = fromMicros(created)
	return t, wrap("tenant "+name, err)
}

// CountKeys implements [Store].
func (s *SQL) CountKeys(ctx context.Context) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM api_keys`).Scan(&n)
	return n, wrap("count keys", err)
}

// CreateKey implements [Store].
func (s *SQL) CreateKey(ctx context.Context, k APIKey) error {
	role := k.Role
	if role == "" {
		role = legacyRole(k.Admin)
	}
	if _, err := ParseRole(string(role)); err != nil {
		return fmt.Errorf("meta: create key: %w", err)
	}
	_, err := s.exec(ctx, `INSERT INTO api_keys (id, tenant_id, name, admin, role, hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.TenantID, k.Name, boolInt(k.Admin), string(role), k.Hash, micros(k.CreatedAt))
	return wrap("create key", err)
}

// keyRole is the stored role, or the legacy role of a key stored before
// roles.
func keyRole(stored string, admin bool) Role {
	if stored == "" {
		return legacyRole(admin)
	}
	return Role(stored)
}

// SetKeyRole implements [Store].
func (s *SQL) SetKeyRole(ctx context.Context, tenant, id string, role Role) error {
	if _, err := ParseRole(string(role)); err != nil {
		return fmt.Errorf("meta: set key role: %w", err)
	}
	return s.deleteOne(ctx, "set role of key "+id, `UPDATE api_keys SET role = ? WHERE tenant_id = ? AND id = ?`, string(role), tenant, id)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// KeyByID implements [Store].
func (s *SQL) KeyByID(ctx context.Context, id string) (APIKey, error) {
	var k APIKey
	var admin int
	var created int64
	var role string
	err := s.queryRow(ctx, qKeyByID, id).
		Scan(&k.ID, &k.TenantID, &k.Name, &admin, &role, &k.Hash, &created)
	k.Admin, k.Role, k.CreatedAt = admin != 0, keyRole(role, admin != 0), fromMicros(created)
	return k, wrap("key", err)
}

// ListKeys implements [Store].
func (s *SQL) ListKeys(ctx context.Context, tenant string) ([]APIKey, error) {
	rows, err := s.query(ctx, `SELECT id, tenant_id, name, admin, role, created_at FROM api_keys WHERE tenant_id = ? ORDER BY created_at, id`, tenant)
	if err != nil {
		return nil, wrap("list keys", err)
	}
	defer rows.Close()
	keys := []APIKey{}
	for rows.Next() {
		var k APIKey
		var admin int
		var created int64
		var role string
		if err := rows.Scan(&k.ID, &k.TenantID, &k.Name, &admin, &role, &created); err != nil {
			return nil, wrap("list keys", err)
		}
		k.Admin, k.Role, k.CreatedAt = admin != 0, keyRole(role, admin != 0), fromMicros(created)
		keys = append(keys, k)
	}
	return keys, wrap("list keys", rows.Err())
}

// DeleteKey implements [Store].
func (s *SQL) DeleteKey(ctx context.Context, tenant, id string) error {
	return s.deleteOne(ctx, "delete key "+id, `DELETE FROM api_keys WHERE tenant_id = ? AND id = ?`, tenant, id)
}

// ReplaceAdminKeys implements [Store], in one transaction, so that there is
// an admin key at every moment.
func (s *SQL) ReplaceAdminKeys(ctx context.Context, k APIKey) ([]string, error) {
	revoked := []string{}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.d.rebind(`SELECT id, hash FROM api_keys WHERE tenant_id = ? AND (admin <> 0 OR id = ?)`), k.TenantID, k.ID)
		if err != nil {
			return err
		}
		keep := false
		var drop []string
		for rows.Next() {
			var id string
			var hash []byte
			if err := rows.Scan(&id, &hash); err != nil {
				rows.Close()
				return err
			}
			if id == k.ID && bytes.Equal(hash, k.Hash) {
				keep = true
				continue
			}
			drop = append(drop, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range drop {
			if _, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM api_keys WHERE tenant_id = ? AND id = ?`), k.TenantID, id); err != nil {
				return err
			}
		}
		revoked = drop
		if keep {
			// Make sure the kept key is an admin key.
			_, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE api_keys SET admin = 1, role = 'owner' WHERE tenant_id = ? AND id = ?`), k.TenantID, k.ID)
			return err
		}
		_, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO api_keys (id, tenant_id, name, admin, role, hash, created_at) VALUES (?, ?, ?, 1, 'owner', ?, ?)`),
			k.ID, k.TenantID, k.Name, k.Hash, micros(k.CreatedAt))
		return err
	})
	if err != nil {
		return nil, wrap("replace admin keys", err)
	}
	if revoked == nil {
		revoked = []string{}
	}
	return revoked, nil
}

func (s *SQL) deleteOne(ctx context.Context, op, q string, args ...any) error {
	res, err := s.exec(ctx, q, args...)
	if err != nil {
		return wrap(op, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("meta: %s: %w", op, ErrNotFound)
	}
	return nil
}

// CreateAgent implements [Store]: the agent is stored with its version 1,
// published.
func (s *SQL) CreateAgent(ctx context.Context, a Agent) error {
	_, err := s.SaveAgent(ctx, a, "", true)
	return err
}

// SaveAgent stores a new agent (create) or a new configuration of one, as
// its next version (see versions.go), saved by by: published — the
// agent's row, which serves traffic — or, when publish is false, a draft
// (an existing agent's only). It returns a with its Version set.
func (s *SQL) SaveAgent(ctx context.Context, a Agent, by string, publish bool) (Agent, error) {
	op := "save agent " + a.Name
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// The agent's row first: it locks the agent (PostgreSQL), so
		// concurrent saves number their versions one after the other.
		res, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE agents SET updated_at = updated_at WHERE tenant_id = ? AND id = ?`), a.TenantID, a.ID)
		if err != nil {
			return err
		}
		exists, _ := res.RowsAffected()
		if exists == 0 {
			if !publish {
				return sql.ErrNoRows
			}
			if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO agents (tenant_id, id, name, config, created_at, updated_at) VALUES (?, ?, ?, '{}', ?, ?)`),
				a.TenantID, a.ID, a.Name, micros(a.CreatedAt), micros(a.UpdatedAt)); err != nil {
				return err
			}
		}
		if err := s.saveVersion(ctx, tx, &a, by, publish); err != nil {
			return err
		}
		if !publish {
			return nil
		}
		cfg, err := json.Marshal(a)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.d.rebind(`UPDATE agents SET name = ?, config = ?, updated_at = ? WHERE tenant_id = ? AND id = ?`),
			a.Name, string(cfg), micros(a.UpdatedAt), a.TenantID, a.ID)
		return err
	})
	return a, wrap(op, err)
}

func scanAgent(tenant string, sc interface{ Scan(...any) error }) (Agent, error) {
	var cfg string
	if err := sc.Scan(&cfg); err != nil {
		return Agent{}, err
	}
	var a Agent
	if err := json.Unmarshal([]byte(cfg), &a); err != nil {
		return Agent{}, fmt.Errorf("decode agent: %w", err)
	}
	a.Timeouts.Defaults() // stored before timeouts existed
	a.TenantID = tenant
	if a.Version == 0 {
		a.Version = 1 // saved before versions: the migration made it version 1
	}
	return a, nil
}

// Agent implements [Store].
func (s *SQL) Agent(ctx context.Context, tenant, id string) (Agent, error) {
	a, err := scanAgent(tenant, s.queryRow(ctx, qAgent, tenant, id))
	return a, wrap("agent "+id, err)
}

// AgentByName implements [Store].
func (s *SQL) AgentByName(ctx context.Context, tenant, name string) (Agent, error) {
	a, err := scanAgent(tenant, s.queryRow(ctx, `SELECT config FROM agents WHERE tenant_id = ? AND name = ?`, tenant, name))
	return a, wrap("agent "+name, err)
}

// ListAgents implements [Store].
func (s *SQL) ListAgents(ctx context.Context, tenant string) ([]Agent, error) {
	rows, err := s.query(ctx, `SELECT config FROM agents WHERE tenant_id = ? ORDER BY created_at, id`, tenant)
	if err != nil {
		return nil, wrap("list agents", err)
	}
	defer rows.Close()
	agents := []Agent{}
	for rows.Next() {
		a, err := scanAgent(tenant, rows)
		if err != nil {
			return nil, wrap("list agents", err)
		}
		agents = append(agents, a)
	}
	return agents, wrap("list agents", rows.Err())
}

// UpdateAgent implements [Store]: the configuration is stored as the
// agent's next version, published.
func (s *SQL) UpdateAgent(ctx context.Context, a Agent) error {
	if _, err := s.Agent(ctx, a.TenantID, a.ID); err != nil {
		return err
	}
	_, err := s.SaveAgent(ctx, a, "", true)
	return err
}

// DeleteAgent implements [Store]: the agent and its versions.
func (s *SQL) DeleteAgent(ctx context.Context, tenant, id string) error {
	if err := s.deleteOne(ctx, "delete agent "+id, `DELETE FROM agents WHERE tenant_id = ? AND id = ?`, tenant, id); err != nil {
		return err
	}
	_, err := s.exec(ctx, `DELETE FROM agent_versions WHERE tenant_id = ? AND agent_id = ?`, tenant, id)
	return wrap("delete versions of agent "+id, err)
}

// CreateSession implements [Store].
func (s *SQL) CreateSession(ctx context.Context, ss Session) error {
	args := []any{ss.TenantID, ss.ID, ss.AgentID, ss.ParentID, ss.UserID, micros(ss.CreatedAt), micros(ss.UpdatedAt)}
	if s.creates != nil {
		return wrap("create session", s.creates.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return s.txExec(ctx, tx, qCreateSession)(args...)
		}))
	}
	_, err := s.exec(ctx, qCreateSession, args...)
	return wrap("create session", err)
}

func scanSession(tenant string, sc interface{ Scan(...any) error }) (Session, error) {
	ss := Session{TenantID: tenant}
	var created, updated int64
	var interrupt string
	err := sc.Scan(&ss.ID, &ss.AgentID, &ss.ParentID, &ss.UserID, &created, &updated, &interrupt)
	ss.CreatedAt, ss.UpdatedAt = fromMicros(created), fromMicros(updated)
	if err == nil && interrupt != "" {
		ss.Interrupt = &SessionInterrupt{}
		if err := json.Unmarshal([]byte(interrupt), ss.Interrupt); err != nil {
			return ss, fmt.Errorf("session %s: interrupt: %w", ss.ID, err)
		}
	}
	return ss, err
}

// SetSessionInterrupt implements [Store].
func (s *SQL) SetSessionInterrupt(ctx context.Context, tenant, id, prev string, in *SessionInterrupt) (bool, error) {
	newID, data := "", ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return false, fmt.Errorf("meta: session %s: interrupt: %w", id, err)
		}
		newID, data = in.ID, string(b)
	}
	res, err := s.exec(ctx, `UPDATE sessions SET interrupt_id = ?, interrupt = ? WHERE tenant_id = ? AND id = ? AND interrupt_id = ?`,
		newID, data, tenant, id, prev)
	if err != nil {
		return false, wrap("session "+id+": interrupt", err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap("session "+id+": interrupt", err)
}

// InterruptedSessions implements [Store]: the tenant's sessions that wait
// for approvals, the oldest interrupt first.
func (s *SQL) InterruptedSessions(ctx context.Context, tenant, agent string, limit int) ([]Session, error) {
	q := `SELECT id, agent_id, parent_id, user_id, created_at, updated_at, interrupt FROM sessions WHERE tenant_id = ? AND interrupt_id <> ''`
	args := []any{tenant}
	if agent != "" {
		q += ` AND agent_id = ?`
		args = append(args, agent)
	}
	rows, err := s.query(ctx, q+` ORDER BY updated_at, id LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, wrap("interrupted sessions", err)
	}
	defer rows.Close()
	out := []Session{}
	for rows.Next() {
		ss, err := scanSession(tenant, rows)
		if err != nil {
			return nil, wrap("interrupted sessions", err)
		}
		out = append(out, ss)
	}
	return out, wrap("interrupted sessions", rows.Err())
}

// Session implements [Store].
func (s *SQL) Session(ctx context.Context, tenant, id string) (Session, error) {
	ss, err := scanSession(tenant, s.queryRow(ctx, qSession, tenant, id))
	return ss, wrap("session "+id, err)
}

// ListSessions implements [Store]: the tenant's sessions (of one agent when
// agent is not empty), most recently updated first. Delegates' sessions are
// listed too; their ParentID says so.
func (s *SQL) ListSessions(ctx context.Context, tenant, agent string) ([]Session, error) {
	q := `SELECT id, agent_id, parent_id, user_id, created_at, updated_at, interrupt FROM sessions WHERE tenant_id = ?`
	args := []any{tenant}
	if agent != "" {
		q += ` AND agent_id = ?`
		args = append(args, agent)
	}
	rows, err := s.query(ctx, q+` ORDER BY updated_at DESC, id`, args...)
	if err != nil {
		return nil, wrap("list sessions", err)
	}
	defer rows.Close()
	out := []Session{}
	for rows.Next() {
		ss, err := scanSession(tenant, rows)
		if err != nil {
			return nil, wrap("list sessions", err)
		}
		out = append(out, ss)
	}
	return out, wrap("list sessions", rows.Err())
}

// TouchSessions implements [Store] with one transaction (one commit for
// the touches of many turns). An update time never moves back.
func (s *SQL) TouchSessions(ctx context.Context, touches []SessionTouch) error {
	switch len(touches) {
	case 0:
		return nil
	case 1:
		t := touches[0]
		_, err := s.exec(ctx, qTouchSession, micros(t.At), t.TenantID, t.ID, micros(t.At))
		return wrap("touch session", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return wrap("touch sessions", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	touch := s.txExec(ctx, tx, qTouchSession)
	for _, t := range touches {
		if err := touch(micros(t.At), t.TenantID, t.ID, micros(t.At)); err != nil {
			return wrap("touch sessions", err)
		}
	}
	return wrap("touch sessions", tx.Commit())
}

// DeleteSession implements [Store].
func (s *SQL) DeleteSession(ctx context.Context, tenant, id string) error {
	if err := s.deleteSessionNotes(ctx, tenant, id); err != nil {
		return err
	}
	return s.deleteOne(ctx, "delete session "+id, `DELETE FROM sessions WHERE tenant_id = ? AND id = ?`, tenant, id)
}

// ClaimIdempotent implements [Store].
func (s *SQL) ClaimIdempotent(ctx context.Context, tenant, key string, ttl time.Duration) (Idempotent, bool, error) {
	now := time.Now()
	if _, err := s.exec(ctx, `DELETE FROM idempotency WHERE tenant_id = ? AND key = ? AND expires_at < ?`, tenant, key, micros(now)); err != nil {
		return Idempotent{}, false, wrap("idempotency", err)
	}
	res, err := s.exec(ctx, `INSERT INTO idempotency (tenant_id, key, status, body, expires_at) VALUES (?, ?, 0, NULL, ?) ON CONFLICT (tenant_id, key) DO NOTHING`,
		tenant, key, micros(now.Add(ttl)))
	if err != nil {
		return Idempotent{}, false, wrap("idempotency", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return Idempotent{}, false, nil
	}
	var out Idempotent
	err = s.queryRow(ctx, `SELECT status, body FROM idempotency WHERE tenant_id = ? AND key = ?`, tenant, key).Scan(&out.Status, &out.Body)
	if err != nil {
		return Idempotent{}, false, wrap("idempotency", err)
	}
	return out, true, nil
}

// CompleteIdempotent implements [Store].
func (s *SQL) CompleteIdempotent(ctx context.Context, tenant, key string, out Idempotent) error {
	_, err := s.exec(ctx, `UPDATE idempotency SET status = ?, body = ? WHERE tenant_id = ? AND key = ?`, out.Status, out.Body, tenant, key)
	return wrap("idempotency", err)
}

// ReleaseIdempotent implements [Store]: it forgets a claim whose request
// failed before producing an answer worth replaying.
func (s *SQL) ReleaseIdempotent(ctx context.Context, tenant, key string) error {
	_, err := s.exec(ctx, `DELETE FROM idempotency WHERE tenant_id = ? AND key = ?`, tenant, key)
	return wrap("idempotency", err)
}
