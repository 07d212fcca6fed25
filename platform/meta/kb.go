package meta

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// KnowledgeBase is a tenant's collection of documents an agent can recall from.
type KnowledgeBase struct {
	ID           string `json:"id"`
	TenantID     string `json:"-"`
	Name         string `json:"name"`
	ChunkSize    int    `json:"chunk_size"`
	ChunkOverlap int    `json:"chunk_overlap"`
	// EmbeddingModel is the "provider/model" that embeds chunks; empty means
	// keyword-only recall.
	EmbeddingModel string    `json:"embedding_model"`
	CreatedAt      time.Time `json:"created_at"`
}

// The statuses of a document's ingestion.
const (
	DocQueued   = "queued"
	DocIndexing = "indexing"
	DocReady    = "ready"
	DocFailed   = "failed"
)

// Document is a document of a knowledge base and its ingestion status.
type Document struct {
	ID       string `json:"id"`
	TenantID string `json:"-"`
	KBID     string `json:"knowledge_base_id"`
	Name     string `json:"name"`
	Status   string `json:"status"`
	Error    string `json:"error,omitempty"`
	Chunks   int    `json:"chunks"`
	Bytes    int64  `json:"bytes"`
	// ContentHash is the SHA-256 of the stored content (hex): uploading
	// the same content again under the same name changes nothing.
	ContentHash string `json:"content_hash,omitempty"`
	// SourceURL is the address a document ingested from the web was
	// fetched from.
	SourceURL string `json:"source_url,omitempty"`
	// Format is the loader format of the stored content when its name does
	// not tell (a fetched web page is stored as Markdown); "" detects it
	// from the name and the content.
	Format    string    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Tool is a registered tool: its kind and configuration as the API gave them.
type Tool struct {
	ID       string `json:"id"`
	TenantID string `json:"-"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	// ParentID links a tool an MCP server provides to the server's record.
	ParentID string `json:"parent_id,omitempty"`
	// Config is the tool's whole definition (description, parameters and
	// the kind's settings), as JSON.
	Config    json.RawMessage `json:"config"`
	CreatedAt time.Time       `json:"created_at"`
}

// CreateKB stores a new knowledge base.
func (s *SQL) CreateKB(ctx context.Context, kb KnowledgeBase) error {
	cfg, _ := json.Marshal(kb)
	_, err := s.exec(ctx, `INSERT INTO knowledge_bases (tenant_id, id, name, config, created_at) VALUES (?, ?, ?, ?, ?)`,
		kb.TenantID, kb.ID, kb.Name, string(cfg), micros(kb.CreatedAt))
	return wrap("create knowledge base "+kb.Name, err)
}

// KB returns a knowledge base of tenant.
func (s *SQL) KB(ctx context.Context, tenant, id string) (KnowledgeBase, error) {
	var cfg string
	err := s.queryRow(ctx, `SELECT config FROM knowledge_bases WHERE tenant_id = ? AND id = ?`, tenant, id).Scan(&cfg)
	if err != nil {
		return KnowledgeBase{}, wrap("knowledge base "+id, err)
	}
	var kb KnowledgeBase
	if err := json.Unmarshal([]byte(cfg), &kb); err != nil {
		return kb, fmt.Errorf("meta: knowledge base %s: %w", id, err)
	}
	kb.TenantID = tenant
	return kb, nil
}

// ListKBs returns the tenant's knowledge bases, oldest first.
func (s *SQL) ListKBs(ctx context.Context, tenant string) ([]KnowledgeBase, error) {
	rows, err := s.query(ctx, `SELECT config FROM knowledge_bases WHERE tenant_id = ? ORDER BY created_at, id`, tenant)
	if err != nil {
		return nil, wrap("list knowledge bases", err)
	}
	defer rows.Close()
	out := []KnowledgeBase{}
	for rows.Next() {
		var cfg string
		if err := rows.Scan(&cfg); err != nil {
			return nil, wrap("list knowledge bases", err)
		}
		var kb KnowledgeBase
		if err := json.Unmarshal([]byte(cfg), &kb); err != nil {
			return nil, fmt.Errorf("meta: list knowledge bases: %w", err)
		}
		kb.TenantID = tenant
		out = append(out, kb)
	}
	return out, wrap("list knowledge bases", rows.Err())
}

// UpdateKB stores a knowledge base's changed settings under its id; its
// documents and chunks are untouched. A name another of the tenant's
// knowledge bases has is ErrConflict, an unknown id ErrNotFound.
func (s *SQL) UpdateKB(ctx context.Context, kb KnowledgeBase) error {
	cfg, _ := json.Marshal(kb)
	res, err := s.exec(ctx, `UPDATE knowledge_bases SET name = ?, config = ? WHERE tenant_id = ? AND id = ?`,
		kb.Name, string(cfg), kb.TenantID, kb.ID)
	return updated("update knowledge base "+kb.ID, res, err)
}

// updated wraps the outcome of an UPDATE of one row: no row is ErrNotFound.
func updated(op string, res sql.Result, err error) error {
	if err != nil {
		return wrap(op, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("meta: %s: %w", op, ErrNotFound)
	}
	return nil
}

// DeleteKB removes a knowledge base with its documents, uploads and chunks.
func (s *SQL) DeleteKB(ctx context.Context, tenant, id string) error {
	if err := s.deleteOne(ctx, "delete knowledge base "+id, `DELETE FROM knowledge_bases WHERE tenant_id = ? AND id = ?`, tenant, id); err != nil {
		return err
	}
	if _, err := s.exec(ctx, `DELETE FROM documents WHERE tenant_id = ? AND kb_id = ?`, tenant, id); err != nil {
		return wrap("delete knowledge base documents", err)
	}
	if _, err := s.exec(ctx, `DELETE FROM document_uploads WHERE tenant_id = ? AND kb_id = ?`, tenant, id); err != nil {
		return wrap("delete knowledge base uploads", err)
	}
	_, err := s.exec(ctx, `DELETE FROM kb_chunks WHERE tenant_id = ? AND kb_id = ?`, tenant, id)
	return wrap("delete knowledge base chunks", err)
}

// PutDocument creates or updates a document's record.
func (s *SQL) PutDocument(ctx context.Context, d Document) error {
	return wrap("put document "+d.ID, putDocument(ctx, s.db, s.d, d))
}

func putDocument(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, dl dialect, d Document) error {
	_, err := db.ExecContext(ctx, dl.rebind(`INSERT INTO documents (tenant_id, kb_id, id, name, status, error, chunks, bytes, content_hash, source_url, format, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, kb_id, id) DO UPDATE SET name = excluded.name, status = excluded.status, error = excluded.error,
		chunks = excluded.chunks, bytes = excluded.bytes, content_hash = excluded.content_hash, source_url = excluded.source_url,
		format = excluded.format, updated_at = excluded.updated_at`),
		d.TenantID, d.KBID, d.ID, d.Name, d.Status, d.Error, d.Chunks, d.Bytes, d.ContentHash, d.SourceURL, d.Format, micros(d.CreatedAt), micros(d.UpdatedAt))
	return err
}

const docColumns = `id, kb_id, name, status, error, chunks, bytes, content_hash, source_url, format, created_at, updated_at`

func scanDocument(tenant string, sc interface{ Scan(...any) error }) (Document, error) {
	d := Document{TenantID: tenant}
	var created, updated int64
	err := sc.Scan(&d.ID, &d.KBID, &d.Name, &d.Status, &d.Error, &d.Chunks, &d.Bytes, &d.ContentHash, &d.SourceURL, &d.Format, &created, &updated)
	d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
	return d, err
}

// Document returns a document of a knowledge base of tenant.
func (s *SQL) Document(ctx context.Context, tenant, kb, id string) (Document, error) {
	d, err := scanDocument(tenant, s.queryRow(ctx, `SELECT `+docColumns+` FROM documents WHERE tenant_id = ? AND kb_id = ? AND id = ?`, tenant, kb, id))
	return d, wrap("document "+id, err)
}

// ListDocuments returns a knowledge base's documents, oldest first.
func (s *SQL) ListDocuments(ctx context.Context, tenant, kb string) ([]Document, error) {
	rows, err := s.query(ctx, `SELECT `+docColumns+` FROM documents WHERE tenant_id = ? AND kb_id = ? ORDER BY created_at, id`, tenant, kb)
	if err != nil {
		return nil, wrap("list documents", err)
	}
	defer rows.Close()
	out := []Document{}
	for rows.Next() {
		d, err := scanDocument(tenant, rows)
		if err != nil {
			return nil, wrap("list documents", err)
		}
		out = append(out, d)
	}
	return out, wrap("list documents", rows.Err())
}

// DeleteDocumentRecord removes a document's record and its stored upload.
func (s *SQL) DeleteDocumentRecord(ctx context.Context, tenant, kb, id string) error {
	if _, err := s.exec(ctx, `DELETE FROM document_uploads WHERE tenant_id = ? AND kb_id = ? AND id = ?`, tenant, kb, id); err != nil {
		return wrap("delete document upload "+id, err)
	}
	return s.deleteOne(ctx, "delete document "+id, `DELETE FROM documents WHERE tenant_id = ? AND kb_id = ? AND id = ?`, tenant, kb, id)
}

// CreateTool stores a tool.
func (s *SQL) CreateTool(ctx context.Context, t Tool) error {
	_, err := s.exec(ctx, `INSERT INTO tools (tenant_id, id, name, kind, parent_id, config, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		t.TenantID, t.ID, t.Name, t.Kind, t.ParentID, string(t.Config), micros(t.CreatedAt))
	return wrap("create tool "+t.Name, err)
}

// UpdateTool stores a tool's changed name and definition under its id; its
// kind, parent and creation date stay. A name another of the tenant's
// tools has is ErrConflict, an unknown id ErrNotFound.
func (s *SQL) UpdateTool(ctx context.Context, t Tool) error {
	res, err := s.exec(ctx, `UPDATE tools SET name = ?, config = ? WHERE tenant_id = ? AND id = ?`,
		t.Name, string(t.Config), t.TenantID, t.ID)
	return updated("update tool "+t.ID, res, err)
}

const toolColumns = `id, name, kind, parent_id, config, created_at`

func scanTool(tenant string, sc interface{ Scan(...any) error }) (Tool, error) {
	t := Tool{TenantID: tenant}
	var cfg string
	var created int64
	err := sc.Scan(&t.ID, &t.Name, &t.Kind, &t.ParentID, &cfg, &created)
	t.Config, t.CreatedAt = json.RawMessage(cfg), fromMicros(created)
	return t, err
}

// Tool returns a tool of tenant.
func (s *SQL) Tool(ctx context.Context, tenant, id string) (Tool, error) {
	t, err := scanTool(tenant, s.queryRow(ctx, `SELECT `+toolColumns+` FROM tools WHERE tenant_id = ? AND id = ?`, tenant, id))
	return t, wrap("tool "+id, err)
}

// ListTools returns the tenant's tools, oldest first.
func (s *SQL) ListTools(ctx context.Context, tenant string) ([]Tool, error) {
	rows, err := s.query(ctx, `SELECT `+toolColumns+` FROM tools WHERE tenant_id = ? ORDER BY created_at, id`, tenant)
	if err != nil {
		return nil, wrap("list tools", err)
	}
	defer rows.Close()
	out := []Tool{}
	for rows.Next() {
		t, err := scanTool(tenant, rows)
		if err != nil {
			return nil, wrap("list tools", err)
		}
		out = append(out, t)
	}
	return out, wrap("list tools", rows.Err())
}

// DeleteTool removes a tool and the tools it provides (an MCP server's).
func (s *SQL) DeleteTool(ctx context.Context, tenant, id string) error {
	if err := s.deleteOne(ctx, "delete tool "+id, `DELETE FROM tools WHERE tenant_id = ? AND id = ?`, tenant, id); err != nil {
		return err
	}
	_, err := s.exec(ctx, `DELETE FROM tools WHERE tenant_id = ? AND parent_id = ?`, tenant, id)
	return wrap("delete tool "+id, err)
}
