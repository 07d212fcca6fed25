// Package mcptool makes the tools of a Model Context Protocol server
// available as [tool.Tool]s, through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// A [Server] is the client side of one MCP server: it starts the server's
// process (stdio transport) or connects to its URL (streamable HTTP
// transport), lists its tools on [Server.Connect] and [Server.Refresh] —
// and again, on its own, when the server sends
// notifications/tools/list_changed (see [WithToolsChanged]) — and keeps
// one session that every call shares. Each MCP tool becomes a [Tool]
// named "<server name>_<tool name>" (sanitised to ^[a-zA-Z0-9_-]{1,64}$ by
// package toolname) with the server's input schema.
//
// # Failures
//
// A dead connection — the process exited, the HTTP server lost the session
// or stopped answering — is restarted once, on the next call. A call that
// could not be sent at all is retried once on the new session; a call the
// server may have received is never repeated (tools have side effects):
// its failure is returned as an error saying the server will be restarted
// on the next call. A result with isError set is returned as an error with
// the server's text, for the model to see.
//
// # Results
//
// Text content is joined with newlines. Other content is summarised: images
// and audio as "[image: image/png, 1234 bytes]", resource links by URI,
// embedded text resources by their text. A result with only structured
// content gives that content as JSON.
//
// # Outbound requests
//
// The HTTP transport goes through the outbound guard of package netguard
// unless [WithHTTPClient] gives another client: an MCP server's URL is
// configured by users, so internal addresses are refused.
//
// # Processes
//
// A stdio server runs with a minimal environment (PATH, HOME, locale and
// temporary-directory variables) plus [Config.Env]: the platform's own
// secrets are not passed on.
//
// # Secrets
//
// Header values and Config.Env values may reference secrets (package
// secretref), resolved through [WithLookup]. The values resolved for a
// server are redacted from its tools' results and errors. [Server.Close] closes the session, which
// closes the process's stdin, waits for it to exit (sending SIGTERM, then
// SIGKILL, after a grace period) and reaps it.
package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/internal/toolargs"
	"github.com/weftlabs/weft/tool/secretref"
	"github.com/weftlabs/weft/tool/toolname"
)

// Transports.
const (
	Stdio = "stdio"
	HTTP  = "http"
)

// Defaults of a Config's zero fields.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultCallTimeout    = 2 * time.Minute
)

// Config describes an MCP server.
type Config struct {
	// Name prefixes the names of the server's tools.
	Name string
	// Transport is Stdio or HTTP (streamable HTTP).
	Transport string
	// Command, Args, Env and Dir start a stdio server. Env adds to a
	// minimal environment (see the package documentation); its values may
	// reference secrets like header values, resolved when the process
	// starts.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// URL is the endpoint of an HTTP server.
	URL string
	// Headers are sent with every HTTP request. Values may reference
	// secrets as ${secret:NAME} or ${NAME}, resolved on each request (see
	// [WithLookup]).
	Headers map[string]string
	// ConnectTimeout bounds starting and initialising a session, and
	// listing the tools; zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call; zero means DefaultCallTimeout.
	CallTimeout time.Duration
}

// Option configures New.
type Option func(*Server)

// WithHTTPClient sets the HTTP client of an HTTP server's transport. The
// default is a client of the outbound guard, netguard.NewClient() (allow
// list from WEFT_HTTP_TOOLS_ALLOW), without timeout: calls are bounded by
// their context. A client given here replaces the guard: pass one built by
// package netguard unless the URL is trusted.
func WithHTTPClient(c *http.Client) Option { return func(s *Server) { s.httpClient = c } }

// WithToolsChanged sets f to be called with the server's tools each time
// they were listed again because the server sent
// notifications/tools/list_changed. The list is refreshed in the
// background (notifications arriving during a refresh lead to one more);
// a refresh that fails leaves the tools as they were, until the next
// notification or [Server.Refresh]. f must not call Close.
func WithToolsChanged(f func(tools []tool.Tool)) Option {
	return func(s *Server) { s.onChange = f }
}

// WithLookup sets how ${secret:NAME} and ${NAME} references in header and
// environment values are resolved; the default is [secretref.Env].
func WithLookup(lookup secretref.Lookup) Option {
	return func(s *Server) { s.lookup = lookup }
}

// ErrClosed is returned by calls on a closed Server.
var ErrClosed = errors.New("mcptool: server closed")

// Server is a connection manager for one MCP server. It is safe for
// concurrent use.
type Server struct {
	cfg        Config
	client     *mcp.Client
	httpClient *http.Client
	lookup     secretref.Lookup
	onChange   func([]tool.Tool)

	// bg runs the refreshes that notifications/tools/list_changed asks
	// for; bgCtx ends them at Close. pending is set while one is
	// scheduled and has not started listing (guarded by mu).
	bg       sync.WaitGroup
	bgCtx    context.Context
	bgCancel context.CancelFunc
	pending  bool

	redMu sync.Mutex
	red   secretref.Redactor // the secret values resolved so far

	mu      sync.Mutex
	sess    *session // nil when not connected
	closed  bool
	tools   []*Tool
	connect sync.Mutex // serialises (re)connection
	// refreshMu serialises the background refreshes.
	refreshMu sync.Mutex
	sessions  sync.WaitGroup // one per session until it has ended and been reaped
}

// session is one connection. Its closer goroutine is the only caller of
// cs.Close, so that the process is reaped exactly once, before Close
// returns.
type session struct {
	cs     *mcp.ClientSession
	done   chan struct{} // closed when the connection has ended
	stop   chan struct{} // closed to ask the closer to end the session
	once   sync.Once
	stderr *tailBuffer // stdio only
	proc   *os.Process // stdio only: the server's process
}

// shutdown asks for the session to be closed; it does not wait.
func (x *session) shutdown() { x.once.Do(func() { close(x.stop) }) }

// New checks cfg and returns a Server, not yet connected.
func New(cfg Config, opts ...Option) (*Server, error) {
	if strings.TrimSpace(cfg.Name) == "" {
		return nil, errors.New("mcptool: a server needs a name (it prefixes its tools' names)")
	}
	switch cfg.Transport {
	case Stdio:
		if cfg.Command == "" {
			return nil, fmt.Errorf("mcptool: server %s: the stdio transport needs a command", cfg.Name)
		}
	case HTTP:
		if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
			return nil, fmt.Errorf("mcptool: server %s: the http transport needs an http or https URL, got %q", cfg.Name, cfg.URL)
		}
		for k, v := range cfg.Headers {
			if k == "" || strings.ContainsAny(k+v, "\r\n\x00") || strings.ContainsAny(k, " :") {
				return nil, fmt.Errorf("mcptool: server %s: header %q is not valid", cfg.Name, k)
			}
		}
	default:
		return nil, fmt.Errorf("mcptool: server %s: transport %q: want %q or %q", cfg.Name, cfg.Transport, Stdio, HTTP)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	s := &Server{cfg: cfg, lookup: secretref.Env}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	for _, o := range opts {
		o(s)
	}
	if s.httpClient == nil && cfg.Transport == HTTP {
		hc, err := netguard.NewClient()
		if err != nil {
			return nil, fmt.Errorf("mcptool: server %s: %w", cfg.Name, err)
		}
		s.httpClient = hc
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "weft", Version: "1"}, &mcp.ClientOptions{
		Capabilities:           &mcp.ClientCapabilities{}, // no roots, sampling or elicitation
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.listChanged() },
	})
	return s, nil
}

// Name returns the server's name.
func (s *Server) Name() string { return s.cfg.Name }

// Connect starts a session (if none is live) and lists the server's tools.
func (s *Server) Connect(ctx context.Context) error {
	_, err := s.Refresh(ctx)
	return err
}

// Tools returns the tools found by the last Connect or Refresh.
func (s *Server) Tools() []tool.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]tool.Tool, len(s.tools))
	for i, t := range s.tools {
		out[i] = t
	}
	return out
}

// Refresh lists the server's tools again, connecting first if needed, and
// returns them.
func (s *Server) Refresh(ctx context.Context) ([]tool.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	sess, err := s.session(ctx, nil)
	if err != nil {
		return nil, err
	}
	var list []*mcp.Tool
	for t, err := range sess.cs.Tools(ctx, nil) {
		if err != nil {
			s.fail(sess)
			return nil, fmt.Errorf("mcptool: server %s: list tools: %w", s.cfg.Name, s.explain(sess, err))
		}
		list = append(list, t)
	}
	names := make([]string, len(list))
	for i, t := range list {
		names[i] = toolname.Join(s.cfg.Name, t.Name)
	}
	names = toolname.Unique(names)
	tools := make([]*Tool, len(list))
	for i, t := range list {
		params := toolargs.DefaultParameters
		if t.InputSchema != nil {
			b, err := json.Marshal(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("mcptool: server %s: tool %s: input schema: %w", s.cfg.Name, t.Name, err)
			}
			params = b
		}
		schema, err := toolargs.ParseSchema(params)
		if err != nil {
			return nil, fmt.Errorf("mcptool: server %s: tool %s: %w", s.cfg.Name, t.Name, err)
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		tools[i] = &Tool{
			server: s,
			remote: t.Name,
			schema: schema,
			spec:   llm.ToolSpec{Name: names[i], Description: desc, Parameters: params},
		}
	}
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	return s.Tools(), nil
}

// Close ends the session and, for stdio, the server's process. Calls after
// Close fail with ErrClosed.
func (s *Server) Close() error {
	s.bgCancel()
	s.connect.Lock()
	s.mu.Lock()
	s.closed = true
	sess := s.sess
	s.sess = nil
	s.mu.Unlock()
	if sess != nil {
		sess.shutdown()
	}
	// Wait for every session, including failed ones still shutting down,
	// so that no process outlives Close.
	s.sessions.Wait()
	s.connect.Unlock()
	s.bg.Wait()
	return nil
}

// listChanged handles notifications/tools/list_changed: the tools are
// listed again in the background (the notification arrives on the
// session's reading goroutine, which the listing needs).
func (s *Server) listChanged() {
	s.mu.Lock()
	if s.closed || s.pending {
		s.mu.Unlock()
		return // closed, or a refresh is scheduled that will see this change
	}
	s.pending = true
	s.bg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.bg.Done()
		s.refreshMu.Lock()
		defer s.refreshMu.Unlock()
		s.mu.Lock()
		s.pending = false
		s.mu.Unlock()
		tools, err := s.Refresh(s.bgCtx)
		if err == nil && s.onChange != nil {
			s.onChange(tools)
		}
	}()
}

// session returns the live session, connecting when there is none or when
// the current one is stale (the one a failed call used).
func (s *Server) session(ctx context.Context, stale *session) (*session, error) {
	if sess, err := s.live(stale); sess != nil || err != nil {
		return sess, err
	}
	s.connect.Lock()
	defer s.connect.Unlock()
	if sess, err := s.live(stale); sess != nil || err != nil {
		return sess, err
	}
	sess, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sess.shutdown()
		return nil, ErrClosed
	}
	s.sess = sess
	s.mu.Unlock()
	return sess, nil
}

// live returns the current session if it is usable and not stale.
func (s *Server) live(stale *session) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	sess := s.sess
	if sess == nil || sess == stale {
		return nil, nil
	}
	select {
	case <-sess.done:
		return nil, nil
	default:
	}
	if sess.proc != nil && exited(sess.proc) {
		// The process died and the connection has not noticed yet: a
		// call sent now would be lost, so the next one starts a new
		// process instead (the closer reaps the dead one).
		s.sess = nil
		sess.shutdown()
		return nil, nil
	}
	return sess, nil
}

// fail drops sess (if it is still the current one) and closes it.
func (s *Server) fail(sess *session) {
	s.mu.Lock()
	if s.sess == sess {
		s.sess = nil
	}
	s.mu.Unlock()
	sess.shutdown()
}

func (s *Server) dial(ctx context.Context) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	var (
		transport mcp.Transport
		cmd       *exec.Cmd // stdio only
		stderr    *tailBuffer
	)
	switch s.cfg.Transport {
	case Stdio:
		// The process must outlive ctx (the first call's context), so it
		// is not started with exec.CommandContext.
		env := make(map[string]string, len(s.cfg.Env))
		var red secretref.Redactor
		for k, v := range s.cfg.Env {
			x, err := secretref.Expand(ctx, v, s.lookup, &red)
			if err != nil {
				return nil, fmt.Errorf("mcptool: server %s: env %s: %w", s.cfg.Name, k, err)
			}
			env[k] = x
		}
		s.remember(&red)
		cmd = exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env = childEnv(env)
		cmd.Dir = s.cfg.Dir
		stderr = &tailBuffer{max: 4 << 10}
		cmd.Stderr = stderr
		// Bounds Wait when a grandchild keeps stderr open.
		cmd.WaitDelay = 2 * time.Second
		transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	case HTTP:
		hc := *s.httpClient
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		hc.Transport = &headerTransport{base: base, headers: s.cfg.Headers, server: s}
		transport = &mcp.StreamableClientTransport{
			Endpoint:   s.cfg.URL,
			HTTPClient: &hc,
			MaxRetries: 1,
			// The standalone stream (GET) carries the server's
			// notifications, notifications/tools/list_changed among them.
		}
	}
	cs, err := s.client.Connect(ctx, transport, nil)
	if err != nil {
		msg := err.Error()
		if stderr != nil {
			if tail := stderr.String(); tail != "" {
				msg += "; its stderr ends with: " + tail
			}
		}
		return nil, fmt.Errorf("mcptool: server %s: connect: %s", s.cfg.Name, s.redact(msg))
	}
	sess := &session{cs: cs, done: make(chan struct{}), stop: make(chan struct{}), stderr: stderr}
	if cmd != nil {
		sess.proc = cmd.Process
	}
	go func() {
		// Wait returns when the connection ends: the process exited, the
		// server closed the stream, or the session was closed.
		cs.Wait()
		close(sess.done)
		s.mu.Lock()
		if s.sess == sess {
			s.sess = nil
		}
		s.mu.Unlock()
	}()
	s.sessions.Add(1)
	go func() {
		defer s.sessions.Done()
		select {
		case <-sess.done:
		case <-sess.stop:
		}
		// Closes stdin, waits for the process (SIGTERM, then SIGKILL
		// after the grace period) and reaps it.
		cs.Close()
		<-sess.done
	}()
	return sess, nil
}

// call runs one tool call, restarting the session once if it is dead.
func (s *Server) call(ctx context.Context, remote string, args json.RawMessage) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var stale *session
	for attempt := 0; ; attempt++ {
		sess, err := s.session(ctx, stale)
		if err != nil {
			if stale != nil {
				return nil, fmt.Errorf("MCP server %s is unavailable and could not be restarted: %w", s.cfg.Name, err)
			}
			return nil, err
		}
		res, err := sess.cs.CallTool(ctx, &mcp.CallToolParams{Name: remote, Arguments: args})
		if err == nil {
			return res, nil
		}
		var wire *jsonrpc.Error
		switch {
		case errors.As(err, &wire):
			// The server answered: it is alive.
			return nil, fmt.Errorf("MCP server %s: %w", s.cfg.Name, err)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, fmt.Errorf("MCP server %s: no answer in time (call timeout %v): %w", s.cfg.Name, s.cfg.CallTimeout, ctx.Err())
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		s.fail(sess)
		if notSent(err) && attempt == 0 {
			stale = sess
			continue
		}
		return nil, fmt.Errorf("MCP server %s failed during the call (%v); it will be restarted on the next call", s.cfg.Name, s.explain(sess, err))
	}
}

// explain adds the end of a stdio server's stderr to err.
func (s *Server) explain(sess *session, err error) error {
	if sess.stderr == nil {
		return err
	}
	if tail := sess.stderr.String(); tail != "" {
		return fmt.Errorf("%w; its stderr ends with: %s", err, tail)
	}
	return err
}

// notSent reports errors that mean the request never reached the server,
// so that sending it again cannot repeat its effects.
func notSent(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// Tool is one tool of an MCP server.
type Tool struct {
	server *Server
	remote string
	schema toolargs.Schema
	spec   llm.ToolSpec
}

var _ tool.Tool = (*Tool)(nil)

// Spec describes the tool with the server's description and input schema.
func (t *Tool) Spec() llm.ToolSpec { return t.spec }

// RemoteName returns the tool's name on the MCP server.
func (t *Tool) RemoteName() string { return t.remote }

// Call calls the tool on the server.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if _, err := toolargs.Object(t.spec.Name, t.schema, args); err != nil {
		return tool.Result{}, err
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	res, err := t.server.call(ctx, t.remote, args)
	if err != nil {
		return tool.Result{}, t.server.redactError(fmt.Errorf("tool %s: %w", t.spec.Name, err))
	}
	content := t.server.redact(render(res))
	if res.IsError {
		if content == "" {
			content = "the tool reported an error without a message"
		}
		return tool.Result{}, &CallError{Tool: t.spec.Name, Message: content}
	}
	return tool.Result{Content: content}, nil
}

// CallError is a result the MCP server marked as an error.
type CallError struct {
	Tool    string
	Message string
}

// Error returns the server's message.
func (e *CallError) Error() string { return "tool " + e.Tool + ": " + e.Message }

// render turns a result's content into text for the model.
func render(res *mcp.CallToolResult) string {
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			s := "[resource link: " + c.URI
			if c.Name != "" {
				s += " (" + c.Name + ")"
			}
			parts = append(parts, s+"]")
		case *mcp.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
				parts = append(parts, "[resource]")
			case r.Text != "":
				parts = append(parts, r.Text)
			default:
				parts = append(parts, fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// childEnv is the environment of a stdio server: the variables a program
// needs to run, plus extra.
func childEnv(extra map[string]string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT", "APPDATA", "LOCALAPPDATA", "USERPROFILE"} {
		if v, ok := os.LookupEnv(k); ok {
			if _, over := extra[k]; !over {
				env = append(env, k+"="+v)
			}
		}
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// headerTransport adds the configured headers, resolving their references
// on each request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	server  *Server
}

func (h *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(h.headers) == 0 {
		return h.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	var red secretref.Redactor
	for k, v := range h.headers {
		val, err := secretref.Expand(req.Context(), v, h.server.lookup, &red)
		if err == nil && strings.ContainsAny(val, "\r\n\x00") {
			err = errors.New("resolved value holds a line break")
		}
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		req.Header.Set(k, val)
	}
	h.server.remember(&red)
	return h.base.RoundTrip(req)
}

// remember adds resolved secret values to those redacted from results.
func (s *Server) remember(red *secretref.Redactor) {
	if red.Empty() {
		return
	}
	s.redMu.Lock()
	s.red.Merge(red)
	s.redMu.Unlock()
}

// redact removes the secret values resolved for this server from text: a
// server that echoes its request or its environment cannot hand them to
// the model or the user.
func (s *Server) redact(text string) string {
	s.redMu.Lock()
	defer s.redMu.Unlock()
	return s.red.Redact(text)
}

func (s *Server) redactError(err error) error {
	s.redMu.Lock()
	defer s.redMu.Unlock()
	return s.red.RedactError(err)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ToValidUTF8(strings.TrimSpace(string(b.buf)), "")
}
