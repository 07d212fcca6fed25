package platform

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// MaxQueryBytes bounds a chat query (64 KiB); longer ones are a 400.
const MaxQueryBytes = 64 << 10

// chat: POST /v1/agents/{id}/chat.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req api.ChatRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	req.Query = strings.TrimSpace(req.Query)
	switch {
	case req.Query == "":
		writeError(w, invalid("field \"query\" is required"))
		return
	case len(req.Query) > MaxQueryBytes:
		writeError(w, errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "field \"query\" exceeds %d bytes", MaxQueryBytes))
		return
	}
	agent, e := s.agent(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	s.serveTurn(w, r, agent, req)
}

// serveTurn runs a turn for an HTTP request, with idempotency, and answers
// it blocking or streaming.
func (s *Server) serveTurn(w http.ResponseWriter, r *http.Request, agent meta.Agent, req api.ChatRequest) {
	p := principalFrom(r.Context())
	if !agent.Enabled {
		writeError(w, errorf(http.StatusConflict, CodeAgentDisabled, "agent %q is disabled", agent.Name))
		return
	}
	if e := s.accounting.check(r.Context(), p.Tenant, p.Key.ID); e != nil {
		writeError(w, e)
		return
	}
	idem := r.Header.Get("Idempotency-Key")
	if idem != "" {
		idem = agent.ID + ":" + idem
		prev, seen, err := s.meta.ClaimIdempotent(r.Context(), p.Tenant, idem, 24*time.Hour)
		if err != nil {
			writeError(w, asAPIError(err))
			return
		}
		if seen {
			s.replay(w, req.Stream, prev)
			return
		}
	}
	ss, e := s.sessionFor(r.Context(), p.Tenant, agent, req.SessionID, "")
	if e != nil {
		s.releaseIdem(r.Context(), p.Tenant, idem)
		writeError(w, e)
		return
	}
	in := turnInput{agent: agent, session: ss, query: req.Query, user: req.User, answerID: memory.NewID(),
		maxDepth: agent.MaxDelegateDepth, chain: []string{agent.ID}}
	ctx, done := s.turns.start(r.Context(), p.Tenant+"\x00"+ss.ID, p.Tenant+"\x00"+in.answerID)
	defer done()
	if !req.Stream {
		ans, terr := s.runTurn(ctx, in)
		if terr != nil {
			s.releaseIdem(r.Context(), p.Tenant, idem)
			writeError(w, terr.api)
			return
		}
		body, _ := json.Marshal(ans)
		s.completeIdem(r.Context(), p.Tenant, idem, body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(body)
		return
	}
	s.metrics.activeStreams.Inc()
	defer s.metrics.activeStreams.Dec()
	sw := newSSEWriter(w, s.frameDeadline())
	stop := make(chan struct{})
	defer close(stop)
	go sw.keepAlive(s.pingInterval(), stop)
	in.sink = func(event string, data map[string]any) error { return sw.event(event, data) }
	sw.event("chat.created", map[string]any{"type": "chat.created", "session_id": ss.ID, "message_id": in.answerID})
	ans, terr := s.runTurn(ctx, in)
	if terr != nil {
		s.releaseIdem(r.Context(), p.Tenant, idem)
		sw.event("error", map[string]any{"type": "error", "code": terr.api.Code, "message": terr.api.Message})
		return
	}
	body, _ := json.Marshal(ans)
	s.completeIdem(r.Context(), p.Tenant, idem, body)
	sw.event("chat.completed", completedEvent(body))
}

// completedEvent is the data of chat.completed: the blocking answer with
// "type" added.
func completedEvent(answer []byte) map[string]any {
	var m map[string]any
	json.Unmarshal(answer, &m)
	m["type"] = "chat.completed"
	return m
}
