package platform

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSend sends body to /mcp with method and the given header pairs
// (name, value, …), key as the bearer.
func mcpSend(t *testing.T, e *testEnv, method, key, body string, hdr ...string) *http.Response {
	t.Helper()
	return mcpSendCtx(t.Context(), t, e, method, key, body, hdr...)
}

func mcpSendCtx(ctx context.Context, t *testing.T, e *testEnv, method, key, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, e.http.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// mcpRPCAnswer is a JSON-RPC response as /mcp sends it, as JSON or as the
// data of an SSE event.
type mcpRPCAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mcpAnswers reads the JSON-RPC responses of an answer (an event stream or
// a JSON body), notifications left out.
func mcpAnswers(t *testing.T, resp *http.Response) []mcpRPCAnswer {
	t.Helper()
	defer resp.Body.Close()
	var out []mcpRPCAnswer
	add := func(data string) {
		var a mcpRPCAnswer
		if err := json.Unmarshal([]byte(data), &a); err != nil {
			t.Fatalf("answer %q: %v", data, err)
		}
		if a.Result != nil || a.Error != nil {
			out = append(out, a)
		}
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				add(data)
			}
		}
		return out
	}
	raw, _ := io.ReadAll(resp.Body)
	add(string(raw))
	return out
}

// mcpOpen opens a session of protocol version at with raw requests, and
// returns its id.
func mcpOpen(t *testing.T, e *testEnv, key, version string) string {
	t.Helper()
	resp := mcpSend(t, e, "POST", key, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, id)
	}
	resp = mcpSend(t, e, "POST", key, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", id, "Mcp-Protocol-Version", version)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", resp.StatusCode)
	}
	return id
}

// toolsList lists the tools in session id, returning the HTTP status.
func toolsList(t *testing.T, e *testEnv, key, id string) int {
	t.Helper()
	resp := mcpSend(t, e, "POST", key, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-06-18")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestMCPBatchCountsEachCall: a batch (protocol 2025-03-26) takes a token
// of the key's rate limit per request, all or none, so that it runs no
// more model calls than the same requests sent one by one would.
func TestMCPBatchCountsEachCall(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.RateLimit, c.RateBurst = 2, 5 })
	now := time.Unix(1000, 0) // frozen: the bucket never refills
	e.srv.limiter.(*tokenBucket).now = func() time.Time { return now }
	e.createAgent(e.admin, map[string]any{"name": "echo"}) // one token
	id := mcpOpen(t, e, e.admin, "2025-03-26")             // two more: two left
	// Forty calls exceed the burst: refused whole (after the POST took
	// its token), with no model call.
	calls := func(n int) string {
		var msgs []string
		for i := range n {
			msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"query":"q%d"}}}`, i+1, i))
		}
		return "[" + strings.Join(msgs, ",") + "]"
	}
	batch := func(n int) *http.Response {
		return mcpSend(t, e, "POST", e.admin, calls(n), "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-03-26")
	}
	eb := e.wantError(batch(40), http.StatusTooManyRequests, CodeRateLimited)
	if !strings.Contains(eb.Error.Message, "batch of 40") {
		t.Errorf("message %q", eb.Error.Message)
	}
	// Three need three tokens; one is left, which the POST takes.
	resp := batch(3)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	e.wantError(resp, http.StatusTooManyRequests, CodeRateLimited)
	if n := len(e.model.Requests()); n != 0 {
		t.Fatalf("refused batches made %d model calls", n)
	}
	// Four fit in the four tokens two seconds bring.
	now = now.Add(2 * time.Second)
	if got := mcpAnswers(t, batch(4)); len(got) != 4 || got[0].Error != nil {
		t.Fatalf("a batch within the limit: %d answers %+v", len(got), got)
	}
	if n := len(e.model.Requests()); n != 4 {
		t.Fatalf("%d model calls, want 4", n)
	}
	// The bucket is empty.
	e.wantError(batch(1), http.StatusTooManyRequests, CodeRateLimited)
}

// TestMCPSessionCapUnderConcurrency: sixty initialize requests at once on
// one key never leave it more than mcpSessionsPerKey sessions.
func TestMCPSessionCapUnderConcurrency(t *testing.T) {
	e := newEnv(t, nil)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	start := make(chan struct{})
	var wg sync.WaitGroup
	var opened, refused atomic.Int32
	for range 60 {
		wg.Go(func() {
			<-start
			resp := mcpSend(t, e, "POST", e.admin, init)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				opened.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			default:
				t.Errorf("initialize: %d", resp.StatusCode)
			}
		})
	}
	close(start)
	wg.Wait()
	n := 0
	for range e.srv.mcp.tenants[e.tenant()].srv.Sessions() {
		n++
	}
	e.srv.mcp.slots.mu.Lock()
	places := len(e.srv.mcp.slots.byKey[keyID(e.admin)])
	e.srv.mcp.slots.mu.Unlock()
	if n > mcpSessionsPerKey || places > mcpSessionsPerKey || opened.Load()+refused.Load() != 60 {
		t.Fatalf("%d sessions open, %d places (cap %d); %d opened, %d refused", n, places, mcpSessionsPerKey, opened.Load(), refused.Load())
	}
}

// TestMCPAbandonedSessionsDoNotLockOut: clients that never send DELETE
// /mcp cannot lock their key out: at the cap, a new session replaces the
// least recently used idle one. Only sessions all busy (each with an open
// GET stream here) refuse a new one.
func TestMCPAbandonedSessionsDoNotLockOut(t *testing.T) {
	e := newEnv(t, nil)
	var mu sync.Mutex
	tick := time.Unix(1000, 0)
	e.srv.mcp.slots.now = func() time.Time { // a clock that moves at each reading
		mu.Lock()
		defer mu.Unlock()
		tick = tick.Add(time.Millisecond)
		return tick
	}
	ids := make([]string, mcpSessionsPerKey)
	for i := range ids {
		ids[i] = mcpOpen(t, e, e.admin, "2025-06-18")
	}
	if code := toolsList(t, e, e.admin, ids[0]); code != http.StatusOK { // the first is now the most recent
		t.Fatalf("tools/list: %d", code)
	}
	extra := mcpOpen(t, e, e.admin, "2025-06-18") // replaces ids[1], the least recently used
	if code := toolsList(t, e, e.admin, ids[1]); code != http.StatusNotFound {
		t.Fatalf("the least recently used session answers %d, want 404: it was closed", code)
	}
	for _, id := range []string{ids[0], ids[2], extra} {
		if code := toolsList(t, e, e.admin, id); code != http.StatusOK {
			t.Fatalf("session %s answers %d", id, code)
		}
	}

	// Every session busy: no room.
	live := append([]string{extra, ids[0]}, ids[2:]...)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	streams := map[string]context.CancelFunc{}
	for _, id := range live {
		sctx, stop := context.WithCancel(ctx)
		streams[id] = stop
		resp := mcpSendCtx(sctx, t, e, "GET", e.admin, "", "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-06-18", "Accept", "text/event-stream")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET stream: %d", resp.StatusCode)
		}
		go func() { io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	e.wantError(mcpSend(t, e, "POST", e.admin, init), http.StatusTooManyRequests, CodeRateLimited)
	// A stream that ends makes its session idle, and so replaceable.
	streams[ids[5]]()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp := mcpSend(t, e, "POST", e.admin, init)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("initialize after a stream ended: %d", resp.StatusCode)
		}
	}
	if code := toolsList(t, e, e.admin, ids[5]); code != http.StatusNotFound {
		t.Fatalf("the session whose stream ended answers %d, want 404", code)
	}
}

// TestMCPUnknownMethod: a request for a method the server lacks is a
// JSON-RPC error -32601 (HTTP 200 in the versions with sessions, 404 from
// 2026-07-28 on, as that revision says), a notification of one is
// dropped, and a batch holding one is refused whole.
func TestMCPUnknownMethod(t *testing.T) {
	e := newEnv(t, nil)
	id := mcpOpen(t, e, e.admin, "2025-03-26")
	resp := mcpSend(t, e, "POST", e.admin, `{"jsonrpc":"2.0","id":"x-7","method":"tools/frobnicate","params":{}}`, "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-03-26")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("unknown method: HTTP %d", resp.StatusCode)
	}
	got := mcpAnswers(t, resp)
	if len(got) != 1 || string(got[0].ID) != `"x-7"` || got[0].Error == nil || got[0].Error.Code != -32601 || !strings.Contains(got[0].Error.Message, "tools/frobnicate") {
		t.Fatalf("unknown method: %+v", got)
	}
	resp = mcpSend(t, e, "POST", e.admin, `{"jsonrpc":"2.0","method":"notifications/frobnicated"}`, "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-03-26")
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("unknown notification: HTTP %d", resp.StatusCode)
	}
	resp = mcpSend(t, e, "POST", e.admin, `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"nope"}]`, "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-03-26")
	if got := mcpAnswers(t, resp); resp.StatusCode != http.StatusBadRequest || len(got) != 1 || got[0].Error == nil || got[0].Error.Code != -32601 {
		t.Fatalf("batch with an unknown method: HTTP %d, %+v", resp.StatusCode, got)
	}
	// The session still works.
	if code := toolsList(t, e, e.admin, id); code != http.StatusOK {
		t.Fatalf("tools/list after: %d", code)
	}

	modern := `{"jsonrpc":"2.0","id":3,"method":"tools/frobnicate","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp = mcpSend(t, e, "POST", e.admin, modern, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/frobnicate")
	if got := mcpAnswers(t, resp); resp.StatusCode != http.StatusNotFound || len(got) != 1 || string(got[0].ID) != "3" || got[0].Error == nil || got[0].Error.Code != -32601 {
		t.Fatalf("unknown method, 2026-07-28: HTTP %d, %+v", resp.StatusCode, got)
	}
}

// TestMCPMethodsKnownToSDK: every method of mcpMethods is one the SDK's
// server handles (it refuses others as "unsupported").
func TestMCPMethodsKnownToSDK(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	for method := range mcpMethods {
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{}}`
		if strings.HasPrefix(method, "notifications/") {
			body = `{"jsonrpc":"2.0","method":"` + method + `","params":{}}`
		}
		req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(raw), "unsupported") {
			t.Errorf("%s: the SDK answers %d %s", method, resp.StatusCode, raw)
		}
	}
	req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"no/such","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), "unsupported") {
		t.Fatalf("the SDK's answer to an unknown method changed: %d %s; the check above is void", resp.StatusCode, raw)
	}
}

// TestMCPInvalidUTF8: a body that is not UTF-8 (or not JSON) is a JSON-RPC
// parse error, and runs nothing.
func TestMCPInvalidUTF8(t *testing.T) {
	e := newEnv(t, nil)
	e.createAgent(e.admin, map[string]any{"name": "echo"})
	id := mcpOpen(t, e, e.admin, "2025-06-18")
	for _, body := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"query\":\"caf\xe9\"}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arg\xffuments\":{}}}",
		`{"jsonrpc":"2.0","id":2,"method":`,
	} {
		resp := mcpSend(t, e, "POST", e.admin, body, "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-06-18")
		got := mcpAnswers(t, resp)
		if resp.StatusCode != http.StatusBadRequest || len(got) != 1 || string(got[0].ID) != "null" || got[0].Error == nil || got[0].Error.Code != -32700 {
			t.Errorf("body %q: HTTP %d, %+v", body, resp.StatusCode, got)
		}
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Fatalf("%d model calls", n)
	}
}

// TestMCPOrigin: a page's request (Origin) from a foreign origin is
// refused with 403 — the DNS-rebinding case of the MCP conformance suite:
// Host and Origin evil.example.com on a loopback address — and pages of
// this server's origin, of this machine or of a listed origin are served.
func TestMCPOrigin(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) {
		c.Getenv = func(k string) string {
			if k == EnvAllowedOrigins {
				return "https://app.example.com, http://tools.example.com:8080"
			}
			return ""
		}
	})
	self := "http://" + e.http.Listener.Addr().String()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for _, c := range []struct {
		hdr  []string
		want int
	}{
		{[]string{"Host", "evil.example.com", "Origin", "http://evil.example.com"}, http.StatusForbidden},
		{[]string{"Origin", "http://evil.example.com"}, http.StatusForbidden},
		{[]string{"Origin", "null"}, http.StatusForbidden},
		{[]string{"Origin", "https://app.example.com.evil.example"}, http.StatusForbidden},
		{[]string{"Origin", "http://tools.example.com"}, http.StatusForbidden}, // another port
		{[]string{"Origin", self}, http.StatusOK},
		{[]string{"Origin", "http://localhost:6274"}, http.StatusOK},
		{[]string{"Origin", "https://APP.example.com:443"}, http.StatusOK},
		{[]string{"Origin", "http://tools.example.com:8080"}, http.StatusOK},
		{nil, http.StatusOK},
	} {
		resp := mcpSend(t, e, "POST", e.admin, init, c.hdr...)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%v: %d %s, want %d", c.hdr, resp.StatusCode, raw, c.want)
		}
	}
	// Refused before the key is looked at.
	req, _ := http.NewRequest("GET", e.http.URL+"/mcp", nil)
	req.Header.Set("Origin", "http://evil.example.com")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	e.wantError(resp, http.StatusForbidden, CodeForbidden)

	// Same origin as the Host the request names: served, unless the
	// request came in on a loopback address for a name that is not.
	h := e.srv.mcp
	for _, c := range []struct {
		local, host, origin string
		want                bool
	}{
		{"10.0.0.5:443", "weft.example.com", "https://weft.example.com", true},
		{"10.0.0.5:8080", "weft.example.com:8080", "http://weft.example.com:8080", true},
		{"10.0.0.5:8080", "weft.example.com:8080", "http://weft.example.com", false},
		{"10.0.0.5:443", "weft.example.com", "https://other.example.com", false},
		{"127.0.0.1:8080", "weft.example.com", "https://weft.example.com", false},
		{"[::1]:8080", "localhost:8080", "http://localhost:8080", true},
	} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Host = c.host
		r.Header.Set("Origin", c.origin)
		local, _ := net.ResolveTCPAddr("tcp", c.local)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
		if got := h.originAllowed(r); got != c.want {
			t.Errorf("on %s, Host %s, Origin %s: allowed %v, want %v", c.local, c.host, c.origin, got, c.want)
		}
	}

	for _, bad := range []string{"app.example.com", "ftp://app.example.com", "https://app.example.com/path", "https://user@app.example.com"} {
		if _, err := New(Config{Meta: e.srv.meta, Sessions: e.sessions, Getenv: func(k string) string {
			if k == EnvAllowedOrigins {
				return bad
			}
			return ""
		}}); err == nil || !strings.Contains(err.Error(), EnvAllowedOrigins) {
			t.Errorf("%s=%q: New = %v", EnvAllowedOrigins, bad, err)
		}
	}
}

// TestMCPProtocolVersions: the official Go SDK's client speaks the
// newest revision, 2026-07-28 (stateless, found through server/discover),
// and one pinned to the newest revision with sessions gets 2025-11-25.
func TestMCPProtocolVersions(t *testing.T) {
	e := newEnv(t, nil)
	e.createAgent(e.admin, map[string]any{"name": "echo"})
	for _, c := range []struct{ ask, want string }{{"", "2026-07-28"}, {"2025-11-25", "2025-11-25"}, {"2025-03-26", "2025-03-26"}} {
		cl, err := e.mcpConnectVersion(e.admin, c.ask)
		if err != nil {
			t.Fatal(err)
		}
		if got := cl.cs.InitializeResult().ProtocolVersion; got != c.want {
			t.Errorf("client asking %q: version %q, want %q", c.ask, got, c.want)
		}
		res, err := cl.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"query": "hello " + c.want}})
		if err != nil {
			t.Fatal(err)
		}
		if a := answerOf(t, res); a.Answer != "hello "+c.want {
			t.Errorf("%s: answer %q", c.want, a.Answer)
		}
	}
}

func FuzzMCPBody(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call"},{"jsonrpc":"2.0","method":"notifications/cancelled"}]`,
		`{"jsonrpc":"2.0","id":null,"method":"nope"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`,
		`[]`, `[1]`, `"x"`, ``, " {\"method\":\"ping\",\"id\":0} ", "{\"method\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := inspectMCP(body)
		if err != nil {
			if err.Code != -32700 && err.Code != -32600 {
				t.Fatalf("inspectMCP(%q): code %d", body, err.Code)
			}
			return
		}
		var msgs []json.RawMessage
		if b.batch {
			if json.Unmarshal(body, &msgs) != nil {
				t.Fatalf("inspectMCP(%q): a batch that is not an array", body)
			}
		} else {
			msgs = []json.RawMessage{body}
		}
		if b.calls > len(msgs) || (b.unknown != "" && mcpMethods[b.unknown]) {
			t.Fatalf("inspectMCP(%q) = %+v", body, b)
		}
	})
}

// TestMCPListenStreamsTakePlaces: in 2026-07-28, which has no sessions, a
// subscriptions/listen stream holds one of its key's places while open.
func TestMCPListenStreamsTakePlaces(t *testing.T) {
	e := newEnv(t, nil)
	places := func() int {
		e.srv.mcp.slots.mu.Lock()
		defer e.srv.mcp.slots.mu.Unlock()
		return len(e.srv.mcp.slots.byKey[keyID(e.admin)])
	}
	waitPlaces := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); places() != n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d places taken, want %d", places(), n)
			}
		}
	}
	var first *mcpClient
	for i := range mcpSessionsPerKey {
		c := e.mcpClient(e.admin) // it listens for tool list changes
		if i == 0 {
			first = c
		}
	}
	waitPlaces(mcpSessionsPerKey)
	listen := `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	hdr := []string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen"}
	e.wantError(mcpSend(t, e, "POST", e.admin, listen, hdr...), http.StatusTooManyRequests, CodeRateLimited)
	first.cs.Close()
	waitPlaces(mcpSessionsPerKey - 1)
	ctx, cancel := context.WithCancel(t.Context())
	resp := mcpSendCtx(ctx, t, e, "POST", e.admin, listen, hdr...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("listen with a place free: %d", resp.StatusCode)
	}
	waitPlaces(mcpSessionsPerKey)
	cancel()
	resp.Body.Close()
	waitPlaces(mcpSessionsPerKey - 1)
}
