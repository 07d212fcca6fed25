package platform

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/provider/scripted"
)

// testGuard is an outbound guard allowing only the given entries (none:
// public addresses only).
func testGuard(t testing.TB, allow ...string) *netguard.Guard {
	t.Helper()
	g, err := netguard.New(netguard.WithAllow(allow...))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRemoteAgentGuarded: a remote agent's URL goes through the outbound
// guard. A literal internal address is refused at registration; a name that
// resolves to one is refused when called, and the target is never reached.
func TestRemoteAgentGuarded(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"answer":"internal data"}`))
	}))
	defer target.Close()
	port := target.URL[strings.LastIndexByte(target.URL, ':'):]

	e := newEnv(t, scripted.New(scripted.Reply("local")))
	user := e.tenantKey("acme")
	for _, u := range []string{target.URL, "http://169.254.169.254/", "http://[::1]" + port, "http://metadata.google.internal/"} {
		resp := e.do(user, "POST", "/v1/agents", map[string]any{"name": "r", "remote": map[string]any{"url": u, "agent_id": "x"}}, nil)
		e.wantError(resp, http.StatusBadRequest, CodeInvalidRequest)
	}
	// A host name is only checked once resolved, at the call.
	proxy := e.createAgent(user, map[string]any{"name": "proxy", "remote": map[string]any{"url": "http://localhost" + port, "agent_id": "x"}})
	resp := e.do(user, "POST", "/v1/agents/"+proxy.ID+"/chat", map[string]any{"query": "hi"}, nil)
	if resp.StatusCode == http.StatusOK || !strings.Contains(body(resp), "refused") {
		t.Errorf("chat with a remote agent on loopback = %d %s, want a refusal", resp.StatusCode, body(resp))
	}
	if hits.Load() != 0 {
		t.Fatalf("the internal target was reached %d times", hits.Load())
	}
}

// tenantKey creates a non-admin key of tenant (created if new).
func (e *testEnv) tenantKey(tenant string) string {
	e.t.Helper()
	var k struct {
		Key string `json:"key"`
	}
	resp := e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "user", "tenant": tenant}, &k)
	if resp.StatusCode != http.StatusCreated || k.Key == "" {
		e.t.Fatalf("create key: %d %s", resp.StatusCode, body(resp))
	}
	return k.Key
}
