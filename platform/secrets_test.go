package platform

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/tool/secretref"
)

// Values of the server's environment in these tests: none may reach a
// tenant.
const (
	serverAdminKey  = "weft_admin_key_of_the_server_0123456789"
	serverOpenAIKey = "sk-server-openai-key-0123456789"
	allowedToken    = "allowed-operator-token-0123"
	tenantSecret    = "tenant-secret-value-0123"
)

// echoTarget records every request's headers and echoes them in its body,
// as a debugging endpoint would.
type echoTarget struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func newEchoTarget(t *testing.T) *echoTarget {
	t.Helper()
	et := &echoTarget{}
	et.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		et.mu.Lock()
		et.seen = append(et.seen, r.Header.Clone())
		et.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"echo": r.Header})
	}))
	t.Cleanup(et.Close)
	return et
}

// sawServerSecret reports whether any request carried a server secret.
func (et *echoTarget) sawServerSecret() bool {
	et.mu.Lock()
	defer et.mu.Unlock()
	for _, h := range et.seen {
		for _, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, serverAdminKey) || strings.Contains(v, serverOpenAIKey) {
					return true
				}
			}
		}
	}
	return false
}

func (et *echoTarget) requests() int {
	et.mu.Lock()
	defer et.mu.Unlock()
	return len(et.seen)
}

func secretsEnv(t *testing.T, models map[string]*scripted.Model) *testEnv {
	return newEnv(t, nil, multiModel(models), func(c *Config) {
		c.Getenv = func(k string) string {
			return map[string]string{
				"WEFT_ADMIN_KEY":   serverAdminKey,
				"OPENAI_API_KEY":   serverOpenAIKey,
				"ALLOWED_TOKEN":    allowedToken,
				EnvSecretsAllowEnv: "ALLOWED_TOKEN",
				netguard.AllowEnv:  "127.0.0.1",
			}[k]
		}
	})
}

func TestSecretsAPI(t *testing.T) {
	e := secretsEnv(t, nil)
	a, b := e.tenantKey("acme"), e.tenantKey("globex")
	var info map[string]any
	if resp := e.do(a, "PUT", "/v1/secrets", map[string]any{"name": "tok", "value": tenantSecret}, &info); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, body(resp))
	}
	if _, ok := info["value"]; ok || info["name"] != "tok" {
		t.Fatalf("create answer = %v", info)
	}
	if resp := e.do(a, "POST", "/v1/secrets", map[string]any{"name": "tok", "value": tenantSecret + "-2"}, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("replace = %d %s", resp.StatusCode, body(resp))
	}
	if resp := e.do(a, "PUT", "/v1/secrets/other", map[string]any{"value": "another-value"}, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create by path = %d %s", resp.StatusCode, body(resp))
	}
	resp := e.do(a, "GET", "/v1/secrets", nil, nil)
	raw := body(resp)
	if resp.StatusCode != http.StatusOK || strings.Contains(raw, tenantSecret) || strings.Contains(raw, "another-value") ||
		!strings.Contains(raw, `"name":"other"`) || !strings.Contains(raw, `"name":"tok"`) || !strings.Contains(raw, "updated_at") {
		t.Fatalf("list = %d %s", resp.StatusCode, raw)
	}
	// Another tenant sees, replaces and deletes nothing of acme's.
	if raw := body(e.do(b, "GET", "/v1/secrets", nil, nil)); raw != "[]\n" && raw != "[]" {
		t.Errorf("globex lists %s", raw)
	}
	e.wantError(e.do(b, "DELETE", "/v1/secrets/tok", nil, nil), http.StatusNotFound, CodeNotFound)
	for _, bad := range []map[string]any{
		{"name": "tok", "value": "short"},
		{"name": "bad name", "value": tenantSecret},
		{"name": "", "value": tenantSecret},
		{"name": "tok", "value": "line\nbreak-0123"},
	} {
		e.wantError(e.do(a, "PUT", "/v1/secrets", bad, nil), http.StatusBadRequest, CodeInvalidRequest)
	}
	e.wantError(e.do(a, "PUT", "/v1/secrets/x", map[string]any{"name": "y", "value": tenantSecret}, nil), http.StatusBadRequest, CodeInvalidRequest)
	if resp := e.do(a, "DELETE", "/v1/secrets/other", nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete = %d", resp.StatusCode)
	}
	e.wantError(e.do(a, "DELETE", "/v1/secrets/other", nil, nil), http.StatusNotFound, CodeNotFound)

	// At rest, the value is sealed.
	rec, err := e.srv.meta.(*meta.SQL).Secret(context.Background(), e.tenantOf(a), "tok")
	if err != nil || strings.Contains(string(rec.Sealed), tenantSecret) {
		t.Fatalf("stored secret: %v (clear value stored: %v)", err, strings.Contains(string(rec.Sealed), tenantSecret))
	}
}

// TestSecretRedactedFromToolResults: a tool whose target echoes its request
// headers shows the tenant's secret redacted, in the turn's returned and
// stored tool result and in the answer.
func TestSecretRedactedFromToolResults(t *testing.T) {
	target := newEchoTarget(t)
	models := map[string]*scripted.Model{"caller": scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("echo", `{}`))}
	e := secretsEnv(t, models)
	a := e.tenantKey("acme")
	e.do(a, "PUT", "/v1/secrets", map[string]any{"name": "tok", "value": tenantSecret}, nil)
	var tl toolDef
	if resp := e.do(a, "POST", "/v1/tools", map[string]any{"name": "echo", "kind": "http",
		"http": map[string]any{"method": "GET", "url": target.URL, "headers": map[string]string{"Authorization": "Bearer ${secret:tok}"}}}, &tl); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create tool = %d %s", resp.StatusCode, body(resp))
	}
	if got := tl.HTTP.Headers["Authorization"]; got != "Bearer ${secret:tok}" {
		t.Errorf("stored header = %q", got)
	}
	ag := e.createAgent(a, map[string]any{"name": "caller", "model": "scripted/caller", "tool_ids": []string{tl.ID}})
	var ans api.ChatAnswer
	e.do(a, "POST", "/v1/agents/"+ag.ID+"/chat", map[string]any{"query": "go"}, &ans)
	if target.requests() != 1 || target.seen[0].Get("Authorization") != "Bearer "+tenantSecret {
		t.Fatalf("the target did not get the secret: %v", target.seen)
	}
	if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || !strings.Contains(ans.ToolCalls[0].Result, "Bearer [redacted]") {
		t.Fatalf("tool calls = %+v", ans.ToolCalls)
	}
	msgs := body(e.do(a, "GET", "/v1/sessions/"+ans.SessionID+"/messages", nil, nil))
	all, _ := json.Marshal(ans)
	for what, s := range map[string]string{"answer": string(all), "stored messages": msgs} {
		if strings.Contains(s, tenantSecret) {
			t.Errorf("%s hold the secret: %s", what, s)
		}
	}
	if !strings.Contains(msgs, "Bearer [redacted]") {
		t.Errorf("stored tool result not found redacted: %s", msgs)
	}

	// Streaming shows the same redacted result.
	resp := e.do(a, "POST", "/v1/agents/"+ag.ID+"/chat", map[string]any{"query": "go", "stream": true}, nil)
	if raw := body(resp); strings.Contains(raw, tenantSecret) || !strings.Contains(raw, "[redacted]") {
		t.Errorf("stream = %s", raw)
	}
}

// TestTenantCannotReadServerEnvironment: every way a tenant could name a
// variable of the server's environment is refused with a message that says
// what to do, and nothing reaches the target.
func TestTenantCannotReadServerEnvironment(t *testing.T) {
	target := newEchoTarget(t)
	e := secretsEnv(t, nil)
	a := e.tenantKey("acme")
	for _, ref := range []string{"${WEFT_ADMIN_KEY}", "Bearer ${OPENAI_API_KEY}", "${ALLOWED_TOKEN}"} {
		for _, def := range []map[string]any{
			{"name": "h", "kind": "http", "http": map[string]any{"url": target.URL, "headers": map[string]string{"Authorization": ref}}},
			{"name": "m", "kind": "mcp", "mcp": map[string]any{"transport": "http", "url": target.URL, "headers": map[string]string{"Authorization": ref}}},
		} {
			eb := e.wantError(e.do(a, "POST", "/v1/tools", def, nil), http.StatusBadRequest, CodeInvalidRequest)
			if !strings.Contains(eb.Error.Message, "PUT /v1/secrets") || !strings.Contains(eb.Error.Message, "${secret:") {
				t.Errorf("message %q does not say what to do", eb.Error.Message)
			}
		}
	}
	// A stdio MCP server (whose env could name variables) is admin-only.
	e.wantError(e.do(a, "POST", "/v1/tools", map[string]any{"name": "s", "kind": "mcp",
		"mcp": map[string]any{"transport": "stdio", "command": "env", "env": map[string]string{"X": "${OPENAI_API_KEY}"}}}, nil), http.StatusForbidden, CodeForbidden)
	// Remote agents: api_key_env, an environment reference or a clear key.
	for _, rm := range []map[string]any{
		{"url": target.URL, "agent_id": "x", "api_key_env": "WEFT_ADMIN_KEY"},
		{"url": target.URL, "agent_id": "x", "api_key_env": "ALLOWED_TOKEN"},
		{"url": target.URL, "agent_id": "x", "api_key": "${OPENAI_API_KEY}"},
		{"url": target.URL, "agent_id": "x", "api_key": "sk-literal-key-in-clear"},
	} {
		e.wantError(e.do(a, "POST", "/v1/agents", map[string]any{"name": "r", "remote": rm}, nil), http.StatusBadRequest, CodeInvalidRequest)
	}

	// An admin may reference only the variables the operator allows.
	eb := e.wantError(e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "h", "kind": "http",
		"http": map[string]any{"url": target.URL, "headers": map[string]string{"Authorization": "${OPENAI_API_KEY}"}}}, nil), http.StatusBadRequest, CodeInvalidRequest)
	if !strings.Contains(eb.Error.Message, EnvSecretsAllowEnv) {
		t.Errorf("admin refusal %q does not name %s", eb.Error.Message, EnvSecretsAllowEnv)
	}
	if resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "h", "kind": "http",
		"http": map[string]any{"url": target.URL, "headers": map[string]string{"Authorization": "${ALLOWED_TOKEN}"}}}, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("admin tool with an allowed variable = %d %s", resp.StatusCode, body(resp))
	}
	if target.sawServerSecret() {
		t.Fatal("a server secret reached the target")
	}
}

// TestStoredEnvReferencesFailAtUse: records stored before tenant secrets
// (wave 1) that name the environment fail when used, with the same advice,
// and send nothing.
func TestStoredEnvReferencesFailAtUse(t *testing.T) {
	target := newEchoTarget(t)
	models := map[string]*scripted.Model{"caller": scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("old", `{}`))}
	e := secretsEnv(t, models)
	a := e.tenantKey("acme")
	tenant := e.tenantOf(a)
	ctx := context.Background()
	store := e.srv.meta.(*meta.SQL)
	cfg, _ := json.Marshal(toolDef{Name: "old", Kind: kindHTTP, HTTP: &httpDef{Method: "GET", URL: target.URL, Headers: map[string]string{"Authorization": "Bearer ${OPENAI_API_KEY}"}}})
	if err := store.CreateTool(ctx, meta.Tool{ID: "tool_old", TenantID: tenant, Name: "old", Kind: kindHTTP, Config: cfg, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ag := e.createAgent(a, map[string]any{"name": "caller", "model": "scripted/caller", "tool_ids": []string{"tool_old"}})
	var ans api.ChatAnswer
	e.do(a, "POST", "/v1/agents/"+ag.ID+"/chat", map[string]any{"query": "go"}, &ans)
	if len(ans.ToolCalls) != 1 || ans.ToolCalls[0].OK || !strings.Contains(ans.ToolCalls[0].Error, "PUT /v1/secrets") {
		t.Fatalf("tool calls = %+v", ans.ToolCalls)
	}
	// A wave-1 remote agent naming api_key_env.
	old := meta.Agent{ID: "agt_old", TenantID: tenant, Name: "old-remote", Enabled: true,
		Remote: &meta.Remote{URL: target.URL, AgentID: "x", APIKeyEnv: "WEFT_ADMIN_KEY"}, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	old.Defaults()
	if err := store.CreateAgent(ctx, old); err != nil {
		t.Fatal(err)
	}
	resp := e.do(a, "POST", "/v1/agents/agt_old/chat", map[string]any{"query": "hi"}, nil)
	if raw := body(resp); resp.StatusCode == http.StatusOK || !strings.Contains(raw, "PUT /v1/secrets") {
		t.Errorf("old remote agent chat = %d %s", resp.StatusCode, raw)
	}
	if target.requests() != 0 {
		t.Fatalf("the target was reached %d times", target.requests())
	}
}

// TestRemoteAgentSecret: a remote agent's api_key is a secret of its own
// tenant, resolved per call; another tenant's secret of the same name is
// never used.
func TestRemoteAgentSecret(t *testing.T) {
	remote := newEnv(t, scripted.New(scripted.Reply("remote hello")))
	ra := remote.createAgent(remote.admin, map[string]any{"name": "far"})
	e := secretsEnv(t, nil)
	a, b := e.tenantKey("acme"), e.tenantKey("globex")
	e.do(a, "PUT", "/v1/secrets", map[string]any{"name": "remote", "value": remote.admin}, nil)
	proxy := e.createAgent(a, map[string]any{"name": "proxy", "remote": map[string]any{"url": remote.http.URL, "agent_id": ra.ID, "api_key": "${secret:remote}"}})
	var ans api.ChatAnswer
	if resp := e.do(a, "POST", "/v1/agents/"+proxy.ID+"/chat", map[string]any{"query": "hi"}, &ans); resp.StatusCode != http.StatusOK || ans.Answer != "remote hello" {
		t.Fatalf("chat = %d %+v", resp.StatusCode, ans)
	}
	// globex's agent names acme's secret: it is not globex's.
	other := e.createAgent(b, map[string]any{"name": "proxy", "remote": map[string]any{"url": remote.http.URL, "agent_id": ra.ID, "api_key": "${secret:remote}"}})
	resp := e.do(b, "POST", "/v1/agents/"+other.ID+"/chat", map[string]any{"query": "hi"}, nil)
	if raw := body(resp); resp.StatusCode == http.StatusOK || !strings.Contains(raw, "not set in this tenant") || strings.Contains(raw, remote.admin) {
		t.Errorf("globex chat with acme's secret = %d %s", resp.StatusCode, raw)
	}
}

// TestOtherTenantsSecretNotUsed: a tool naming a secret only another tenant
// has fails without sending anything.
func TestOtherTenantsSecretNotUsed(t *testing.T) {
	target := newEchoTarget(t)
	models := map[string]*scripted.Model{"caller": scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("echo", `{}`))}
	e := secretsEnv(t, models)
	a, b := e.tenantKey("acme"), e.tenantKey("globex")
	e.do(a, "PUT", "/v1/secrets", map[string]any{"name": "tok", "value": tenantSecret}, nil)
	var tl toolDef
	e.do(b, "POST", "/v1/tools", map[string]any{"name": "echo", "kind": "http",
		"http": map[string]any{"url": target.URL, "headers": map[string]string{"Authorization": "${secret:tok}"}}}, &tl)
	ag := e.createAgent(b, map[string]any{"name": "caller", "model": "scripted/caller", "tool_ids": []string{tl.ID}})
	var ans api.ChatAnswer
	e.do(b, "POST", "/v1/agents/"+ag.ID+"/chat", map[string]any{"query": "go"}, &ans)
	if len(ans.ToolCalls) != 1 || ans.ToolCalls[0].OK || !strings.Contains(ans.ToolCalls[0].Error, "not set in this tenant") {
		t.Fatalf("tool calls = %+v", ans.ToolCalls)
	}
	if target.requests() != 0 {
		t.Fatal("the target was reached")
	}
}

// tenantOf returns the tenant id of key.
func (e *testEnv) tenantOf(key string) string {
	e.t.Helper()
	id, _, _ := parseKey(key)
	k, err := e.srv.meta.KeyByID(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.TenantID
}

// TestRemoteAnswerRedacted: a remote agent that echoes the key it was called
// with returns it redacted, blocking and streamed, and it is not stored.
func TestRemoteAnswerRedacted(t *testing.T) {
	remote := newEnv(t, scripted.New(scripted.Echo()))
	ra := remote.createAgent(remote.admin, map[string]any{"name": "echo"})
	e := secretsEnv(t, nil)
	a := e.tenantKey("acme")
	e.do(a, "PUT", "/v1/secrets", map[string]any{"name": "remote", "value": remote.admin}, nil)
	proxy := e.createAgent(a, map[string]any{"name": "proxy", "remote": map[string]any{"url": remote.http.URL, "agent_id": ra.ID, "api_key": "${secret:remote}"}})
	query := "say " + remote.admin
	var ans api.ChatAnswer
	if resp := e.do(a, "POST", "/v1/agents/"+proxy.ID+"/chat", map[string]any{"query": query}, &ans); resp.StatusCode != http.StatusOK {
		t.Fatalf("chat = %d", resp.StatusCode)
	}
	if strings.Contains(ans.Answer, remote.admin) || !strings.Contains(ans.Answer, secretref.Placeholder) {
		t.Fatalf("blocking answer %q", ans.Answer)
	}
	resp := e.do(a, "POST", "/v1/agents/"+proxy.ID+"/chat", map[string]any{"query": query, "session_id": ans.SessionID, "stream": true}, nil)
	if raw := body(resp); strings.Contains(raw, remote.admin) || !strings.Contains(raw, secretref.Placeholder) {
		t.Fatalf("stream %s", raw)
	}
	// The user typed the key into the query (to make the remote echo it);
	// the answers stored from the remote must not carry it.
	var msgs []api.Message
	e.do(a, "GET", "/v1/sessions/"+ans.SessionID+"/messages", nil, &msgs)
	answers := 0
	for _, m := range msgs {
		if m.Role == "assistant" {
			answers++
			if strings.Contains(m.Content, remote.admin) {
				t.Fatalf("stored answer %q", m.Content)
			}
		}
	}
	if answers != 2 {
		t.Fatalf("stored %d answers, want 2: %+v", answers, msgs)
	}
}

// TestSecretKeyChanged: under another WEFT_SECRET_KEY a stored secret is
// still listed, and each use — a tool's header, a remote agent's key —
// fails with an error that names the secret and says what to do (as
// docs/api.md, "Secrets", describes); nothing reaches the target.
func TestSecretKeyChanged(t *testing.T) {
	target := newEchoTarget(t)
	models := map[string]*scripted.Model{"caller": scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("echo", `{}`))}
	e := secretsEnv(t, models)
	a := e.tenantKey("acme")
	e.do(a, "PUT", "/v1/secrets", map[string]any{"name": "tok", "value": tenantSecret}, nil)
	var tl toolDef
	e.do(a, "POST", "/v1/tools", map[string]any{"name": "echo", "kind": "http",
		"http": map[string]any{"url": target.URL, "headers": map[string]string{"Authorization": "${secret:tok}"}}}, &tl)
	ag := e.createAgent(a, map[string]any{"name": "caller", "model": "scripted/caller", "tool_ids": []string{tl.ID}})
	proxy := e.createAgent(a, map[string]any{"name": "proxy", "remote": map[string]any{"url": target.URL, "agent_id": "x", "api_key": "${secret:tok}"}})

	// The same stores, served under another key.
	cfg := e.srv.cfg
	cfg.SecretKey = []byte(strings.Repeat("k", 32))
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	after := *e
	after.srv, after.http = srv, hs

	const want = `secret "tok": the secret was encrypted under another server key; restore the original WEFT_SECRET_KEY or secret.key, or store the secret again`
	if raw := body(after.do(a, "GET", "/v1/secrets", nil, nil)); !strings.Contains(raw, `"name":"tok"`) {
		t.Fatalf("list = %s", raw)
	}
	var ans api.ChatAnswer
	after.do(a, "POST", "/v1/agents/"+ag.ID+"/chat", map[string]any{"query": "go"}, &ans)
	if len(ans.ToolCalls) != 1 || ans.ToolCalls[0].OK || !strings.Contains(ans.ToolCalls[0].Error, want) {
		t.Fatalf("tool calls = %+v", ans.ToolCalls)
	}
	eb := after.wantError(after.do(a, "POST", "/v1/agents/"+proxy.ID+"/chat", map[string]any{"query": "hi"}, nil), http.StatusBadGateway, CodeModelError)
	if !strings.Contains(eb.Error.Message, want) {
		t.Fatalf("remote agent error %q", eb.Error.Message)
	}
	if target.requests() != 0 {
		t.Fatalf("the target was reached %d times", target.requests())
	}
	// Stored again, it works under the new key.
	after.do(a, "PUT", "/v1/secrets/tok", map[string]any{"value": tenantSecret}, nil)
	after.do(a, "POST", "/v1/agents/"+ag.ID+"/chat", map[string]any{"query": "go"}, &ans)
	if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || target.requests() != 1 {
		t.Fatalf("after storing again: tool calls = %+v, %d requests", ans.ToolCalls, target.requests())
	}
}
