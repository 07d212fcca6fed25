package platform

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/meta"
)

// The OpenAI-compatible face of the platform: agents appear as models, and
// a chat completion is a chat turn whose query is the last user message.
// Tools and retrieval run server-side, as the agent is configured; clients
// see only the answer.

type oaiModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// openaiModels: GET /v1/models lists the tenant's agents as models.
func (s *Server) openaiModels(w http.ResponseWriter, r *http.Request) {
	agents, err := s.meta.ListAgents(r.Context(), principalFrom(r.Context()).Tenant)
	if err != nil {
		writeOpenAIError(w, asAPIError(err))
		return
	}
	data := make([]oaiModel, 0, len(agents))
	for _, a := range agents {
		data = append(data, oaiModel{ID: a.Name, Object: "model", Created: a.CreatedAt.Unix(), OwnedBy: "weft"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

type oaiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type oaiRequest struct {
	Model         string       `json:"model"`
	Messages      []oaiMessage `json:"messages"`
	Stream        bool         `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	User string `json:"user"`
}

// text returns a message's content as text: a string, or the text parts of
// an array of content parts.
func (m oaiMessage) text() (string, bool) {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), true
}

// openaiChat: POST /v1/chat/completions.
func (s *Server) openaiChat(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	var req oaiRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeOpenAIError(w, e)
		return
	}
	if req.Model == "" {
		writeOpenAIError(w, invalid("field \"model\" is required: an agent name, or agent:<id>"))
		return
	}
	var query string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			t, ok := req.Messages[i].text()
			if !ok {
				writeOpenAIError(w, invalid("field \"messages[%d].content\": want a string or an array of content parts", i))
				return
			}
			query = strings.TrimSpace(t)
			break
		}
	}
	if query == "" {
		writeOpenAIError(w, invalid("field \"messages\": no user message with text"))
		return
	}
	if len(query) > MaxQueryBytes {
		writeOpenAIError(w, errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "the last user message exceeds %d bytes", MaxQueryBytes))
		return
	}
	var agent meta.Agent
	var err error
	if id, ok := strings.CutPrefix(req.Model, "agent:"); ok {
		agent, err = s.agents.getIn(r.Context(), p.Tenant, id)
	} else {
		agent, err = s.meta.AgentByName(r.Context(), p.Tenant, req.Model)
	}
	if err != nil {
		writeOpenAIError(w, notFoundOr(err, "model", req.Model))
		return
	}
	if !agent.Enabled {
		writeOpenAIError(w, errorf(http.StatusConflict, CodeAgentDisabled, "agent %q is disabled", agent.Name))
		return
	}
	ss, e := s.sessionFor(r.Context(), p.Tenant, agent, r.Header.Get("X-Weft-Session"), "")
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	w.Header().Set("X-Weft-Session", ss.ID)
	in := turnInput{agent: agent, session: ss, query: query, user: req.User, answerID: memory.NewID(),
		maxDepth: agent.MaxDelegateDepth, chain: []string{agent.ID}}
	ctx, done := s.turns.start(r.Context(), p.Tenant+"\x00"+ss.ID, p.Tenant+"\x00"+in.answerID)
	defer done()
	id := "chatcmpl-" + in.answerID
	created := time.Now().Unix()
	if !req.Stream {
		ans, terr := s.runTurn(ctx, in)
		if terr != nil {
			writeOpenAIError(w, terr.api)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": agent.Name,
			"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": ans.Answer}, "finish_reason": "stop"}},
			"usage":   ans.Usage,
		})
		return
	}
	s.metrics.activeStreams.Inc()
	defer s.metrics.activeStreams.Dec()
	// The stream starts with the first piece of answer, so that a turn that
	// fails before it (context_too_long, a model error) is an HTTP error, as
	// OpenAI answers it.
	var sw *sseWriter
	stop := make(chan struct{})
	defer close(stop)
	chunk := func(delta map[string]any, finish any) error {
		return sw.data(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": agent.Name,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	start := func() {
		if sw == nil {
			sw = newSSEWriter(w, s.frameDeadline())
			go sw.keepAlive(s.pingInterval(), stop)
			chunk(map[string]any{"role": "assistant", "content": ""}, nil)
		}
	}
	in.sink = func(event string, data map[string]any) error {
		if event == "message.delta" {
			start()
			return chunk(map[string]any{"content": data["text"]}, nil)
		}
		return nil
	}
	ans, terr := s.runTurn(ctx, in)
	if terr != nil {
		if sw == nil {
			writeOpenAIError(w, terr.api)
			return
		}
		sw.data(map[string]any{"error": openAIErrorBody(terr.api)})
		return
	}
	start()
	chunk(map[string]any{}, "stop")
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		sw.data(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": agent.Name,
			"choices": []any{}, "usage": ans.Usage})
	}
	sw.raw([]byte("data: [DONE]\n\n"))
}

func openAIErrorBody(e *apiError) map[string]any {
	typ := "invalid_request_error"
	switch {
	case e.Status == http.StatusUnauthorized:
		typ = "authentication_error"
	case e.Status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case e.Status >= 500:
		typ = "server_error"
	}
	return map[string]any{"message": e.Message, "type": typ, "code": e.Code, "param": nil}
}

// writeOpenAIError answers in OpenAI's error shape, which also carries the
// API's code.
func writeOpenAIError(w http.ResponseWriter, e *apiError) {
	status := e.Status
	if status == 499 {
		status = http.StatusBadRequest
	}
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(1))
	}
	writeJSON(w, status, map[string]any{"error": openAIErrorBody(e)})
}
