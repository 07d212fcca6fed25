package rag

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Loader reads a named input into a document; package rag/loader provides
// the standard one (loader.New()).
type Loader interface {
	Load(ctx context.Context, name string, r io.Reader) (Document, error)
}

// Stage is where a document is in the ingestion pipeline.
type Stage string

// The stages a document passes through, in order; it ends in StageReady or
// StageFailed.
const (
	StageQueued    Stage = "queued"
	StageLoading   Stage = "loading"
	StageSplitting Stage = "splitting"
	StageEmbedding Stage = "embedding"
	StageIndexing  Stage = "indexing"
	StageReady     Stage = "ready"
	StageFailed    Stage = "failed"
)

// Progress reports a document's move through the pipeline, for progress bars
// and document status.
type Progress struct {
	// DocumentID and Name identify the document (DocumentID is empty while
	// an input without an ID is queued or loading).
	DocumentID string
	Name       string
	Stage      Stage
	// ChunksDone of ChunksTotal chunks are embedded (during StageEmbedding)
	// or indexed (from StageIndexing on). Chunks already in the index count
	// as done.
	ChunksDone, ChunksTotal int
	// Err is the failure, in StageFailed.
	Err error
}

// Input is one thing to ingest: an already loaded Document, or a named
// source that the Ingester's [Loader] reads from Open.
type Input struct {
	// ID identifies the document; it overrides the loaded document's ID.
	// Empty means the document's own ID, or DocumentID(Name).
	ID string
	// Name is the document's name (a file name or path); loaders choose the
	// format by its extension.
	Name string
	// Open returns the content to load. The Ingester closes it.
	Open func(ctx context.Context) (io.ReadCloser, error)
	// Document, when set, is ingested as is; Open is not called.
	Document *Document
}

// FileInput is an Input that loads the file at path.
func FileInput(path string) Input {
	return Input{Name: path, Open: func(context.Context) (io.ReadCloser, error) { return os.Open(path) }}
}

// ReaderInput is an Input that loads r once, named name.
func ReaderInput(name string, r io.Reader) Input {
	return Input{Name: name, Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(r), nil }}
}

// DocumentInput is an Input for an already loaded document.
func DocumentInput(doc Document) Input {
	return Input{ID: doc.ID, Name: doc.Name, Document: &doc}
}

// Result is the outcome of ingesting one input.
type Result struct {
	DocumentID string
	Name       string
	// Chunks is how many chunks the document has in the index.
	Chunks int
	// Added and Removed count chunks written and deleted by this ingestion;
	// both are zero when the document was already indexed as it is.
	Added, Removed int
	// Unchanged reports that the index already held exactly these chunks.
	Unchanged bool
	// Err is why the input failed, nil if it did not.
	Err error
}

// Ingester runs the ingestion pipeline — load, split, embed, index — over
// many inputs at once, a bounded number at a time. Ingestion is idempotent:
// chunk IDs are derived from content, so re-ingesting an unchanged document
// writes nothing, and a changed one gets its new chunks written and its
// stale ones deleted (only new chunks are embedded). An input that fails
// does not stop the others. An Ingester is safe for concurrent use; two
// ingestions of one document ID never overlap.
type Ingester struct {
	index      ChunkIndex
	loader     Loader
	splitter   Splitter
	embedder   Embedder
	workers    int
	embedBatch int
	progress   func(Progress)

	progressMu sync.Mutex
	locks      keyedMutex
}

// IngestOption configures an [Ingester].
type IngestOption func(*Ingester)

// WithLoader sets the loader for inputs that are not documents yet
// (loader.New() from package rag/loader).
func WithLoader(l Loader) IngestOption { return func(in *Ingester) { in.loader = l } }

// WithSplitter sets the splitter (default [NewSplitter]() with its
// defaults).
func WithSplitter(s Splitter) IngestOption { return func(in *Ingester) { in.splitter = s } }

// WithEmbedder sets the embedder. Without one, ingestion indexes chunks for
// keyword search only.
func WithEmbedder(e Embedder) IngestOption { return func(in *Ingester) { in.embedder = e } }

// WithWorkers sets how many documents are processed at once (default 4).
func WithWorkers(n int) IngestOption { return func(in *Ingester) { in.workers = n } }

// WithEmbedBatch sets how many chunks of a document go to the embedder in
// one call (default 64); progress is reported after each call.
func WithEmbedBatch(n int) IngestOption { return func(in *Ingester) { in.embedBatch = n } }

// WithProgress sets a function told of every stage of every document. Calls
// are serialised (never concurrent), so f needs no locking; it should
// return quickly.
func WithProgress(f func(Progress)) IngestOption { return func(in *Ingester) { in.progress = f } }

// NewIngester returns an Ingester that writes to index.
func NewIngester(index ChunkIndex, opts ...IngestOption) (*Ingester, error) {
	in := &Ingester{index: index, workers: 4, embedBatch: DefaultEmbedBatch}
	for _, o := range opts {
		o(in)
	}
	switch {
	case index == nil:
		return nil, errors.New("rag: ingester: nil index")
	case in.workers < 1:
		return nil, fmt.Errorf("rag: ingester: %d workers: must be at least 1", in.workers)
	case in.embedBatch < 1:
		return nil, fmt.Errorf("rag: ingester: embed batch %d: must be at least 1", in.embedBatch)
	}
	if in.splitter == nil {
		s, err := NewSplitter()
		if err != nil {
			return nil, err
		}
		in.splitter = s
	}
	return in, nil
}

// Ingest runs every input through the pipeline and returns one Result per
// input, in input order. The error joins the failures of all inputs (each
// also in its Result), or is the context's error if ctx ended.
func (in *Ingester) Ingest(ctx context.Context, inputs ...Input) ([]Result, error) {
	results := make([]Result, len(inputs))
	for i, input := range inputs {
		results[i] = Result{DocumentID: input.ID, Name: input.Name}
		if input.Document != nil {
			results[i].DocumentID = cmp.Or(input.ID, input.Document.ID)
			results[i].Name = cmp.Or(input.Name, input.Document.Name)
		}
		in.report(Progress{DocumentID: results[i].DocumentID, Name: results[i].Name, Stage: StageQueued})
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(in.workers, len(inputs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = in.ingestOne(ctx, inputs[i], results[i])
			}
		}()
	}
	for i := range inputs {
		work <- i
	}
	close(work)
	wg.Wait()

	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("ingest %s: %w", cmp.Or(r.Name, r.DocumentID), r.Err))
		}
	}
	if err := ctx.Err(); err != nil {
		return results, err
	}
	return results, errors.Join(errs...)
}

// IngestDocuments ingests already loaded documents.
func (in *Ingester) IngestDocuments(ctx context.Context, docs ...Document) ([]Result, error) {
	inputs := make([]Input, len(docs))
	for i, d := range docs {
		inputs[i] = DocumentInput(d)
	}
	return in.Ingest(ctx, inputs...)
}

// Delete removes a document's chunks from the index.
func (in *Ingester) Delete(ctx context.Context, documentID string) error {
	unlock := in.locks.lock(documentID)
	defer unlock()
	return in.index.DeleteDocument(ctx, documentID)
}

func (in *Ingester) report(p Progress) {
	if in.progress == nil {
		return
	}
	in.progressMu.Lock()
	defer in.progressMu.Unlock()
	in.progress(p)
}

// ingestOne runs one input through the pipeline, reporting each stage.
func (in *Ingester) ingestOne(ctx context.Context, input Input, res Result) Result {
	p := Progress{DocumentID: res.DocumentID, Name: res.Name}
	fail := func(err error) Result {
		res.Err = err
		p.Stage, p.Err = StageFailed, err
		in.report(p)
		return res
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}

	doc, err := in.load(ctx, input, &p)
	if err != nil {
		return fail(err)
	}
	res.DocumentID, res.Name = doc.ID, doc.Name
	p.DocumentID, p.Name = doc.ID, doc.Name

	// One ingestion per document at a time: the diff against the index
	// below must not race another writer of the same document.
	unlock := in.locks.lock(doc.ID)
	defer unlock()

	p.Stage = StageSplitting
	in.report(p)
	chunks, err := in.splitter.Split(doc)
	if err != nil {
		return fail(err)
	}
	existing, err := in.index.ChunkIDs(ctx, doc.ID)
	if err != nil {
		return fail(fmt.Errorf("read indexed chunks: %w", err))
	}
	have := make(map[string]bool, len(existing))
	for _, id := range existing {
		have[id] = true
	}
	var added []Chunk
	want := make(map[string]bool, len(chunks))
	for _, c := range chunks {
		want[c.ID] = true
		if !have[c.ID] {
			added = append(added, c)
		}
	}
	var stale []string
	for _, id := range existing {
		if !want[id] {
			stale = append(stale, id)
		}
	}
	res.Chunks = len(chunks)
	p.ChunksTotal = len(chunks)
	p.ChunksDone = len(chunks) - len(added)
	if len(added) == 0 && len(stale) == 0 {
		res.Unchanged = true
		p.Stage = StageReady
		in.report(p)
		return res
	}

	var vectors [][]float32
	if in.embedder != nil && len(added) > 0 {
		p.Stage = StageEmbedding
		in.report(p)
		vectors = make([][]float32, 0, len(added))
		for start := 0; start < len(added); start += in.embedBatch {
			batch := added[start:min(start+in.embedBatch, len(added))]
			texts := make([]string, len(batch))
			for i, c := range batch {
				texts[i] = c.Text
			}
			vs, err := in.embedder.Embed(ctx, texts)
			if err != nil {
				return fail(fmt.Errorf("embed: %w", err))
			}
			if len(vs) != len(batch) {
				return fail(fmt.Errorf("embed: %d vectors for %d chunks", len(vs), len(batch)))
			}
			vectors = append(vectors, vs...)
			p.ChunksDone += len(batch)
			in.report(p)
		}
	}

	p.Stage = StageIndexing
	p.ChunksDone = len(chunks) - len(added)
	in.report(p)
	// New chunks first, stale ones after: a reader sees the old or the new
	// version of the document, or both, never neither.
	if len(added) > 0 {
		if err := in.index.Upsert(ctx, added, vectors); err != nil {
			return fail(fmt.Errorf("index: %w", err))
		}
	}
	if err := in.index.Delete(ctx, stale...); err != nil {
		return fail(fmt.Errorf("remove stale chunks: %w", err))
	}
	res.Added, res.Removed = len(added), len(stale)
	p.Stage, p.ChunksDone = StageReady, len(chunks)
	in.report(p)
	return res
}

// load returns the input's document, loading it if need be, with its ID and
// name settled.
func (in *Ingester) load(ctx context.Context, input Input, p *Progress) (Document, error) {
	var doc Document
	if input.Document != nil {
		doc = *input.Document
	} else {
		p.Stage = StageLoading
		in.report(*p)
		switch {
		case in.loader == nil:
			return doc, errors.New("no loader configured for inputs that are not documents: use rag.WithLoader(loader.New())")
		case input.Open == nil:
			return doc, errors.New("input has neither a Document nor an Open function")
		}
		rc, err := input.Open(ctx)
		if err != nil {
			return doc, fmt.Errorf("open: %w", err)
		}
		doc, err = in.loader.Load(ctx, input.Name, rc)
		rc.Close()
		if err != nil {
			return doc, err
		}
	}
	doc.ID = cmp.Or(input.ID, doc.ID)
	doc.Name = cmp.Or(doc.Name, input.Name)
	if doc.ID == "" {
		if doc.Name == "" {
			return doc, errors.New("document has neither an ID nor a name")
		}
		doc.ID = DocumentID(doc.Name)
	}
	return doc, nil
}

// keyedMutex serialises work per key.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks key and returns its unlock function.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
