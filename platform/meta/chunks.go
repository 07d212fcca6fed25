package meta

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/weftlabs/weft/rag"
)

// Chunks is a knowledge base's chunks and vectors in SQL: the durable copy
// from which the embedded indexes are rebuilt when the server starts. It
// implements rag.ChunkIndex.
type Chunks struct {
	s          *SQL
	tenant, kb string
}

// Chunks returns the chunk table of one knowledge base.
func (s *SQL) Chunks(tenant, kb string) *Chunks { return &Chunks{s: s, tenant: tenant, kb: kb} }

// Upsert implements rag.ChunkIndex.
func (c *Chunks) Upsert(ctx context.Context, chunks []rag.Chunk, vectors [][]float32) error {
	return c.s.tx(ctx, func(tx txExec) error {
		for i, ch := range chunks {
			body, err := json.Marshal(ch)
			if err != nil {
				return err
			}
			var vec []byte
			if vectors != nil {
				vec = encodeVector(vectors[i])
			}
			if _, err := tx.ExecContext(ctx, c.s.d.rebind(`INSERT INTO kb_chunks (tenant_id, kb_id, id, document_id, chunk, vector) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (tenant_id, kb_id, id) DO UPDATE SET document_id = excluded.document_id, chunk = excluded.chunk, vector = excluded.vector`),
				c.tenant, c.kb, ch.ID, ch.DocumentID, string(body), vec); err != nil {
				return wrap("upsert chunk", err)
			}
		}
		return nil
	})
}

// ChunkIDs implements rag.ChunkIndex.
func (c *Chunks) ChunkIDs(ctx context.Context, documentID string) ([]string, error) {
	rows, err := c.s.query(ctx, `SELECT id FROM kb_chunks WHERE tenant_id = ? AND kb_id = ? AND document_id = ?`, c.tenant, c.kb, documentID)
	if err != nil {
		return nil, wrap("chunk ids", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, wrap("chunk ids", err)
		}
		ids = append(ids, id)
	}
	return ids, wrap("chunk ids", rows.Err())
}

// Delete implements rag.ChunkIndex.
func (c *Chunks) Delete(ctx context.Context, ids ...string) error {
	return c.s.tx(ctx, func(tx txExec) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, c.s.d.rebind(`DELETE FROM kb_chunks WHERE tenant_id = ? AND kb_id = ? AND id = ?`), c.tenant, c.kb, id); err != nil {
				return wrap("delete chunk", err)
			}
		}
		return nil
	})
}

// DeleteDocument implements rag.ChunkIndex.
func (c *Chunks) DeleteDocument(ctx context.Context, documentID string) error {
	_, err := c.s.exec(ctx, `DELETE FROM kb_chunks WHERE tenant_id = ? AND kb_id = ? AND document_id = ?`, c.tenant, c.kb, documentID)
	return wrap("delete document chunks", err)
}

// All calls f for every stored chunk with its vector (nil when none).
func (c *Chunks) All(ctx context.Context, f func(rag.Chunk, []float32) error) error {
	rows, err := c.s.query(ctx, `SELECT chunk, vector FROM kb_chunks WHERE tenant_id = ? AND kb_id = ? ORDER BY id`, c.tenant, c.kb)
	if err != nil {
		return wrap("load chunks", err)
	}
	defer rows.Close()
	for rows.Next() {
		var body string
		var vec []byte
		if err := rows.Scan(&body, &vec); err != nil {
			return wrap("load chunks", err)
		}
		var ch rag.Chunk
		if err := json.Unmarshal([]byte(body), &ch); err != nil {
			return fmt.Errorf("meta: load chunks: %w", err)
		}
		if err := f(ch, decodeVector(vec)); err != nil {
			return err
		}
	}
	return wrap("load chunks", rows.Err())
}

func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVector(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
