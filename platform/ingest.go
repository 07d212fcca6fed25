package platform

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/rag"
)

// Ingestion in the platform: uploads of documents into knowledge bases,
// their background ingestion, and the document endpoints.

// MaxUploadBytes bounds an uploaded document (32 MiB).
const MaxUploadBytes = 32 << 20

// ingest loads a document into a knowledge base in the background, keeping
// its status current. The upload's bytes are already in memory.
func (k *knowledge) ingest(h *kbHandle, doc meta.Document, data []byte) {
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		k.work <- struct{}{}
		defer func() { <-k.work }()
		ctx := context.Background()
		update := func(status, errText string, chunks int) {
			doc.Status, doc.Error, doc.Chunks, doc.UpdatedAt = status, errText, chunks, time.Now().UTC()
			if err := k.store.PutDocument(ctx, doc); err != nil {
				k.s.log.Warn("document status not stored", "document", doc.ID, "err", err)
			}
		}
		update(meta.DocIndexing, "", 0)
		in := rag.ReaderInput(doc.Name, bytes.NewReader(data))
		in.ID = doc.ID
		results, err := h.ingester.Ingest(ctx, in)
		// Other replicas rebuild their indexes of this knowledge base.
		defer k.s.bus.publishRemote(ctx, "kb", doc.TenantID, doc.KBID)
		switch {
		case err != nil:
			update(meta.DocFailed, err.Error(), 0)
		case len(results) != 1:
			update(meta.DocFailed, "ingestion returned no result", 0)
		case results[0].Err != nil:
			update(meta.DocFailed, results[0].Err.Error(), 0)
		default:
			update(meta.DocReady, "", results[0].Chunks)
		}
	}()
}

// upload: POST /v1/knowledge-bases/{id}/documents, multipart (file) or
// JSON {name, content}; 202 with the queued document.
func (k *knowledge) upload(w http.ResponseWriter, r *http.Request) {
	kb, e := k.kbOf(r)
	if e != nil {
		writeError(w, e)
		return
	}
	name, data, e := readUpload(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	h, err := k.open(r.Context(), kb)
	if err != nil {
		writeError(w, errorf(http.StatusServiceUnavailable, CodeUnavailable, "%v", err))
		return
	}
	now := time.Now().UTC()
	doc := meta.Document{ID: rag.DocumentID(name), TenantID: kb.TenantID, KBID: kb.ID, Name: name, Status: meta.DocQueued, Bytes: int64(len(data)), CreatedAt: now, UpdatedAt: now}
	if prev, err := k.store.Document(r.Context(), kb.TenantID, kb.ID, doc.ID); err == nil {
		doc.CreatedAt = prev.CreatedAt
	}
	if err := k.store.PutDocument(r.Context(), doc); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	k.ingest(h, doc, data)
	writeJSON(w, http.StatusAccepted, doc)
}

// readUpload reads a document from a multipart form (field "file") or a
// JSON body {name, content}.
func readUpload(w http.ResponseWriter, r *http.Request) (string, []byte, *apiError) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxUploadBytes+64<<10)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			var maxErr *http.MaxBytesError
			if errors.As(err, &maxErr) {
				return "", nil, errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "document exceeds the limit of %d bytes", MaxUploadBytes)
			}
			return "", nil, invalid("malformed multipart body: %v", err)
		}
		f, fh, err := r.FormFile("file")
		if err != nil {
			return "", nil, invalid("field \"file\" is required in a multipart upload")
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, MaxUploadBytes+1))
		if err != nil {
			return "", nil, invalid("reading the upload: %v", err)
		}
		if len(data) > MaxUploadBytes {
			return "", nil, errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "document exceeds the limit of %d bytes", MaxUploadBytes)
		}
		name := fh.Filename
		if n := r.FormValue("name"); n != "" {
			name = n
		}
		if name == "" {
			return "", nil, invalid("field \"name\": the upload has no file name")
		}
		return name, data, nil
	}
	var req struct {
		Name    string `json:"name"`
		Content string `json:"content"`
	}
	if e := decodeBody(r.Body, &req); e != nil {
		return "", nil, e
	}
	if strings.TrimSpace(req.Name) == "" {
		return "", nil, invalid("field \"name\" is required")
	}
	if len(req.Content) > MaxUploadBytes {
		return "", nil, errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "document exceeds the limit of %d bytes", MaxUploadBytes)
	}
	return strings.TrimSpace(req.Name), []byte(req.Content), nil
}

func (k *knowledge) documents(w http.ResponseWriter, r *http.Request) {
	kb, e := k.kbOf(r)
	if e != nil {
		writeError(w, e)
		return
	}
	docs, err := k.store.ListDocuments(r.Context(), kb.TenantID, kb.ID)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, docs)
}

func (k *knowledge) document(w http.ResponseWriter, r *http.Request) {
	kb, e := k.kbOf(r)
	if e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("doc")
	d, err := k.store.Document(r.Context(), kb.TenantID, kb.ID, id)
	if err != nil {
		writeError(w, notFoundOr(err, "document", id))
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (k *knowledge) deleteDocument(w http.ResponseWriter, r *http.Request) {
	kb, e := k.kbOf(r)
	if e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("doc")
	if _, err := k.store.Document(r.Context(), kb.TenantID, kb.ID, id); err != nil {
		writeError(w, notFoundOr(err, "document", id))
		return
	}
	h, err := k.open(r.Context(), kb)
	if err != nil {
		writeError(w, errorf(http.StatusServiceUnavailable, CodeUnavailable, "%v", err))
		return
	}
	if err := h.ingester.Delete(r.Context(), id); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	if err := k.store.DeleteDocumentRecord(r.Context(), kb.TenantID, kb.ID, id); err != nil {
		writeError(w, notFoundOr(err, "document", id))
		return
	}
	k.s.bus.publishRemote(r.Context(), "kb", kb.TenantID, kb.ID)
	w.WriteHeader(http.StatusNoContent)
}
