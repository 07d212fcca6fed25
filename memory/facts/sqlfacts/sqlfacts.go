// Package sqlfacts keeps long-term memory ([facts.Store]) in SQL: SQLite
// (embedded, pure Go) or PostgreSQL with pgvector. The Weft platform keeps
// its end users' facts here, in its metadata database.
//
// One table, created and upgraded on open by versioned steps recorded in
// facts_schema_migrations:
//
//	user_facts (tenant, user_id, id) → text, dims, embedding, created_at, updated_at (Unix ns), source (JSON)
//
// with an index on (tenant, user_id, updated_at). Every statement names
// the scope's tenant and user in its WHERE clause, so no method reads,
// finds, changes or deletes another scope's fact, also when its id is
// named.
//
// # Search: an exact scan of one scope
//
// A search ranks one end user's facts, never the table: on both databases
// it is an exact scan of the scope's rows, found by the primary key's
// (tenant, user_id) prefix, and a scope holds at most [WithMaxFacts] facts
// (default [DefaultMaxFacts]), so the scan is bounded. On SQLite the
// scope's embeddings are read and ranked by cosine similarity in Go; on
// PostgreSQL the embedding column is pgvector's vector type and the rows
// are ordered by its cosine distance (<=>) in the database.
//
// Why not an approximate index (the HNSW of package rag/vector, or
// pgvector's HNSW): an index over the whole table answers "nearest among
// everyone's facts" and then filters by user, which for one user among
// many finds too few (or none) unless it scans deep; an index per user in
// the process would have to be loaded from the rows and kept in step with
// other processes' writes. A user's facts are few (hundreds at most, each
// a sentence), so the exact scan reads a few hundred kilobytes at most,
// costs well under a millisecond of ranking, is always exact, and needs no
// state outside the database. Embeddings of another dimension than the
// query's (the agent's embedding model changed) are skipped.
package sqlfacts

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/rag/vector"
)

// DefaultMaxFacts is the number of facts a scope may hold unless
// [WithMaxFacts] says otherwise.
const DefaultMaxFacts = 1000

// ErrFull is returned by Put when a scope would hold more facts than the
// store's limit; nothing of the batch is stored.
var ErrFull = errors.New("sqlfacts: the user's facts are at the limit")

// ErrNoPgvector is returned by [NewPostgres] when the server does not offer
// the pgvector extension.
var ErrNoPgvector = errors.New("sqlfacts: pgvector is not installed on the PostgreSQL server")

// Option configures a [Store].
type Option func(*Store)

// WithMaxFacts bounds the facts a scope holds (default DefaultMaxFacts);
// a Put that would pass it fails with ErrFull.
func WithMaxFacts(n int) Option { return func(s *Store) { s.maxFacts = n } }

// Store is a [facts.Store] over SQL. It is safe for concurrent use, also
// by several processes sharing one database.
type Store struct {
	db       *sql.DB
	pg       bool
	vec, op  string // PostgreSQL: pgvector's type and cosine distance operator, schema-qualified
	maxFacts int
}

var _ facts.Store = (*Store)(nil)

// NewSQLite returns a store over a SQLite database (the modernc.org/sqlite
// driver) and brings its table up to date. Close the db yourself.
func NewSQLite(ctx context.Context, db *sql.DB, opts ...Option) (*Store, error) {
	s := newStore(db, false, opts)
	if err := s.migrate(ctx); err != nil {
		return nil, fmt.Errorf("sqlfacts: open sqlite: %w", err)
	}
	return s, nil
}

// NewPostgres returns a store over a PostgreSQL database (the pgx
// database/sql driver), creating the pgvector extension if it is not yet
// created, and brings its table up to date. Without pgvector it fails with
// an error matching ErrNoPgvector. Close the db yourself.
func NewPostgres(ctx context.Context, db *sql.DB, opts ...Option) (*Store, error) {
	s := newStore(db, true, opts)
	if err := s.migrate(ctx); err != nil {
		return nil, fmt.Errorf("sqlfacts: open postgres: %w", err)
	}
	return s, nil
}

func newStore(db *sql.DB, pg bool, opts []Option) *Store {
	s := &Store{db: db, pg: pg, maxFacts: DefaultMaxFacts}
	for _, o := range opts {
		o(s)
	}
	return s
}

// q rebinds ? placeholders for PostgreSQL; the queries hold no other ?.
func (s *Store) q(query string) string {
	if !s.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// migrate creates the extension (PostgreSQL) and the table, once.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	embedding := "BLOB"
	if s.pg {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('weft facts migrations'))`); err != nil {
			return err
		}
		var available, installed bool
		if err := tx.QueryRowContext(ctx, `SELECT
			EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector'),
			EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')`).Scan(&available, &installed); err != nil {
			return err
		}
		if !available && !installed {
			return ErrNoPgvector
		}
		if !installed {
			// Other stores (rag/pgstore) may create it at once; they take
			// the same lock.
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('weft pgstore CREATE EXTENSION vector'))`); err != nil {
				return err
			}
			// In public when there is one, as rag/pgstore does: an
			// extension in a schema that is dropped goes with it.
			if _, err := tx.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS vector SCHEMA public`); err != nil {
				return fmt.Errorf("%w: CREATE EXTENSION vector: %v", ErrNoPgvector, err)
			}
		}
		var schema string
		if err := tx.QueryRowContext(ctx, `SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'`).Scan(&schema); err != nil {
			return fmt.Errorf("pgvector: %w", err)
		}
		s.vec, s.op = schema+".vector", "OPERATOR("+schema+".<=>)"
		embedding = s.vec
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS facts_schema_migrations (
		version    BIGINT NOT NULL PRIMARY KEY,
		applied_at BIGINT NOT NULL
	)`); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM facts_schema_migrations WHERE version = 1`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		without := ""
		if !s.pg {
			without = " WITHOUT ROWID"
		}
		for _, stmt := range []string{
			`CREATE TABLE user_facts (
				tenant     TEXT   NOT NULL,
				user_id    TEXT   NOT NULL,
				id         TEXT   NOT NULL,
				text       TEXT   NOT NULL,
				dims       BIGINT NOT NULL,
				embedding  ` + embedding + `,
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL,
				source     TEXT   NOT NULL,
				PRIMARY KEY (tenant, user_id, id)
			)` + without,
			`CREATE INDEX user_facts_updated ON user_facts (tenant, user_id, updated_at)`,
			s.q(`INSERT INTO facts_schema_migrations (version, applied_at) VALUES (1, ?)`),
		} {
			var args []any
			if strings.Contains(stmt, "facts_schema_migrations") {
				args = []any{time.Now().UnixNano()}
			}
			if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
				return fmt.Errorf("migration 1: %w", err)
			}
		}
	}
	return tx.Commit()
}

// checkVector reports whether v can be searched: finite components, not
// all zero.
func checkVector(v []float32) error {
	zero := true
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: component %v", vector.ErrInvalidVector, x)
		}
		zero = zero && x == 0
	}
	if zero {
		return fmt.Errorf("%w: a zero vector", vector.ErrInvalidVector)
	}
	return nil
}

// encode returns the embedding column's value: little-endian float32s on
// SQLite, pgvector's text form on PostgreSQL, nil for none.
func (s *Store) encode(v []float32) any {
	if len(v) == 0 {
		return nil
	}
	if s.pg {
		b := make([]byte, 0, 12*len(v))
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
		}
		return string(append(b, ']'))
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// decode reads an embedding column's value as encode wrote it.
func (s *Store) decode(raw []byte) ([]float32, error) {
	if raw == nil {
		return nil, nil
	}
	if s.pg {
		t := strings.TrimSpace(string(raw))
		if len(t) < 2 || t[0] != '[' || t[len(t)-1] != ']' {
			return nil, fmt.Errorf("sqlfacts: a vector %.32q", t)
		}
		parts := strings.Split(t[1:len(t)-1], ",")
		v := make([]float32, len(parts))
		for i, p := range parts {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
			if err != nil {
				return nil, fmt.Errorf("sqlfacts: a vector: %w", err)
			}
			v[i] = float32(x)
		}
		return v, nil
	}
	if len(raw)%4 != 0 {
		return nil, fmt.Errorf("sqlfacts: an embedding of %d bytes", len(raw))
	}
	v := make([]float32, len(raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return v, nil
}

// columns are the columns a fact is read from, in scan order.
func (s *Store) columns() string {
	if s.pg {
		return `tenant, user_id, id, text, embedding::text, created_at, updated_at, source`
	}
	return `tenant, user_id, id, text, embedding, created_at, updated_at, source`
}

func (s *Store) scan(sc interface{ Scan(...any) error }, extra ...any) (facts.Fact, error) {
	var (
		f                facts.Fact
		raw              []byte
		created, updated int64
		source           string
		embText          sql.NullString
		dest             []any
	)
	if s.pg {
		dest = []any{&f.Scope.Tenant, &f.Scope.User, &f.ID, &f.Text, &embText, &created, &updated, &source}
	} else {
		dest = []any{&f.Scope.Tenant, &f.Scope.User, &f.ID, &f.Text, &raw, &created, &updated, &source}
	}
	if err := sc.Scan(append(dest, extra...)...); err != nil {
		return f, err
	}
	if embText.Valid {
		raw = []byte(embText.String)
	}
	var err error
	if f.Embedding, err = s.decode(raw); err != nil {
		return f, err
	}
	f.CreatedAt, f.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	if err := json.Unmarshal([]byte(source), &f.Source); err != nil {
		return f, fmt.Errorf("sqlfacts: the source of %q: %w", f.ID, err)
	}
	return f, nil
}

// Put implements [facts.Store]. A batch with an embedding that is not
// finite, is all zeros, or has another dimension than its scope's facts
// stores nothing; so does one that would take a scope over the limit.
func (s *Store) Put(ctx context.Context, in ...facts.Fact) ([]facts.Fact, error) {
	now := time.Now().UTC().Round(0)
	out := make([]facts.Fact, len(in))
	for i, f := range in {
		if f.ID == "" {
			f.ID = memory.NewID()
		}
		if f.CreatedAt.IsZero() {
			f.CreatedAt = now
		}
		if f.UpdatedAt.IsZero() {
			f.UpdatedAt = now
		}
		if len(f.Embedding) > 0 {
			if err := checkVector(f.Embedding); err != nil {
				return nil, fmt.Errorf("facts: put %q: %w", f.ID, err)
			}
		}
		f.Embedding = slices.Clone(f.Embedding)
		f.CreatedAt, f.UpdatedAt = f.CreatedAt.UTC(), f.UpdatedAt.UTC()
		out[i] = f
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("facts: put: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	embedding := "?"
	if s.pg {
		embedding = "CAST(? AS " + s.vec + ")"
	}
	insert := s.q(`INSERT INTO user_facts (tenant, user_id, id, text, dims, embedding, created_at, updated_at, source)
		VALUES (?, ?, ?, ?, ?, ` + embedding + `, ?, ?, ?)
		ON CONFLICT (tenant, user_id, id) DO UPDATE SET text = excluded.text, dims = excluded.dims, embedding = excluded.embedding,
			created_at = excluded.created_at, updated_at = excluded.updated_at, source = excluded.source`)
	dims := map[facts.Scope]int{}
	for _, f := range out {
		if len(f.Embedding) > 0 {
			d, ok := dims[f.Scope]
			if !ok {
				err := tx.QueryRowContext(ctx, s.q(`SELECT dims FROM user_facts WHERE tenant = ? AND user_id = ? AND dims > 0 AND id <> ? LIMIT 1`),
					f.Scope.Tenant, f.Scope.User, f.ID).Scan(&d)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return nil, fmt.Errorf("facts: put: %w", err)
				}
				if d == 0 {
					d = len(f.Embedding)
				}
				dims[f.Scope] = d
			}
			if d != len(f.Embedding) {
				return nil, fmt.Errorf("facts: put %q: %w: %d components, the scope's facts have %d", f.ID, vector.ErrDimension, len(f.Embedding), d)
			}
		}
		src, err := json.Marshal(f.Source)
		if err != nil {
			return nil, fmt.Errorf("facts: put %q: %w", f.ID, err)
		}
		if _, err := tx.ExecContext(ctx, insert, f.Scope.Tenant, f.Scope.User, f.ID, f.Text, len(f.Embedding), s.encode(f.Embedding),
			f.CreatedAt.UnixNano(), f.UpdatedAt.UnixNano(), string(src)); err != nil {
			return nil, fmt.Errorf("facts: put %q: %w", f.ID, err)
		}
	}
	if s.maxFacts > 0 {
		seen := map[facts.Scope]bool{}
		for _, f := range out {
			if seen[f.Scope] {
				continue
			}
			seen[f.Scope] = true
			var n int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM user_facts WHERE tenant = ? AND user_id = ?`), f.Scope.Tenant, f.Scope.User).Scan(&n); err != nil {
				return nil, fmt.Errorf("facts: put: %w", err)
			}
			if n > s.maxFacts {
				return nil, fmt.Errorf("facts: put: %w (%d)", ErrFull, s.maxFacts)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("facts: put: %w", err)
	}
	for i := range out {
		out[i].Embedding = slices.Clone(out[i].Embedding)
	}
	return out, nil
}

// Get implements [facts.Store].
func (s *Store) Get(ctx context.Context, scope facts.Scope, id string) (facts.Fact, error) {
	row := s.db.QueryRowContext(ctx, s.q(`SELECT `+s.columns()+` FROM user_facts WHERE tenant = ? AND user_id = ? AND id = ?`), scope.Tenant, scope.User, id)
	f, err := s.scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return facts.Fact{}, fmt.Errorf("%w: %q", facts.ErrNotFound, id)
	}
	if err != nil {
		return facts.Fact{}, fmt.Errorf("facts: get: %w", err)
	}
	return f, nil
}

// List implements [facts.Store].
func (s *Store) List(ctx context.Context, scope facts.Scope) ([]facts.Fact, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+s.columns()+` FROM user_facts WHERE tenant = ? AND user_id = ? ORDER BY updated_at DESC, id`), scope.Tenant, scope.User)
	if err != nil {
		return nil, fmt.Errorf("facts: list: %w", err)
	}
	defer rows.Close()
	out := []facts.Fact{}
	for rows.Next() {
		f, err := s.scan(rows)
		if err != nil {
			return nil, fmt.Errorf("facts: list: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("facts: list: %w", err)
	}
	return out, nil
}

// Search implements [facts.Store]: an exact scan of the scope's facts of
// vec's dimension (see the package documentation).
func (s *Store) Search(ctx context.Context, scope facts.Scope, vec []float32, k int) ([]facts.Hit, error) {
	if k <= 0 || len(vec) == 0 {
		return nil, nil
	}
	if err := checkVector(vec); err != nil {
		return nil, fmt.Errorf("facts: search: %w", err)
	}
	if s.pg {
		return s.searchPostgres(ctx, scope, vec, k)
	}
	// Rank by the ids and embeddings alone, then read the k facts found.
	rows, err := s.db.QueryContext(ctx, `SELECT id, embedding FROM user_facts WHERE tenant = ? AND user_id = ? AND dims = ?`, scope.Tenant, scope.User, len(vec))
	if err != nil {
		return nil, fmt.Errorf("facts: search: %w", err)
	}
	defer rows.Close()
	qn := norm(vec)
	type scored struct {
		id    string
		score float64
	}
	var ranked []scored
	var id string
	var raw []byte
	for rows.Next() {
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, fmt.Errorf("facts: search: %w", err)
		}
		if len(raw) != 4*len(vec) {
			continue
		}
		var d, n float64
		for i, x := range vec {
			y := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
			d += float64(x) * y
			n += y * y
		}
		ranked = append(ranked, scored{id, d / (qn * math.Sqrt(n))})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("facts: search: %w", err)
	}
	rows.Close()
	slices.SortFunc(ranked, func(a, b scored) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	ranked = ranked[:min(k, len(ranked))]
	if len(ranked) == 0 {
		return nil, nil
	}
	args := []any{scope.Tenant, scope.User}
	marks := make([]string, len(ranked))
	for i, r := range ranked {
		marks[i] = "?"
		args = append(args, r.id)
	}
	frows, err := s.db.QueryContext(ctx, `SELECT `+s.columns()+` FROM user_facts WHERE tenant = ? AND user_id = ? AND id IN (`+strings.Join(marks, ", ")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("facts: search: %w", err)
	}
	defer frows.Close()
	byID := make(map[string]facts.Fact, len(ranked))
	for frows.Next() {
		f, err := s.scan(frows)
		if err != nil {
			return nil, fmt.Errorf("facts: search: %w", err)
		}
		byID[f.ID] = f
	}
	if err := frows.Err(); err != nil {
		return nil, fmt.Errorf("facts: search: %w", err)
	}
	hits := make([]facts.Hit, 0, len(ranked))
	for _, r := range ranked {
		if f, ok := byID[r.id]; ok { // deleted in between: left out
			hits = append(hits, facts.Hit{Fact: f, Score: r.score})
		}
	}
	return hits, nil
}

func (s *Store) searchPostgres(ctx context.Context, scope facts.Scope, vec []float32, k int) ([]facts.Hit, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+s.columns()+`, 1 - (embedding `+s.op+` CAST($3 AS `+s.vec+`)) AS score
		FROM user_facts WHERE tenant = $1 AND user_id = $2 AND dims = $4
		ORDER BY embedding `+s.op+` CAST($3 AS `+s.vec+`), id LIMIT $5`,
		scope.Tenant, scope.User, s.encode(vec), len(vec), k)
	if err != nil {
		return nil, fmt.Errorf("facts: search: %w", err)
	}
	defer rows.Close()
	var hits []facts.Hit
	for rows.Next() {
		var score float64
		f, err := s.scan(rows, &score)
		if err != nil {
			return nil, fmt.Errorf("facts: search: %w", err)
		}
		hits = append(hits, facts.Hit{Fact: f, Score: score})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("facts: search: %w", err)
	}
	return hits, nil
}

func dot(a, b []float32) float64 {
	var d float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
	}
	return d
}

func norm(v []float32) float64 { return math.Sqrt(dot(v, v)) }

// Delete implements [facts.Store].
func (s *Store) Delete(ctx context.Context, scope facts.Scope, ids ...string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	args := []any{scope.Tenant, scope.User}
	marks := make([]string, len(ids))
	for i, id := range ids {
		marks[i] = "?"
		args = append(args, id)
	}
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM user_facts WHERE tenant = ? AND user_id = ? AND id IN (`+strings.Join(marks, ", ")+`)`), args...)
	if err != nil {
		return 0, fmt.Errorf("facts: delete: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Forget implements [facts.Store].
func (s *Store) Forget(ctx context.Context, scope facts.Scope) (int, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM user_facts WHERE tenant = ? AND user_id = ?`), scope.Tenant, scope.User)
	if err != nil {
		return 0, fmt.Errorf("facts: forget: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
