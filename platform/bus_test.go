package platform

import (
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// replicas returns two servers over one metadata store and one Redis
// (WEFT_TEST_REDIS_URL): a, made by newEnv with opts, and b, a second
// replica of a's configuration with a Redis client of its own.
func replicas(t *testing.T, opts ...envOption) (a, b *testEnv) {
	t.Helper()
	url := os.Getenv("WEFT_TEST_REDIS_URL")
	if url == "" {
		t.Skip("WEFT_TEST_REDIS_URL not set")
	}
	ro, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	a = newEnv(t, nil, append([]envOption{func(c *Config) { c.Redis = redis.NewClient(ro) }}, opts...)...)
	cfgB := a.srv.cfg
	cfgB.Redis = redis.NewClient(ro)
	srvB, err := New(cfgB)
	if err != nil {
		t.Fatal(err)
	}
	hb := httptest.NewServer(srvB)
	t.Cleanup(func() { hb.Close(); srvB.Close() })
	return a, &testEnv{t: t, srv: srvB, http: hb, admin: a.admin}
}

// Two replicas over one metadata store and one Redis: a change made
// through one is seen by the other at once, though both cache.
func TestReplicasInvalidateThroughRedis(t *testing.T) {
	a, eb := replicas(t, func(c *Config) { c.CacheTTL = time.Hour })

	ag := a.createAgent(a.admin, map[string]any{"name": "shared", "system_prompt": "v1"})
	var got meta.Agent
	eb.do(a.admin, "GET", "/v1/agents/"+ag.ID, nil, &got) // now cached in b
	if got.SystemPrompt != "v1" {
		t.Fatalf("replica b sees %q", got.SystemPrompt)
	}
	a.do(a.admin, "PUT", "/v1/agents/"+ag.ID, map[string]any{"system_prompt": "v2"}, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		eb.do(a.admin, "GET", "/v1/agents/"+ag.ID, nil, &got)
		if got.SystemPrompt == "v2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica b still serves %q an hour-long cache after the update", got.SystemPrompt)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A revoked key stops working on the other replica too.
	var k keyResponse
	a.do(a.admin, "POST", "/v1/api-keys", map[string]any{"name": "temp"}, &k)
	eb.do(k.Key, "GET", "/v1/agents", nil, nil) // cached in b
	a.do(a.admin, "DELETE", "/v1/api-keys/"+k.ID, nil, nil)
	for {
		resp := eb.do(k.Key, "GET", "/v1/agents", nil, nil)
		if resp.StatusCode == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a revoked key still works on replica b")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A session deleted through one replica is gone for the turns of the
	// other, whose session registry cached it.
	var ans api.ChatAnswer
	a.do(a.admin, "POST", "/v1/agents/"+ag.ID+"/chat", map[string]any{"query": "hello"}, &ans)
	if resp := eb.do(a.admin, "POST", "/v1/agents/"+ag.ID+"/chat", map[string]any{"query": "again", "session_id": ans.SessionID}, nil); resp.StatusCode != 200 {
		t.Fatalf("turn on replica b: %s", resp.Status)
	}
	a.do(a.admin, "DELETE", "/v1/sessions/"+ans.SessionID, nil, nil)
	for {
		resp := eb.do(a.admin, "POST", "/v1/agents/"+ag.ID+"/chat", map[string]any{"query": "still there?", "session_id": ans.SessionID}, nil)
		if resp.StatusCode == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica b still runs turns on a deleted session: %s", resp.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The Redis token bucket is shared by replicas: a key's burst is spent
// across them, and the refusal carries Retry-After.
func TestRedisRateLimitSharedByReplicas(t *testing.T) {
	a, eb := replicas(t, func(c *Config) { c.RateLimit, c.RateBurst = 0.2, 3 })
	for i, e := range []*testEnv{a, eb, a} {
		if resp := e.do(a.admin, "GET", "/v1/agents", nil, nil); resp.StatusCode != 200 {
			t.Fatalf("request %d within the shared burst: %d", i, resp.StatusCode)
		}
	}
	resp := eb.do(a.admin, "GET", "/v1/agents", nil, nil)
	eb.wantError(resp, 429, CodeRateLimited)
	if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After = %q", ra)
	}
}
