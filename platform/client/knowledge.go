package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"time"
)

// KnowledgeBase is a knowledge base as the server shows it (see docs/api.md,
// "Knowledge bases").
type KnowledgeBase struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	ChunkSize    int    `json:"chunk_size"`
	ChunkOverlap int    `json:"chunk_overlap"`
	// EmbeddingModel is the "provider/model" that embeds chunks; empty
	// means keyword-only recall.
	EmbeddingModel string `json:"embedding_model"`
	// Description says how recall runs, e.g. that it is keyword-only.
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

// NewKnowledgeBase is what [Client.CreateKnowledgeBase] creates. Zero and
// nil fields take the server's defaults.
type NewKnowledgeBase struct {
	Name string `json:"name"`
	// ChunkSize is the size of chunks in tokens (server default 512).
	ChunkSize int `json:"chunk_size,omitzero"`
	// ChunkOverlap is the overlap of consecutive chunks in tokens; nil
	// means the server's default (an eighth of the chunk, at most 64).
	ChunkOverlap *int `json:"chunk_overlap,omitempty"`
	// EmbeddingModel is the "provider/model" that embeds chunks; nil means
	// the server's default, a pointer to "" means keyword-only recall.
	EmbeddingModel *string `json:"embedding_model,omitempty"`
}

// The statuses of a document's ingestion.
const (
	DocumentQueued   = "queued"
	DocumentIndexing = "indexing"
	DocumentReady    = "ready"
	DocumentFailed   = "failed"
)

// Document is a document of a knowledge base and the state of its
// ingestion.
type Document struct {
	ID              string `json:"id"`
	KnowledgeBaseID string `json:"knowledge_base_id"`
	Name            string `json:"name"`
	// Status is one of DocumentQueued, DocumentIndexing, DocumentReady and
	// DocumentFailed; Error says why when it failed.
	Status string `json:"status"`
	Error  string `json:"error,omitzero"`
	Chunks int    `json:"chunks"`
	Bytes  int64  `json:"bytes"`
	// ContentHash is the SHA-256 (hex) of the stored content.
	ContentHash string `json:"content_hash,omitzero"`
	// SourceURL is where a document ingested from the web was fetched.
	SourceURL string    `json:"source_url,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Outcome, in the answer to an upload only, says what it did: one of
	// OutcomeAdded, OutcomeReplaced and OutcomeUnchanged.
	Outcome string `json:"outcome,omitzero"`
	// ReplacedChunks is, when Outcome is OutcomeReplaced, the chunk count
	// of the version replaced.
	ReplacedChunks int `json:"replaced_chunks,omitzero"`
}

// The outcomes of an upload (Document.Outcome).
const (
	// OutcomeAdded: a document of a new name, queued.
	OutcomeAdded = "added"
	// OutcomeReplaced: a new version of a document, queued; its old chunks
	// are replaced once it is indexed.
	OutcomeReplaced = "replaced"
	// OutcomeUnchanged: the same content as the stored version; nothing was
	// done and the document is answered as it is.
	OutcomeUnchanged = "unchanged"
)

// Done reports whether the document's ingestion has ended, ready or failed.
func (d Document) Done() bool { return d.Status == DocumentReady || d.Status == DocumentFailed }

// SearchRequest is a search of a knowledge base.
type SearchRequest struct {
	Query string `json:"query"`
	// TopK bounds the results (server default 5, at most 100).
	TopK int `json:"top_k,omitzero"`
	// Mode is "hybrid" (the default), "vector" or "keyword".
	Mode string `json:"mode,omitzero"`
}

// CreateKnowledgeBase creates a knowledge base (POST /v1/knowledge-bases).
// A taken name is an *Error with code "conflict".
func (c *Client) CreateKnowledgeBase(ctx context.Context, kb NewKnowledgeBase) (KnowledgeBase, error) {
	var out KnowledgeBase
	err := c.do(ctx, http.MethodPost, "/v1/knowledge-bases", kb, &out)
	return out, err
}

// ListKnowledgeBases lists the tenant's knowledge bases (GET
// /v1/knowledge-bases).
func (c *Client) ListKnowledgeBases(ctx context.Context) ([]KnowledgeBase, error) {
	var out []KnowledgeBase
	err := c.do(ctx, http.MethodGet, "/v1/knowledge-bases", nil, &out)
	return out, err
}

// GetKnowledgeBase returns the knowledge base id (GET
// /v1/knowledge-bases/{id}).
func (c *Client) GetKnowledgeBase(ctx context.Context, id string) (KnowledgeBase, error) {
	var out KnowledgeBase
	p, err := kbPath(id)
	if err != nil {
		return out, err
	}
	err = c.do(ctx, http.MethodGet, p, nil, &out)
	return out, err
}

// UpdateKnowledgeBase changes the knowledge base id in place (PUT
// /v1/knowledge-bases/{id}), keeping its id, documents and chunks: a
// non-empty Name renames it. The other fields may only repeat the stored
// values (zero and nil ones are left out): a different chunking or
// embedding model would mean chunking and embedding every document again,
// and is an *Error with code "invalid_request" asking for a new knowledge
// base. A taken name is an *Error with code "conflict".
func (c *Client) UpdateKnowledgeBase(ctx context.Context, id string, kb NewKnowledgeBase) (KnowledgeBase, error) {
	var out KnowledgeBase
	p, err := kbPath(id)
	if err != nil {
		return out, err
	}
	err = c.do(ctx, http.MethodPut, p, kb, &out)
	return out, err
}

// DeleteKnowledgeBase deletes the knowledge base id and its documents
// (DELETE /v1/knowledge-bases/{id}).
func (c *Client) DeleteKnowledgeBase(ctx context.Context, id string) error {
	p, err := kbPath(id)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, p, nil, nil)
}

// FindKnowledgeBase returns the knowledge base whose id or name is ref: an
// id is tried first, then the names. No match is an *Error with code
// "not_found".
func (c *Client) FindKnowledgeBase(ctx context.Context, ref string) (KnowledgeBase, error) {
	if ref == "" {
		return KnowledgeBase{}, errors.New("client: empty knowledge base name or id")
	}
	kb, err := c.GetKnowledgeBase(ctx, ref)
	if err == nil || !IsNotFound(err) {
		return kb, err
	}
	all, err := c.ListKnowledgeBases(ctx)
	if err != nil {
		return KnowledgeBase{}, err
	}
	for _, kb := range all {
		if kb.Name == ref {
			return kb, nil
		}
	}
	return KnowledgeBase{}, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no knowledge base named or with id " + quote(ref)}
}

// UploadDocument uploads the document name, read from r, to the knowledge
// base kb (POST /v1/knowledge-bases/{id}/documents, multipart) and returns
// it queued: the server ingests it in the background, and
// [Client.GetDocument] follows its status. The name's extension tells the
// server how to read it (.md, .html, .pdf, …); uploading a name again
// replaces that document. Names may hold "/" ("fmt/doc.go"). The body is
// streamed, not held in memory; when r is an [io.Seeker] (an *os.File), a
// rate-limited upload is retried (see the package doc).
func (c *Client) UploadDocument(ctx context.Context, kb, name string, r io.Reader) (Document, error) {
	var out Document
	p, err := kbPath(kb)
	if err != nil {
		return out, err
	}
	if name == "" {
		return out, errors.New("client: empty document name")
	}
	if r == nil {
		return out, errors.New("client: nil document reader")
	}
	req, err := c.newRequest(ctx, http.MethodPost, p+"/documents", nil)
	if err != nil {
		return out, err
	}
	boundary := multipart.NewWriter(io.Discard).Boundary()
	// body streams one multipart body from r. The transport closes the
	// pipe's reader when the exchange ends, however it ends, so the
	// writing goroutine always returns; done says when it has.
	var done chan struct{}
	body := func() io.ReadCloser {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		_ = mw.SetBoundary(boundary)
		done = make(chan struct{})
		go func(done chan struct{}) {
			defer close(done)
			// The name also as a field: the file part's name is cut to
			// its base ("fmt/doc.go" → "doc.go") by the server's parser.
			err := mw.WriteField("name", name)
			var fw io.Writer
			if err == nil {
				fw, err = mw.CreateFormFile("file", name)
			}
			if err == nil {
				_, err = io.Copy(fw, r)
			}
			if err == nil {
				err = mw.Close()
			}
			pw.CloseWithError(err)
		}(done)
		return pr
	}
	req.Body = body()
	if s, ok := r.(io.Seeker); ok {
		// A reader that can seek back makes a 429 retryable.
		if start, err := s.Seek(0, io.SeekCurrent); err == nil {
			req.GetBody = func() (io.ReadCloser, error) {
				<-done // the previous attempt no longer reads r
				if _, err := s.Seek(start, io.SeekStart); err != nil {
					return nil, err
				}
				return body(), nil
			}
		}
	}
	req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
	resp, err := c.send(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("client: upload %s: decode answer: %w", name, err)
	}
	return out, nil
}

// IngestURL has the server fetch the document at url (http or https)
// through its outbound guard, a web page converted to Markdown, into the
// knowledge base kb (POST /v1/knowledge-bases/{id}/documents {url, name}).
// The document is named name, or by the URL when name is empty. Like
// [Client.UploadDocument] it answers the document queued, or as it is
// when its content is unchanged (Outcome says which).
func (c *Client) IngestURL(ctx context.Context, kb, url, name string) (Document, error) {
	var out Document
	p, err := kbPath(kb)
	if err != nil {
		return out, err
	}
	if url == "" {
		return out, errors.New("client: empty URL")
	}
	body := struct {
		URL  string `json:"url"`
		Name string `json:"name,omitzero"`
	}{url, name}
	err = c.do(ctx, http.MethodPost, p+"/documents", body, &out)
	return out, err
}

// ListDocuments lists the documents of the knowledge base kb with their
// status (GET /v1/knowledge-bases/{id}/documents).
func (c *Client) ListDocuments(ctx context.Context, kb string) ([]Document, error) {
	var out []Document
	p, err := kbPath(kb)
	if err != nil {
		return out, err
	}
	err = c.do(ctx, http.MethodGet, p+"/documents", nil, &out)
	return out, err
}

// GetDocument returns the document id of the knowledge base kb (GET
// /v1/knowledge-bases/{id}/documents/{doc}).
func (c *Client) GetDocument(ctx context.Context, kb, id string) (Document, error) {
	var out Document
	p, err := docPath(kb, id)
	if err != nil {
		return out, err
	}
	err = c.do(ctx, http.MethodGet, p, nil, &out)
	return out, err
}

// DeleteDocument deletes the document id, and its chunks, from the
// knowledge base kb (DELETE /v1/knowledge-bases/{id}/documents/{doc}).
func (c *Client) DeleteDocument(ctx context.Context, kb, id string) error {
	p, err := docPath(kb, id)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, p, nil, nil)
}

// Search recalls the chunks of the knowledge base kb that best match a
// query (POST /v1/knowledge-bases/{id}/search), best first.
func (c *Client) Search(ctx context.Context, kb string, req SearchRequest) ([]RagFragment, error) {
	p, err := kbPath(kb)
	if err != nil {
		return nil, err
	}
	var out struct {
		Results []RagFragment `json:"results"`
	}
	err = c.do(ctx, http.MethodPost, p+"/search", req, &out)
	return out.Results, err
}

func kbPath(id string) (string, error) {
	if id == "" {
		return "", errors.New("client: empty knowledge base id")
	}
	return "/v1/knowledge-bases/" + pathEscape(id), nil
}

func docPath(kb, id string) (string, error) {
	p, err := kbPath(kb)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", errors.New("client: empty document id")
	}
	return p + "/documents/" + pathEscape(id), nil
}

// WaitDocument polls the document id of the knowledge base kb every
// interval (250ms when zero or less) until its ingestion ends, ready or
// failed, and returns it; a failed ingestion is not an error of
// WaitDocument (see Document.Error). It stops when ctx ends.
func (c *Client) WaitDocument(ctx context.Context, kb, id string, interval time.Duration) (Document, error) {
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		d, err := c.GetDocument(ctx, kb, id)
		if err != nil || d.Done() {
			return d, err
		}
		select {
		case <-ctx.Done():
			return d, fmt.Errorf("client: document %s still %s: %w", d.Name, d.Status, ctx.Err())
		case <-t.C:
		}
	}
}
