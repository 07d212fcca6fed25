package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
)

// Server is a fake OpenAI-compatible API on a loopback port. It answers
// POST /v1/chat/completions from its script of [Turn]s, one turn per
// request in order, and echoes the last user message once the script is
// empty; POST /v1/embeddings with deterministic vectors (see
// [scripted.Vector]); GET /v1/models with its model list. A Server is safe
// for concurrent use.
type Server struct {
	ts        *httptest.Server
	closed    chan struct{}
	closeOnce sync.Once
	created   int64
	seq       atomic.Int64
	noRecord  atomic.Bool

	mu      sync.Mutex
	turns   []Turn
	respond func(*Request) Turn
	embeds  []Turn
	reqs    []Request
	models  []string
}

// DefaultEmbeddingDims is the length of the vectors /v1/embeddings returns
// when the request does not ask for "dimensions".
const DefaultEmbeddingDims = 256

// NewServer starts a server that answers the given turns in order. Close
// it when done.
func NewServer(turns ...Turn) *Server {
	s := &Server{
		closed:  make(chan struct{}),
		created: time.Now().Unix(),
		turns:   turns,
		models:  []string{"gpt-4o-mini", "text-embedding-3-small"},
	}
	s.ts = httptest.NewServer(s)
	return s
}

// URL returns the API base URL, ending in "/v1" (what OPENAI_BASE_URL
// takes).
func (s *Server) URL() string { return s.ts.URL + "/v1" }

// Client returns an HTTP client configured for the server.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// Close stops the server. Requests waiting out a Delay or ChunkDelay end
// at once.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	s.ts.Close()
}

// Enqueue appends turns to the script.
func (s *Server) Enqueue(turns ...Turn) {
	s.mu.Lock()
	s.turns = append(s.turns, turns...)
	s.mu.Unlock()
}

// EnqueueEmbed appends turns to the script of /v1/embeddings, which is
// separate from the chat script. Of a turn, only Status, Error, Header and
// Delay apply: a turn with Status 0 or 200 answers the embeddings as usual.
// With an empty script every request is answered.
func (s *Server) EnqueueEmbed(turns ...Turn) {
	s.mu.Lock()
	s.embeds = append(s.embeds, turns...)
	s.mu.Unlock()
}

// Pending returns how many scripted turns have not been served yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns)
}

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	copy(out, s.reqs)
	return out
}

// SetRecording turns the keeping of requests for [Server.Requests] on (the
// default) or off. Benchmarks and load tests turn it off so memory stays
// flat.
func (s *Server) SetRecording(on bool) { s.noRecord.Store(!on) }

// SetResponder makes f answer the chat requests that come once the
// script is empty, instead of the echo of the last user message: a fake
// provider that answers by rules rather than in a fixed order. f is called
// with the decoded request and must be safe for concurrent use; nil
// restores the echo.
func (s *Server) SetResponder(f func(*Request) Turn) {
	s.mu.Lock()
	s.respond = f
	s.mu.Unlock()
}

// SetModels sets the model ids /v1/models lists.
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	s.models = append([]string(nil), ids...)
	s.mu.Unlock()
}

// ServeHTTP implements http.Handler, so the server's behaviour can also be
// mounted elsewhere.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions":
		s.chat(w, r)
	case "/v1/embeddings":
		s.embeddings(w, r)
	case "/v1/models":
		s.listModels(w)
	default:
		writeError(w, http.StatusNotFound, nil, &APIError{
			Message: "Unknown request URL: " + r.Method + " " + r.URL.Path + ".",
			Type:    "invalid_request_error",
			Code:    "unknown_url",
		})
	}
}

// read decodes and records a request. It answers 400 and returns false
// when the body is not JSON.
func (s *Server) read(w http.ResponseWriter, r *http.Request) (*wireRequest, bool) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, nil, &APIError{Message: "use POST", Type: "invalid_request_error"})
		return nil, false
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, nil, &APIError{Message: "reading body: " + err.Error(), Type: "invalid_request_error"})
		return nil, false
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, nil, &APIError{
			Message: "We could not parse the JSON body of your request: " + err.Error(),
			Type:    "invalid_request_error",
		})
		return nil, false
	}
	if !s.noRecord.Load() {
		rec := Request{
			Method:   r.Method,
			Path:     r.URL.Path,
			Header:   r.Header.Clone(),
			Body:     body,
			Model:    wr.Model,
			Stream:   wr.Stream,
			Messages: wr.Messages,
			Tools:    wr.Tools,
			Input:    inputs(wr.Input),
		}
		rec.IncludeUsage = wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage
		s.mu.Lock()
		s.reqs = append(s.reqs, rec)
		s.mu.Unlock()
	}
	return &wr, true
}

func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > 0 && r.ContentLength < 64<<20 {
		b := make([]byte, r.ContentLength)
		_, err := io.ReadFull(r.Body, b)
		return b, err
	}
	return io.ReadAll(r.Body)
}

func (s *Server) next(wr *wireRequest) Turn {
	s.mu.Lock()
	if len(s.turns) > 0 {
		t := s.turns[0]
		s.turns[0] = Turn{}
		s.turns = s.turns[1:]
		s.mu.Unlock()
		return t
	}
	respond := s.respond
	s.mu.Unlock()
	if respond != nil {
		return respond(&Request{Model: wr.Model, Stream: wr.Stream, Messages: wr.Messages, Tools: wr.Tools})
	}
	for i := len(wr.Messages) - 1; i >= 0; i-- {
		if wr.Messages[i].Role == "user" {
			return Turn{Text: wr.Messages[i].Text()}
		}
	}
	return Turn{}
}

// wait sleeps for d unless the client leaves or the server closes first;
// it reports whether the full time passed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.closed:
	}
	return false
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	wr, ok := s.read(w, r)
	if !ok {
		return
	}
	t := s.next(wr)
	if !s.wait(r.Context(), t.Delay) {
		return
	}
	h := w.Header()
	for k, vs := range t.Header {
		h[k] = vs
	}
	if t.Raw != "" {
		ct := t.RawContentType
		if ct == "" {
			ct = "text/event-stream"
		}
		h.Set("Content-Type", ct)
		io.WriteString(w, t.Raw)
		return
	}
	if t.Status != 0 && t.Status != http.StatusOK {
		apiErr := t.Error
		if apiErr == nil {
			apiErr = &APIError{Message: http.StatusText(t.Status), Type: "server_error"}
		}
		writeError(w, t.Status, nil, apiErr)
		return
	}
	model := t.Model
	if model == "" {
		model = wr.Model
	}
	id := "chatcmpl-llmtest" + strconv.FormatInt(s.seq.Add(1), 10)
	usage := t.Usage
	if usage.IsZero() {
		usage = estimateUsage(wr, &t)
	}
	finish := t.FinishReason
	if finish == "" {
		finish = "stop"
		if len(t.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	if wr.Stream {
		includeUsage := wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage
		s.stream(w, r.Context(), &t, id, model, finish, usage, includeUsage)
		return
	}
	s.complete(w, &t, id, model, finish, usage)
}

func estimateUsage(wr *wireRequest, t *Turn) llm.Usage {
	prompt := 0
	for _, m := range wr.Messages {
		prompt += 4 + len(m.Content)/4
	}
	completion := (len(t.Text)+len(t.Reasoning)+3)/4 + 1
	for _, tc := range t.ToolCalls {
		completion += (len(tc.Name)+len(tc.Arguments)+3)/4 + 1
	}
	return llm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// complete writes a non-streamed chat.completion answer.
func (s *Server) complete(w http.ResponseWriter, t *Turn, id, model, finish string, usage llm.Usage) {
	w.Header().Set("Content-Type", "application/json")
	if t.Error != nil {
		b, _ := json.Marshal(struct {
			Error *APIError `json:"error"`
		}{t.Error})
		w.Write(b)
		return
	}
	bp := bufPool.Get().(*[]byte)
	b := (*bp)[:0]
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, s.created, 10)
	b = append(b, `,"model":`...)
	b = appendString(b, model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if t.Text == "" && len(t.ToolCalls) > 0 {
		b = append(b, "null"...)
	} else {
		b = appendString(b, t.Text)
	}
	if t.Reasoning != "" {
		b = append(b, `,"reasoning_content":`...)
		b = appendString(b, t.Reasoning)
	}
	if len(t.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, tc := range t.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendString(b, callID(tc, i))
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendString(b, tc.Name)
			b = append(b, `,"arguments":`...)
			b = appendString(b, tc.Arguments)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"finish_reason":`...)
	b = appendString(b, finish)
	b = append(b, `}],"usage":`...)
	b = appendUsage(b, usage)
	b = append(b, "}\n"...)
	if t.NoFinish {
		b = b[:len(b)/2]
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
	*bp = b
	bufPool.Put(bp)
}

func callID(tc ToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return "call_" + strconv.Itoa(i)
}

// events writes the server-sent events of one stream.
type events struct {
	s      *Server
	ctx    context.Context
	w      http.ResponseWriter
	f      http.Flusher
	t      *Turn
	buf    []byte
	prefix []byte
	sent   int // content chunks sent
	failed bool
}

func (s *Server) stream(w http.ResponseWriter, ctx context.Context, t *Turn, id, model, finish string, usage llm.Usage, includeUsage bool) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	if f != nil {
		f.Flush() // headers go out at once, as real providers send them
	}
	bp := bufPool.Get().(*[]byte)
	pp := bufPool.Get().(*[]byte)
	e := &events{s: s, ctx: ctx, w: w, f: f, t: t, buf: (*bp)[:0]}
	p := (*pp)[:0]
	p = append(p, `{"id":`...)
	p = appendString(p, id)
	p = append(p, `,"object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, s.created, 10)
	p = append(p, `,"model":`...)
	p = appendString(p, model)
	e.prefix = p
	defer func() {
		*bp, *pp = e.buf, e.prefix
		bufPool.Put(bp)
		bufPool.Put(pp)
	}()
	e.run(finish, usage, includeUsage)
}

func (e *events) run(finish string, usage llm.Usage, includeUsage bool) {
	t := e.t
	e.begin()
	e.buf = append(e.buf, `{"role":"assistant","content":""}`...)
	if !e.end("", nil) {
		return
	}
	ok := true
	piece := func(field, text string) bool {
		if !e.content() {
			return false
		}
		e.begin()
		e.buf = append(e.buf, field...)
		e.buf = appendString(e.buf, text)
		e.buf = append(e.buf, '}')
		return e.end("", nil)
	}
	split(t.Reasoning, t.Chunks, func(p string) bool {
		ok = piece(`{"reasoning_content":`, p)
		return ok
	})
	if ok {
		split(t.Text, t.Chunks, func(p string) bool {
			ok = piece(`{"content":`, p)
			return ok
		})
	}
	for i := 0; ok && i < len(t.ToolCalls); i++ {
		tc := t.ToolCalls[i]
		if !e.content() {
			return
		}
		e.begin()
		e.buf = append(e.buf, `{"tool_calls":[{"index":`...)
		e.buf = strconv.AppendInt(e.buf, int64(i), 10)
		e.buf = append(e.buf, `,"id":`...)
		e.buf = appendString(e.buf, callID(tc, i))
		e.buf = append(e.buf, `,"type":"function","function":{"name":`...)
		e.buf = appendString(e.buf, tc.Name)
		e.buf = append(e.buf, `,"arguments":""}}]}`...)
		if !e.end("", nil) {
			return
		}
		n := t.ArgChunks
		if n <= 0 {
			n = 3
		}
		splitN(tc.Arguments, n, func(p string) bool {
			if ok = e.content(); !ok {
				return false
			}
			e.begin()
			e.buf = append(e.buf, `{"tool_calls":[{"index":`...)
			e.buf = strconv.AppendInt(e.buf, int64(i), 10)
			e.buf = append(e.buf, `,"function":{"arguments":`...)
			e.buf = appendString(e.buf, p)
			e.buf = append(e.buf, "}}]}"...)
			ok = e.end("", nil)
			return ok
		})
	}
	if !ok || e.failed {
		return
	}
	if t.Error != nil {
		// FailAfter is beyond the content: fail at its end.
		e.fail()
		return
	}
	if t.NoFinish {
		return
	}
	var finishUsage *llm.Usage
	if t.UsageInFinish {
		finishUsage = &usage
	}
	for range 1 + btoi(t.DuplicateFinish) {
		e.begin()
		e.buf = append(e.buf, "{}"...)
		if !e.end(finish, finishUsage) {
			return
		}
	}
	if includeUsage && !t.UsageInFinish {
		e.buf = e.buf[:0]
		e.keepAlive()
		e.buf = append(e.buf, "data: "...)
		e.buf = append(e.buf, e.prefix...)
		e.buf = append(e.buf, `,"choices":[],"usage":`...)
		e.buf = appendUsage(e.buf, usage)
		e.buf = append(e.buf, "}\n\n"...)
		if !e.flush() {
			return
		}
	}
	e.buf = e.buf[:0]
	e.keepAlive()
	e.buf = append(e.buf, "data: [DONE]\n\n"...)
	e.flush()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// content is called before each content chunk: it sends the scripted error
// instead once FailAfter chunks went out, and reports whether to go on.
func (e *events) content() bool {
	if e.failed {
		return false
	}
	if e.t.Error != nil && e.sent >= e.t.FailAfter {
		e.fail()
		return false
	}
	if e.t.StallAfter > 0 && e.sent >= e.t.StallAfter {
		e.failed = true
		e.s.wait(e.ctx, 24*time.Hour)
		return false
	}
	e.sent++
	return true
}

func (e *events) fail() {
	e.failed = true
	b, _ := json.Marshal(struct {
		Error *APIError `json:"error"`
	}{e.t.Error})
	e.buf = append(e.buf[:0], "data: "...)
	e.buf = append(e.buf, b...)
	e.buf = append(e.buf, "\n\n"...)
	e.flush()
}

func (e *events) keepAlive() {
	if e.t.KeepAlive {
		e.buf = append(e.buf, ": keep-alive\n\n"...)
	}
}

// begin starts a chunk event; the caller appends the delta object.
func (e *events) begin() {
	e.buf = e.buf[:0]
	e.keepAlive()
	e.buf = append(e.buf, "data: "...)
	e.buf = append(e.buf, e.prefix...)
	e.buf = append(e.buf, `,"choices":[{"index":0,"delta":`...)
}

// end closes a chunk event and sends it.
func (e *events) end(finish string, usage *llm.Usage) bool {
	e.buf = append(e.buf, `,"finish_reason":`...)
	if finish == "" {
		e.buf = append(e.buf, "null"...)
	} else {
		e.buf = appendString(e.buf, finish)
	}
	e.buf = append(e.buf, "}]"...)
	if usage != nil {
		e.buf = append(e.buf, `,"usage":`...)
		e.buf = appendUsage(e.buf, *usage)
	}
	e.buf = append(e.buf, "}\n\n"...)
	return e.flush()
}

func (e *events) flush() bool {
	if e.t.ChunkDelay > 0 && !e.s.wait(e.ctx, e.t.ChunkDelay) {
		return false
	}
	if _, err := e.w.Write(e.buf); err != nil {
		return false
	}
	if e.f != nil {
		e.f.Flush()
	}
	return true
}

func appendUsage(b []byte, u llm.Usage) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	if u.CachedTokens > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CachedTokens), 10)
		b = append(b, '}')
	}
	if u.ReasoningTokens > 0 {
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = strconv.AppendInt(b, int64(u.ReasoningTokens), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendString appends s as a JSON string. It is hand-written because the
// server builds every event by appending to one buffer, and encoding/json
// would allocate per string on the benchmarks' hot path.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// split calls yield with the pieces of s: n pieces of about equal length
// when n > 0, else one piece per word (each word with the spaces before it).
func split(s string, n int, yield func(string) bool) {
	if n > 0 {
		splitN(s, n, yield)
		return
	}
	for len(s) > 0 {
		i := 0
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		if !yield(s[:i]) {
			return
		}
		s = s[i:]
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// splitN calls yield with n pieces of s of about equal numbers of runes
// (fewer pieces when s has fewer runes).
func splitN(s string, n int, yield func(string) bool) {
	runes := utf8.RuneCountInString(s)
	for ; n > 0 && len(s) > 0; n-- {
		take := (runes + n - 1) / n
		runes -= take
		size := 0
		for ; take > 0 && size < len(s); take-- {
			_, w := utf8.DecodeRuneInString(s[size:])
			size += w
		}
		if !yield(s[:size]) {
			return
		}
		s = s[size:]
	}
}

func writeError(w http.ResponseWriter, status int, h http.Header, e *APIError) {
	for k, vs := range h {
		w.Header()[k] = vs
	}
	b, _ := json.Marshal(struct {
		Error *APIError `json:"error"`
	}{e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func inputs(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	return nil
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	wr, ok := s.read(w, r)
	if !ok {
		return
	}
	var t Turn
	s.mu.Lock()
	if len(s.embeds) > 0 {
		t = s.embeds[0]
		s.embeds = s.embeds[1:]
	}
	s.mu.Unlock()
	if !s.wait(r.Context(), t.Delay) {
		return
	}
	for k, vs := range t.Header {
		w.Header()[k] = vs
	}
	if t.Status != 0 && t.Status != http.StatusOK {
		apiErr := t.Error
		if apiErr == nil {
			apiErr = &APIError{Message: http.StatusText(t.Status), Type: "server_error"}
		}
		writeError(w, t.Status, nil, apiErr)
		return
	}
	in := inputs(wr.Input)
	if in == nil {
		writeError(w, http.StatusBadRequest, nil, &APIError{
			Message: "'input' must be a string or an array of strings",
			Type:    "invalid_request_error",
			Param:   "input",
		})
		return
	}
	dims := wr.Dimensions
	if dims <= 0 {
		dims = DefaultEmbeddingDims
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	resp := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: wr.Model}
	for i, text := range in {
		resp.Data = append(resp.Data, item{Object: "embedding", Index: i, Embedding: scripted.Vector(text, dims)})
		resp.Usage.PromptTokens += (len(text)+3)/4 + 1
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	b, err := json.Marshal(resp)
	if err != nil {
		writeError(w, http.StatusInternalServerError, nil, &APIError{Message: fmt.Sprint("encoding embeddings: ", err), Type: "server_error"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (s *Server) listModels(w http.ResponseWriter) {
	s.mu.Lock()
	ids := s.models
	s.mu.Unlock()
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	resp := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range ids {
		resp.Data = append(resp.Data, model{ID: id, Object: "model", Created: s.created, OwnedBy: "llmtest"})
	}
	b, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
