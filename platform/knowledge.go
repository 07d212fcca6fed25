package platform

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/loader"
	"github.com/weftlabs/weft/tokens"
)

// Knowledge bases in the platform. The durable copy of every chunk (with its
// vector) lives in the metadata database; the embedded indexes — an exact
// vector index and BM25 — are built from it when a knowledge base is first
// used after start, and kept in step by every ingestion.

// kbStore is what the knowledge service needs of the metadata store.
type kbStore interface {
	CreateKB(ctx context.Context, kb meta.KnowledgeBase) error
	KB(ctx context.Context, tenant, id string) (meta.KnowledgeBase, error)
	ListKBs(ctx context.Context, tenant string) ([]meta.KnowledgeBase, error)
	UpdateKB(ctx context.Context, kb meta.KnowledgeBase) error
	DeleteKB(ctx context.Context, tenant, id string) error
	PutDocument(ctx context.Context, d meta.Document) error
	Document(ctx context.Context, tenant, kb, id string) (meta.Document, error)
	ListDocuments(ctx context.Context, tenant, kb string) ([]meta.Document, error)
	DeleteDocumentRecord(ctx context.Context, tenant, kb, id string) error
	Chunks(tenant, kb string) *meta.Chunks
	uploadStore
}

type knowledge struct {
	s       *Server
	store   kbStore
	backend kbBackend
	uploads *ingestion

	// dims caches the embedding dimension of each model spec, probed once.
	dims sync.Map // string → int

	// mu guards kbs only; it is never held across loading, so recall on
	// one knowledge base never waits for another's rebuild.
	mu  sync.Mutex
	kbs map[string]*kbLoad
	// maxHandles bounds kbs when the backend is bounded.
	maxHandles int
}

// kbLoad is one knowledge base's handle being loaded, or loaded: the first
// caller loads it, later callers wait on done (single flight per knowledge
// base).
type kbLoad struct {
	done chan struct{}
	h    *kbHandle
	err  error
}

// kbHandle is one knowledge base, ready to ingest and recall.
type kbHandle struct {
	kb       meta.KnowledgeBase
	index    kbIndex
	ingester *rag.Ingester
	embedder rag.Embedder // nil when keyword-only
}

// maxHandles bounds the knowledge-base handles a server keeps when its
// backend holds no index in memory (PostgreSQL): beyond it, a finished
// handle is dropped, to be reopened cheaply on its next use.
const maxHandles = 1024

func newKnowledge(s *Server, store kbStore, backend kbBackend) *knowledge {
	k := &knowledge{s: s, store: store, backend: backend, kbs: map[string]*kbLoad{}, maxHandles: maxHandles}
	k.uploads = newIngestion(k, store, s.cfg.Ingestion)
	k.uploads.start()
	return k
}

// open returns the handle of a knowledge base, building its indexes from
// the durable chunks on first use. Loads are single-flight per knowledge
// base: concurrent callers of one knowledge base share its load, and no
// caller waits for another knowledge base's. A failed load is not kept, so
// the next caller tries again.
func (k *knowledge) open(ctx context.Context, kb meta.KnowledgeBase) (*kbHandle, error) {
	key := kb.TenantID + "\x00" + kb.ID
	k.mu.Lock()
	l, ok := k.kbs[key]
	if !ok {
		if k.backend.bounded() && len(k.kbs) >= k.maxHandles {
			k.evictOne()
		}
		l = &kbLoad{done: make(chan struct{})}
		k.kbs[key] = l
	}
	k.mu.Unlock()
	if !ok {
		// The load outlives the caller that started it: others may be
		// waiting for it.
		go func(ctx context.Context) {
			l.h, l.err = k.load(ctx, kb)
			if l.err != nil {
				k.mu.Lock()
				if k.kbs[key] == l {
					delete(k.kbs, key)
				}
				k.mu.Unlock()
			}
			close(l.done)
		}(context.WithoutCancel(ctx))
	}
	select {
	case <-l.done:
		return l.h, l.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// evictOne drops one loaded handle (any). k.mu is held.
func (k *knowledge) evictOne() {
	for key, l := range k.kbs {
		select {
		case <-l.done:
			delete(k.kbs, key)
			return
		default:
		}
	}
}

// load builds a knowledge base's handle.
func (k *knowledge) load(ctx context.Context, kb meta.KnowledgeBase) (*kbHandle, error) {
	var embedder rag.Embedder
	dim := 0
	if kb.EmbeddingModel != "" {
		m, err := k.s.model(kb.EmbeddingModel)
		if err != nil {
			return nil, fmt.Errorf("knowledge base %q: embedding model %s: %w", kb.Name, kb.EmbeddingModel, err)
		}
		me, err := rag.NewModelEmbedder(m)
		if err != nil {
			return nil, err
		}
		embedder = me
		if d, ok := k.dims.Load(kb.EmbeddingModel); ok {
			dim = d.(int)
		} else {
			probe, err := m.Embed(ctx, &llm.EmbedRequest{Inputs: []string{"dimension probe"}})
			if err == nil && (len(probe.Vectors) != 1 || len(probe.Vectors[0]) == 0) {
				err = errors.New("the dimension probe returned no vector")
			}
			if err != nil {
				return nil, fmt.Errorf("knowledge base %q: embedding model %s: %w", kb.Name, kb.EmbeddingModel, err)
			}
			dim = len(probe.Vectors[0])
			k.dims.Store(kb.EmbeddingModel, dim)
		}
	}
	index, err := k.backend.open(ctx, kb, dim)
	if err != nil {
		return nil, fmt.Errorf("knowledge base %q: %w", kb.Name, err)
	}
	splitter, err := rag.NewSplitter(rag.WithChunkSize(kb.ChunkSize), rag.WithOverlap(kb.ChunkOverlap), rag.WithCounter(tokens.Estimator{}))
	if err != nil {
		return nil, err
	}
	opts := []rag.IngestOption{rag.WithSplitter(splitter), rag.WithLoader(loader.New()), rag.WithWorkers(2)}
	if embedder != nil {
		opts = append(opts, rag.WithEmbedder(embedder))
	}
	ing, err := rag.NewIngester(index, opts...)
	if err != nil {
		return nil, err
	}
	return &kbHandle{kb: kb, index: index, ingester: ing, embedder: embedder}, nil
}

func (k *knowledge) forget(tenant, id string) {
	k.mu.Lock()
	delete(k.kbs, tenant+"\x00"+id)
	k.mu.Unlock()
}

// recall implements knowledgeService: it recalls from the agent's knowledge
// bases at once, fuses, and injects the best chunks into the user message.
// Knowledge bases that fail are skipped and logged.
func (k *knowledge) recall(ctx context.Context, agent meta.Agent, query string, msg llm.Message) (rag.Augmentation, []api.RagFragment, error) {
	multi := &rag.MultiRetriever{}
	for _, id := range agent.KnowledgeBaseIDs {
		kb, err := k.store.KB(ctx, agent.TenantID, id)
		if err != nil {
			k.s.log.WarnContext(ctx, "knowledge base unavailable; recalling without it", "knowledge_base", id, "err", err)
			continue
		}
		h, err := k.open(ctx, kb)
		if err != nil {
			k.s.log.WarnContext(ctx, "knowledge base unavailable; recalling without it", "knowledge_base", id, "err", err)
			continue
		}
		r, err := h.retriever(agent.Retrieval.Mode, agent.Retrieval.TopK, agent.Retrieval.MinScore)
		if err != nil {
			k.s.log.WarnContext(ctx, "knowledge base unavailable; recalling without it", "knowledge_base", id, "err", err)
			continue
		}
		multi.Retrievers = append(multi.Retrievers, rag.NamedRetriever{Name: kb.Name, Retriever: r})
	}
	if len(multi.Retrievers) == 0 {
		return rag.Augmentation{Message: msg}, nil, errors.New("no knowledge base could be opened")
	}
	rc := multi.Recall(ctx, query, agent.Retrieval.TopK)
	for _, d := range rc.Degraded {
		k.s.log.WarnContext(ctx, "retrieval degraded", "agent", agent.ID, "step", d.Step, "name", d.Name, "err", d.Err)
	}
	if len(rc.Sources) == 0 {
		return rag.Augmentation{Message: msg}, nil, nil
	}
	inj := rag.ContentInjector{}
	augmented, used := inj.Inject(msg, rc.Sources)
	return rag.Augmentation{Message: augmented, Sources: used}, fragments(used), nil
}

// retriever returns the knowledge base's retriever for a retrieval mode.
// minScore applies to each member on its own scale (cosine similarity,
// BM25 or ts_rank_cd) before fusion, where scores are comparable.
// Retrievers are cheap views over the index, made per call. When the index
// cannot search vectors (PostgreSQL without pgvector), hybrid recall runs
// keyword-only and says why in its Describe; vector mode fails.
func (h *kbHandle) retriever(mode string, topK int, minScore float64) (rag.Retriever, error) {
	opts := []rag.RetrieveOption{rag.TopK(topK), rag.MinScore(minScore)}
	kr, err := h.index.keywordRetriever(opts)
	if err != nil {
		return nil, err
	}
	if mode == "keyword" || h.embedder == nil {
		return kr, nil
	}
	vr, err := h.index.vectorRetriever(h.embedder, opts)
	if err != nil {
		if mode == "vector" {
			return nil, err
		}
		m := rag.NewHybrid(kr, nil)
		m.Note = err.Error()
		return m, nil
	}
	if mode == "vector" {
		return vr, nil
	}
	return rag.NewHybrid(kr, vr), nil
}

// fragments turns sources into the API's rag fragments.
func fragments(sources []rag.Source) []api.RagFragment {
	out := make([]api.RagFragment, len(sources))
	for i, s := range sources {
		name := s.DocumentName
		if name == "" {
			name = s.Metadata[rag.MetaName]
		}
		out[i] = api.RagFragment{KnowledgeBaseID: s.Collection, DocumentID: s.DocumentID, DocumentName: name, ChunkID: s.ID, Content: s.Content, Score: s.Score}
	}
	return out
}

// HTTP handlers.

type createKBRequest struct {
	Name           string  `json:"name"`
	ChunkSize      int     `json:"chunk_size"`
	ChunkOverlap   *int    `json:"chunk_overlap"`
	EmbeddingModel *string `json:"embedding_model"`
}

type kbView struct {
	meta.KnowledgeBase
	// Description says how recall runs, e.g. that it is keyword-only.
	Description string `json:"description"`
}

func (k *knowledge) view(ctx context.Context, kb meta.KnowledgeBase) kbView {
	return kbView{KnowledgeBase: kb, Description: k.backend.describe(ctx, kb)}
}

func (k *knowledge) routes(s *Server) {
	s.handle("POST /v1/knowledge-bases", need(builder), k.create)
	s.handle("GET /v1/knowledge-bases", need(viewer), k.list)
	s.handle("GET /v1/knowledge-bases/{id}", need(viewer), k.get)
	s.handle("PUT /v1/knowledge-bases/{id}", need(builder), k.update)
	s.handle("DELETE /v1/knowledge-bases/{id}", need(builder), k.delete)
	s.handle("POST /v1/knowledge-bases/{id}/documents", need(builder), k.upload)
	s.handle("GET /v1/knowledge-bases/{id}/documents", need(viewer), k.documents)
	s.handle("GET /v1/knowledge-bases/{id}/documents/{doc}", need(viewer), k.document)
	s.handle("DELETE /v1/knowledge-bases/{id}/documents/{doc}", need(builder), k.deleteDocument)
	s.handle("POST /v1/knowledge-bases/{id}/search", use(viewer), k.search)
}

func (k *knowledge) create(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	var req createKBRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	kb := meta.KnowledgeBase{ID: meta.NewID("kb"), TenantID: p.Tenant, Name: strings.TrimSpace(req.Name), ChunkSize: req.ChunkSize, CreatedAt: time.Now().UTC()}
	if kb.ChunkSize == 0 {
		kb.ChunkSize = rag.DefaultChunkSize
	}
	// The default overlap is an eighth of the chunk, at most 64 tokens.
	kb.ChunkOverlap = min(64, kb.ChunkSize/8)
	if req.ChunkOverlap != nil {
		kb.ChunkOverlap = *req.ChunkOverlap
	}
	if req.EmbeddingModel != nil {
		kb.EmbeddingModel = strings.TrimSpace(*req.EmbeddingModel)
	} else {
		kb.EmbeddingModel = k.s.cfg.DefaultEmbeddingModel
	}
	switch {
	case kb.Name == "":
		writeError(w, invalid("field \"name\" is required"))
		return
	case kb.ChunkSize < 32 || kb.ChunkSize > 8192:
		writeError(w, invalid("field \"chunk_size\": want 32 to 8192 tokens"))
		return
	case kb.ChunkOverlap < 0 || kb.ChunkOverlap >= kb.ChunkSize:
		writeError(w, invalid("field \"chunk_overlap\": want 0 or more and less than chunk_size"))
		return
	}
	if kb.EmbeddingModel != "" {
		if e := checkModelSpec("embedding_model", kb.EmbeddingModel); e != nil {
			writeError(w, e)
			return
		}
		m, err := k.s.model(kb.EmbeddingModel)
		if err != nil {
			writeError(w, invalid("field \"embedding_model\": %v", err))
			return
		}
		if _, ok := m.Driver().(llm.EmbeddingModel); !ok {
			writeError(w, invalid("field \"embedding_model\": %s cannot compute embeddings", kb.EmbeddingModel))
			return
		}
	}
	if err := k.store.CreateKB(r.Context(), kb); err != nil {
		if errors.Is(err, meta.ErrConflict) {
			writeError(w, nameTaken("a knowledge base", kb.Name))
			return
		}
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusCreated, k.view(r.Context(), kb))
}

func (k *knowledge) list(w http.ResponseWriter, r *http.Request) {
	kbs, err := k.store.ListKBs(r.Context(), principalFrom(r.Context()).Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := make([]kbView, len(kbs))
	for i, kb := range kbs {
		out[i] = k.view(r.Context(), kb)
	}
	writeJSON(w, http.StatusOK, out)
}

func (k *knowledge) kbOf(r *http.Request) (meta.KnowledgeBase, *apiError) {
	id := r.PathValue("id")
	kb, err := k.store.KB(r.Context(), principalFrom(r.Context()).Tenant, id)
	if err != nil {
		return kb, notFoundOr(err, "knowledge base", id)
	}
	return kb, nil
}

func (k *knowledge) get(w http.ResponseWriter, r *http.Request) {
	kb, e := k.kbOf(r)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, k.view(r.Context(), kb))
}

// update: PUT /v1/knowledge-bases/{id} {name?, chunk_size?,
// chunk_overlap?, embedding_model?} renames a knowledge base, keeping its
// id, documents and chunks. The other fields may be sent as they are:
// changing one would mean chunking or embedding every document again, so
// a changed value is a 400 asking for a new knowledge base. Absent fields
// keep their values.
//
// Nothing is invalidated: a loaded knowledge base's handle is its indexes,
// keyed by id, and recall reads the record itself from the store.
func (k *knowledge) update(w http.ResponseWriter, r *http.Request) {
	var req createKBRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	kb, e := k.kbOf(r)
	if e != nil {
		writeError(w, e)
		return
	}
	rebuild := func(field string) {
		writeError(w, invalid("field %q: knowledge base %q keeps its chunks as they were made and embedded; changing %s means making them again: create a new knowledge base and ingest the documents into it", field, kb.Name, field))
	}
	switch {
	case req.ChunkSize != 0 && req.ChunkSize != kb.ChunkSize:
		rebuild("chunk_size")
		return
	case req.ChunkOverlap != nil && *req.ChunkOverlap != kb.ChunkOverlap:
		rebuild("chunk_overlap")
		return
	case req.EmbeddingModel != nil && strings.TrimSpace(*req.EmbeddingModel) != kb.EmbeddingModel:
		rebuild("embedding_model")
		return
	}
	if name := strings.TrimSpace(req.Name); name != "" && name != kb.Name {
		kb.Name = name
		if err := k.store.UpdateKB(r.Context(), kb); err != nil {
			if errors.Is(err, meta.ErrConflict) {
				writeError(w, nameTaken("a knowledge base", kb.Name))
				return
			}
			writeError(w, notFoundOr(err, "knowledge base", kb.ID))
			return
		}
	}
	writeJSON(w, http.StatusOK, k.view(r.Context(), kb))
}

func (k *knowledge) delete(w http.ResponseWriter, r *http.Request) {
	kb, e := k.kbOf(r)
	if e != nil {
		writeError(w, e)
		return
	}
	if err := k.store.DeleteKB(r.Context(), kb.TenantID, kb.ID); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	if err := k.backend.drop(r.Context(), kb.TenantID, kb.ID); err != nil {
		k.s.log.WarnContext(r.Context(), "knowledge base deleted, but not its chunks", "knowledge_base", kb.ID, "err", err)
	}
	k.s.bus.publish(r.Context(), "kb", kb.TenantID, kb.ID)
	w.WriteHeader(http.StatusNoContent)
}

type searchRequest struct {
	Query string `json:"query"`
	TopK  int    `json:"top_k"`
	Mode  string `json:"mode"`
}

// search: POST /v1/knowledge-bases/{id}/search.
func (k *knowledge) search(w http.ResponseWriter, r *http.Request) {
	kb, e := k.kbOf(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var req searchRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if strings.TrimSpace(req.Query) == "" {
		writeError(w, invalid("field \"query\" is required"))
		return
	}
	if req.TopK == 0 {
		req.TopK = meta.DefaultTopK
	}
	if req.TopK < 1 || req.TopK > 100 {
		writeError(w, invalid("field \"top_k\": want 1 to 100"))
		return
	}
	switch req.Mode {
	case "":
		req.Mode = "hybrid"
	case "hybrid", "keyword":
	case "vector":
		if kb.EmbeddingModel == "" {
			writeError(w, invalid("field \"mode\": knowledge base %q is keyword-only (no embedding model)", kb.Name))
			return
		}
	default:
		writeError(w, invalid("field \"mode\": want \"hybrid\", \"vector\" or \"keyword\""))
		return
	}
	h, err := k.open(r.Context(), kb)
	if err != nil {
		writeError(w, errorf(http.StatusServiceUnavailable, CodeUnavailable, "%v", err))
		return
	}
	ret, err := h.retriever(req.Mode, req.TopK, 0)
	if err != nil {
		writeError(w, errorf(http.StatusServiceUnavailable, CodeUnavailable, "search: %v", err))
		return
	}
	sources, err := ret.Retrieve(r.Context(), req.Query, req.TopK)
	if err != nil {
		writeError(w, errorf(http.StatusServiceUnavailable, CodeUnavailable, "search: %v", err))
		return
	}
	frags := fragments(sources)
	if frags == nil {
		frags = []api.RagFragment{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": frags})
}

// validateKBRefs checks an agent's knowledge_base_ids.
func (k *knowledge) validateKBRefs(ctx context.Context, a *meta.Agent) *apiError {
	for _, id := range a.KnowledgeBaseIDs {
		if _, err := k.store.KB(ctx, a.TenantID, id); err != nil {
			if errors.Is(err, meta.ErrNotFound) {
				return invalid("field \"knowledge_base_ids\": no knowledge base %q", id)
			}
			return asAPIError(err)
		}
	}
	return nil
}
