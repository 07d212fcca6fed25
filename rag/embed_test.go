package rag

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weftlabs/weft/llm"
)

// fakeDriver is a chat driver that embeds: vector i of a request is
// [len(text), first byte, 1]. It records calls and concurrency.
type fakeDriver struct {
	calls       atomic.Int32
	inFlight    atomic.Int32
	maxInFlight atomic.Int32
	// short drops one vector from every response; failOn fails a request
	// holding that text.
	short  bool
	failOn string
}

func (d *fakeDriver) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	return nil, errors.New("not a chat model")
}

func (d *fakeDriver) Stream(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) { yield(llm.Chunk{}, errors.New("not a chat model")) }
}

func (d *fakeDriver) Embed(_ context.Context, req *llm.EmbedRequest) (*llm.EmbedResponse, error) {
	d.calls.Add(1)
	n := d.inFlight.Add(1)
	defer d.inFlight.Add(-1)
	for {
		m := d.maxInFlight.Load()
		if n <= m || d.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	resp := &llm.EmbedResponse{}
	for _, t := range req.Inputs {
		if d.failOn != "" && t == d.failOn {
			return nil, errors.New("model exploded")
		}
		first := float32(0)
		if t != "" {
			first = float32(t[0])
		}
		resp.Vectors = append(resp.Vectors, []float32{float32(len(t)), first, 1})
	}
	if d.short {
		resp.Vectors = resp.Vectors[1:]
	}
	return resp, nil
}

// chatOnly is a driver that cannot embed.
type chatOnly struct{ *fakeDriver }

func (*chatOnly) Embed() {} // shadows fakeDriver.Embed with a different signature

func TestModelEmbedderBatches(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{}
	e, err := NewModelEmbedder(llm.New(d, llm.WithName("fake/embed"), llm.WithRetries(0)), WithBatchSize(10), WithConcurrency(3))
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 95)
	for i := range texts {
		texts[i] = strings.Repeat("x", i+1)
	}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.calls.Load(); got != 10 {
		t.Errorf("%d requests for 95 texts in batches of 10, want 10", got)
	}
	if got := d.maxInFlight.Load(); got > 3 {
		t.Errorf("%d requests in flight, limit 3", got)
	}
	for i, v := range vecs {
		if int(v[0]) != i+1 {
			t.Fatalf("vector %d belongs to text of length %v: order lost", i, v[0])
		}
	}
	if e.Name() != "fake/embed" {
		t.Errorf("Name() = %q", e.Name())
	}
}

func TestModelEmbedderErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	newE := func(d llm.ChatModel) *ModelEmbedder {
		e, err := NewModelEmbedder(llm.New(d, llm.WithName("fake/embed"), llm.WithRetries(0)), WithBatchSize(2))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	if _, err := newE(&fakeDriver{short: true}).Embed(ctx, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "1 vectors for 2 texts") {
		t.Errorf("short response: %v", err)
	}
	if _, err := newE(&fakeDriver{failOn: "c"}).Embed(ctx, []string{"a", "b", "c", "d"}); err == nil || !strings.Contains(err.Error(), "model exploded") {
		t.Errorf("failing batch: %v", err)
	}
	if _, err := newE(&chatOnly{&fakeDriver{}}).Embed(ctx, []string{"a"}); !errors.Is(err, llm.ErrUnsupported) {
		t.Errorf("chat-only model: %v, want ErrUnsupported", err)
	}
	if out, err := newE(&fakeDriver{}).Embed(ctx, nil); err != nil || len(out) != 0 {
		t.Errorf("no texts: %v %v", out, err)
	}
	for _, opts := range [][]EmbedOption{{WithBatchSize(0)}, {WithConcurrency(0)}, {WithDimensions(-1)}} {
		if _, err := NewModelEmbedder(llm.New(&fakeDriver{}), opts...); err == nil {
			t.Error("bad option accepted")
		}
	}
	if _, err := NewModelEmbedder(nil); err == nil {
		t.Error("nil model accepted")
	}
}

// countingEmbedder embeds text as [len, 1] and counts the texts it saw.
type countingEmbedder struct {
	mu    sync.Mutex
	texts []string
}

func (c *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.texts = append(c.texts, texts...)
	c.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

func TestCachedEmbedder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inner := &countingEmbedder{}
	cache := NewMemoryCache(1 << 20)
	e := NewCachedEmbedder(inner, "m1", cache)

	got, err := e.Embed(ctx, []string{"aa", "b", "aa", "ccc"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"aa", "b", "ccc"}; !equalStrings(inner.texts, want) {
		t.Errorf("embedded %q, want each distinct text once: %q", inner.texts, want)
	}
	for i, n := range []float32{2, 1, 2, 3} {
		if got[i][0] != n {
			t.Errorf("vector %d = %v", i, got[i])
		}
	}
	inner.texts = nil
	if _, err := e.Embed(ctx, []string{"ccc", "aa", "new"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"new"}; !equalStrings(inner.texts, want) {
		t.Errorf("second call embedded %q, want only %q", inner.texts, want)
	}
	// Another model name shares nothing.
	inner.texts = nil
	if _, err := NewCachedEmbedder(inner, "m2", cache).Embed(ctx, []string{"aa"}); err != nil || len(inner.texts) != 1 {
		t.Errorf("other model hit the cache: %q %v", inner.texts, err)
	}
	if cache.Len() != 5 {
		t.Errorf("cache holds %d vectors, want 5", cache.Len())
	}
	if CacheKey("m", "t") == CacheKey("m2", "t") || CacheKey("m", "t") == CacheKey("m", "t2") || CacheKey("ab", "c") == CacheKey("a", "bc") {
		t.Error("CacheKey does not separate model and text")
	}
}

type failingCache struct{}

func (failingCache) Get(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("cache down")
}
func (failingCache) Put(context.Context, []string, [][]float32) error { return nil }

func TestCachedEmbedderCacheError(t *testing.T) {
	t.Parallel()
	_, err := NewCachedEmbedder(&countingEmbedder{}, "m", failingCache{}).Embed(context.Background(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "cache down") {
		t.Fatalf("error %v, want the cache's", err)
	}
}

func TestMemoryCacheEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vec := []float32{1, 2, 3, 4}
	size := entrySize("k1", vec)
	c := NewMemoryCache(2 * size) // room for two entries
	_ = c.Put(ctx, []string{"k1", "k2"}, [][]float32{vec, vec})
	_, _ = c.Get(ctx, []string{"k1"}) // k1 is now the most recent
	_ = c.Put(ctx, []string{"k3"}, [][]float32{vec})
	got, _ := c.Get(ctx, []string{"k1", "k2", "k3"})
	if got[0] == nil || got[1] != nil || got[2] == nil {
		t.Errorf("after eviction: k1 %v, k2 %v, k3 %v; want k2 evicted", got[0], got[1], got[2])
	}
	if c.Len() != 2 {
		t.Errorf("Len %d, want 2", c.Len())
	}
	// Stored vectors are copies.
	vec[0] = 99
	got, _ = c.Get(ctx, []string{"k3"})
	if got[0][0] != 1 {
		t.Error("cache shares the caller's vector")
	}
	// An entry bigger than the whole cache is not stored.
	_ = c.Put(ctx, []string{"huge"}, [][]float32{make([]float32, 1000)})
	if got, _ := c.Get(ctx, []string{"huge"}); got[0] != nil {
		t.Error("oversized entry stored")
	}
	if err := c.Put(ctx, []string{"a"}, nil); err == nil {
		t.Error("mismatched Put accepted")
	}
}
