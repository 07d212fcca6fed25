package platform

import (
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/turn"
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
	if e := checkUser("user", req.User); e != nil {
		writeError(w, e)
		return
	}
	agent, e := s.agent(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	s.serveTurn(w, r, agent, turn.Input{Agent: agent, SessionID: req.SessionID, Message: llm.UserMessage(req.Query), User: req.User}, req.Stream)
}

// serveTurn runs a turn for an HTTP request, with idempotency, and answers
// it blocking or streaming: an edge over the turn service.
func (s *Server) serveTurn(w http.ResponseWriter, r *http.Request, agent meta.Agent, in turn.Input, stream bool) {
	p := principalFrom(r.Context())
	idem := r.Header.Get("Idempotency-Key")
	if idem != "" {
		idem = agent.ID + ":" + idem
		prev, seen, err := s.meta.ClaimIdempotent(r.Context(), p.Tenant, idem, 24*time.Hour)
		if err != nil {
			writeError(w, asAPIError(err))
			return
		}
		if seen {
			s.replay(w, stream, prev)
			return
		}
	}
	events := sessionHeader(w, s.runTurnStream(r.Context(), in))
	if !stream {
		ans, err := turn.Collect(events)
		if err != nil {
			s.releaseIdem(r.Context(), p.Tenant, idem)
			writeError(w, turnAPIError(err))
			return
		}
		body, _ := json.Marshal(&ans.ChatAnswer)
		s.completeIdem(r.Context(), p.Tenant, idem, body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(body)
		return
	}
	// The stream starts with the turn: a turn refused before it starts
	// (a disabled agent, a budget, an unknown session) is an HTTP error.
	var sw *sseWriter
	stop := make(chan struct{})
	defer close(stop)
	for ev, err := range events {
		if err != nil {
			s.releaseIdem(r.Context(), p.Tenant, idem)
			if sw == nil {
				writeError(w, turnAPIError(err))
				return
			}
			var te *turn.Error
			if errors.As(err, &te) {
				writeErrorEvent(sw, te)
			}
			return
		}
		if sw == nil {
			s.metrics.activeStreams.Inc()
			defer s.metrics.activeStreams.Dec()
			sw = newSSEWriter(w, s.frameDeadline())
			go sw.keepAlive(s.pingInterval(), stop)
		}
		if ev.Kind == turn.Completed {
			body, _ := json.Marshal(&ev.Answer.ChatAnswer)
			s.completeIdem(r.Context(), p.Tenant, idem, body)
		}
		if writeEvent(sw, ev) != nil {
			// The client went away: leaving the loop cancels the turn.
			return
		}
	}
}

// sessionHeader passes events on and sets X-Weft-Session on w when the
// turn starts, so that a blocking turn that fails still names the session
// that keeps the user's message (a stream names it in chat.created).
func sessionHeader(w http.ResponseWriter, events iter.Seq2[turn.Event, error]) iter.Seq2[turn.Event, error] {
	return func(yield func(turn.Event, error) bool) {
		for ev, err := range events {
			if err == nil && ev.Kind == turn.Started {
				w.Header().Set("X-Weft-Session", ev.SessionID)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}
