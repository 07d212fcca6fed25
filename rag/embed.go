package rag

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/weftlabs/weft/llm"
)

// Embedder turns texts into vectors, one per text, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// EmbedderFunc adapts a function to the Embedder interface.
type EmbedderFunc func(ctx context.Context, texts []string) ([][]float32, error)

// Embed calls f(ctx, texts).
func (f EmbedderFunc) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return f(ctx, texts)
}

// Defaults of [ModelEmbedder].
const (
	DefaultEmbedBatch       = 64
	DefaultEmbedConcurrency = 4
)

// ModelEmbedder embeds with an [llm.Model] (which adds retries, timeouts and
// hooks): texts go in batches, several batches at a time.
type ModelEmbedder struct {
	model       *llm.Model
	batch       int
	concurrency int
	dimensions  int
}

// EmbedOption configures a [ModelEmbedder].
type EmbedOption func(*ModelEmbedder)

// WithBatchSize sets how many texts go in one request (default 64).
func WithBatchSize(n int) EmbedOption { return func(e *ModelEmbedder) { e.batch = n } }

// WithConcurrency sets how many requests may run at once (default 4).
func WithConcurrency(n int) EmbedOption { return func(e *ModelEmbedder) { e.concurrency = n } }

// WithDimensions asks the model for shortened vectors of n dimensions, where
// the model supports it (0, the default, keeps the model's own size).
func WithDimensions(n int) EmbedOption { return func(e *ModelEmbedder) { e.dimensions = n } }

// NewModelEmbedder returns an embedder over m.
func NewModelEmbedder(m *llm.Model, opts ...EmbedOption) (*ModelEmbedder, error) {
	e := &ModelEmbedder{model: m, batch: DefaultEmbedBatch, concurrency: DefaultEmbedConcurrency}
	for _, o := range opts {
		o(e)
	}
	switch {
	case m == nil:
		return nil, errors.New("rag: embedder: nil model")
	case e.batch < 1:
		return nil, fmt.Errorf("rag: embedder: batch size %d: must be at least 1", e.batch)
	case e.concurrency < 1:
		return nil, fmt.Errorf("rag: embedder: concurrency %d: must be at least 1", e.concurrency)
	case e.dimensions < 0:
		return nil, fmt.Errorf("rag: embedder: dimensions %d: must not be negative", e.dimensions)
	}
	return e, nil
}

// Name returns the model's name, which [NewCachedEmbedder] uses to keep the
// vectors of different models apart.
func (e *ModelEmbedder) Name() string {
	if e.dimensions > 0 {
		return fmt.Sprintf("%s@%d", e.model.Name(), e.dimensions)
	}
	return e.model.Name()
}

// Embed returns the vectors of texts in order. The first failing batch
// cancels the others and its error is returned.
func (e *ModelEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(e.concurrency)
	for start := 0; start < len(texts); start += e.batch {
		end := min(start+e.batch, len(texts))
		g.Go(func() error {
			resp, err := e.model.Embed(ctx, &llm.EmbedRequest{Inputs: texts[start:end], Dimensions: e.dimensions})
			if err != nil {
				return fmt.Errorf("rag: embed texts %d-%d: %w", start, end-1, err)
			}
			if len(resp.Vectors) != end-start {
				return fmt.Errorf("rag: embed texts %d-%d: model %s returned %d vectors for %d texts", start, end-1, e.model.Name(), len(resp.Vectors), end-start)
			}
			for i, v := range resp.Vectors {
				if len(v) == 0 {
					return fmt.Errorf("rag: embed text %d: model %s returned an empty vector", start+i, e.model.Name())
				}
			}
			copy(out[start:end], resp.Vectors)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// EmbeddingCache stores vectors by key (see [CacheKey]). Implementations
// are safe for concurrent use; the platform persists vectors with its own.
type EmbeddingCache interface {
	// Get returns one entry per key, nil where the cache has none.
	Get(ctx context.Context, keys []string) ([][]float32, error)
	// Put stores vectors under keys (same length).
	Put(ctx context.Context, keys []string, vectors [][]float32) error
}

// CacheKey returns the cache key of text embedded by model: the hex SHA-256
// of both, so equal text under equal model shares one entry whatever
// document it came from.
func CacheKey(model, text string) string {
	h := sha256.New()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil))
}

// CachedEmbedder embeds through a cache: texts already cached are not sent
// to the model, and a text that occurs several times in one call is
// embedded once.
type CachedEmbedder struct {
	next  Embedder
	model string
	cache EmbeddingCache
}

// NewCachedEmbedder returns an embedder that consults cache before next.
// model names what next embeds with (vectors of different models never mix);
// use [ModelEmbedder.Name]. Cache errors are returned, not hidden: a cache
// that should degrade must do so itself.
func NewCachedEmbedder(next Embedder, model string, cache EmbeddingCache) *CachedEmbedder {
	return &CachedEmbedder{next: next, model: model, cache: cache}
}

// Embed returns the vectors of texts in order. Returned vectors may be
// shared with the cache: callers must not modify them.
func (c *CachedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	keys := make([]string, len(texts))
	for i, t := range texts {
		keys[i] = CacheKey(c.model, t)
	}
	out, err := c.cache.Get(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("rag: embedding cache: %w", err)
	}
	if len(out) != len(keys) {
		return nil, fmt.Errorf("rag: embedding cache returned %d entries for %d keys", len(out), len(keys))
	}
	// Misses, each distinct text once.
	var (
		missTexts []string
		missKeys  []string
		firstAt   = map[string]int{} // key -> index in missTexts
	)
	for i, v := range out {
		if v != nil {
			continue
		}
		if _, ok := firstAt[keys[i]]; !ok {
			firstAt[keys[i]] = len(missTexts)
			missTexts = append(missTexts, texts[i])
			missKeys = append(missKeys, keys[i])
		}
	}
	if len(missTexts) == 0 {
		return out, nil
	}
	vecs, err := c.next.Embed(ctx, missTexts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(missTexts) {
		return nil, fmt.Errorf("rag: embedder returned %d vectors for %d texts", len(vecs), len(missTexts))
	}
	if err := c.cache.Put(ctx, missKeys, vecs); err != nil {
		return nil, fmt.Errorf("rag: embedding cache: %w", err)
	}
	for i := range out {
		if out[i] == nil {
			out[i] = vecs[firstAt[keys[i]]]
		}
	}
	return out, nil
}

// MemoryCache is an in-memory [EmbeddingCache] that evicts the least
// recently used vectors beyond a size bound. It is safe for concurrent use.
type MemoryCache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // front: most recently used
	items    map[string]*list.Element
}

type cacheEntry struct {
	key string
	vec []float32
}

// NewMemoryCache returns a cache holding at most maxBytes of vectors and
// keys (64 MiB holds about 10,000 vectors of 1,536 dimensions).
func NewMemoryCache(maxBytes int64) *MemoryCache {
	return &MemoryCache{maxBytes: maxBytes, order: list.New(), items: map[string]*list.Element{}}
}

func entrySize(key string, vec []float32) int64 { return int64(len(key) + 4*len(vec) + 64) }

// Get returns the cached vectors of keys, nil for misses.
func (c *MemoryCache) Get(_ context.Context, keys []string) ([][]float32, error) {
	out := make([][]float32, len(keys))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range keys {
		if el, ok := c.items[k]; ok {
			c.order.MoveToFront(el)
			out[i] = el.Value.(*cacheEntry).vec
		}
	}
	return out, nil
}

// Put stores copies of vectors, evicting the least recently used entries to
// stay within the size bound. A vector bigger than the whole bound is not
// stored.
func (c *MemoryCache) Put(_ context.Context, keys []string, vectors [][]float32) error {
	if len(keys) != len(vectors) {
		return fmt.Errorf("rag: cache put: %d keys for %d vectors", len(keys), len(vectors))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range keys {
		size := entrySize(k, vectors[i])
		if size > c.maxBytes {
			continue
		}
		if el, ok := c.items[k]; ok {
			c.order.MoveToFront(el)
			continue
		}
		vec := append([]float32(nil), vectors[i]...)
		c.items[k] = c.order.PushFront(&cacheEntry{key: k, vec: vec})
		c.bytes += size
		for c.bytes > c.maxBytes {
			last := c.order.Back()
			e := last.Value.(*cacheEntry)
			c.order.Remove(last)
			delete(c.items, e.key)
			c.bytes -= entrySize(e.key, e.vec)
		}
	}
	return nil
}

// Len reports how many vectors the cache holds.
func (c *MemoryCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}
