package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/redisstore"
	"github.com/weftlabs/weft/memory/sqlstore"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/all"
	"github.com/weftlabs/weft/tokens"
)

// benchModel is the model every agent of the benchmark uses, served by the
// fake upstream.
const benchModel = "openai/gpt-4o-mini"

// adminKey is the admin key of the benchmark's servers (WEFT_ADMIN_KEY).
const adminKey = "weft-bench-admin-key-0123456789"

// shortQuery is the i-th query of a non-streamed turn: a dozen words, made
// unique by i so no cache sees the same text twice in a row.
func shortQuery(i int) string {
	return "Turn " + strconv.Itoa(i) + ": which of our plans includes priority support and what does it cost per month?"
}

// longQuery is the i-th query of a streamed turn: 50 words, which the
// echoing upstream streams back as 50 chunks.
func longQuery(i int) string {
	var b strings.Builder
	b.WriteString("q")
	b.WriteString(strconv.Itoa(i))
	for w := 1; w < 50; w++ {
		b.WriteString(" word")
	}
	return b.String()
}

// windowTokens returns an agent's context window that holds the query plus
// exactly turns earlier turns of history when every message is (about) as
// long as query and answers echo it: the session's window stays that long
// however much the session grows during the run. The reserve for the
// answer is at least minReserve, and more when the API's smallest window
// (256) needs filling.
func windowTokens(query string, turns int) (window, reserve int) {
	const minReserve, minWindow = 64, 256
	c := tokens.ForModel(benchModel)
	q := tokens.MessageTokens(c, llm.UserMessage(query))
	a := tokens.MessageTokens(c, llm.AssistantMessage(query))
	// Half a message of slack covers queries a digit longer or shorter
	// without admitting an eleventh turn.
	need := tokens.ReplyOverhead + q + turns*(q+a) + q/2
	reserve = max(minReserve, minWindow-need)
	return need + reserve, reserve
}

// newClient returns the load generator's HTTP client: keep-alive
// connections, as many as the load needs, no compression.
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// listen serves h on a loopback port with the same timeouts as weft serve.
func listen(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go hs.Serve(ln)
	return "http://" + ln.Addr().String(), func() { hs.Close() }, nil
}

// weftStack is an in-process weft server (the platform handler behind a
// real loopback listener) over one store configuration.
type weftStack struct {
	label string
	url   string
	// agent answers non-streamed turns; streamAgent streamed ones. Their
	// windows hold 10 turns of history.
	agent, streamAgent string
	closers            []func()

	meta   meta.Store
	store  memory.Store
	tenant string
}

// startWeft builds a weft server over SQLite metadata under dir and, when
// rdb is nil, SQLite sessions; otherwise Redis sessions under prefix (and
// Redis for the limiter and cache invalidation, as weft serve --redis
// does).
func startWeft(ctx context.Context, label, upstream, dir string, rdb *redis.Client, prefix string, history int) (*weftStack, error) {
	st := &weftStack{label: label}
	ok := false
	defer func() {
		if !ok {
			st.close()
		}
	}()
	ms, err := meta.OpenSQLite(ctx, filepath.Join(dir, "weft.db"))
	if err != nil {
		return nil, err
	}
	st.closers = append(st.closers, func() { ms.Close() })
	var sessions memory.Store
	if rdb == nil {
		ss, err := sqlstore.OpenSQLite(ctx, filepath.Join(dir, "sessions.db"))
		if err != nil {
			return nil, err
		}
		st.closers = append(st.closers, func() { ss.Close() })
		sessions = ss
	} else {
		rs, err := redisstore.New(rdb, redisstore.WithPrefix(prefix), redisstore.WithTTL(time.Hour))
		if err != nil {
			return nil, err
		}
		sessions = rs
	}
	if _, err := platform.Bootstrap(ctx, ms, adminKey); err != nil {
		return nil, err
	}
	tenant, err := ms.EnsureTenant(ctx, "default")
	if err != nil {
		return nil, err
	}
	st.meta, st.store, st.tenant = ms, sessions, tenant.ID
	cfg := platform.Config{
		Meta:         ms,
		Sessions:     sessions,
		DefaultModel: benchModel,
		OpenModel: func(spec string) (*llm.Model, error) {
			return provider.Open(spec, provider.WithBaseURL(upstream), provider.WithAPIKey("bench"))
		},
		// Failures are counted and shown by the harness; the server's
		// per-request logs would only drown the table.
		Logger:    slog.New(slog.DiscardHandler),
		RateLimit: -1,
	}
	if rdb != nil {
		cfg.Redis = rdb
	}
	srv, err := platform.New(cfg)
	if err != nil {
		return nil, err
	}
	st.closers = append(st.closers, func() { srv.Close() })
	url, stop, err := listen(srv)
	if err != nil {
		return nil, err
	}
	st.closers = append(st.closers, stop)
	st.url = url
	if err := st.createAgents(ctx, history); err != nil {
		return nil, err
	}
	ok = true
	return st, nil
}

func (st *weftStack) close() {
	for i := len(st.closers) - 1; i >= 0; i-- {
		st.closers[i]()
	}
	st.closers = nil
}

func (st *weftStack) createAgents(ctx context.Context, history int) error {
	c := newClient()
	var err error
	window, reserve := windowTokens(shortQuery(100000), history)
	if st.agent, err = createAgent(ctx, c, st.url, "latency", window, reserve); err != nil {
		return err
	}
	window, reserve = windowTokens(longQuery(100000), history)
	st.streamAgent, err = createAgent(ctx, c, st.url, "stream", window, reserve)
	return err
}

// createAgent creates an agent through the API and returns its id.
func createAgent(ctx context.Context, c *http.Client, base, name string, window, reserve int) (string, error) {
	body, _ := json.Marshal(map[string]any{"name": name, "model": benchModel, "context_window_tokens": window, "reserve_tokens": reserve})
	var out struct {
		ID string `json:"id"`
	}
	if err := postJSON(ctx, c, base+"/v1/agents", body, &out); err != nil {
		return "", fmt.Errorf("create agent %s: %w", name, err)
	}
	return out.ID, nil
}

// postJSON posts body with the admin key and decodes a 2xx answer into out.
func postJSON(ctx context.Context, c *http.Client, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, out)
}

// newSessions creates n sessions of agent, each holding history turns
// of query-length messages, straight in the stores (what the API would
// have written, without the minutes that many turns take on a loaded
// machine), and returns their ids. Every measured run gets fresh sessions,
// so that one run's overload (a lock whose release failed) cannot spill
// into the next.
func (st *weftStack) newSessions(ctx context.Context, agent string, n, history int, query func(int) string) ([]string, error) {
	c := tokens.ForModel(benchModel)
	ids := make([]string, n)
	now := time.Now().UTC()
	for i := range ids {
		ss := meta.Session{ID: meta.NewID("ses"), TenantID: st.tenant, AgentID: agent, CreatedAt: now, UpdatedAt: now}
		if err := st.meta.CreateSession(ctx, ss); err != nil {
			return nil, fmt.Errorf("create session: %w", err)
		}
		recs := make([]memory.Record, 0, 2*history)
		for t := 0; t < history; t++ {
			q := query(i*history + t)
			um, am := llm.UserMessage(q), llm.AssistantMessage(q)
			recs = append(recs,
				memory.Record{Message: um, Tokens: tokens.MessageTokens(c, um)},
				memory.Record{Message: am, Tokens: tokens.MessageTokens(c, am)})
		}
		if len(recs) > 0 {
			key := memory.Key{Tenant: st.tenant, Agent: agent, Session: ss.ID}
			if _, err := st.store.Append(ctx, key, recs...); err != nil {
				return nil, fmt.Errorf("seed session: %w", err)
			}
		}
		ids[i] = ss.ID
	}
	return ids, nil
}

// chat sends a non-streamed turn to session and checks that the answer
// echoes the query.
func (st *weftStack) chat(ctx context.Context, c *http.Client, session, query string) error {
	return st.chatAgent(ctx, c, st.agent, session, query)
}

// chatAgent sends a non-streamed turn to a session of agent and checks
// that the answer echoes the query.
func (st *weftStack) chatAgent(ctx context.Context, c *http.Client, agent, session, query string) error {
	body := make([]byte, 0, 256)
	body = append(body, `{"query":`...)
	body = strconv.AppendQuote(body, query)
	body = append(body, `,"session_id":`...)
	body = strconv.AppendQuote(body, session)
	body = append(body, '}')
	b, err := post(ctx, c, st.url+"/v1/agents/"+agent+"/chat", body)
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte(query)) {
		return fmt.Errorf("answer does not echo the query: %.200s", b)
	}
	return nil
}

// post posts a JSON body with the admin key and returns a 200 answer's body.
func post(ctx context.Context, c *http.Client, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %.300s", resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}

// chatStream sends a streamed turn and reads it to its end; it returns the
// number of message.delta events.
func (st *weftStack) chatStream(ctx context.Context, c *http.Client, session, query string) (int, error) {
	body := make([]byte, 0, 512)
	body = append(body, `{"stream":true,"query":`...)
	body = strconv.AppendQuote(body, query)
	body = append(body, `,"session_id":`...)
	body = strconv.AppendQuote(body, session)
	body = append(body, '}')
	return stream(ctx, c, st.url+"/v1/agents/"+st.streamAgent+"/chat", body, nil, weftEvents)
}

// streamKind says how a stream marks its deltas and its successful end.
type streamKind struct {
	delta, done string
}

var (
	weftEvents   = streamKind{delta: "event: message.delta", done: "event: chat.completed"}
	openaiEvents = streamKind{delta: `"delta":{"content"`, done: "data: [DONE]"}
)

// stream posts body, reads the SSE answer to EOF, and counts its delta
// lines. firstDelta, when set, is called once at the first delta.
func stream(ctx context.Context, c *http.Client, url string, body []byte, firstDelta func(), kind streamKind) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return 0, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	br := bufio.NewReaderSize(resp.Body, 16<<10)
	deltas, done := 0, false
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case bytes.Contains(line, []byte(kind.delta)):
			if deltas == 0 && firstDelta != nil {
				firstDelta()
			}
			deltas++
		case bytes.HasPrefix(line, []byte(kind.done)):
			done = true
		case bytes.HasPrefix(line, []byte("event: error")):
			l2, _ := br.ReadSlice('\n')
			return deltas, fmt.Errorf("stream error: %s", bytes.TrimSpace(l2))
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return deltas, err
		}
	}
	if !done {
		return deltas, errors.New("stream ended without its final event")
	}
	return deltas, nil
}

// openAIBody returns the body of an OpenAI chat completion that carries
// what weft sends upstream for a turn of a session with history turns of
// query-length messages: so the direct call and the relay make the upstream
// do the same work as weft makes it do.
func openAIBody(query string, history int, stream bool) []byte {
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	msgs := make([]msg, 0, 2*history+1)
	for t := 0; t < history; t++ {
		msgs = append(msgs, msg{"user", query}, msg{"assistant", query})
	}
	msgs = append(msgs, msg{"user", query})
	req := map[string]any{"model": "gpt-4o-mini", "messages": msgs}
	if stream {
		req["stream"] = true
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	b, _ := json.Marshal(req)
	return b
}

// direct sends a non-streamed chat completion straight to the upstream and
// checks that the answer echoes the query.
func direct(ctx context.Context, c *http.Client, upstream string, body []byte, query string) error {
	b, err := post(ctx, c, upstream+"/chat/completions", body)
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte(query)) {
		return fmt.Errorf("answer does not echo the query: %.200s", b)
	}
	return nil
}

// relay is the peer of streamed turns: the least a Go server can do to
// put a model's stream behind its own API — take the client's OpenAI
// request, send it upstream with stream=true, and copy the SSE lines back,
// flushing at the end of each event. No sessions, no persistence, no
// parsing. It uses http.DefaultClient, as weft's providers do by default.
func relay(upstream string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, upstream+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer bench")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(resp.StatusCode)
		rc := http.NewResponseController(w)
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadSlice('\n')
			if _, werr := w.Write(line); werr != nil {
				return
			}
			if len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
				if rc.Flush() != nil {
					return
				}
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				rc.Flush()
				return
			}
		}
	})
}
