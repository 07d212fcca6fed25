package platform

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Limiter decides whether a caller may make a request now.
type Limiter interface {
	// Allow takes n tokens from key's bucket, all of them or none: a
	// request takes one, an MCP batch one per call (see mcphttp.go). When
	// the bucket holds fewer than n it returns false and how long until it
	// holds n (which it never does when n exceeds the burst).
	Allow(ctx context.Context, key string, n int) (ok bool, retryAfter time.Duration, err error)
}

// tokenBucket is the in-process Limiter: rate tokens a second, up to burst.
type tokenBucket struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newTokenBucket(rate float64, burst int) *tokenBucket {
	return &tokenBucket{rate: rate, burst: float64(burst), now: time.Now, buckets: map[string]*bucket{}}
}

func (tb *tokenBucket) Allow(_ context.Context, key string, n int) (bool, time.Duration, error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	now := tb.now()
	b, ok := tb.buckets[key]
	if !ok {
		b = &bucket{tokens: tb.burst, last: now}
		tb.buckets[key] = b
	}
	b.tokens = math.Min(tb.burst, b.tokens+now.Sub(b.last).Seconds()*tb.rate)
	b.last = now
	if b.tokens >= float64(n) {
		b.tokens -= float64(n)
		return true, 0, nil
	}
	return false, time.Duration((float64(n) - b.tokens) / tb.rate * float64(time.Second)), nil
}

// redisBucket is the token bucket kept in Redis, shared by every replica.
// The script refills and takes a token atomically, using the server's clock
// so replicas with skewed clocks agree.
type redisBucket struct {
	rdb   redis.UniversalClient
	rate  float64
	burst int
}

var bucketScript = redis.NewScript(`
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local b = redis.call('HMGET', KEYS[1], 'tokens', 'last')
local tokens = tonumber(b[1]) or burst
local last = tonumber(b[2]) or now
tokens = math.min(burst, tokens + (now - last) * rate)
local ok = 0
if tokens >= n then tokens = tokens - n; ok = 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'last', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
local wait = 0
if ok == 0 then wait = math.ceil((n - tokens) / rate * 1000) end
return {ok, wait}
`)

func (rb *redisBucket) Allow(ctx context.Context, key string, n int) (bool, time.Duration, error) {
	res, err := bucketScript.Run(ctx, rb.rdb, []string{"weft:ratelimit:{" + key + "}"},
		strconv.FormatFloat(rb.rate, 'f', -1, 64), rb.burst, n).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	return res[0] == 1, time.Duration(res[1]) * time.Millisecond, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
