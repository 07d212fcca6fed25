package platform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP front of /mcp: what is checked and decided before the SDK reads
// a request.
//
//   - Origin: a request a browser sends on a page's behalf must come from
//     an allowed origin (originAllowed), against DNS rebinding.
//   - Body: a POST's body is read whole and looked at once (inspectMCP):
//     one that is not UTF-8 JSON is a JSON-RPC parse error (-32700); a
//     request for a method the server lacks is answered -32601; each
//     request of a batch after the first takes a token of the key's rate
//     limit, as it would sent alone.
//   - Protocol era: a request of the 2026-07-28 revision (its
//     MCP-Protocol-Version header), or a server/discover, goes to the
//     SDK's stateless handler, as that revision has no sessions; any
//     other to the stateful one.
//   - Places (mcpSlots): a key holds at most mcpSessionsPerKey sessions
//     and listen streams, taken atomically; a key at its cap that opens
//     one more closes its least recently used idle session.

// EnvAllowedOrigins names the variable listing, comma-separated, the web
// origins (scheme://host[:port]) besides the server's own whose pages may
// call /mcp from a browser; weft serve reads it through Config.Getenv.
const EnvAllowedOrigins = "WEFT_ALLOWED_ORIGINS"

// mcpModernVersion is the first protocol revision without sessions.
const mcpModernVersion = "2026-07-28"

// mcpMethods are the methods the SDK's server has, notifications
// included. A request for another is answered -32601 (method not found)
// in the legacy protocol versions, where the SDK would refuse the whole
// POST with a plain 400; TestMCPMethodsKnownToSDK keeps the list true.
var mcpMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true,
	"tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "subscriptions/listen": true,
	"completion/complete": true, "logging/setLevel": true,
	"notifications/initialized": true, "notifications/cancelled": true,
	"notifications/progress": true, "notifications/roots/list_changed": true,
}

// parseOrigins reads an allow list of origins: comma-separated
// scheme://host[:port], http or https, nothing else.
func parseOrigins(list string) (map[string]bool, error) {
	out := map[string]bool{}
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		o, err := normalOrigin(item)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvAllowedOrigins, err)
		}
		out[o] = true
	}
	return out, nil
}

// normalOrigin returns origin as a browser sends it: lower-case
// scheme://host, with the port only when it is not the scheme's default.
func normalOrigin(origin string) (string, error) {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("origin %q: want scheme://host[:port] with scheme http or https", origin)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, nil
}

// isLoopbackName reports whether host (no port) names this machine:
// localhost, a name under .localhost, or a loopback address.
func isLoopbackName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// originAllowed decides a request's Origin header. No Origin is not a
// page's request (MCP clients other than browsers send none). A page's
// origin is allowed when it is listed (EnvAllowedOrigins), when it is this
// machine (a page served locally, such as an MCP inspector), or when it is
// the origin of the request's own Host — except for a request that came in
// on a loopback address under another name: that is DNS rebinding, a page
// of evil.example whose name was made to resolve to 127.0.0.1. A reverse
// proxy on the same machine therefore needs its public origin listed.
func (h *mcpHub) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	o, err := normalOrigin(origin)
	if err != nil {
		return false // "null" (a sandboxed page, a file) or garbage
	}
	if h.origins[o] {
		return true
	}
	u, _ := url.Parse(o)
	if isLoopbackName(u.Hostname()) {
		return true
	}
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = r.Host, ""
	}
	if port == map[string]string{"http": "80", "https": "443"}[u.Scheme] {
		port = "" // as normalOrigin leaves it
	}
	if !strings.EqualFold(strings.Trim(host, "[]"), u.Hostname()) || port != u.Port() {
		return false
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && !isLoopbackName(host) {
		if lh, _, err := net.SplitHostPort(local.String()); err == nil && isLoopbackName(lh) {
			return false
		}
	}
	return true
}

// checkOrigin refuses, with 403, a request from a page of an origin that
// is not allowed; it runs before authentication.
func (h *mcpHub) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.originAllowed(r) {
			h.s.log.WarnContext(r.Context(), "MCP request refused: origin not allowed", "request_id", requestID(r.Context()),
				"origin", r.Header.Get("Origin"), "host", r.Host)
			writeError(w, errorf(http.StatusForbidden, CodeForbidden,
				"origin %q may not use /mcp: a browser page must be of this server's origin or of one listed in %s", r.Header.Get("Origin"), EnvAllowedOrigins))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mcpBody is what serve learns from a POST's JSON-RPC messages.
type mcpBody struct {
	batch bool
	// calls counts the requests (messages with a method and an id).
	calls int
	// initialize: a request opening a session; listen: a
	// subscriptions/listen, holding its stream open; discover: a
	// server/discover.
	initialize, listen, discover bool
	// unknown is the first method the server lacks, and unknownID the id
	// of its request (nil for a notification).
	unknown   string
	unknownID json.RawMessage
}

// mcpRPCError is a JSON-RPC error to answer instead of the SDK.
type mcpRPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// inspectMCP reads the JSON-RPC messages of a POST's body (a message or,
// in protocol 2025-03-26, a batch of them). Text that is not UTF-8 JSON is
// a parse error; a body that is not a message or a non-empty array of them
// is an invalid request. What else a message holds is the SDK's to check.
func inspectMCP(body []byte) (mcpBody, *mcpRPCError) {
	var b mcpBody
	if !utf8.Valid(body) {
		at := 0
		for at < len(body) {
			r, n := utf8.DecodeRune(body[at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			at += n
		}
		return b, &mcpRPCError{jsonrpc.CodeParseError, fmt.Sprintf("parse error: the body is not valid UTF-8 (byte %d)", at)}
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return b, &mcpRPCError{jsonrpc.CodeParseError, fmt.Sprintf("parse error: %v", err)}
	}
	body = bytes.TrimSpace(body)
	msgs := []json.RawMessage{body}
	if body[0] == '[' {
		b.batch = true
		msgs = nil
		_ = json.Unmarshal(body, &msgs) // valid JSON: cannot fail
		if len(msgs) == 0 {
			return b, &mcpRPCError{jsonrpc.CodeInvalidRequest, "invalid request: an empty batch"}
		}
	}
	for i, raw := range msgs {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
			what := "the body"
			if b.batch {
				what = fmt.Sprintf("message %d of the batch", i)
			}
			return b, &mcpRPCError{jsonrpc.CodeInvalidRequest, "invalid request: " + what + " is not a JSON-RPC message object"}
		}
		if m.Method == nil {
			continue // a response to a request of the server
		}
		call := len(m.ID) > 0 && string(m.ID) != "null"
		if call {
			b.calls++
		}
		switch method := *m.Method; {
		case !mcpMethods[method]:
			if b.unknown == "" {
				b.unknown = method
				if call {
					b.unknownID = m.ID
				}
			}
		case method == "initialize":
			b.initialize = true
		case method == "subscriptions/listen":
			b.listen = true
		case method == "server/discover":
			b.discover = true
		}
	}
	return b, nil
}

// writeRPCError answers a JSON-RPC error response (id null when nil) with
// HTTP status.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, e *mcpRPCError) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *mcpRPCError    `json:"error"`
	}{"2.0", id, e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// mcpModern reports whether a request is of a protocol revision without
// sessions (2026-07-28 or later), by its MCP-Protocol-Version header.
func mcpModern(r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return len(v) == len(mcpModernVersion) && v >= mcpModernVersion
}

// readPOST reads and inspects a POST's body, answers what the SDK should
// not see, charges a batch's further requests to the key's rate limit,
// and puts the body back for the SDK. It returns false when it answered.
func (h *mcpHub) readPOST(w http.ResponseWriter, r *http.Request, p principal) (mcpBody, bool) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return mcpBody{}, true // the SDK answers 415
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "request body exceeds the limit of %d bytes", tooBig.Limit))
		} else {
			writeError(w, invalid("reading the request body: %v", err))
		}
		return mcpBody{}, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	b, rerr := inspectMCP(body)
	if rerr != nil {
		writeRPCError(w, http.StatusBadRequest, nil, rerr)
		return b, false
	}
	if b.unknown != "" && !mcpModern(r) {
		// The revision 2026-07-28's answer (404 with -32601) is the SDK's.
		e := &mcpRPCError{jsonrpc.CodeMethodNotFound, fmt.Sprintf("method %q not found", b.unknown)}
		switch {
		case b.batch:
			writeRPCError(w, http.StatusBadRequest, nil, &mcpRPCError{e.Code, e.Message + " (in a batch, which is refused whole)"})
		case b.unknownID != nil:
			writeRPCError(w, http.StatusOK, b.unknownID, e)
		default:
			w.WriteHeader(http.StatusAccepted) // a notification: JSON-RPC answers none
		}
		return b, false
	}
	if b.calls > 1 && h.s.limiter != nil {
		if burst := h.s.cfg.RateBurst; b.calls > burst {
			writeError(w, errorf(http.StatusTooManyRequests, CodeRateLimited,
				"a batch of %d requests exceeds this API key's rate-limit burst of %d: each counts as a request; send fewer at once", b.calls, burst))
			return b, false
		}
		ok, wait, err := h.s.limiter.Allow(r.Context(), p.Key.ID, b.calls-1)
		switch {
		case err != nil:
			h.s.log.WarnContext(r.Context(), "rate limiter unavailable", "err", err)
		case !ok:
			secs := max(int(wait.Seconds()+0.999), 1)
			w.Header().Set("Retry-After", itoa(secs))
			h.s.log.WarnContext(r.Context(), "MCP batch refused: rate limited", "request_id", requestID(r.Context()),
				"tenant", p.Tenant, "key_id", p.Key.ID, "requests", b.calls, "retry_after_s", secs)
			writeError(w, errorf(http.StatusTooManyRequests, CodeRateLimited,
				"rate limit exceeded for this API key: a batch of %d requests counts as %d; retry after %d s", b.calls, b.calls, secs))
			return b, false
		}
	}
	return b, true
}

// mcpSlots are the places of the keys' sessions: a key holds at most
// mcpSessionsPerKey. A place is held by a session of the legacy protocol,
// from the request carrying its initialize until the session closes, or
// by a subscriptions/listen stream of the 2026-07-28 protocol while it is
// open. A key with no free place that opens one more closes its least
// recently used idle session (no request in flight on it, an open GET
// stream included) for it: a client gone without DELETE /mcp leaves a
// session that the key's next one replaces. Only when every place has a
// request in flight is a new one refused.
type mcpSlots struct {
	now func() time.Time

	mu    sync.Mutex
	byKey map[string][]*mcpSlot
	byID  map[string]*mcpSlot // by MCP session id
}

// mcpSlot is one place of a key.
type mcpSlot struct {
	key string
	// ss is the session, from its initialize on; nil for a listen stream.
	ss *mcp.ServerSession
	// active counts the requests in flight on the place; last is when the
	// last of them ended.
	active int
	last   time.Time
	gone   bool // given up: the session closed, or was evicted
}

func newMCPSlots() *mcpSlots {
	return &mcpSlots{now: time.Now, byKey: map[string][]*mcpSlot{}, byID: map[string]*mcpSlot{}}
}

// take gives key a place with a request in flight on it, closing the key's
// least recently used idle session when it has no free place. It returns
// nil when every place of the key has a request in flight.
func (m *mcpSlots) take(key string) *mcpSlot {
	m.mu.Lock()
	var victim *mcpSlot
	if len(m.byKey[key]) >= mcpSessionsPerKey {
		for _, s := range m.byKey[key] {
			if s.active == 0 && s.ss != nil && (victim == nil || s.last.Before(victim.last)) {
				victim = s
			}
		}
		if victim == nil {
			m.mu.Unlock()
			return nil
		}
		m.dropLocked(victim)
	}
	s := &mcpSlot{key: key, active: 1}
	m.byKey[key] = append(m.byKey[key], s)
	m.mu.Unlock()
	if victim != nil {
		// Closed before the caller's session opens: the key never holds
		// more sessions than places.
		victim.ss.Close()
	}
	return s
}

// bind gives s to the session its initialize opened. It returns false when
// s was given up (the request ended before the session was made), and
// first when the session was not bound before.
func (m *mcpSlots) bind(s *mcpSlot, ss *mcp.ServerSession) (ok, first bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case s.gone:
		return false, false
	case s.ss != nil:
		return s.ss == ss, false
	}
	s.ss = ss
	m.byID[ss.ID()] = s
	return true, true
}

// enter marks a request in flight on the session id of key, and returns
// its place (nil when the session is not known here).
func (m *mcpSlots) enter(id, key string) *mcpSlot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.byID[id]
	if s == nil || s.key != key || s.gone {
		return nil
	}
	s.active++
	return s
}

// leave ends a request on s. A place that has no session when its request
// ends (a listen stream, an initialize that opened none) is given up.
func (m *mcpSlots) leave(s *mcpSlot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s.active--
	s.last = m.now()
	if s.ss == nil && !s.gone {
		m.dropLocked(s)
	}
}

// closed gives up the place of a session that closed.
func (m *mcpSlots) closed(s *mcpSlot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !s.gone {
		m.dropLocked(s)
	}
}

func (m *mcpSlots) dropLocked(s *mcpSlot) {
	s.gone = true
	list := slices.DeleteFunc(m.byKey[s.key], func(x *mcpSlot) bool { return x == s })
	if len(list) == 0 {
		delete(m.byKey, s.key)
	} else {
		m.byKey[s.key] = list
	}
	if s.ss != nil {
		delete(m.byID, s.ss.ID())
	}
}
