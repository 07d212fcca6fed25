package rag_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/keyword"
	"github.com/weftlabs/weft/rag/loader"
	"github.com/weftlabs/weft/rag/vector"
)

const dim = 8

// hashEmbedder embeds text as 8 numbers from its SHA-256: deterministic,
// never zero. It counts the texts it embeds and fails on texts holding
// poison, when set.
type hashEmbedder struct {
	texts  atomic.Int64
	calls  atomic.Int64
	poison string
}

func (h *hashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.calls.Add(1)
	h.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if h.poison != "" && strings.Contains(t, h.poison) {
			return nil, fmt.Errorf("embedding service rejected text %d", i)
		}
		sum := sha256.Sum256([]byte(t))
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(sum[j]) + 1
		}
		out[i] = v
	}
	return out, nil
}

func newIndex(t testing.TB) *rag.EmbeddedIndex {
	t.Helper()
	ix, err := rag.NewEmbeddedIndex(vector.NewFlat(dim), keyword.New())
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func newIngester(t testing.TB, ix rag.ChunkIndex, opts ...rag.IngestOption) *rag.Ingester {
	t.Helper()
	s, err := rag.NewSplitter(rag.WithChunkSize(20), rag.WithOverlap(4))
	if err != nil {
		t.Fatal(err)
	}
	in, err := rag.NewIngester(ix, append([]rag.IngestOption{rag.WithSplitter(s), rag.WithLoader(loader.New())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func markdownDoc(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Document %d\n\n", n)
	for s := range 4 {
		fmt.Fprintf(&b, "## Section %d\n\nThis is paragraph %d of document %d. It talks about topic%d and more words follow here.\n\n", s, s, n, n*10+s)
	}
	return b.String()
}

func TestIngestIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := newIndex(t)
	emb := &hashEmbedder{}
	in := newIngester(t, ix, rag.WithEmbedder(emb))

	first, err := in.Ingest(ctx, rag.ReaderInput("guide.md", strings.NewReader(markdownDoc(1))))
	if err != nil {
		t.Fatal(err)
	}
	r := first[0]
	if r.Chunks == 0 || r.Added != r.Chunks || r.Removed != 0 || r.Unchanged {
		t.Fatalf("first ingestion: %+v", r)
	}
	if ix.Len() != r.Chunks || ix.Vectors().Len() != r.Chunks || ix.Keywords().Len() != r.Chunks {
		t.Fatalf("index holds %d chunks, %d vectors, %d keyword docs; want %d", ix.Len(), ix.Vectors().Len(), ix.Keywords().Len(), r.Chunks)
	}
	embedded := emb.texts.Load()

	// The same content again: nothing written, nothing embedded.
	again, err := in.Ingest(ctx, rag.ReaderInput("guide.md", strings.NewReader(markdownDoc(1))))
	if err != nil {
		t.Fatal(err)
	}
	if !again[0].Unchanged || again[0].Added != 0 || again[0].Removed != 0 || again[0].Chunks != r.Chunks {
		t.Errorf("re-ingestion: %+v", again[0])
	}
	if emb.texts.Load() != embedded || ix.Len() != r.Chunks {
		t.Errorf("re-ingestion embedded %d more texts, index holds %d", emb.texts.Load()-embedded, ix.Len())
	}

	// Changed content under the same name replaces the old chunks.
	changed := strings.Replace(markdownDoc(1), "topic12", "zebrafish", 1)
	third, err := in.Ingest(ctx, rag.ReaderInput("guide.md", strings.NewReader(changed)))
	if err != nil {
		t.Fatal(err)
	}
	if third[0].Added == 0 || third[0].Removed != third[0].Added || third[0].Added == third[0].Chunks {
		t.Errorf("changed ingestion: %+v (only the changed chunks should be replaced)", third[0])
	}
	if emb.texts.Load()-embedded != int64(third[0].Added) {
		t.Errorf("embedded %d texts for %d new chunks", emb.texts.Load()-embedded, third[0].Added)
	}
	if ix.Len() != third[0].Chunks || ix.Vectors().Len() != third[0].Chunks || ix.Keywords().Len() != third[0].Chunks {
		t.Errorf("index holds %d chunks, %d vectors, %d keyword docs; want %d", ix.Len(), ix.Vectors().Len(), ix.Keywords().Len(), third[0].Chunks)
	}
	for _, q := range []struct {
		query string
		hits  int
	}{{"zebrafish", 1}, {"topic12", 0}} {
		hits, err := ix.Keywords().Search(ctx, q.query, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != q.hits {
			t.Errorf("keyword search %q: %d hits, want %d", q.query, len(hits), q.hits)
		}
	}
	ids, _ := ix.ChunkIDs(ctx, rag.DocumentID("guide.md"))
	chunks, _ := ix.ReadChunks(ctx, ids)
	for _, c := range chunks {
		if c.Metadata[rag.MetaHeadings] == "" || c.Metadata[rag.MetaTitle] != "Document 1" || c.Metadata[rag.MetaSource] != "guide.md" {
			t.Errorf("chunk metadata %v", c.Metadata)
		}
	}

	// Delete removes the document.
	if err := in.Delete(ctx, rag.DocumentID("guide.md")); err != nil {
		t.Fatal(err)
	}
	if ix.Len() != 0 || ix.Vectors().Len() != 0 || ix.Keywords().Len() != 0 || ix.Documents() != 0 {
		t.Errorf("after delete: %d chunks, %d vectors, %d keyword docs", ix.Len(), ix.Vectors().Len(), ix.Keywords().Len())
	}
}

// recorder collects progress reports.
type recorder struct {
	mu  sync.Mutex
	all []rag.Progress
}

func (r *recorder) add(p rag.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, p)
}

func (r *recorder) of(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.all {
		if p.Name == name {
			out = append(out, fmt.Sprintf("%s %d/%d", p.Stage, p.ChunksDone, p.ChunksTotal))
		}
	}
	return out
}

func TestIngestProgressSequence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := newIndex(t)
	rec := &recorder{}
	s, _ := rag.NewRecursiveSplitter(rag.WithChunkSize(2), rag.WithOverlap(0))
	in, err := rag.NewIngester(ix, rag.WithEmbedder(&hashEmbedder{}), rag.WithSplitter(s),
		rag.WithEmbedBatch(2), rag.WithLoader(loader.New()), rag.WithProgress(rec.add))
	if err != nil {
		t.Fatal(err)
	}
	text := "aaa bbb\n\nccc ddd\n\neee" // three chunks of at most 2 tokens
	if _, err := in.Ingest(ctx, rag.ReaderInput("p.txt", strings.NewReader(text))); err != nil {
		t.Fatal(err)
	}
	want := []string{"queued 0/0", "loading 0/0", "splitting 0/0", "embedding 0/3", "embedding 2/3", "embedding 3/3", "indexing 0/3", "ready 3/3"}
	if got := rec.of("p.txt"); !slices.Equal(got, want) {
		t.Errorf("progress:\n got %q\nwant %q", got, want)
	}
	// Unchanged: straight to ready, all chunks done.
	if _, err := in.IngestDocuments(ctx, rag.Document{ID: rag.DocumentID("p.txt"), Name: "again", Text: text}); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.of("again"), []string{"queued 0/0", "splitting 0/0", "ready 3/3"}; !slices.Equal(got, want) {
		t.Errorf("unchanged progress:\n got %q\nwant %q", got, want)
	}
	for _, p := range rec.all {
		if p.Stage != rag.StageQueued && p.Stage != rag.StageLoading && p.DocumentID != rag.DocumentID("p.txt") {
			t.Errorf("progress %+v lacks the document ID", p)
		}
	}
}

func TestIngestFailureIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := newIndex(t)
	rec := &recorder{}
	in := newIngester(t, ix, rag.WithEmbedder(&hashEmbedder{poison: "POISON"}), rag.WithProgress(rec.add), rag.WithWorkers(2))
	inputs := []rag.Input{
		rag.ReaderInput("good.md", strings.NewReader(markdownDoc(1))),
		rag.ReaderInput("bad.pdf", strings.NewReader("%PDF-1.4\nthis is not really a pdf\n%%EOF")),
		rag.ReaderInput("binary.txt", strings.NewReader("MZ\x00\x00\x01\x02binary")),
		rag.ReaderInput("empty.md", strings.NewReader("  \n")),
		rag.DocumentInput(rag.Document{ID: "poisoned", Name: "poisoned", Text: "harmless text, then POISON"}),
		{Name: "broken-open", Open: func(context.Context) (io.ReadCloser, error) { return nil, errors.New("disk on fire") }},
		rag.ReaderInput("good.txt", strings.NewReader("plain text that indexes fine")),
	}
	results, err := in.Ingest(ctx, inputs...)
	if err == nil {
		t.Fatal("no error for a batch with failures")
	}
	wantErr := map[string]error{
		"bad.pdf": loader.ErrCorrupt, "binary.txt": loader.ErrBinary, "empty.md": rag.ErrEmptyDocument,
	}
	for _, r := range results {
		switch r.Name {
		case "good.md", "good.txt":
			if r.Err != nil || r.Chunks == 0 {
				t.Errorf("%s: %+v", r.Name, r)
			}
			if got := rec.of(r.Name); got[len(got)-1] != fmt.Sprintf("ready %d/%d", r.Chunks, r.Chunks) {
				t.Errorf("%s ended with %q", r.Name, got[len(got)-1])
			}
		default:
			if r.Err == nil {
				t.Errorf("%s: no error", r.Name)
				continue
			}
			if w := wantErr[r.Name]; w != nil && !errors.Is(r.Err, w) {
				t.Errorf("%s: error %v, want %v", r.Name, r.Err, w)
			}
			if !strings.Contains(err.Error(), r.Name) {
				t.Errorf("joined error %q does not name %s", err, r.Name)
			}
			if got := rec.of(r.Name); !strings.HasPrefix(got[len(got)-1], "failed") {
				t.Errorf("%s ended with %q", r.Name, got[len(got)-1])
			}
		}
	}
	if ix.Documents() != 2 {
		t.Errorf("index holds %d documents, want the 2 good ones", ix.Documents())
	}
}

func TestIngestKeywordOnlyAndNoLoader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := newIndex(t)
	in, err := rag.NewIngester(ix)
	if err != nil {
		t.Fatal(err)
	}
	res, err := in.IngestDocuments(ctx, rag.Document{ID: "k", Name: "k.txt", Text: "keyword only ingestion"})
	if err != nil {
		t.Fatal(err)
	}
	if ix.Vectors().Len() != 0 || ix.Keywords().Len() != res[0].Chunks || ix.Len() != res[0].Chunks {
		t.Errorf("keyword-only: %d vectors, %d keyword docs, %d chunks", ix.Vectors().Len(), ix.Keywords().Len(), res[0].Chunks)
	}
	if _, err := in.Ingest(ctx, rag.ReaderInput("x.txt", strings.NewReader("x"))); err == nil || !strings.Contains(err.Error(), "WithLoader") {
		t.Errorf("no loader: %v", err)
	}
	if _, err := rag.NewIngester(nil); err == nil {
		t.Error("nil index accepted")
	}
	if _, err := rag.NewIngester(ix, rag.WithWorkers(0)); err == nil {
		t.Error("zero workers accepted")
	}
}

func TestIngestCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ix := newIndex(t)
	results, err := newIngester(t, ix).IngestDocuments(ctx, rag.Document{ID: "a", Text: "x"}, rag.Document{ID: "b", Text: "y"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	for _, r := range results {
		if !errors.Is(r.Err, context.Canceled) {
			t.Errorf("%s: %v", r.DocumentID, r.Err)
		}
	}
	if ix.Len() != 0 {
		t.Errorf("canceled ingestion indexed %d chunks", ix.Len())
	}
}

func TestIngestConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := newIndex(t)
	emb := &hashEmbedder{}
	in := newIngester(t, ix, rag.WithEmbedder(rag.NewCachedEmbedder(emb, "hash", rag.NewMemoryCache(1<<20))), rag.WithWorkers(4))
	const docs = 24
	var inputs []rag.Input
	for i := range docs {
		inputs = append(inputs, rag.DocumentInput(rag.Document{ID: fmt.Sprint("doc-", i), Name: fmt.Sprint(i, ".md"), MIMEType: "text/markdown", Text: markdownDoc(i)}))
	}
	// Two overlapping batches at once, each document in both.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k := range 2 {
		wg.Go(func() {
			_, errs[k] = in.Ingest(ctx, inputs...)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s, _ := rag.NewSplitter(rag.WithChunkSize(20), rag.WithOverlap(4))
	total := 0
	for i := range docs {
		doc := *inputs[i].Document
		want, _ := s.Split(doc)
		total += len(want)
		got, _ := ix.ChunkIDs(ctx, doc.ID)
		wantIDs := make([]string, len(want))
		for j, c := range want {
			wantIDs[j] = c.ID
		}
		slices.Sort(got)
		slices.Sort(wantIDs)
		if !slices.Equal(got, wantIDs) {
			t.Errorf("%s: indexed chunk IDs differ from the split", doc.ID)
		}
	}
	if ix.Len() != total || ix.Vectors().Len() != total || ix.Keywords().Len() != total {
		t.Errorf("index holds %d chunks, %d vectors, %d keyword docs; want %d", ix.Len(), ix.Vectors().Len(), ix.Keywords().Len(), total)
	}
	if emb.texts.Load() != int64(total) {
		t.Errorf("embedded %d texts for %d chunks: the cache or the per-document lock leaked work", emb.texts.Load(), total)
	}
}
