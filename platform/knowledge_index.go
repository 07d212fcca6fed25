package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/keyword"
	"github.com/weftlabs/weft/rag/pgstore"
	"github.com/weftlabs/weft/rag/vector"
)

// Where knowledge bases' chunks are indexed and recalled from. Two
// backends implement the same contract (knowledge_contract_test.go runs
// it against both):
//
//   - embedded (the default): the durable copy of every chunk, with its
//     vector, is in the metadata store; each replica builds an exact vector
//     index and BM25 from it on a knowledge base's first use and keeps them
//     in step with its own ingestions.
//   - postgres (Config.KnowledgeURL): chunks, their vectors and full-text
//     terms live in PostgreSQL (package rag/pgstore): pgvector HNSW for
//     cosine search, a GIN full-text index for keywords, both searched by
//     the database. A replica holds no index, only a small handle per
//     knowledge base; every replica sees every ingestion at once. Without
//     pgvector, recall is keyword-only.

// kbBackend opens knowledge bases' indexes.
type kbBackend interface {
	// open returns a knowledge base's index; dim is the length of its
	// embedding vectors, 0 when it is keyword-only.
	open(ctx context.Context, kb meta.KnowledgeBase, dim int) (kbIndex, error)
	// drop removes every chunk a knowledge base has in the backend (the
	// metadata store's own copy goes with meta.DeleteKB).
	drop(ctx context.Context, tenant, id string) error
	// bounded reports whether the handles of this backend are cheap to
	// reopen, so that the server may keep only a bounded number of them.
	bounded() bool
	// describe says how a knowledge base's recall runs.
	describe(ctx context.Context, kb meta.KnowledgeBase) string
	close()
}

// kbIndex is one knowledge base's index: the ingestion pipeline writes to
// it, and it makes the retrievers of recall. Retrievers carry the knowledge
// base's ID as their sources' collection.
type kbIndex interface {
	rag.ChunkIndex
	keywordRetriever(opts []rag.RetrieveOption) (rag.Retriever, error)
	// vectorRetriever fails when the index cannot search vectors (the
	// error says why); recall then runs keyword-only.
	vectorRetriever(embedder rag.Embedder, opts []rag.RetrieveOption) (rag.Retriever, error)
}

// embeddedBackend keeps chunks in the metadata store and indexes them in
// memory.
type embeddedBackend struct {
	store kbStore
}

func (b embeddedBackend) bounded() bool                              { return false }
func (b embeddedBackend) close()                                     {}
func (b embeddedBackend) drop(context.Context, string, string) error { return nil }

func (b embeddedBackend) describe(_ context.Context, kb meta.KnowledgeBase) string {
	if kb.EmbeddingModel == "" {
		return "keyword-only recall (BM25): no embedding model configured"
	}
	return "hybrid recall: vector (" + kb.EmbeddingModel + ") and keyword (BM25), fused by reciprocal rank fusion"
}

func (b embeddedBackend) open(ctx context.Context, kb meta.KnowledgeBase, dim int) (kbIndex, error) {
	var vecIndex vector.Index
	if dim > 0 {
		vecIndex = vector.NewFlat(dim)
	}
	index, err := rag.NewEmbeddedIndex(vecIndex, keyword.New())
	if err != nil {
		return nil, err
	}
	durable := b.store.Chunks(kb.TenantID, kb.ID)
	var batch []rag.Chunk
	var vecs [][]float32
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var v [][]float32
		if vecIndex != nil {
			v = vecs
		}
		err := index.Upsert(ctx, batch, v)
		batch, vecs = batch[:0], vecs[:0]
		return err
	}
	err = durable.All(ctx, func(c rag.Chunk, v []float32) error {
		if vecIndex != nil && len(v) != dim {
			return fmt.Errorf("chunk %s has a %d-dimension vector; the embedding model makes %d", c.ID, len(v), dim)
		}
		batch, vecs = append(batch, c), append(vecs, v)
		if len(batch) == 256 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, fmt.Errorf("rebuild indexes: %w", err)
	}
	return &teeIndex{durable: durable, embedded: index, dim: dim, collection: kb.ID}, nil
}

// teeIndex writes to the durable chunk table first, then to the embedded
// indexes, so that what the indexes hold is always recoverable.
type teeIndex struct {
	durable    *meta.Chunks
	embedded   *rag.EmbeddedIndex
	dim        int
	collection string
}

func (t *teeIndex) Upsert(ctx context.Context, chunks []rag.Chunk, vectors [][]float32) error {
	if vectors != nil {
		if len(vectors) != len(chunks) {
			return fmt.Errorf("upsert: %d vectors for %d chunks", len(vectors), len(chunks))
		}
		// Checked before anything is stored: a mismatching model is an
		// error, not rows the next rebuild would refuse.
		for i, v := range vectors {
			if len(v) != t.dim {
				return fmt.Errorf("upsert: chunk %q: vector has %d dimensions, the knowledge base %d", chunks[i].ID, len(v), t.dim)
			}
		}
	}
	if t.dim == 0 {
		vectors = nil
	}
	if err := t.durable.Upsert(ctx, chunks, vectors); err != nil {
		return err
	}
	return t.embedded.Upsert(ctx, chunks, vectors)
}

func (t *teeIndex) ChunkIDs(ctx context.Context, documentID string) ([]string, error) {
	return t.durable.ChunkIDs(ctx, documentID)
}

func (t *teeIndex) Delete(ctx context.Context, ids ...string) error {
	if err := t.durable.Delete(ctx, ids...); err != nil {
		return err
	}
	return t.embedded.Delete(ctx, ids...)
}

func (t *teeIndex) DeleteDocument(ctx context.Context, documentID string) error {
	if err := t.durable.DeleteDocument(ctx, documentID); err != nil {
		return err
	}
	return t.embedded.DeleteDocument(ctx, documentID)
}

func (t *teeIndex) keywordRetriever(opts []rag.RetrieveOption) (rag.Retriever, error) {
	return rag.NewKeywordRetriever(t.embedded.Keywords(), t.embedded, append([]rag.RetrieveOption{rag.InCollection(t.collection)}, opts...)...)
}

func (t *teeIndex) vectorRetriever(embedder rag.Embedder, opts []rag.RetrieveOption) (rag.Retriever, error) {
	if t.embedded.Vectors() == nil {
		return nil, errors.New("no embedding model configured")
	}
	return rag.NewVectorRetriever(t.embedded.Vectors(), embedder, t.embedded, append([]rag.RetrieveOption{rag.InCollection(t.collection)}, opts...)...)
}

// pgBackend keeps knowledge bases in PostgreSQL through rag/pgstore. A
// pgstore.Store has one embedding dimension, so the backend keeps one per
// dimension, each with its own tables (prefix weft_kb_d<dim>_; keyword-only
// knowledge bases in weft_kb_), opened on first use. Rows are keyed by
// tenant and knowledge base, so knowledge bases never see each other's
// chunks.
type pgBackend struct {
	pool *pgxpool.Pool
	// legacy is the metadata store, whose chunk table held the knowledge
	// of --postgres deployments before this backend: a knowledge base
	// still there is moved over on its first open.
	legacy kbStore
	log    *slog.Logger
	opts   []pgstore.Option

	mu   sync.Mutex
	dims map[int]*pgDim
	// vectors is why the database cannot search vectors ("" when it can),
	// once known.
	vectors *string
}

type pgDim struct {
	mu sync.Mutex
	s  *pgstore.Store
}

func newPGBackend(ctx context.Context, dsn string, legacy kbStore, log *slog.Logger, opts ...pgstore.Option) (*pgBackend, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("knowledge store: %w", err)
	}
	// pgxpool's default (4 on small machines) would queue recalls behind
	// each other: a hybrid recall holds two connections at once.
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, 16)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("knowledge store: %w", err)
	}
	return &pgBackend{pool: pool, legacy: legacy, log: log, opts: opts, dims: map[int]*pgDim{}}, nil
}

func (b *pgBackend) bounded() bool { return true }

func (b *pgBackend) describe(ctx context.Context, kb meta.KnowledgeBase) string {
	if kb.EmbeddingModel == "" {
		return "keyword-only recall (PostgreSQL full text): no embedding model configured"
	}
	if why := b.vectorStatus(ctx); why != "" {
		return "keyword-only recall (PostgreSQL full text): " + why
	}
	return "hybrid recall in PostgreSQL: vector (" + kb.EmbeddingModel + "; pgvector HNSW, cosine) and keyword (full text), fused by reciprocal rank fusion"
}

// vectorStatus reports why the database cannot search vectors, "" when it
// can (or cannot tell yet: the first open of a knowledge base with an
// embedding model sets up pgvector and says).
func (b *pgBackend) vectorStatus(ctx context.Context) string {
	b.mu.Lock()
	known := b.vectors
	b.mu.Unlock()
	if known != nil {
		return *known
	}
	var available, installed bool
	if err := b.pool.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector'),
		EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')`).Scan(&available, &installed); err != nil {
		return ""
	}
	why := ""
	if !available && !installed {
		why = "vector search unavailable: pgvector not installed"
	}
	b.mu.Lock()
	if b.vectors == nil {
		b.vectors = &why
	}
	b.mu.Unlock()
	return why
}
func (b *pgBackend) close() { b.pool.Close() }

// pgTablePrefix is the table prefix of the store of one dimension.
func pgTablePrefix(dim int) string {
	if dim == 0 {
		return "weft_kb_"
	}
	return fmt.Sprintf("weft_kb_d%d_", dim)
}

// store returns the store of one dimension, opening (and migrating) it on
// first use; stores of other dimensions are not held up meanwhile.
func (b *pgBackend) store(ctx context.Context, dim int) (*pgstore.Store, error) {
	b.mu.Lock()
	d := b.dims[dim]
	if d == nil {
		d = &pgDim{}
		b.dims[dim] = d
	}
	b.mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.s != nil {
		return d.s, nil
	}
	opts := append([]pgstore.Option{pgstore.WithTablePrefix(pgTablePrefix(dim))}, b.opts...)
	if dim > 0 {
		opts = append(opts, pgstore.WithDimensions(dim))
	}
	s, err := pgstore.New(ctx, b.pool, opts...)
	if err != nil {
		return nil, err
	}
	if dim > 0 {
		why := ""
		if err := s.VectorSearch(); err != nil {
			why = err.Error()
			b.log.Warn("knowledge in PostgreSQL: recall is keyword-only", "dimensions", dim, "reason", why)
		}
		b.mu.Lock()
		b.vectors = &why
		b.mu.Unlock()
	}
	d.s = s
	return s, nil
}

// pgKey is a knowledge base's key in the store's rows.
func pgKey(tenant, id string) string { return tenant + ":" + id }

func (b *pgBackend) open(ctx context.Context, kb meta.KnowledgeBase, dim int) (kbIndex, error) {
	s, err := b.store(ctx, dim)
	if err != nil {
		return nil, err
	}
	ix := &pgIndex{KB: s.KnowledgeBase(pgKey(kb.TenantID, kb.ID)), collection: kb.ID}
	if err := b.adopt(ctx, kb, ix, dim); err != nil {
		return nil, fmt.Errorf("move chunks from the metadata store: %w", err)
	}
	if err := b.checkDimension(ctx, kb, dim); err != nil {
		return nil, err
	}
	return ix, nil
}

// checkDimension fails when the knowledge base has no chunks in the store
// of dim but has some in the store of another dimension: its embedding
// model now makes vectors of another length. Recall would silently find
// nothing; re-embedding is explicit (re-ingest).
func (b *pgBackend) checkDimension(ctx context.Context, kb meta.KnowledgeBase, dim int) error {
	tables, err := b.chunkTables(ctx)
	if err != nil {
		return err
	}
	key := pgKey(kb.TenantID, kb.ID)
	own := b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{pgTablePrefix(dim) + "chunks"}.Sanitize()+` WHERE kb = $1)`, key)
	var has bool
	if err := own.Scan(&has); err != nil {
		return fmt.Errorf("knowledge store: %w", err)
	}
	if has {
		return nil
	}
	for _, t := range tables {
		if t.dim == dim {
			continue
		}
		if err := b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+t.name+` WHERE kb = $1)`, key).Scan(&has); err != nil {
			return fmt.Errorf("knowledge store: %w", err)
		}
		if has {
			return fmt.Errorf("its chunks were embedded with %d dimensions, but its embedding model %s now makes %d: re-ingest its documents (into a new knowledge base) to re-embed them", t.dim, kb.EmbeddingModel, dim)
		}
	}
	return nil
}

type chunkTable struct {
	name string // qualified, quoted
	dim  int
}

// chunkTables lists the chunk tables of every dimension in the current
// schema, opened by this replica or not.
func (b *pgBackend) chunkTables(ctx context.Context) ([]chunkTable, error) {
	rows, err := b.pool.Query(ctx, `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename), coalesce(substring(tablename from '^weft_kb_d([0-9]+)_chunks$')::int, 0)
		FROM pg_tables WHERE schemaname = current_schema() AND tablename ~ '^weft_kb_(d[0-9]+_)?chunks$'`)
	if err != nil {
		return nil, fmt.Errorf("knowledge store: %w", err)
	}
	tables, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chunkTable, error) {
		var t chunkTable
		err := row.Scan(&t.name, &t.dim)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("knowledge store: %w", err)
	}
	return tables, nil
}

// adopt moves a knowledge base's chunks (with their vectors) from the
// metadata store's chunk table into the PostgreSQL store, then deletes
// them there. Copies are idempotent, so replicas adopting at once, or an
// adoption cut short, do no harm.
func (b *pgBackend) adopt(ctx context.Context, kb meta.KnowledgeBase, ix *pgIndex, dim int) error {
	durable := b.legacy.Chunks(kb.TenantID, kb.ID)
	var batch []rag.Chunk
	var vecs [][]float32
	docs := map[string]bool{}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		v := vecs
		if dim == 0 {
			v = nil
		}
		err := ix.Upsert(ctx, batch, v)
		batch, vecs = batch[:0], vecs[:0]
		return err
	}
	err := durable.All(ctx, func(c rag.Chunk, v []float32) error {
		if dim > 0 && len(v) != dim {
			return fmt.Errorf("chunk %s has a %d-dimension vector; the embedding model makes %d (re-ingest the knowledge base)", c.ID, len(v), dim)
		}
		docs[c.DocumentID] = true
		batch, vecs = append(batch, c), append(vecs, v)
		if len(batch) == 256 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	if len(docs) > 0 {
		b.log.Info("moved a knowledge base's chunks into the PostgreSQL knowledge store", "tenant", kb.TenantID, "knowledge_base", kb.ID, "documents", len(docs))
	}
	for doc := range docs {
		if err := durable.DeleteDocument(ctx, doc); err != nil {
			return err
		}
	}
	return nil
}

// drop deletes the knowledge base's rows from the store of every dimension
// this database has, opened by this replica or not.
func (b *pgBackend) drop(ctx context.Context, tenant, id string) error {
	tables, err := b.chunkTables(ctx)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := b.pool.Exec(ctx, `DELETE FROM `+t.name+` WHERE kb = $1`, pgKey(tenant, id)); err != nil {
			return fmt.Errorf("knowledge store: delete knowledge base %s: %w", id, err)
		}
	}
	return nil
}

// pgIndex is one knowledge base in a pgstore.Store.
type pgIndex struct {
	*pgstore.KB
	collection string
}

func (ix *pgIndex) keywordRetriever(opts []rag.RetrieveOption) (rag.Retriever, error) {
	return ix.KeywordRetriever(append([]rag.RetrieveOption{rag.InCollection(ix.collection)}, opts...)...), nil
}

func (ix *pgIndex) vectorRetriever(embedder rag.Embedder, opts []rag.RetrieveOption) (rag.Retriever, error) {
	return ix.VectorRetriever(embedder, append([]rag.RetrieveOption{rag.InCollection(ix.collection)}, opts...)...)
}
