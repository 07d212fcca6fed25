// Package pgstore keeps knowledge bases in PostgreSQL: chunks, their
// metadata and their embeddings, with keyword recall by PostgreSQL full-text
// search and vector recall by pgvector when the server has it.
//
// A [Store] holds any number of knowledge bases; [Store.KnowledgeBase]
// returns the handle of one. A [KB] is a [rag.ChunkIndex] (the ingestion
// pipeline writes to it), a [rag.ChunkReader], and makes the retrievers of
// its knowledge base: [KB.KeywordRetriever], [KB.VectorRetriever] and
// [KB.Retriever], the hybrid of both.
//
// # Tables
//
// Tables are created and upgraded on open by versioned migrations, recorded
// in <prefix>migrations and serialised by an advisory lock, so replicas may
// open one database at once. The prefix (default "weft_kb_") and the schema
// (default: the connection's search_path) are options.
//
//	<prefix>chunks      one row per chunk: knowledge base, chunk ID, document
//	                    ID, position, text, byte offsets, token count,
//	                    metadata (JSONB), the pre-tokenised terms and their
//	                    tsvector (GIN-indexed)
//	<prefix>embeddings  one vector(dim) per chunk, HNSW-indexed for cosine
//	                    distance; only with pgvector and WithDimensions
//
// PostgreSQL rejects NUL characters in text, so they are stored as U+FFFD,
// and invalid UTF-8 in metadata is replaced likewise.
//
// # Keyword recall and CJK
//
// PostgreSQL's text-search parsers do not segment Chinese, Japanese or
// Korean: a sentence without spaces would become one unsearchable word. So
// the store does not let PostgreSQL tokenise. Every chunk's text goes
// through [keyword.Tokenize] — the same tokenizer the embedded BM25 index
// uses: lower-cased words with light stemming, and CJK as overlapping
// character bigrams ("東京都" → "東京 京都") — and the terms, joined by
// spaces, are stored in the terms column, indexed as to_tsvector('simple',
// terms). A query is tokenised the same way and searched as the OR of its
// terms with to_tsquery('simple', …), ranked by ts_rank_cd. (OR, not
// websearch_to_tsquery's AND: a natural-language question rarely has all its
// words in one chunk; ranking puts chunks with more of them first.)
//
// # Vector recall
//
// With [WithDimensions] set and the pgvector extension available
// (pg_available_extensions lists "vector"), opening runs CREATE EXTENSION
// IF NOT EXISTS vector (in the public schema when there is one) and
// creates the embeddings table with a vector(dim) column and an HNSW index
// (vector_cosine_ops). Searches order by the <=>
// cosine distance; a Source's Score is the cosine similarity, 1 − distance.
// A metadata filter (and the knowledge base, when several share the tables)
// is applied to the index's candidates; with pgvector 0.8+ every search
// enables iterative index scans (hnsw.iterative_scan = relaxed_order, local
// to the search), so a selective filter or a small knowledge base beside
// large ones still finds k chunks; with older versions it can find fewer.
// [WithEfSearch] sets hnsw.ef_search per search. pgvector's type and
// operators are qualified by the schema the extension lives in, so the
// connection's search_path need not include it.
// Without pgvector the store runs keyword-only: [Store.VectorSearch] reports
// "vector search unavailable: pgvector not installed", [KB.VectorRetriever]
// returns an error wrapping [ErrNoVectorSearch], vectors given to Upsert are
// ignored, and [KB.Retriever] returns a keyword-only retriever whose
// Describe says why.
//
// # What is tested
//
// The tests run against a real PostgreSQL (WEFT_TEST_POSTGRES_URL; they skip
// when it is unset), each in a schema of its own, dropped afterwards:
// migrations (also concurrent), upsert, replace and delete by chunk and by
// document, chunk reads, keyword recall in English and CJK with filters,
// minimum score and k, ingestion through rag.Ingester, and an augmentor over
// the store. The tests named Pgvector need pgvector (CI installs 0.8.6) and
// fail, rather than skip, without it: extension creation (also by several
// stores opening a fresh database at once), the vector(dim) column and its
// HNSW cosine index, a plan that scans that index, cosine scores, vector
// upsert, replace and delete, metadata filters, per-knowledge-base isolation,
// hybrid recall by reciprocal rank fusion, and dimension mismatches, which
// are errors that store nothing. The degradation to keyword-only runs only
// against a server without pgvector.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNoVectorSearch reports that the store cannot search vectors: pgvector is
// not installed, the extension could not be created, or no dimension was
// configured. The error's text says which.
var ErrNoVectorSearch = errors.New("vector search unavailable")

// Option configures a Store.
type Option func(*config)

type config struct {
	schema   string
	prefix   string
	dims     int
	efSearch int
}

// WithSchema puts the tables in schema, which is created if missing
// (default: the first schema of the connection's search_path).
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithTablePrefix sets the prefix of the store's table names (default
// "weft_kb_"). It may hold letters, digits and underscores.
func WithTablePrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithDimensions sets the length of the embedding vectors and enables vector
// search when pgvector is available. A store's dimension is fixed once its
// embeddings table exists; opening with another is an error.
func WithDimensions(n int) Option { return func(c *config) { c.dims = n } }

// WithEfSearch sets hnsw.ef_search, the size of the candidate list of a
// vector search (pgvector's default is 40): larger finds the exact nearest
// neighbours more often, at more cost. It is set per query.
func WithEfSearch(n int) Option { return func(c *config) { c.efSearch = n } }

// Store is a PostgreSQL knowledge store. It is safe for concurrent use.
type Store struct {
	pool  *pgxpool.Pool
	owned bool
	cfg   config

	chunks, embeddings, migrations string // sanitised, qualified table names

	vectorErr error // nil when vector search works

	// vec is the pgvector type, qualified by the extension's schema (so
	// that it resolves whatever the connection's search_path), vecOp its
	// cosine distance operator, vecOps the index's operator class.
	vec, vecOp, vecOps string
	// searchSettings is the set_config call that runs before each vector
	// search: custom plans, ef_search, and iterative index scans with
	// pgvector 0.8+ (so that a knowledge base or filter that is a small
	// part of the table still finds k chunks).
	searchSettings string
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Open connects to PostgreSQL (dsn as pgx accepts it) and brings the
// store's tables up to date. Close releases the pool.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect: %w", err)
	}
	s, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a store over an existing pool and brings its tables up to
// date. Close leaves the pool open.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	cfg := config{prefix: "weft_kb_"}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.schema != "" && !identRe.MatchString(cfg.schema) {
		return nil, fmt.Errorf("pgstore: schema %q: use letters, digits and underscores", cfg.schema)
	}
	if cfg.prefix != "" && !identRe.MatchString(cfg.prefix) {
		return nil, fmt.Errorf("pgstore: table prefix %q: use letters, digits and underscores", cfg.prefix)
	}
	if cfg.dims < 0 || cfg.dims > 16000 {
		return nil, fmt.Errorf("pgstore: dimensions %d: must be between 1 and 16000 (pgvector's limit), or 0 for keyword-only", cfg.dims)
	}
	s := &Store{pool: pool, cfg: cfg}
	s.chunks = s.table("chunks")
	s.embeddings = s.table("embeddings")
	s.migrations = s.table("migrations")
	if err := s.migrate(ctx); err != nil {
		return nil, fmt.Errorf("pgstore: migrate: %w", err)
	}
	return s, nil
}

func (s *Store) table(name string) string {
	if s.cfg.schema != "" {
		return pgx.Identifier{s.cfg.schema, s.cfg.prefix + name}.Sanitize()
	}
	return pgx.Identifier{s.cfg.prefix + name}.Sanitize()
}

// Close closes the pool if Open made it.
func (s *Store) Close() {
	if s.owned {
		s.pool.Close()
	}
}

// VectorSearch reports whether vector search works, and if not, why (an
// error wrapping ErrNoVectorSearch, for example "vector search unavailable:
// pgvector not installed").
func (s *Store) VectorSearch() error { return s.vectorErr }

// KnowledgeBase returns the handle of the knowledge base id. Knowledge bases
// need no creation: one exists as soon as it has chunks.
func (s *Store) KnowledgeBase(id string) *KB { return &KB{s: s, id: id} }

// DeleteKnowledgeBase removes every chunk (and embedding) of knowledge base
// id.
func (s *Store) DeleteKnowledgeBase(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM `+s.chunks+` WHERE kb = $1`, id); err != nil {
		return fmt.Errorf("pgstore: delete knowledge base %q: %w", id, err)
	}
	return nil
}

// migration is one versioned step; {chunks} and friends name the tables.
type migration struct {
	version int
	name    string
	stmts   []string
}

var migrations = []migration{
	{1, "chunks with full-text terms", []string{
		`CREATE TABLE {chunks} (
			kb          TEXT    NOT NULL,
			id          TEXT    NOT NULL,
			document_id TEXT    NOT NULL,
			idx         INTEGER NOT NULL,
			content     TEXT    NOT NULL,
			start_byte  INTEGER NOT NULL,
			end_byte    INTEGER NOT NULL,
			tokens      INTEGER NOT NULL,
			metadata    JSONB   NOT NULL DEFAULT '{}',
			terms       TEXT    NOT NULL,
			tsv         TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED,
			updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
			PRIMARY KEY (kb, id)
		)`,
		`CREATE INDEX {prefix}chunks_document ON {chunks} (kb, document_id)`,
		`CREATE INDEX {prefix}chunks_tsv ON {chunks} USING GIN (tsv)`,
		`CREATE INDEX {prefix}chunks_metadata ON {chunks} USING GIN (metadata jsonb_path_ops)`,
	}},
}

func (s *Store) expand(stmt string) string {
	return strings.NewReplacer(
		"{chunks}", s.chunks,
		"{embeddings}", s.embeddings,
		"{prefix}", s.cfg.prefix,
	).Replace(stmt)
}

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	// Serialise migrators of this schema and prefix across processes.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "weft pgstore "+s.migrations); err != nil {
		return err
	}
	if s.cfg.schema != "" {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.cfg.schema}.Sanitize()); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.migrations+` (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
	)`); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT version FROM `+s.migrations)
	if err != nil {
		return err
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return err
	}
	applied := map[int]bool{}
	for _, v := range versions {
		applied[int(v)] = true
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		for _, stmt := range m.stmts {
			if _, err := tx.Exec(ctx, s.expand(stmt)); err != nil {
				return fmt.Errorf("step %d (%s): %w", m.version, m.name, err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.migrations+` (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return err
		}
	}
	if err := s.setUpVectors(ctx, tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// setUpVectors creates the embeddings table when pgvector is available and a
// dimension is configured, and records in s.vectorErr why not otherwise.
// It depends on the server, not on a version, so it runs on every open
// (every statement is IF NOT EXISTS).
func (s *Store) setUpVectors(ctx context.Context, tx pgx.Tx) error {
	if s.cfg.dims == 0 {
		s.vectorErr = fmt.Errorf("%w: no embedding dimension configured (pgstore.WithDimensions)", ErrNoVectorSearch)
		return nil
	}
	// Stores of other schemas or prefixes may be opening too: without this
	// lock, all but one of their CREATE EXTENSION statements would fail
	// with a unique violation and degrade to keyword-only.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('weft pgstore CREATE EXTENSION vector'))`); err != nil {
		return err
	}
	var available, installed bool
	if err := tx.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector'),
		EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')`).Scan(&available, &installed); err != nil {
		return err
	}
	if !available && !installed {
		s.vectorErr = fmt.Errorf("%w: pgvector not installed", ErrNoVectorSearch)
		return nil
	}
	if !installed {
		// The extension is database-wide, so it goes to the public schema
		// when there is one: created in the connection's own schema, it
		// would be dropped (with every vector column of every other
		// schema) when that schema is. Savepoints, so that lacking the
		// privilege to create extensions degrades to keyword-only instead
		// of failing the whole migration.
		var err error
		for _, stmt := range []string{`CREATE EXTENSION IF NOT EXISTS vector SCHEMA public`, `CREATE EXTENSION IF NOT EXISTS vector`} {
			if err = createExtension(ctx, tx, stmt); err == nil {
				break
			}
		}
		if err != nil {
			s.vectorErr = fmt.Errorf("%w: pgvector is available but CREATE EXTENSION vector failed (ask an administrator to run it): %v", ErrNoVectorSearch, err)
			return nil
		}
	}
	var extSchema, extVersion string
	if err := tx.QueryRow(ctx, `SELECT extnamespace::regnamespace::text, extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&extSchema, &extVersion); err != nil {
		return fmt.Errorf("pgvector: %w", err)
	}
	// regnamespace's text is already a quoted identifier where needed.
	s.vec = extSchema + ".vector"
	s.vecOp = "OPERATOR(" + extSchema + ".<=>)"
	s.vecOps = extSchema + ".vector_cosine_ops"
	// A prepared statement run five times may switch to a generic plan,
	// which cannot see the query vector and the knowledge base and sorts
	// every row instead of scanning the HNSW index (1.2 ms became 40–70 ms
	// at 5,000 chunks): every search is planned for its own values.
	settings := []string{"set_config('plan_cache_mode', 'force_custom_plan', true)"}
	if s.cfg.efSearch > 0 {
		settings = append(settings, fmt.Sprintf("set_config('hnsw.ef_search', '%d', true)", s.cfg.efSearch))
	}
	if versionAtLeast(extVersion, 0, 8) {
		settings = append(settings, "set_config('hnsw.iterative_scan', 'relaxed_order', true)")
	}
	s.searchSettings = "SELECT " + strings.Join(settings, ", ")
	stmts := []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS {embeddings} (
			kb        TEXT NOT NULL,
			id        TEXT NOT NULL,
			embedding %s(%d) NOT NULL,
			PRIMARY KEY (kb, id),
			FOREIGN KEY (kb, id) REFERENCES {chunks} (kb, id) ON DELETE CASCADE
		)`, s.vec, s.cfg.dims),
		`CREATE INDEX IF NOT EXISTS {prefix}embeddings_hnsw ON {embeddings} USING hnsw (embedding ` + s.vecOps + `)`,
	}
	for _, stmt := range stmts {
		if _, err := tx.Exec(ctx, s.expand(stmt)); err != nil {
			return fmt.Errorf("embeddings table: %w", err)
		}
	}
	var typ string
	if err := tx.QueryRow(ctx, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = $1::regclass AND attname = 'embedding'`, s.embeddings).Scan(&typ); err != nil {
		return fmt.Errorf("embeddings table: %w", err)
	}
	// format_type qualifies the type when its schema is not on the
	// search_path.
	if want := fmt.Sprintf("vector(%d)", s.cfg.dims); typ != want && !strings.HasSuffix(typ, "."+want) {
		return fmt.Errorf("embeddings table holds %s, but the store was opened with %d dimensions: re-embed into a new table prefix or schema", typ, s.cfg.dims)
	}
	return nil
}

// versionAtLeast reports whether an extension version "major.minor[.patch]"
// is at least major.minor.
func versionAtLeast(v string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(v, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// createExtension runs stmt in a savepoint of tx, rolled back on failure.
func createExtension(ctx context.Context, tx pgx.Tx, stmt string) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, stmt); err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	return sp.Commit(ctx)
}
