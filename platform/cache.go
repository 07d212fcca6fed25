package platform

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/platform/meta"
)

// cache keeps objects read from the metadata store for a while. Entries are
// invalidated at once when the object changes through this replica, and
// through the bus when it changes through another one; the TTL bounds
// staleness if an invalidation message is lost.
type cache[T any] struct {
	ttl  time.Duration
	load func(ctx context.Context, tenant, id string) (T, error)

	mu      sync.RWMutex
	entries map[string]cacheEntry[T]
	// gen counts invalidations: a value loaded while one happened is not
	// kept, as it may predate the change.
	gen uint64
}

type cacheEntry[T any] struct {
	v       T
	expires time.Time
}

func newCache[T any](ttl time.Duration, load func(ctx context.Context, tenant, id string) (T, error)) *cache[T] {
	return &cache[T]{ttl: ttl, load: load, entries: map[string]cacheEntry[T]{}}
}

func cacheKey(tenant, id string) string { return tenant + "\x00" + id }

// get returns the object for (tenant, id), from the cache when fresh.
func (c *cache[T]) get(ctx context.Context, id string) (T, error) { return c.getIn(ctx, "", id) }

func (c *cache[T]) getIn(ctx context.Context, tenant, id string) (T, error) {
	k := cacheKey(tenant, id)
	now := time.Now()
	c.mu.RLock()
	e, ok := c.entries[k]
	gen := c.gen
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.v, nil
	}
	v, err := c.load(ctx, tenant, id)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.gen != gen {
		c.mu.Unlock()
		return v, nil
	}
	if len(c.entries) > 100_000 {
		// A crude bound: drop everything rather than grow without limit.
		clear(c.entries)
	}
	c.entries[k] = cacheEntry[T]{v: v, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return v, nil
}

// put stores v for (tenant, id), as a load would have.
func (c *cache[T]) put(tenant, id string, v T) {
	c.mu.Lock()
	if len(c.entries) > 100_000 {
		clear(c.entries)
	}
	c.entries[cacheKey(tenant, id)] = cacheEntry[T]{v: v, expires: time.Now().Add(c.ttl)}
	c.mu.Unlock()
}

// invalidate forgets (tenant, id).
func (c *cache[T]) invalidate(tenant, id string) {
	c.mu.Lock()
	delete(c.entries, cacheKey(tenant, id))
	c.gen++
	c.mu.Unlock()
}

// bus spreads cache invalidations: in-process always, and between replicas
// through Redis pub/sub when Redis is configured.
type bus struct {
	rdb    redis.UniversalClient
	origin string // this replica, so that it skips its own messages
	log    *slog.Logger
	mu     sync.RWMutex
	subs   map[string][]func(tenant, id string)
	cancel context.CancelFunc
	done   chan struct{}
}

const busChannel = "weft:invalidate"

func newBus(rdb redis.UniversalClient, log *slog.Logger) *bus {
	b := &bus{rdb: rdb, log: log, subs: map[string][]func(string, string){}, origin: meta.NewID("replica")}
	if rdb != nil {
		ctx, cancel := context.WithCancel(context.Background())
		b.cancel, b.done = cancel, make(chan struct{})
		ps := rdb.Subscribe(ctx, busChannel)
		go b.listen(ctx, ps)
	}
	return b
}

func (b *bus) listen(ctx context.Context, ps *redis.PubSub) {
	defer close(b.done)
	defer ps.Close()
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			parts := strings.SplitN(m.Payload, "\x00", 4)
			if len(parts) != 4 || parts[0] == b.origin {
				continue
			}
			b.deliver(parts[1], parts[2], parts[3])
		}
	}
}

func (b *bus) subscribe(topic string, f func(tenant, id string)) {
	b.mu.Lock()
	b.subs[topic] = append(b.subs[topic], f)
	b.mu.Unlock()
}

func (b *bus) deliver(topic, tenant, id string) {
	b.mu.RLock()
	fs := b.subs[topic]
	b.mu.RUnlock()
	for _, f := range fs {
		f(tenant, id)
	}
}

// publish invalidates (tenant, id) of topic here and on every replica.
func (b *bus) publish(ctx context.Context, topic, tenant, id string) {
	b.deliver(topic, tenant, id)
	b.publishRemote(ctx, topic, tenant, id)
}

// publishRemote tells the other replicas only.
func (b *bus) publishRemote(ctx context.Context, topic, tenant, id string) {
	if b.rdb != nil {
		if err := b.rdb.Publish(ctx, busChannel, b.origin+"\x00"+topic+"\x00"+tenant+"\x00"+id).Err(); err != nil {
			b.log.WarnContext(ctx, "cache invalidation not published; other replicas see the change within the cache TTL", "topic", topic, "err", err)
		}
	}
}

func (b *bus) close() {
	if b.cancel != nil {
		b.cancel()
		<-b.done
	}
}
