package platform

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/loader"
)

// Ingestion in the platform: uploads of documents into knowledge bases,
// their background ingestion, and the document endpoints.

// MaxUploadBytes bounds an uploaded document (32 MiB).
const MaxUploadBytes = 32 << 20

// IngestOptions bound the ingestion of uploaded documents (Config.Ingestion).
// Zero fields take the defaults.
type IngestOptions struct {
	// Workers bounds the documents this server ingests at once (default 4).
	Workers int
	// PerTenant bounds the documents of one tenant ingested at once
	// (default 2). Uploads over either bound wait in a queue (their bytes in
	// the metadata store, not in memory); none is refused.
	PerTenant int
	// Loader configures the document loader, its limits above all (see
	// package rag/loader for them and their defaults).
	Loader []loader.Option
	// Lease is how long a claim on an upload lasts unless renewed (default
	// 30 s): a replica takes over the uploads of a dead one once their
	// claims have expired. A server on the embedded store takes over its own
	// dead claims at start.
	Lease time.Duration
}

// Crash-safe ingestion. An upload is stored in the metadata database, with
// its document record, before the 202; a worker claims it, ingests it and
// deletes it in the transaction that marks the document ready or failed.
// So the stored bytes are bounded by the documents not yet ingested. At
// start, and every Lease/3 after, a server lists the uploads nobody holds a
// live claim on and queues them: a crash leaves nothing stuck. Documents
// queued or indexing without a stored upload (from a version that kept
// uploads in memory) are failed at start with a reason.

// uploadStore is what ingestion needs of the metadata store (meta.SQL).
type uploadStore interface {
	PutUpload(ctx context.Context, d meta.Document, uploadID string, data []byte) error
	ClaimUpload(ctx context.Context, tenant, kb, id, uploadID, owner string, now, until time.Time) ([]byte, bool, error)
	RenewUpload(ctx context.Context, tenant, kb, id, uploadID, owner string, until time.Time) (bool, error)
	ReleaseUpload(ctx context.Context, tenant, kb, id, uploadID, owner string) error
	FinishUpload(ctx context.Context, d meta.Document, uploadID string) (bool, error)
	PendingUploads(ctx context.Context, now time.Time, limit int) ([]meta.Upload, error)
	FailOrphanDocuments(ctx context.Context, reason string, now time.Time) (int, error)
	ResetClaims(ctx context.Context) error
	Embedded() bool
}

// orphanReason is the error of documents whose upload was not stored.
const orphanReason = "the server stopped before this upload was stored; upload the document again"

// ingestion runs the ingestion of stored uploads, a bounded number at a
// time, per tenant and in all.
type ingestion struct {
	k      *knowledge
	store  uploadStore
	opts   IngestOptions
	loader *loader.Loader
	owner  string // this server's name in claims

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	global chan struct{}

	clientOnce sync.Once
	client     *http.Client // see httpClient

	mu      sync.Mutex
	tenants map[string]*tenantSlots
	queued  map[string]bool // uploads queued or running here, by key
	closed  bool
}

type tenantSlots struct {
	slots chan struct{}
	users int
}

func newIngestion(k *knowledge, store uploadStore, opts IngestOptions) *ingestion {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.PerTenant <= 0 {
		opts.PerTenant = 2
	}
	if opts.Lease <= 0 {
		opts.Lease = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &ingestion{
		k: k, store: store, opts: opts, loader: loader.New(opts.Loader...), owner: meta.NewID("ing"),
		ctx: ctx, cancel: cancel, global: make(chan struct{}, opts.Workers),
		tenants: map[string]*tenantSlots{}, queued: map[string]bool{},
	}
}

// start resumes what earlier runs left and rescans for uploads whose
// claims expired (a dead replica's) until close.
func (q *ingestion) start() {
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		if q.store.Embedded() {
			if err := q.store.ResetClaims(q.ctx); err != nil {
				q.k.s.log.Warn("upload claims not reset", "err", err)
			}
		}
		if n, err := q.store.FailOrphanDocuments(q.ctx, orphanReason, time.Now().UTC()); err != nil {
			q.k.s.log.Warn("documents without an upload not failed", "err", err)
		} else if n > 0 {
			q.k.s.log.Warn("documents failed: their upload was not stored", "documents", n)
		}
		tick := time.NewTicker(q.opts.Lease / 3)
		defer tick.Stop()
		for {
			q.rescan()
			select {
			case <-q.ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// rescan queues the uploads nobody holds a live claim on.
func (q *ingestion) rescan() {
	pending, err := q.store.PendingUploads(q.ctx, time.Now().UTC(), 1000)
	if err != nil {
		if q.ctx.Err() == nil {
			q.k.s.log.Warn("pending uploads not listed", "err", err)
		}
		return
	}
	for _, u := range pending {
		q.enqueue(u)
	}
}

// close stops the workers and waits for them; an ingestion cut short
// gives up its claim, to be resumed at the next start (or by a replica).
func (q *ingestion) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cancel()
	q.wg.Wait()
}

// store stores an upload and queues it; the document is answered queued.
func (q *ingestion) put(ctx context.Context, doc meta.Document, data []byte) error {
	u := meta.Upload{Document: doc, ID: meta.NewID("upl")}
	if err := q.store.PutUpload(ctx, doc, u.ID, data); err != nil {
		return err
	}
	q.enqueue(u)
	return nil
}

// enqueue runs an upload's ingestion in the background once a slot of
// its tenant and a worker are free. Only the record waits, not the bytes.
func (q *ingestion) enqueue(u meta.Upload) {
	d := u.Document
	key := d.TenantID + "\x00" + d.KBID + "\x00" + d.ID + "\x00" + u.ID
	q.mu.Lock()
	if q.closed || q.queued[key] {
		q.mu.Unlock()
		return
	}
	q.queued[key] = true
	q.wg.Add(1)
	q.mu.Unlock()
	go func() {
		defer q.wg.Done()
		defer func() {
			q.mu.Lock()
			delete(q.queued, key)
			q.mu.Unlock()
		}()
		release, ok := q.acquire(d.TenantID)
		if !ok {
			return
		}
		defer release()
		q.run(u)
	}()
}

// acquire takes a slot of tenant, then a worker; false when the server
// closes first.
func (q *ingestion) acquire(tenant string) (func(), bool) {
	q.mu.Lock()
	ts := q.tenants[tenant]
	if ts == nil {
		ts = &tenantSlots{slots: make(chan struct{}, q.opts.PerTenant)}
		q.tenants[tenant] = ts
	}
	ts.users++
	q.mu.Unlock()
	unref := func() {
		q.mu.Lock()
		if ts.users--; ts.users == 0 {
			delete(q.tenants, tenant)
		}
		q.mu.Unlock()
	}
	select {
	case ts.slots <- struct{}{}:
	case <-q.ctx.Done():
		unref()
		return nil, false
	}
	select {
	case q.global <- struct{}{}:
	case <-q.ctx.Done():
		<-ts.slots
		unref()
		return nil, false
	}
	return func() { <-q.global; <-ts.slots; unref() }, true
}

// run claims an upload and ingests it, renewing the claim while it works.
func (q *ingestion) run(u meta.Upload) {
	d := u.Document
	log := q.k.s.log.With("document", d.ID, "knowledge_base", d.KBID)
	now := time.Now().UTC()
	data, ok, err := q.store.ClaimUpload(q.ctx, d.TenantID, d.KBID, d.ID, u.ID, q.owner, now, now.Add(q.opts.Lease))
	if err != nil {
		if q.ctx.Err() == nil {
			log.Warn("upload not claimed; will retry", "err", err)
		}
		return
	}
	if !ok {
		return // another worker has it, or it was superseded or deleted
	}
	ctx, cancel := context.WithCancelCause(q.ctx)
	defer cancel(nil)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(q.opts.Lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			ok, err := q.store.RenewUpload(ctx, d.TenantID, d.KBID, d.ID, u.ID, q.owner, time.Now().UTC().Add(q.opts.Lease))
			if err == nil && !ok {
				cancel(errClaimLost)
				return
			}
		}
	}()
	defer func() { <-renewed }()
	defer cancel(nil) // stops the renewal before waiting for it

	status, errText, chunks := q.ingest(ctx, d, data)
	data = nil
	if ctx.Err() != nil {
		// Cut short by Close or a lost claim: not a verdict on the
		// document. Whoever resumes it starts over.
		if context.Cause(ctx) != errClaimLost {
			rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer rcancel()
			if err := q.store.ReleaseUpload(rctx, d.TenantID, d.KBID, d.ID, u.ID, q.owner); err != nil {
				log.Warn("upload claim not released", "err", err)
			}
		}
		return
	}
	d.Status, d.Error, d.Chunks, d.UpdatedAt = status, errText, chunks, time.Now().UTC()
	if done, err := q.store.FinishUpload(ctx, d, u.ID); err != nil {
		log.Warn("document status not stored; will retry", "err", err)
		return
	} else if !done {
		log.Info("ingestion superseded by a newer upload or a deletion")
	}
	// Other replicas rebuild their indexes of this knowledge base.
	q.k.s.bus.publishRemote(ctx, "kb", d.TenantID, d.KBID)
}

var errClaimLost = errors.New("upload claim lost")

// ingest loads and indexes one upload; it returns the document's final
// status, error and chunk count.
func (q *ingestion) ingest(ctx context.Context, d meta.Document, data []byte) (string, string, int) {
	kb, err := q.k.store.KB(ctx, d.TenantID, d.KBID)
	if err != nil {
		return meta.DocFailed, fmt.Sprintf("knowledge base: %v", err), 0
	}
	h, err := q.k.open(ctx, kb)
	if err != nil {
		return meta.DocFailed, err.Error(), 0
	}
	ld := q.loader
	if d.Format != "" {
		ld = loader.New(append(slices.Clone(q.opts.Loader), loader.WithFormat(loader.Format(d.Format)))...)
	}
	doc, err := ld.Load(ctx, d.Name, bytes.NewReader(data))
	if err != nil {
		return meta.DocFailed, err.Error(), 0
	}
	doc.ID = d.ID
	if d.SourceURL != "" {
		doc.Source = d.SourceURL
	}
	results, err := h.ingester.Ingest(ctx, rag.DocumentInput(doc))
	switch {
	case err != nil:
		return meta.DocFailed, err.Error(), 0
	case len(results) != 1:
		return meta.DocFailed, "ingestion returned no result", 0
	case results[0].Err != nil:
		return meta.DocFailed, results[0].Err.Error(), 0
	}
	return meta.DocReady, "", results[0].Chunks
}

// Upload outcomes, in the answer to an upload.
const (
	// outcomeAdded: a document of a new name.
	outcomeAdded = "added"
	// outcomeReplaced: a new version of a document; its old chunks are
	// replaced once the new version is indexed.
	outcomeReplaced = "replaced"
	// outcomeUnchanged: the same content as the stored version (ready or
	// still being indexed): nothing was done.
	outcomeUnchanged = "unchanged"
)

// uploadAnswer is the answer to an upload: the document and what the
// upload did to it.
type uploadAnswer struct {
	meta.Document
	// Outcome is outcomeAdded, outcomeReplaced or outcomeUnchanged.
	Outcome string `json:"outcome"`
	// ReplacedChunks is the chunk count of the version replaced.
	ReplacedChunks int `json:"replaced_chunks,omitempty"`
}

// upload: POST /v1/knowledge-bases/{id}/documents, multipart (file) or
// JSON {name, content} or {url, name?}; 202 with the queued document, or
// 200 with the stored one when its content is unchanged.
func (k *knowledge) upload(w http.ResponseWriter, r *http.Request) {
	kb, e := k.kbOf(r)
	if e != nil {
		writeError(w, e)
		return
	}
	up, e := readUpload(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	if up.url != "" {
		if e := k.uploads.fetch(r.Context(), &up); e != nil {
			writeError(w, e)
			return
		}
	}
	// Opening the knowledge base first answers 503 at once when its
	// embedding model is unavailable.
	if _, err := k.open(r.Context(), kb); err != nil {
		writeError(w, errorf(http.StatusServiceUnavailable, CodeUnavailable, "%v", err))
		return
	}
	sum := sha256.Sum256(up.data)
	now := time.Now().UTC()
	doc := meta.Document{ID: rag.DocumentID(up.name), TenantID: kb.TenantID, KBID: kb.ID, Name: up.name, Status: meta.DocQueued,
		Bytes: int64(len(up.data)), ContentHash: hex.EncodeToString(sum[:]), SourceURL: up.url, Format: up.format, CreatedAt: now, UpdatedAt: now}
	answer := uploadAnswer{Outcome: outcomeAdded}
	if prev, err := k.store.Document(r.Context(), kb.TenantID, kb.ID, doc.ID); err == nil {
		if prev.ContentHash == doc.ContentHash && prev.Format == doc.Format && prev.SourceURL == doc.SourceURL && prev.Status != meta.DocFailed {
			writeJSON(w, http.StatusOK, uploadAnswer{Document: prev, Outcome: outcomeUnchanged})
			return
		}
		doc.CreatedAt = prev.CreatedAt
		answer.Outcome, answer.ReplacedChunks = outcomeReplaced, prev.Chunks
	}
	if err := k.uploads.put(r.Context(), doc, up.data); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	answer.Document = doc
	writeJSON(w, http.StatusAccepted, answer)
}

// upload is a document as the request gave it.
type upload struct {
	name string
	data []byte
	// url, when set, is where to fetch the document from (data is empty
	// until then); format is the loader format of data when the name does
	// not tell.
	url, format string
}

// readUpload reads a document from a multipart form (field "file") or a
// JSON body {name, content} or {url, name?}.
func readUpload(w http.ResponseWriter, r *http.Request) (upload, *apiError) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxUploadBytes+64<<10)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			var maxErr *http.MaxBytesError
			if errors.As(err, &maxErr) {
				return upload{}, errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "document exceeds the limit of %d bytes", MaxUploadBytes)
			}
			return upload{}, invalid("malformed multipart body: %v", err)
		}
		f, fh, err := r.FormFile("file")
		if err != nil {
			return upload{}, invalid("field \"file\" is required in a multipart upload")
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, MaxUploadBytes+1))
		if err != nil {
			return upload{}, invalid("reading the upload: %v", err)
		}
		if len(data) > MaxUploadBytes {
			return upload{}, errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "document exceeds the limit of %d bytes", MaxUploadBytes)
		}
		name := fh.Filename
		if n := r.FormValue("name"); n != "" {
			name = n
		}
		if name == "" {
			return upload{}, invalid("field \"name\": the upload has no file name")
		}
		if e := checkText("name", name); e != nil {
			return upload{}, e
		}
		return upload{name: name, data: data}, nil
	}
	var req struct {
		Name    string `json:"name"`
		Content string `json:"content"`
		URL     string `json:"url"`
	}
	if e := decodeBody(r.Body, &req); e != nil {
		return upload{}, e
	}
	if req.URL != "" {
		if req.Content != "" {
			return upload{}, invalid("fields \"url\" and \"content\": give one, not both")
		}
		u, err := url.Parse(strings.TrimSpace(req.URL))
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return upload{}, invalid("field \"url\": want an http or https URL")
		case u.User != nil:
			return upload{}, invalid("field \"url\": credentials in the URL are not accepted")
		}
		u.Fragment, u.RawFragment = "", ""
		name := strings.TrimSpace(req.Name)
		if name == "" {
			name = u.String()
		}
		if e := checkText("name", name); e != nil {
			return upload{}, e
		}
		return upload{name: name, url: u.String()}, nil
	}
	if strings.TrimSpace(req.Name) == "" {
		return upload{}, invalid("field \"name\" is required")
	}
	if len(req.Content) > MaxUploadBytes {
		return upload{}, errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "document exceeds the limit of %d bytes", MaxUploadBytes)
	}
	return upload{name: strings.TrimSpace(req.Name), data: []byte(req.Content)}, nil
}

// fetchTimeout bounds fetching a document from a URL, body included.
const fetchTimeout = 30 * time.Second

// fetchFormats maps the media types of fetched documents to the loader
// format their content is stored in; others are detected from the name and
// the content.
var fetchFormats = map[string]loader.Format{
	"text/html": loader.HTML, "application/xhtml+xml": loader.HTML,
	"text/markdown": loader.Markdown, "text/x-markdown": loader.Markdown,
	"text/plain": loader.Text, "application/pdf": loader.PDF,
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": loader.DOCX,
	"text/csv": loader.CSV, "application/json": loader.JSON,
}

// fetch downloads up.url through the outbound guard, at most
// MaxUploadBytes (enforced while reading), into up.data. A web page is
// converted to Markdown here, so that its content hash, and with it the
// unchanged check, follows the text rather than the markup around it.
func (q *ingestion) fetch(ctx context.Context, up *upload) *apiError {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, up.url, nil)
	if err != nil {
		return invalid("field \"url\": %v", err)
	}
	req.Header.Set("Accept", "text/html, application/xhtml+xml, text/markdown, text/plain;q=0.9, */*;q=0.5")
	req.Header.Set("User-Agent", "weft (knowledge-base ingestion)")
	resp, err := q.httpClient().Do(req)
	if err != nil {
		var blocked *netguard.BlockedError
		if errors.As(err, &blocked) {
			return invalid("field \"url\": %v", blocked)
		}
		return invalid("fetching %s: %v", up.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return invalid("fetching %s: %s", up.url, resp.Status)
	}
	tooLarge := errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "%s exceeds the limit of %d bytes", up.url, MaxUploadBytes)
	if resp.ContentLength > MaxUploadBytes {
		return tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxUploadBytes+1))
	if err != nil {
		return invalid("fetching %s: %v", up.url, err)
	}
	if len(data) > MaxUploadBytes {
		return tooLarge
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	format := fetchFormats[mt]
	if format == loader.HTML {
		md, err := q.htmlToMarkdown(ctx, up.url, data)
		if err != nil {
			return invalid("%v", err)
		}
		data, format = md, loader.Markdown
	}
	up.data, up.format = data, string(format)
	return nil
}

// htmlToMarkdown renders a web page as Markdown with the HTML loader (under
// its limits), its title as the first heading, without control characters.
func (q *ingestion) htmlToMarkdown(ctx context.Context, name string, page []byte) ([]byte, error) {
	ld := loader.New(append(slices.Clone(q.opts.Loader), loader.WithFormat(loader.HTML))...)
	doc, err := ld.Load(ctx, name, bytes.NewReader(page))
	if err != nil {
		return nil, err
	}
	text := strings.Map(dropControl, doc.Text)
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("%s: %w", name, rag.ErrEmptyDocument)
	}
	if title := doc.Metadata[rag.MetaTitle]; title != "" && !strings.HasPrefix(text, "# ") {
		text = "# " + strings.Join(strings.Fields(strings.Map(dropControl, title)), " ") + "\n\n" + text
	}
	return []byte(text), nil
}

// dropControl drops the control characters a page's text may carry (the
// HTML parser keeps them) but that would make the stored Markdown read as
// binary; line breaks and tabs stay.
func dropControl(r rune) rune {
	if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7F {
		return -1
	}
	return r
}

// httpClient is the client of fetches: through the server's outbound guard.
func (q *ingestion) httpClient() *http.Client {
	q.clientOnce.Do(func() { q.client = q.k.s.guard.Client() })
	return q.client
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
