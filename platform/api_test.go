package platform

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/memory/sqlstore"
	"github.com/weftlabs/weft/platform/meta"
)

func TestAuthentication(t *testing.T) {
	e := newEnv(t, nil)
	tests := []struct {
		name, header string
	}{
		{"missing", ""},
		{"not bearer", "Basic abc"},
		{"malformed", "Bearer nope"},
		{"unknown id", "Bearer wk_key_aaaaaaaaaaaaaaaa_secret"},
		{"wrong secret", "Bearer " + e.admin[:strings.LastIndexByte(e.admin, '_')] + "_wrongsecret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", e.http.URL+"/v1/agents", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
		})
	}
	if resp := e.do(e.admin, "GET", "/v1/agents", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("admin key: %d", resp.StatusCode)
	}
}

func TestAdminKeyFromEnvironment(t *testing.T) {
	e := newEnv(t, nil)
	const key = "my-very-own-admin-key-123"
	if _, err := Bootstrap(context.Background(), e.srv.meta, key); err != nil {
		t.Fatal(err)
	}
	if resp := e.do(key, "GET", "/v1/agents", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("WEFT_ADMIN_KEY refused: %d %s", resp.StatusCode, body(resp))
	}
	if _, err := Bootstrap(context.Background(), e.srv.meta, "short"); err == nil {
		t.Fatal("a short WEFT_ADMIN_KEY was accepted")
	}
}

func TestKeysAndTenantIsolation(t *testing.T) {
	e := newEnv(t, nil)
	var k keyResponse
	resp := e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "other", "tenant": "globex"}, &k)
	if resp.StatusCode != http.StatusCreated || k.Key == "" || k.Tenant != "globex" {
		t.Fatalf("create key: %d %+v", resp.StatusCode, k)
	}
	a := e.createAgent(e.admin, map[string]any{"name": "support"})

	// The other tenant sees nothing of the default tenant's, and gets 404s.
	var agents []meta.Agent
	e.do(k.Key, "GET", "/v1/agents", nil, &agents)
	if len(agents) != 0 {
		t.Fatalf("tenant globex sees %d agents", len(agents))
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/agents/" + a.ID},
		{"PUT", "/v1/agents/" + a.ID},
		{"DELETE", "/v1/agents/" + a.ID},
		{"POST", "/v1/agents/" + a.ID + "/chat"},
	} {
		var b any
		if c.method != "GET" && c.method != "DELETE" {
			b = map[string]any{"name": "x", "query": "hi"}
		}
		e.wantError(e.do(k.Key, c.method, c.path, b, nil), http.StatusNotFound, CodeNotFound)
	}
	// A non-admin key manages no keys, not even its own tenant's.
	e.wantError(e.do(k.Key, "POST", "/v1/api-keys", map[string]any{"name": "x", "tenant": "default"}, nil), http.StatusForbidden, CodeForbidden)
	e.wantError(e.do(k.Key, "POST", "/v1/api-keys", map[string]any{"name": "x"}, nil), http.StatusForbidden, CodeForbidden)
	e.wantError(e.do(k.Key, "GET", "/v1/api-keys", nil, nil), http.StatusForbidden, CodeForbidden)
	e.wantError(e.do(k.Key, "DELETE", "/v1/api-keys/"+k.ID, nil, nil), http.StatusForbidden, CodeForbidden)
	// The admin lists another tenant's keys without secrets, and revocation works at once.
	var keys []keyResponse
	e.do(e.admin, "GET", "/v1/api-keys?tenant=globex", nil, &keys)
	if len(keys) != 1 || keys[0].Key != "" || keys[0].ID != k.ID || keys[0].Tenant != "globex" {
		t.Fatalf("list keys = %+v", keys)
	}
	e.wantError(e.do(e.admin, "GET", "/v1/api-keys?tenant=nobody", nil, nil), http.StatusNotFound, CodeNotFound)
	if resp := e.do(e.admin, "DELETE", "/v1/api-keys/"+k.ID, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body(resp))
	}
	e.wantError(e.do(k.Key, "GET", "/v1/agents", nil, nil), http.StatusUnauthorized, CodeUnauthorized)
}

func TestAgentCRUDAndValidation(t *testing.T) {
	e := newEnv(t, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "helper", "system_prompt": "be kind", "unknown_field": 1})
	if a.ContextWindowTokens != 4096 || a.ReserveTokens != 512 || a.Retrieval.TopK != 5 || a.Retrieval.Mode != "hybrid" ||
		a.MaxToolRounds != 5 || a.MaxDelegateDepth != 3 || !a.Enabled || a.ID == "" {
		t.Fatalf("defaults not applied: %+v", a)
	}
	e.wantError(e.do(e.admin, "POST", "/v1/agents", map[string]any{"name": "helper"}, nil), http.StatusConflict, CodeConflict)

	bad := []struct {
		body  string
		field string
	}{
		{`{}`, `"name"`},
		{`{"name": 5}`, `"name"`},
		{`{"name": "x", "temperature": "hot"}`, `"temperature"`},
		{`{"name": "x", "temperature": 3}`, `"temperature"`},
		{`{"name": "x", "context_window_tokens": 10}`, `"context_window_tokens"`},
		{`{"name": "x", "reserve_tokens": 5000}`, `"reserve_tokens"`},
		{`{"name": "x", "retrieval": {"mode": "psychic"}}`, `"retrieval.mode"`},
		{`{"name": "x", "model": "nosuch/model"}`, `"model"`},
		{`{"name": "x", "delegate_agent_ids": ["agt_missing"]}`, `"delegate_agent_ids"`},
		{`{"name": "x", "max_tool_rounds": 1.5}`, `"max_tool_rounds"`},
		{`[1,2]`, `JSON object`},
		{`{"name": "x"`, `truncated`},
	}
	for _, b := range bad {
		eb := e.wantError(e.do(e.admin, "POST", "/v1/agents", b.body, nil), http.StatusBadRequest, CodeInvalidRequest)
		if !strings.Contains(eb.Error.Message, b.field) {
			t.Errorf("%s: message %q does not name %s", b.body, eb.Error.Message, b.field)
		}
	}

	// PUT merges: absent fields keep their values.
	var up meta.Agent
	resp := e.do(e.admin, "PUT", "/v1/agents/"+a.ID, map[string]any{"temperature": 0.2}, &up)
	if resp.StatusCode != http.StatusOK || up.SystemPrompt != "be kind" || up.Temperature == nil || *up.Temperature != 0.2 {
		t.Fatalf("PUT = %d %+v", resp.StatusCode, up)
	}
	var got meta.Agent
	e.do(e.admin, "GET", "/v1/agents/"+a.ID, nil, &got)
	if got.Temperature == nil || *got.Temperature != 0.2 {
		t.Fatalf("GET after PUT served a stale agent: %+v", got)
	}
	if resp := e.do(e.admin, "DELETE", "/v1/agents/"+a.ID, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE = %d", resp.StatusCode)
	}
	e.wantError(e.do(e.admin, "GET", "/v1/agents/"+a.ID, nil, nil), http.StatusNotFound, CodeNotFound)
}

func TestOversizedBody(t *testing.T) {
	e := newEnv(t, nil)
	big := `{"name": "` + strings.Repeat("x", MaxBodyBytes) + `"}`
	e.wantError(e.do(e.admin, "POST", "/v1/agents", big, nil), http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.RateLimit, c.RateBurst = 0.5, 2 })
	for i := range 2 {
		if resp := e.do(e.admin, "GET", "/v1/agents", nil, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d within the burst: %d", i, resp.StatusCode)
		}
	}
	resp := e.do(e.admin, "GET", "/v1/agents", nil, nil)
	e.wantError(resp, http.StatusTooManyRequests, CodeRateLimited)
	if ra := resp.Header.Get("Retry-After"); ra != "2" {
		t.Fatalf("Retry-After = %q, want 2 (one token at 0.5/s)", ra)
	}
}

func TestTokenBucketRefills(t *testing.T) {
	now := time.Unix(1000, 0)
	tb := newTokenBucket(1, 1)
	tb.now = func() time.Time { return now }
	ctx := context.Background()
	if ok, _, _ := tb.Allow(ctx, "k", 1); !ok {
		t.Fatal("first request refused")
	}
	if ok, wait, _ := tb.Allow(ctx, "k", 1); ok || wait != time.Second {
		t.Fatalf("second = %v, %v; want refused for 1s", ok, wait)
	}
	if ok, _, _ := tb.Allow(ctx, "other", 1); !ok {
		t.Fatal("buckets are not per key")
	}
	now = now.Add(time.Second)
	if ok, _, _ := tb.Allow(ctx, "k", 1); !ok {
		t.Fatal("not refilled after 1s")
	}
}

// TestLimitersTakeN: both limiters take n tokens at once or none, and say
// how long until n are there (an MCP batch takes one per request).
func TestLimitersTakeN(t *testing.T) {
	now := time.Unix(1000, 0)
	// Other test runs may share the Redis: a key of this run's own.
	suffix := meta.NewID("k")
	tb := newTokenBucket(2, 5)
	tb.now = func() time.Time { return now }
	limiters := map[string]Limiter{"memory": tb}
	if url := os.Getenv("WEFT_TEST_REDIS_URL"); url != "" {
		ro, err := redis.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(ro)
		limiters["redis"] = &redisBucket{rdb: rdb, rate: 0.001, burst: 5} // too slow to refill during the test
		t.Cleanup(func() {
			rdb.Del(context.Background(), "weft:ratelimit:{takeN-redis-"+suffix+"}")
			rdb.Close()
		})
	}
	for name, l := range limiters {
		key := "takeN-" + name + "-" + suffix
		ctx := context.Background()
		if ok, _, err := l.Allow(ctx, key, 3); !ok || err != nil {
			t.Fatalf("%s: 3 of 5 refused: %v", name, err)
		}
		ok, wait, err := l.Allow(ctx, key, 3)
		if ok || err != nil || wait <= 0 {
			t.Fatalf("%s: 3 of 2 = %v, %v, %v; want refused with a wait", name, ok, wait, err)
		}
		if ok, _, _ := l.Allow(ctx, key, 2); !ok {
			t.Fatalf("%s: the refused 3 took tokens: 2 of 2 refused", name)
		}
		if ok, _, _ := l.Allow(ctx, key, 1); ok {
			t.Fatalf("%s: a token from an empty bucket", name)
		}
	}
	// The wait is until n tokens are there.
	if _, wait, _ := tb.Allow(context.Background(), "takeN-memory-wait", 6); wait != 500*time.Millisecond {
		t.Fatalf("6 of 5 at 2/s: wait %v, want 500ms", wait)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	e := newEnv(t, nil)
	for _, p := range []string{"/healthz", "/readyz"} {
		if resp := e.do("", "GET", p, nil, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s = %d %s", p, resp.StatusCode, body(resp))
		}
	}
	e.do(e.admin, "GET", "/v1/agents", nil, nil)
	resp := e.do("", "GET", "/metrics", nil, nil)
	b := body(resp)
	for _, want := range []string{"weft_http_requests_total", `route="GET /v1/agents"`, "weft_active_streams"} {
		if !strings.Contains(b, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id")
	}
}

func TestUnknownRoute(t *testing.T) {
	e := newEnv(t, nil)
	e.wantError(e.do(e.admin, "GET", "/v1/nothing", nil, nil), http.StatusNotFound, CodeNotFound)
}

// readyz checks the session store when it can be pinged.
func TestReadyzChecksSessions(t *testing.T) {
	e := newEnv(t, nil)
	store, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	e.srv.sessions = store
	var got struct {
		Status string
		Checks map[string]string
	}
	e.do(e.admin, "GET", "/readyz", nil, &got)
	if got.Status != "ready" || got.Checks["sessions"] != "ok" {
		t.Fatalf("readyz = %+v", got)
	}
	store.Close()
	resp := e.do(e.admin, "GET", "/readyz", nil, &got)
	if resp.StatusCode != http.StatusServiceUnavailable || got.Status != "unavailable" || got.Checks["sessions"] == "ok" {
		t.Fatalf("readyz with a closed store = %d %+v", resp.StatusCode, got)
	}
	// Without a key: the verdict only, no error text.
	resp = e.do("", "GET", "/readyz", nil, nil)
	if b := strings.TrimSpace(body(resp)); resp.StatusCode != http.StatusServiceUnavailable || b != `{"status":"unavailable"}` {
		t.Fatalf("anonymous readyz with a closed store = %d %s", resp.StatusCode, b)
	}
}
