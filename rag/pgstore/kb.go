package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/keyword"
)

// KB is one knowledge base of a [Store]. It is the [rag.ChunkIndex] the
// ingestion pipeline writes to and the [rag.ChunkReader] retrievers read
// from. It is safe for concurrent use.
type KB struct {
	s  *Store
	id string
}

var (
	_ rag.ChunkIndex  = (*KB)(nil)
	_ rag.ChunkReader = (*KB)(nil)
)

// ID returns the knowledge base's ID.
func (kb *KB) ID() string { return kb.id }

// Upsert stores chunks, replacing any with the same IDs, in one
// transaction. vectors, when not nil, holds one embedding per chunk; it is
// stored when the store has vector search and ignored otherwise (the
// knowledge base then runs keyword-only; see Store.VectorSearch).
func (kb *KB) Upsert(ctx context.Context, chunks []rag.Chunk, vectors [][]float32) error {
	if vectors != nil && len(vectors) != len(chunks) {
		return fmt.Errorf("pgstore: upsert: %d vectors for %d chunks", len(vectors), len(chunks))
	}
	withVectors := vectors != nil && kb.s.vectorErr == nil
	if withVectors {
		for i, v := range vectors {
			if len(v) != kb.s.cfg.dims {
				return fmt.Errorf("pgstore: upsert: chunk %q: vector has %d dimensions, the store %d", chunks[i].ID, len(v), kb.s.cfg.dims)
			}
		}
	}
	if len(chunks) == 0 {
		return nil
	}
	var b pgx.Batch
	for i, c := range chunks {
		if c.ID == "" || c.DocumentID == "" {
			return fmt.Errorf("pgstore: upsert: chunk %d has no ID or document ID", i)
		}
		meta, err := json.Marshal(cleanMeta(c.Metadata))
		if err != nil {
			return fmt.Errorf("pgstore: upsert: chunk %q metadata: %w", c.ID, err)
		}
		b.Queue(`INSERT INTO `+kb.s.chunks+` (kb, id, document_id, idx, content, start_byte, end_byte, tokens, metadata, terms)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (kb, id) DO UPDATE SET document_id = EXCLUDED.document_id, idx = EXCLUDED.idx,
				content = EXCLUDED.content, start_byte = EXCLUDED.start_byte, end_byte = EXCLUDED.end_byte,
				tokens = EXCLUDED.tokens, metadata = EXCLUDED.metadata, terms = EXCLUDED.terms, updated_at = now()`,
			kb.id, c.ID, c.DocumentID, c.Index, cleanText(c.Text), c.Start, c.End, c.Tokens, string(meta), Terms(c.Text))
		if withVectors {
			b.Queue(`INSERT INTO `+kb.s.embeddings+` (kb, id, embedding) VALUES ($1, $2, $3::`+kb.s.vec+`)
				ON CONFLICT (kb, id) DO UPDATE SET embedding = EXCLUDED.embedding`,
				kb.id, c.ID, vectorLiteral(vectors[i]))
		}
	}
	tx, err := kb.s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: upsert: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("pgstore: upsert into knowledge base %q: %w", kb.id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: upsert: %w", err)
	}
	return nil
}

// ChunkIDs returns the IDs of a document's chunks.
func (kb *KB) ChunkIDs(ctx context.Context, documentID string) ([]string, error) {
	rows, err := kb.s.pool.Query(ctx, `SELECT id FROM `+kb.s.chunks+` WHERE kb = $1 AND document_id = $2 ORDER BY idx, id`, kb.id, documentID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: chunk IDs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgstore: chunk IDs: %w", err)
	}
	return ids, nil
}

// Delete removes the chunks with the given IDs (and their embeddings).
func (kb *KB) Delete(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := kb.s.pool.Exec(ctx, `DELETE FROM `+kb.s.chunks+` WHERE kb = $1 AND id = ANY($2)`, kb.id, ids); err != nil {
		return fmt.Errorf("pgstore: delete chunks: %w", err)
	}
	return nil
}

// DeleteDocument removes every chunk of a document.
func (kb *KB) DeleteDocument(ctx context.Context, documentID string) error {
	if _, err := kb.s.pool.Exec(ctx, `DELETE FROM `+kb.s.chunks+` WHERE kb = $1 AND document_id = $2`, kb.id, documentID); err != nil {
		return fmt.Errorf("pgstore: delete document %q: %w", documentID, err)
	}
	return nil
}

// Len reports how many chunks the knowledge base holds.
func (kb *KB) Len(ctx context.Context) (int, error) {
	var n int
	if err := kb.s.pool.QueryRow(ctx, `SELECT count(*) FROM `+kb.s.chunks+` WHERE kb = $1`, kb.id).Scan(&n); err != nil {
		return 0, fmt.Errorf("pgstore: count chunks: %w", err)
	}
	return n, nil
}

const chunkColumns = `c.id, c.document_id, c.idx, c.content, c.start_byte, c.end_byte, c.tokens, c.metadata`

// ReadChunks returns the stored chunks with the given IDs, leaving out IDs
// it does not hold.
func (kb *KB) ReadChunks(ctx context.Context, ids []string) ([]rag.Chunk, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := kb.s.pool.Query(ctx, `SELECT `+chunkColumns+`, 0::float8 FROM `+kb.s.chunks+` c WHERE c.kb = $1 AND c.id = ANY($2)`, kb.id, ids)
	if err != nil {
		return nil, fmt.Errorf("pgstore: read chunks: %w", err)
	}
	hits, err := collectHits(rows)
	if err != nil {
		return nil, fmt.Errorf("pgstore: read chunks: %w", err)
	}
	out := make([]rag.Chunk, len(hits))
	for i, h := range hits {
		out[i] = h.chunk
	}
	return out, nil
}

type hit struct {
	chunk rag.Chunk
	score float64
}

func collectHits(rows pgx.Rows) ([]hit, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (hit, error) {
		var h hit
		var meta []byte
		c := &h.chunk
		if err := row.Scan(&c.ID, &c.DocumentID, &c.Index, &c.Text, &c.Start, &c.End, &c.Tokens, &meta, &h.score); err != nil {
			return h, err
		}
		if err := json.Unmarshal(meta, &c.Metadata); err != nil {
			return h, fmt.Errorf("chunk %q metadata: %w", c.ID, err)
		}
		if len(c.Metadata) == 0 {
			c.Metadata = nil
		}
		return h, nil
	})
}

// searchKeywords returns up to k chunks matching query's terms whose metadata
// holds every pair of filter, best first by ts_rank_cd, ties broken by ID.
func (kb *KB) searchKeywords(ctx context.Context, query string, k int, filter map[string]string) ([]rag.Chunk, []float64, error) {
	q := TSQuery(query)
	if q == "" || k < 1 {
		return nil, nil, nil
	}
	f, err := filterJSON(filter)
	if err != nil {
		return nil, nil, err
	}
	// An unnamed statement, planned for its values each time (a cached
	// generic plan cannot weigh the knowledge base and terms).
	rows, err := kb.s.pool.Query(ctx, kb.s.keywordQuery(), pgx.QueryExecModeExec, kb.id, q, f, k)
	if err != nil {
		return nil, nil, fmt.Errorf("pgstore: keyword search: %w", err)
	}
	return split(collectHits(rows))
}

// searchVectors returns up to k chunks nearest to v by cosine distance whose
// metadata holds every pair of filter, best first, with their cosine
// similarities. It fails with ErrNoVectorSearch without pgvector.
func (kb *KB) searchVectors(ctx context.Context, v []float32, k int, filter map[string]string) ([]rag.Chunk, []float64, error) {
	if kb.s.vectorErr != nil {
		return nil, nil, kb.s.vectorErr
	}
	if len(v) != kb.s.cfg.dims {
		return nil, nil, fmt.Errorf("pgstore: vector search: query has %d dimensions, the store %d", len(v), kb.s.cfg.dims)
	}
	if k < 1 {
		return nil, nil, nil
	}
	f, err := filterJSON(filter)
	if err != nil {
		return nil, nil, err
	}
	// One round trip: the settings and the search are sent as one batch,
	// which runs as one implicit transaction, so the settings (local to
	// it) apply to the search and end with it.
	var b pgx.Batch
	b.Queue(kb.s.searchSettings)
	b.Queue(kb.s.vectorQuery(), kb.id, vectorLiteral(v), f, k)
	br := kb.s.pool.SendBatch(ctx, &b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, nil, fmt.Errorf("pgstore: vector search settings: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("pgstore: vector search: %w", err)
	}
	chunks, scores, err := split(collectHits(rows))
	if err != nil {
		return nil, nil, fmt.Errorf("pgstore: vector search: %w", err)
	}
	if err := br.Close(); err != nil {
		return nil, nil, fmt.Errorf("pgstore: vector search: %w", err)
	}
	return chunks, scores, nil
}

// keywordQuery is searchKeywords' SQL ($1 knowledge base, $2 tsquery text,
// $3 metadata filter, $4 k).
func (s *Store) keywordQuery() string {
	return `SELECT ` + chunkColumns + `, ts_rank_cd(c.tsv, q)::float8 AS score
		FROM ` + s.chunks + ` c, to_tsquery('simple', $2) q
		WHERE c.kb = $1 AND c.tsv @@ q AND c.metadata @> $3::jsonb
		ORDER BY score DESC, c.id
		LIMIT $4`
}

// vectorQuery is searchVectors' SQL ($1 knowledge base, $2 vector, $3
// metadata filter, $4 k). The inner query orders by distance alone, which
// the HNSW index serves; ordering it by distance and ID, as the outer query
// does to break ties, would make PostgreSQL sort every row of the table.
func (s *Store) vectorQuery() string {
	return `SELECT id, document_id, idx, content, start_byte, end_byte, tokens, metadata, score FROM (
		SELECT ` + chunkColumns + `, (1 - (e.embedding ` + s.vecOp + ` $2::` + s.vec + `))::float8 AS score
		FROM ` + s.embeddings + ` e JOIN ` + s.chunks + ` c ON c.kb = e.kb AND c.id = e.id
		WHERE e.kb = $1 AND c.metadata @> $3::jsonb
		ORDER BY e.embedding ` + s.vecOp + ` $2::` + s.vec + `
		LIMIT $4) nearest
		ORDER BY score DESC, id`
}

func split(hits []hit, err error) ([]rag.Chunk, []float64, error) {
	if err != nil {
		return nil, nil, err
	}
	chunks := make([]rag.Chunk, len(hits))
	scores := make([]float64, len(hits))
	for i, h := range hits {
		chunks[i], scores[i] = h.chunk, h.score
	}
	return chunks, scores, nil
}

// Terms returns the text the store indexes for text: the terms of
// [keyword.Tokenize] joined by spaces (CJK as character bigrams).
func Terms(text string) string {
	return strings.Join(keyword.Tokenize(text), " ")
}

// TSQuery returns the to_tsquery('simple', …) text that searches for any of
// query's terms, each quoted as a literal lexeme; empty when query has no
// indexable terms.
func TSQuery(query string) string {
	terms := keyword.Tokenize(query)
	seen := make(map[string]bool, len(terms))
	var b strings.Builder
	for _, t := range terms {
		if seen[t] {
			continue
		}
		seen[t] = true
		if b.Len() > 0 {
			b.WriteString(" | ")
		}
		// Terms are letters, digits and marks only; escaping quotes and
		// backslashes anyway keeps a future tokenizer change from turning
		// into tsquery syntax.
		b.WriteByte('\'')
		b.WriteString(strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(t))
		b.WriteByte('\'')
	}
	return b.String()
}

func filterJSON(f map[string]string) (string, error) {
	if len(f) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(cleanMeta(f))
	if err != nil {
		return "", fmt.Errorf("pgstore: filter: %w", err)
	}
	return string(b), nil
}

// vectorLiteral renders v in pgvector's text format, "[1,2.5,…]", so that no
// client-side pgvector type is needed.
func vectorLiteral(v []float32) string {
	b := make([]byte, 0, len(v)*10+2)
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return string(append(b, ']'))
}

// cleanText makes s storable in a PostgreSQL text column, which holds valid
// UTF-8 without NUL characters.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

func cleanMeta(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[cleanText(k)] = cleanText(v)
	}
	return out
}
