// Package sqlstore keeps conversations in SQL: SQLite (embedded, pure Go,
// the platform's default) or PostgreSQL (shared by every replica).
//
// Both dialects use one schema, created and upgraded on open by versioned
// steps recorded in memory_schema_migrations:
//
//	memory_sessions  (tenant, agent, session) → last_seq, msg_count, created_at, updated_at
//	memory_messages  (tenant, agent, session, seq) → msg_id, tokens, partial, created_at, message (JSON)
//	                 seq 0 is the system record; a unique index on
//	                 (tenant, agent, session, msg_id) for seq > 0 makes appends idempotent
//	memory_locks     (tenant, agent, session) → token ("<owner>/<random>"), expires_at: the Locker's leases
//	memory_summaries (tenant, agent, session) → through_seq, tokens, updated_at, summary (a JSON string): the running summary
//
// On SQLite, memory_messages and memory_locks are WITHOUT ROWID tables
// keyed by their primary key and there is no window index (migration 4):
// an append writes two b-trees, a lease one.
//
// Times are Unix nanoseconds. A plain message (one text part, nothing
// else) is stored as "~<role>|<text>", any other as JSON (see codec.go).
//
// On PostgreSQL, Append is one statement, a call of the memory_append
// function the migrations install: it upserts the session row first, which
// locks it, so appenders to one conversation queue on that row while other
// conversations proceed, then checks ids, assigns sequence numbers from
// last_seq and inserts. Load is one query: a window function (a running
// sum of tokens, newest first) over a covering index of (seq, tokens) finds
// where the window starts, and only the kept records' messages are read.
//
// On SQLite, which runs in process, statements cost no round trip, and the
// hot ones are prepared once at open. Every write (Append, the Locker's
// lease rows, Delete, Trim) is group-committed: writes queued while one
// transaction runs share the next one (IMMEDIATE, so writers in other
// processes take turns through busy_timeout), and a caller returns once
// the transaction holding its write has committed; a lease release joins
// the next transaction without its caller waiting. Load reads the system
// record, then the log newest first, and stops at the first record that
// does not fit: it reads the window and one record more, however long the
// conversation.
//
// # Crash safety
//
// A conversation survives the crash of the process that appends to it:
// Append returns after the commit. SQLite runs in WAL mode with
// synchronous=NORMAL: a commit is appended to the write-ahead log without
// an fsync (the log is synced at checkpoints), so a process crash loses
// nothing committed, while an operating-system crash or power loss may
// lose the last commits (never corrupt the database). PostgreSQL's
// durability is the server's.
package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/weftlabs/weft/internal/sqlgroup"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/internal/lease"
)

type dialect int

// sqlitePoolSize bounds a SQLite store's connections: SQLite has one writer
// at a time, and writers on many connections sleep in its busy handler (1 ms
// to 100 ms per retry), whereas callers queued on database/sql's pool are
// served the moment a connection is free. Two let a Load (WAL: readers do
// not wait for the writer) run beside an append; measured with
// cmd/weft-bench, one connection had a higher p99, and four were no better
// than database/sql's default.
const sqlitePoolSize = 2

const (
	sqlite dialect = iota
	postgres
)

func (d dialect) String() string {
	if d == postgres {
		return "postgres"
	}
	return "sqlite"
}

// Store is a [memory.Store] over SQL. It also implements [memory.Lister],
// [memory.Locker], [memory.TurnStore], [memory.Trimmer] and
// [memory.SummaryStore]. It is safe for concurrent use, also by several
// processes sharing one database.
type Store struct {
	db      *sql.DB
	pool    *pgxpool.Pool // owned, closed by Close; nil for SQLite or a borrowed pool
	dialect dialect
	queries queries
	stmts   map[string]*sql.Stmt // SQLite's hot statements, prepared once; read-only after open
	group   *sqlgroup.Group      // SQLite: every write goes through it (group commit)
	wakeups lease.Wakeups
}

var (
	_ memory.Store        = (*Store)(nil)
	_ memory.Lister       = (*Store)(nil)
	_ memory.Locker       = (*Store)(nil)
	_ memory.Trimmer      = (*Store)(nil)
	_ memory.SummaryStore = (*Store)(nil)
)

// OpenSQLite opens (creating if needed) the SQLite database at path and
// brings its schema up to date. The database runs in WAL mode with a busy
// timeout of 10 s, and every transaction is IMMEDIATE, so that concurrent
// appenders, also in other processes, take turns instead of failing.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlstore: open sqlite: empty path")
	}
	v := url.Values{}
	v.Add("_pragma", "busy_timeout(10000)")
	v.Add("_pragma", "journal_mode(WAL)")
	v.Add("_pragma", "synchronous(NORMAL)")
	v.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+v.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open sqlite %s: %w", path, err)
	}
	// A small pool, kept open: database/sql's default (unbounded, 2 idle)
	// opens and closes connections, with their pragmas, per burst. No code
	// path here holds a connection while asking for another, so the bound
	// cannot deadlock. Other processes still take turns by busy_timeout.
	db.SetMaxOpenConns(sqlitePoolSize)
	db.SetMaxIdleConns(sqlitePoolSize)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	s := newStore(db, nil, sqlite)
	s.group = sqlgroup.New(db)
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: open sqlite %s: %w", path, err)
	}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlstore: open sqlite %s: %w", path, err)
	}
	return s, nil
}

// OpenPostgres connects to PostgreSQL with a pgx pool and brings the schema
// up to date. dsn is a URL or key=value string as pgx accepts it; a
// search_path parameter in it selects the schema.
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open postgres: %w", err)
	}
	s, err := NewPostgres(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.pool = pool
	return s, nil
}

// NewPostgres returns a store over an existing pool and brings the schema up
// to date. Close does not close the pool.
func NewPostgres(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	s := newStore(stdlib.OpenDBFromPool(pool), nil, postgres)
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("sqlstore: open postgres: %w", err)
	}
	return s, nil
}

func newStore(db *sql.DB, pool *pgxpool.Pool, d dialect) *Store {
	s := &Store{db: db, pool: pool, dialect: d}
	s.queries = prepareQueries(s.q, d)
	return s
}

// preparedBatch is the largest append whose statements are prepared: a
// turn appends one or a few records at a time.
const preparedBatch = 4

// prepare prepares the statements of a turn's hot path (SQLite only: the
// driver otherwise parses and plans each one on every call, whereas pgx
// caches them itself). It runs at open, before any caller could hold the
// pool's connections in transactions.
func (s *Store) prepare(ctx context.Context) error {
	q := s.queries
	texts := []string{q.upsertSession, q.selectSystem, q.upsertSystem, q.updateSession, q.loadNewest, q.lockAcquire, q.lockRelease, q.lockRenew, q.selectSummary}
	for n := 1; n <= preparedBatch; n++ {
		texts = append(texts, s.insertQuery(n), s.idsQuery(n))
	}
	s.stmts = make(map[string]*sql.Stmt, len(texts))
	for _, t := range texts {
		st, err := s.db.PrepareContext(ctx, t)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		s.stmts[t] = st
	}
	return nil
}

// stmt returns the statement prepared for query, bound to tx when tx is not
// nil, or nil when query is not prepared.
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	st := s.stmts[query]
	if st != nil && tx != nil {
		st = tx.StmtContext(ctx, st) // reuses the statement prepared on tx's connection
	}
	return st
}

// execContext runs query, in tx when not nil, as a prepared statement when
// there is one.
func (s *Store) execContext(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.stmt(ctx, tx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	if tx != nil {
		return tx.ExecContext(ctx, query, args...)
	}
	return s.db.ExecContext(ctx, query, args...)
}

// queryContext is execContext for a query returning rows.
func (s *Store) queryContext(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := s.stmt(ctx, tx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	if tx != nil {
		return tx.QueryContext(ctx, query, args...)
	}
	return s.db.QueryContext(ctx, query, args...)
}

// insertQuery inserts n log records.
func (s *Store) insertQuery(n int) string {
	return s.q(`INSERT INTO memory_messages (tenant, agent, session, ` + cols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)` +
		strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?, ?)", n-1))
}

// idsQuery finds the log records with any of n ids.
func (s *Store) idsQuery(n int) string {
	return s.q(`SELECT ` + cols + ` FROM memory_messages WHERE tenant = ? AND agent = ? AND session = ? AND seq > 0 AND msg_id IN (?` +
		strings.Repeat(", ?", n-1) + `)`)
}

// Ping reports whether the database answers (the platform's /readyz).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlstore: ping: %w", err)
	}
	return nil
}

// Close releases the store's connections.
func (s *Store) Close() error {
	if s.group != nil {
		s.group.Wait() // asynchronous writes (lease releases) end first
	}
	for _, st := range s.stmts {
		st.Close()
	}
	err := s.db.Close()
	if s.pool != nil {
		s.pool.Close()
	}
	return err
}

// q adapts a query written with ? placeholders to the store's dialect.
func (s *Store) q(query string) string {
	if s.dialect == postgres {
		return rebind(query)
	}
	return query
}

type queries struct {
	upsertSession, selectSystem, upsertSystem, updateSession              string
	loadNewest                                                            string
	load, deleteMessages, deleteSession, trim, trimCount, list, listAgent string
	lockAcquire, lockRelease, lockRenew, lockDrop                         string
	selectSummary, insertSummary, updateSummary, deleteSummary, loadRange string
}

const cols = `seq, msg_id, tokens, partial, created_at, message`

func prepareQueries(q func(string) string, d dialect) queries {
	// A summary is saved only while its conversation exists: on
	// PostgreSQL the session row is locked against a concurrent Delete
	// (FOR KEY SHARE does not wait for appends), which deletes the summary
	// after the session row.
	lockSession := ""
	if d == postgres {
		lockSession = " FOR KEY SHARE"
	}
	return queries{
		upsertSession: q(`INSERT INTO memory_sessions (tenant, agent, session, last_seq, msg_count, created_at, updated_at)
			VALUES (?, ?, ?, 0, 0, ?, ?)
			ON CONFLICT (tenant, agent, session) DO UPDATE SET last_seq = memory_sessions.last_seq
			RETURNING last_seq`),
		selectSystem: q(`SELECT ` + cols + `, text_hash FROM memory_messages WHERE tenant = ? AND agent = ? AND session = ? AND seq = 0`),
		upsertSystem: q(`INSERT INTO memory_messages (tenant, agent, session, ` + cols + `, text_hash) VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, agent, session, seq) DO UPDATE SET msg_id = excluded.msg_id, tokens = excluded.tokens,
			partial = excluded.partial, created_at = excluded.created_at, message = excluded.message, text_hash = excluded.text_hash`),
		updateSession: q(`UPDATE memory_sessions SET last_seq = ?, msg_count = msg_count + ?, updated_at = ?
			WHERE tenant = ? AND agent = ? AND session = ?`),
		// The window is cut on (seq, tokens) alone, read newest first from
		// the covering index memory_messages_window and bounded by LIMIT
		// when MaxMessages is set: the cut is the newest record whose
		// running sum of tokens exceeds MaxTokens (the walk stops there), or
		// else just before the oldest of the newest MaxMessages. Only the
		// records after the cut are then read, as one index range.
		load: q(`SELECT ` + cols + ` FROM memory_messages WHERE tenant = ? AND agent = ? AND session = ? AND seq = 0
			UNION ALL
			SELECT ` + cols + ` FROM memory_messages WHERE tenant = ? AND agent = ? AND session = ? AND seq > (
				SELECT COALESCE(MAX(CASE WHEN running > ? THEN seq END), MIN(seq) - 1, 0) FROM (
					SELECT seq, SUM(tokens) OVER (ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS running
					FROM (
						SELECT seq, tokens FROM memory_messages
						WHERE tenant = ? AND agent = ? AND session = ? AND seq > 0
						ORDER BY seq DESC LIMIT ?
					) newest
				) w
			)
			ORDER BY seq`),
		loadNewest: q(`SELECT ` + cols + ` FROM memory_messages WHERE tenant = ? AND agent = ? AND session = ? AND seq > 0
			ORDER BY seq DESC`),
		deleteMessages: q(`DELETE FROM memory_messages WHERE tenant = ? AND agent = ? AND session = ?`),
		deleteSession:  q(`DELETE FROM memory_sessions WHERE tenant = ? AND agent = ? AND session = ?`),
		trim:           q(`DELETE FROM memory_messages WHERE tenant = ? AND agent = ? AND session = ? AND seq > 0 AND seq < ?`),
		trimCount:      q(`UPDATE memory_sessions SET msg_count = msg_count - ? WHERE tenant = ? AND agent = ? AND session = ?`),
		list: q(`SELECT tenant, agent, session, created_at, updated_at, msg_count FROM memory_sessions
			WHERE tenant = ? ORDER BY updated_at DESC, agent, session`),
		listAgent: q(`SELECT tenant, agent, session, created_at, updated_at, msg_count FROM memory_sessions
			WHERE tenant = ? AND agent = ? ORDER BY updated_at DESC, agent, session`),
		lockAcquire: q(`INSERT INTO memory_locks (tenant, agent, session, token, expires_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tenant, agent, session) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
			WHERE memory_locks.expires_at <= ?`),
		lockRelease: q(`DELETE FROM memory_locks WHERE tenant = ? AND agent = ? AND session = ? AND token = ?`),
		lockRenew:   q(`UPDATE memory_locks SET expires_at = ? WHERE tenant = ? AND agent = ? AND session = ? AND token = ?`),
		lockDrop:    q(`DELETE FROM memory_locks WHERE substr(token, 1, ?) = ?`),
		selectSummary: q(`SELECT through_seq, tokens, updated_at, summary FROM memory_summaries
			WHERE tenant = ? AND agent = ? AND session = ?`),
		insertSummary: q(`INSERT INTO memory_summaries (tenant, agent, session, through_seq, tokens, updated_at, summary)
			SELECT ?, ?, ?, ?, ?, ?, ? FROM (
				SELECT 1 AS one FROM memory_sessions WHERE tenant = ? AND agent = ? AND session = ? AND last_seq >= ?` + lockSession + `
			) s WHERE true
			ON CONFLICT (tenant, agent, session) DO NOTHING`),
		updateSummary: q(`UPDATE memory_summaries SET through_seq = ?, tokens = ?, updated_at = ?, summary = ?
			WHERE tenant = ? AND agent = ? AND session = ? AND through_seq = ? AND EXISTS (
				SELECT 1 FROM memory_sessions WHERE tenant = ? AND agent = ? AND session = ? AND last_seq >= ?` + lockSession + `
			)`),
		deleteSummary: q(`DELETE FROM memory_summaries WHERE tenant = ? AND agent = ? AND session = ?`),
		loadRange: q(`SELECT ` + cols + ` FROM memory_messages WHERE tenant = ? AND agent = ? AND session = ? AND seq > ? AND seq < ?
			ORDER BY seq`),
	}
}

func (s *Store) fail(op string, key memory.Key, err error) error {
	return fmt.Errorf("sqlstore: %s: %s %s: %w", s.dialect, op, key, err)
}

// Append implements [memory.Store]. It runs in one transaction; the
// conversation's other appenders wait for it.
func (s *Store) Append(ctx context.Context, key memory.Key, recs ...memory.Record) ([]memory.Record, error) {
	if len(recs) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, s.fail("append", key, err)
		}
		return nil, nil
	}
	out, err := s.append(ctx, key, recs)
	if err != nil {
		return nil, s.fail("append", key, err)
	}
	return out, nil
}

type encoded struct {
	rec  memory.Record
	json string
	hash string // of a system record's text; "" for log records
}

func (s *Store) append(ctx context.Context, key memory.Key, recs []memory.Record) ([]memory.Record, error) {
	now := time.Now().UTC().Round(0)
	in, err := encodeRecords(recs, now)
	if err != nil {
		return nil, err
	}
	if s.dialect == postgres {
		return s.appendCall(ctx, key, in, now)
	}
	return s.appendTx(ctx, key, in, now)
}

// encodeRecords encodes records for an append, giving those without an id
// a fresh one and those without a time now.
func encodeRecords(recs []memory.Record, now time.Time) ([]encoded, error) {
	in := make([]encoded, len(recs))
	for i, r := range recs {
		if r.ID == "" {
			r.ID = memory.NewID()
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		text, m, err := encodeMessage(r.Message)
		if err != nil {
			return nil, fmt.Errorf("encode message %d: %w", i, err)
		}
		e := encoded{json: text}
		if r.Message.Role == llm.RoleSystem {
			sum := sha256.Sum256([]byte(r.Message.Text()))
			e.hash = hex.EncodeToString(sum[:])
		}
		// The returned records must not share memory with the caller's
		// (records found stored are decoded from the database).
		r.Message = m
		e.rec = r
		in[i] = e
	}
	return in, nil
}

// appendCall appends with one call of the memory_append function.
func (s *Store) appendCall(ctx context.Context, key memory.Key, in []encoded, now time.Time) ([]memory.Record, error) {
	n := len(in)
	rows, err := s.db.QueryContext(ctx, `SELECT r_seq, r_found, r_id, r_tokens, r_partial, r_created, r_message
		FROM memory_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		append([]any{key.Tenant, key.Agent, key.Session, now.UnixNano()}, pgArrays(in)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]memory.Record, 0, n)
	for rows.Next() {
		var r memory.Record
		var found bool
		var at int64
		var msg string
		if err := rows.Scan(&r.Seq, &found, &r.ID, &r.Tokens, &r.Partial, &at, &msg); err != nil {
			return nil, err
		}
		if !found {
			seq := r.Seq
			r = in[len(out)].rec
			r.Seq = seq
		} else {
			r.CreatedAt = time.Unix(0, at).UTC()
			if r.Message, err = decodeMessage(msg); err != nil {
				return nil, fmt.Errorf("decode message seq %d: %w", r.Seq, err)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, fmt.Errorf("memory_append returned %d rows for %d records", len(out), n)
	}
	return out, nil
}

// pgArrays returns the arrays of in's fields that memory_append takes:
// kinds, ids, tokens, partial flags, times, messages and system hashes.
func pgArrays(in []encoded) []any {
	n := len(in)
	kinds, ids, hashes, msgs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	tokens, created := make([]int64, n), make([]int64, n)
	partial := make([]bool, n)
	for i, e := range in {
		kinds[i] = "l"
		if e.rec.Message.Role == llm.RoleSystem {
			kinds[i] = "s"
		}
		ids[i], hashes[i], msgs[i] = e.rec.ID, e.hash, e.json
		tokens[i], created[i], partial[i] = int64(e.rec.Tokens), e.rec.CreatedAt.UnixNano(), e.rec.Partial
	}
	return []any{kinds, ids, tokens, partial, created, msgs, hashes}
}

// appendTx appends in a Go-driven transaction: SQLite runs in process, so
// its statements cost no round trips, and its IMMEDIATE transaction makes
// appenders take turns.
func (s *Store) appendTx(ctx context.Context, key memory.Key, in []encoded, now time.Time) ([]memory.Record, error) {
	var out []memory.Record
	err := s.group.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = s.appendIn(ctx, tx, key, in, now)
		return err
	})
	return out, err
}

// appendIn is the body of appendTx's transaction.
func (s *Store) appendIn(ctx context.Context, tx *sql.Tx, key memory.Key, in []encoded, now time.Time) ([]memory.Record, error) {
	var ids []any
	hasSystem := false
	for _, e := range in {
		if e.rec.Message.Role == llm.RoleSystem {
			hasSystem = true
		} else {
			ids = append(ids, e.rec.ID)
		}
	}
	k := []any{key.Tenant, key.Agent, key.Session}
	var last int64
	row := tx.QueryRowContext
	if st := s.stmt(ctx, tx, s.queries.upsertSession); st != nil {
		row = func(ctx context.Context, _ string, args ...any) *sql.Row { return st.QueryRowContext(ctx, args...) }
	}
	if err := row(ctx, s.queries.upsertSession, key.Tenant, key.Agent, key.Session, now.UnixNano(), now.UnixNano()).Scan(&last); err != nil {
		return nil, err
	}
	seen := map[string]memory.Record{}
	if len(ids) > 0 {
		found, err := scanRecords(s.queryContext(ctx, tx, s.idsQuery(len(ids)), append(k, ids...)...))
		if err != nil {
			return nil, err
		}
		for _, r := range found {
			seen[r.ID] = r
		}
	}
	var sys *memory.Record
	sysHash := ""
	if hasSystem {
		var found []memory.Record
		rows, err := s.queryContext(ctx, tx, s.queries.selectSystem, k...)
		if err == nil {
			found, err = scanRecordsHash(rows, &sysHash)
		}
		if err != nil {
			return nil, err
		}
		if len(found) > 0 {
			sys = &found[0]
		}
	}

	out := make([]memory.Record, len(in))
	var args []any
	added, changed := 0, false
	for i, e := range in {
		r := e.rec
		if r.Message.Role == llm.RoleSystem {
			if sys == nil || sysHash != e.hash {
				r.Seq = 0
				if _, err := s.execContext(ctx, tx, s.queries.upsertSystem, key.Tenant, key.Agent, key.Session,
					r.ID, r.Tokens, r.Partial, r.CreatedAt.UnixNano(), e.json, e.hash); err != nil {
					return nil, err
				}
				sys, sysHash, changed = &r, e.hash, true
			}
			out[i] = *sys
			continue
		}
		if prev, ok := seen[r.ID]; ok {
			out[i] = prev
			continue
		}
		last++
		r.Seq = last
		seen[r.ID] = r
		out[i] = r
		args = append(args, key.Tenant, key.Agent, key.Session, r.Seq, r.ID, r.Tokens, r.Partial, r.CreatedAt.UnixNano(), e.json)
		added++
	}
	if added > 0 {
		if _, err := s.execContext(ctx, tx, s.insertQuery(added), args...); err != nil {
			return nil, err
		}
	}
	if added > 0 || changed {
		if _, err := s.execContext(ctx, tx, s.queries.updateSession, last, added, now.UnixNano(), key.Tenant, key.Agent, key.Session); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func scanRecords(rows *sql.Rows, err error) ([]memory.Record, error) {
	if err != nil {
		return nil, err
	}
	return scanRecordsHash(rows, nil)
}

// scanRecordsHash scans records; with hash non-nil, each row has a last
// column text_hash, stored into *hash.
func scanRecordsHash(rows *sql.Rows, hash *string) ([]memory.Record, error) {
	defer rows.Close()
	var out []memory.Record
	for rows.Next() {
		var r memory.Record
		var created int64
		var msg string
		dest := []any{&r.Seq, &r.ID, &r.Tokens, &r.Partial, &created, &msg}
		if hash != nil {
			dest = append(dest, hash)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		r.CreatedAt = time.Unix(0, created).UTC()
		var err error
		if r.Message, err = decodeMessage(msg); err != nil {
			return nil, fmt.Errorf("decode message seq %d: %w", r.Seq, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Load implements [memory.Store]: on PostgreSQL with one query (one
// round trip), on SQLite by a walk (see loadWalk).
func (s *Store) Load(ctx context.Context, key memory.Key, w memory.Window) ([]memory.Record, error) {
	if s.dialect == sqlite {
		out, err := s.loadWalk(ctx, nil, key, w)
		if err != nil {
			return nil, s.fail("load", key, err)
		}
		return out, nil
	}
	var limit any = w.MaxMessages
	if w.MaxMessages <= 0 {
		limit = -1 // SQLite: no bound
		if s.dialect == postgres {
			limit = nil // LIMIT NULL: no bound
		}
	}
	maxTokens := int64(w.MaxTokens)
	if w.MaxTokens <= 0 {
		maxTokens = math.MaxInt64 // no running sum exceeds it
	}
	out, err := scanRecords(s.queryContext(ctx, nil, s.queries.load,
		key.Tenant, key.Agent, key.Session, key.Tenant, key.Agent, key.Session,
		maxTokens, key.Tenant, key.Agent, key.Session, limit))
	if err != nil {
		return nil, s.fail("load", key, err)
	}
	return out, nil
}

// loadWalk is Load on SQLite, where statements cost no round trip: the
// system record by its key, then the log read newest first (an index range
// scan) and left as soon as a record does not fit, so a load reads and
// decodes the window and one record more, however long the conversation
// (the single query PostgreSQL runs computes its running sum over every
// record of the conversation). With tx not nil it reads in tx.
func (s *Store) loadWalk(ctx context.Context, tx *sql.Tx, key memory.Key, w memory.Window) ([]memory.Record, error) {
	var hash string
	sysRows, err := s.queryContext(ctx, tx, s.queries.selectSystem, key.Tenant, key.Agent, key.Session)
	if err != nil {
		return nil, err
	}
	sys, err := scanRecordsHash(sysRows, &hash)
	if err != nil {
		return nil, err
	}
	rows, err := s.queryContext(ctx, tx, s.queries.loadNewest, key.Tenant, key.Agent, key.Session)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	maxTokens := int64(w.MaxTokens)
	if w.MaxTokens <= 0 {
		maxTokens = math.MaxInt64
	}
	var log []memory.Record
	var sum int64
	var msg string
	var created int64
	for rows.Next() {
		if w.MaxMessages > 0 && len(log) == w.MaxMessages {
			break
		}
		var r memory.Record
		if err := rows.Scan(&r.Seq, &r.ID, &r.Tokens, &r.Partial, &created, &msg); err != nil {
			return nil, err
		}
		if sum += int64(r.Tokens); sum > maxTokens {
			break
		}
		r.CreatedAt = time.Unix(0, created).UTC()
		var err error
		if r.Message, err = decodeMessage(msg); err != nil {
			return nil, fmt.Errorf("decode message seq %d: %w", r.Seq, err)
		}
		log = append(log, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]memory.Record, 0, len(sys)+len(log))
	out = append(out, sys...)
	for i := len(log) - 1; i >= 0; i-- {
		out = append(out, log[i])
	}
	return out, nil
}

// Delete implements [memory.Store]: the conversation's records, its
// session row and its summary go in one transaction.
func (s *Store) Delete(ctx context.Context, key memory.Key) error {
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.queries.deleteMessages, key.Tenant, key.Agent, key.Session); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.queries.deleteSession, key.Tenant, key.Agent, key.Session); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.queries.deleteSummary, key.Tenant, key.Agent, key.Session)
		return err
	})
	if err != nil {
		return s.fail("delete", key, err)
	}
	return nil
}

// Trim implements [memory.Trimmer]. The ids of trimmed records are
// forgotten: a later Append with one of them adds a new record.
func (s *Store) Trim(ctx context.Context, key memory.Key, before int64) error {
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.queries.trim, key.Tenant, key.Agent, key.Session, before)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, s.queries.trimCount, n, key.Tenant, key.Agent, key.Session)
		return err
	})
	if err != nil {
		return s.fail("trim", key, err)
	}
	return nil
}

// inTx runs fn in a transaction: on SQLite a group-committed one.
func (s *Store) inTx(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	if s.group != nil {
		return s.group.Do(ctx, fn)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := fn(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// List implements [memory.Lister].
func (s *Store) List(ctx context.Context, tenant, agent string) ([]memory.SessionInfo, error) {
	var rows *sql.Rows
	var err error
	if agent == "" {
		rows, err = s.db.QueryContext(ctx, s.queries.list, tenant)
	} else {
		rows, err = s.db.QueryContext(ctx, s.queries.listAgent, tenant, agent)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: list %s/%s: %w", s.dialect, tenant, agent, err)
	}
	defer rows.Close()
	var out []memory.SessionInfo
	for rows.Next() {
		var in memory.SessionInfo
		var created, updated int64
		if err := rows.Scan(&in.Key.Tenant, &in.Key.Agent, &in.Key.Session, &created, &updated, &in.MessageCount); err != nil {
			return nil, fmt.Errorf("sqlstore: %s: list %s/%s: %w", s.dialect, tenant, agent, err)
		}
		in.CreatedAt, in.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: %s: list %s/%s: %w", s.dialect, tenant, agent, err)
	}
	return out, nil
}
