package platform

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

// bearer adds an API key to every request of an MCP client.
type bearer struct {
	key  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

// mcpClient is a Go SDK client session on the test server's /mcp, with
// the notifications it received.
type mcpClient struct {
	cs       *mcp.ClientSession
	changed  chan struct{}
	mu       sync.Mutex
	progress []string
}

func (e *testEnv) mcpConnect(key string) (*mcpClient, error) {
	return e.mcpConnectVersion(key, "")
}

// mcpConnectVersion connects a client asking for protocol version (the
// SDK's newest when empty).
func (e *testEnv) mcpConnectVersion(key, version string) (*mcpClient, error) {
	c := &mcpClient{changed: make(chan struct{}, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.changed <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, req.Params.Message)
			c.mu.Unlock()
		},
	})
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: e.http.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	c.cs = cs
	e.t.Cleanup(func() { cs.Close() })
	return c, nil
}

func (e *testEnv) mcpClient(key string) *mcpClient {
	return e.mcpClientVersion(key, "")
}

// mcpEras are the protocol versions the main client tests run in: the
// newest, without sessions, and the newest with them.
var mcpEras = []string{"2026-07-28", "2025-11-25"}

// mcpClientVersion connects a client asking for protocol version.
func (e *testEnv) mcpClientVersion(key, version string) *mcpClient {
	e.t.Helper()
	c, err := e.mcpConnectVersion(key, version)
	if err != nil {
		e.t.Fatalf("MCP connect: %v", err)
	}
	if got := c.cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		e.t.Fatalf("MCP client asking for %s got %s", version, got)
	}
	return c
}

func (c *mcpClient) toolNames(t *testing.T) []string {
	t.Helper()
	res, err := c.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range res.Tools {
		names = append(names, x.Name)
	}
	slices.Sort(names)
	return names
}

// waitChanged waits for a notifications/tools/list_changed.
func (c *mcpClient) waitChanged(t *testing.T) {
	t.Helper()
	select {
	case <-c.changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
}

// answerOf decodes a successful agent tool result.
func answerOf(t *testing.T, res *mcp.CallToolResult) mcpAnswer {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", textOf(res))
	}
	var a mcpAnswer
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	if textOf(res) != a.Answer {
		t.Errorf("text content %q, structured answer %q", textOf(res), a.Answer)
	}
	return a
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// TestMCPToolsAndMultiTurn lists the agents as tools and holds a
// two-turn conversation through one of them.
func TestMCPToolsAndMultiTurn(t *testing.T) {
	for _, version := range mcpEras {
		t.Run(version, func(t *testing.T) {
			e := newEnv(t, nil)
			e.createAgent(e.admin, map[string]any{"name": "support", "system_prompt": "You answer questions about our shop.\nBe kind."})
			e.createAgent(e.admin, map[string]any{"name": "Sales Team!"})
			e.createAgent(e.admin, map[string]any{"name": "off", "enabled": false})
			c := e.mcpClientVersion(e.admin, version)

			res, err := c.cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var support *mcp.Tool
			var names []string
			for _, x := range res.Tools {
				names = append(names, x.Name)
				if x.Name == "support" {
					support = x
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, []string{"Sales_Team_", "support"}) {
				t.Fatalf("tools = %v, want the enabled agents, names sanitised", names)
			}
			schema, _ := json.Marshal(support.InputSchema)
			if !strings.Contains(string(schema), `"required":["query"]`) || !strings.Contains(string(schema), `"session_id"`) ||
				support.Title != "support" || !strings.Contains(support.Description, "You answer questions about our shop.") ||
				strings.Contains(support.Description, "Be kind") || support.OutputSchema == nil {
				t.Fatalf("support tool = %+v, schema %s", support, schema)
			}

			first, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "support", Arguments: map[string]any{"query": "my order is late"}})
			if err != nil {
				t.Fatal(err)
			}
			a1 := answerOf(t, first)
			if a1.Answer != "my order is late" || a1.SessionID == "" || a1.MessageID == "" || a1.Usage.TotalTokens == 0 || a1.Sources == nil {
				t.Fatalf("first answer = %+v", a1)
			}
			second, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "support", Arguments: map[string]any{"query": "where is it?", "session_id": a1.SessionID}})
			if err != nil {
				t.Fatal(err)
			}
			a2 := answerOf(t, second)
			if a2.SessionID != a1.SessionID || a2.Answer != "where is it?" || a2.MessageID == a1.MessageID {
				t.Fatalf("second answer = %+v (first %+v)", a2, a1)
			}
			// The model saw the first turn in the second's history.
			reqs := e.model.Requests()
			var got []string
			for _, m := range reqs[len(reqs)-1].Messages {
				got = append(got, string(m.Role)+":"+m.Text())
			}
			want := []string{"system:You answer questions about our shop.\nBe kind.", "user:my order is late", "assistant:my order is late", "user:where is it?"}
			if !slices.Equal(got, want) {
				t.Fatalf("second turn's request = %q, want %q", got, want)
			}

			// Tool errors are results the client's model can read.
			for _, x := range []struct {
				args map[string]any
				want string
			}{
				{map[string]any{}, `"query" is required`},
				{map[string]any{"query": "hi", "session_id": "ses_nope"}, "not found"},
				{map[string]any{"query": 5}, "arguments"},
			} {
				res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "support", Arguments: x.args})
				if err != nil {
					t.Fatal(err)
				}
				if !res.IsError || !strings.Contains(textOf(res), x.want) {
					t.Errorf("call with %v = %+v (%s), want an error result saying %q", x.args, res, textOf(res), x.want)
				}
			}
		})
	}
}

// TestMCPProgress streams a turn as progress notifications.
func TestMCPProgress(t *testing.T) {
	for _, version := range mcpEras {
		t.Run(version, func(t *testing.T) {
			e := newEnv(t, nil)
			e.createAgent(e.admin, map[string]any{"name": "echo"})
			c := e.mcpClientVersion(e.admin, version)
			res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"query": "one two three four"},
				Meta: mcp.Meta{"progressToken": "tok-1"}})
			if err != nil {
				t.Fatal(err)
			}
			a := answerOf(t, res)
			// The notifications precede the result on the request's stream, but
			// the client may hand them to its handler after CallTool returns.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				c.mu.Lock()
				got := strings.Join(c.progress, "")
				n := len(c.progress)
				c.mu.Unlock()
				if got == a.Answer && n >= 4 {
					break
				}
				if len(got) > len(a.Answer) || time.Now().After(deadline) {
					t.Fatalf("progress messages %q (%d), want the answer %q in pieces", got, n, a.Answer)
				}
			}

			// No token, no notifications.
			c.mu.Lock()
			c.progress = nil
			c.mu.Unlock()
			if _, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"query": "quiet please"}}); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.progress) != 0 {
				t.Fatalf("progress without a token: %q", c.progress)
			}
		})
	}
}

// waitPartial waits for the turn of session ss to be stored as a partial
// answer, and for no turn to be running.
func waitPartial(t *testing.T, e *testEnv, sessionID string) {
	t.Helper()
	ss, err := e.srv.meta.Session(context.Background(), e.tenant(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		recs, _ := e.sessions.Load(context.Background(), sessionKey(ss), memory.Window{})
		if len(recs) == 2 && recs[1].Partial && strings.HasPrefix(recs[1].Message.Text(), "word") && e.srv.turns.active() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled turn was not stored as partial: %+v (running turns: %d)", recs, e.srv.turns.active())
		}
	}
}

// TestMCPCancel cancels a streaming turn from the client — the SDK sends
// notifications/cancelled (2025-11-25) or closes the call's request
// (2026-07-28) — and the turn stops, its partial answer kept.
func TestMCPCancel(t *testing.T) {
	for _, version := range mcpEras {
		t.Run(version, func(t *testing.T) {
			slow := &slowModel{started: make(chan struct{})}
			e := newEnv(t, nil, func(c *Config) {
				c.OpenModel = func(spec string) (*llm.Model, error) { return llm.New(slow, llm.WithRetries(0)), nil }
			})
			a := e.createAgent(e.admin, map[string]any{"name": "slow"})
			ss, _ := e.srv.sessionFor(context.Background(), e.tenant(), a, "", "")
			c := e.mcpClientVersion(e.admin, version)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"query": "talk", "session_id": ss.ID}})
				done <- err
			}()
			waitStarted(t, slow)
			cancel()
			if err := <-done; err == nil {
				t.Fatal("the cancelled call succeeded")
			}
			waitPartial(t, e, ss.ID)
			// The session still works.
			if names := c.toolNames(t); !slices.Equal(names, []string{"slow"}) {
				t.Fatalf("tools after cancel = %v", names)
			}
		})
	}
}

// mcpPost sends one JSON-RPC message to /mcp as a raw HTTP request.
func mcpPost(ctx context.Context, t *testing.T, e *testEnv, key, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.http.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		t.Fatal(err)
	}
	return resp
}

// mcpInit opens an MCP session with raw HTTP requests and returns its id.
func mcpInit(t *testing.T, e *testEnv, key string) string {
	t.Helper()
	resp := mcpPost(t.Context(), t, e, key, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, id)
	}
	resp = mcpPost(t.Context(), t, e, key, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", resp.StatusCode)
	}
	return id
}

// TestMCPCloseRequestCancels closes the HTTP request of a tools/call in
// the middle of the turn: the turn stops and its partial answer is kept.
func TestMCPCloseRequestCancels(t *testing.T) {
	slow := &slowModel{started: make(chan struct{})}
	e := newEnv(t, nil, func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) { return llm.New(slow, llm.WithRetries(0)), nil }
	})
	a := e.createAgent(e.admin, map[string]any{"name": "slow"})
	ss, _ := e.srv.sessionFor(context.Background(), e.tenant(), a, "", "")
	sid := mcpInit(t, e, e.admin)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		resp := mcpPost(ctx, t, e, e.admin, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"query":"talk","session_id":"`+ss.ID+`"}}}`)
		if resp != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	waitStarted(t, slow)
	cancel()
	waitPartial(t, e, ss.ID)
}

// TestMCPListChanged: creating, disabling and deleting agents changes the
// tool list, and the client is told (on its GET stream in 2025-11-25, on
// its subscriptions/listen stream in 2026-07-28).
func TestMCPListChanged(t *testing.T) {
	for _, version := range mcpEras {
		t.Run(version, func(t *testing.T) {
			e := newEnv(t, nil)
			e.createAgent(e.admin, map[string]any{"name": "first"})
			c := e.mcpClientVersion(e.admin, version)
			if names := c.toolNames(t); !slices.Equal(names, []string{"first"}) {
				t.Fatalf("tools = %v", names)
			}
			second := e.createAgent(e.admin, map[string]any{"name": "second"})
			c.waitChanged(t)
			if names := c.toolNames(t); !slices.Equal(names, []string{"first", "second"}) {
				t.Fatalf("tools after create = %v", names)
			}
			if resp := e.do(e.admin, "PUT", "/v1/agents/"+second.ID, map[string]any{"enabled": false}, nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("disable: %d %s", resp.StatusCode, body(resp))
			}
			c.waitChanged(t)
			if names := c.toolNames(t); !slices.Equal(names, []string{"first"}) {
				t.Fatalf("tools after disable = %v", names)
			}
			if resp := e.do(e.admin, "PUT", "/v1/agents/"+second.ID, map[string]any{"enabled": true, "name": "renamed"}, nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("enable: %d %s", resp.StatusCode, body(resp))
			}
			c.waitChanged(t)
			if names := c.toolNames(t); !slices.Equal(names, []string{"first", "renamed"}) {
				t.Fatalf("tools after rename = %v", names)
			}
			if resp := e.do(e.admin, "DELETE", "/v1/agents/"+second.ID, nil, nil); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("delete: %d", resp.StatusCode)
			}
			c.waitChanged(t)
			if names := c.toolNames(t); !slices.Equal(names, []string{"first"}) {
				t.Fatalf("tools after delete = %v", names)
			}
			// Calling a deleted agent's tool is an error, not a turn.
			res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "renamed", Arguments: map[string]any{"query": "hi"}})
			if err == nil && !res.IsError {
				t.Fatalf("the deleted agent answered: %+v", res)
			}
		})
	}
}

// TestMCPAuth: /mcp takes the API's keys, answers the API's 401 without
// one, shows each tenant its own agents, and keeps a session to its key.
func TestMCPAuth(t *testing.T) {
	e := newEnv(t, nil)
	e.createAgent(e.admin, map[string]any{"name": "support"})
	for _, key := range []string{"", "wk_key_aaaaaaaaaaaaaaaa_secret", e.admin[:strings.LastIndexByte(e.admin, '_')] + "_wrong"} {
		resp := mcpPost(t.Context(), t, e, key, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		e.wantError(resp, http.StatusUnauthorized, CodeUnauthorized)
		resp.Body.Close()
		if _, err := e.mcpConnect(key); err == nil {
			t.Errorf("the SDK client connected with key %q", key)
		}
	}

	var other, same keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "globex", "tenant": "globex"}, &other)
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "reader"}, &same)
	if names := e.mcpClient(other.Key).toolNames(t); len(names) != 0 {
		t.Fatalf("tenant globex sees tools %v", names)
	}
	if names := e.mcpClient(same.Key).toolNames(t); !slices.Equal(names, []string{"support"}) {
		t.Fatalf("the tenant's other key sees tools %v", names)
	}

	// A session opened with one key cannot be used with another, even of
	// the same tenant.
	sid := mcpInit(t, e, e.admin)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, key := range []string{same.Key, other.Key} {
		resp := mcpPost(t.Context(), t, e, key, sid, call)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("another key used the session: %d", resp.StatusCode)
		}
	}
	resp := mcpPost(t.Context(), t, e, e.admin, sid, call)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the session's own key: %d", resp.StatusCode)
	}

	// The transport's own errors come in the API's error shape.
	eb := e.wantError(mcpPost(t.Context(), t, e, same.Key, sid, call), http.StatusForbidden, CodeForbidden)
	if !strings.Contains(eb.Error.Message, "session") {
		t.Errorf("another key's use of the session: message %q", eb.Error.Message)
	}
	eb = e.wantError(mcpPost(t.Context(), t, e, e.admin, "no-such-session", call), http.StatusNotFound, CodeNotFound)
	if eb.Error.Message != "session not found" {
		t.Errorf("unknown session: message %q", eb.Error.Message)
	}
	eb = e.wantError(mcpPost(t.Context(), t, e, e.admin, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call"}`), http.StatusBadRequest, CodeInvalidRequest)
	if !strings.Contains(eb.Error.Message, "params") {
		t.Errorf("a call without its params: message %q", eb.Error.Message)
	}
}

func FuzzMCPArgs(f *testing.F) {
	for _, s := range []string{`{"query":"hi"}`, `{"query":"hi","session_id":"ses_1"}`, `{}`, `null`, `[]`, `{"query":5}`, `{"query":"\u0000"}`, ``, `{"query":" "}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		q, sid, err := parseMCPArgs(raw)
		if err != nil {
			return
		}
		if q == "" || len(q) > MaxQueryBytes || checkText("q", q) != nil || checkText("s", sid) != nil {
			t.Fatalf("parseMCPArgs(%q) = %q, %q", raw, q, sid)
		}
	})
}

// TestMCPListChangedAcrossReplicas: an agent or a workflow created through
// one replica changes the tool list of an MCP session held by another, through the
// Redis invalidation bus.
func TestMCPListChangedAcrossReplicas(t *testing.T) {
	a, eb := replicas(t, func(c *Config) { c.CacheTTL = time.Hour })

	a.createAgent(a.admin, map[string]any{"name": "first"})
	c := eb.mcpClient(a.admin)
	if names := c.toolNames(t); !slices.Equal(names, []string{"first"}) {
		t.Fatalf("tools on replica b = %v", names)
	}
	a.createAgent(a.admin, map[string]any{"name": "second"})
	c.waitChanged(t)
	if names := c.toolNames(t); !slices.Equal(names, []string{"first", "second"}) {
		t.Fatalf("tools on replica b after a create on replica a = %v", names)
	}
	a.saveWorkflow(echoWorkflow("flow"))
	c.waitChanged(t)
	if names := c.toolNames(t); !slices.Equal(names, []string{"first", "second", "workflow_flow"}) {
		t.Fatalf("tools on replica b after a workflow was saved on replica a = %v", names)
	}
}

// TestMCPListIsFresh: an agent stored without an invalidation (a lost
// Redis message) is listed at the next tools/list all the same.
func TestMCPListIsFresh(t *testing.T) {
	e := newEnv(t, nil)
	first := e.createAgent(e.admin, map[string]any{"name": "first"})
	c := e.mcpClient(e.admin)
	if names := c.toolNames(t); !slices.Equal(names, []string{"first"}) {
		t.Fatalf("tools = %v", names)
	}
	quiet := first
	quiet.ID, quiet.Name, quiet.TenantID = "agt_quiet", "quiet", e.tenant()
	if err := e.srv.meta.CreateAgent(context.Background(), quiet); err != nil {
		t.Fatal(err)
	}
	if names := c.toolNames(t); !slices.Equal(names, []string{"first", "quiet"}) {
		t.Fatalf("tools after a silent create = %v", names)
	}
}

// BenchmarkMCPCall compares one blocking turn through an MCP tool call
// (Go SDK client, streamable HTTP, one session) with the same turn through
// POST /v1/agents/{id}/chat, on embedded stores and the scripted model.
func BenchmarkMCPCall(b *testing.B) {
	e := newEnv(b, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "echo"})
	b.Run("mcp", func(b *testing.B) {
		c := e.mcpClient(e.admin)
		ctx := context.Background()
		for b.Loop() {
			res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"query": "hello there"}})
			if err != nil || res.IsError {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
	b.Run("chat", func(b *testing.B) {
		for b.Loop() {
			if resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hello there"}, nil); resp.StatusCode != http.StatusOK {
				b.Fatalf("chat: %d", resp.StatusCode)
			}
		}
	})
}
