package platform

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/turn"
)

// Idempotency-Key: a retried chat request is answered with the first
// one's result instead of running the turn again.

// replay answers a retried request with the first one's result.
func (s *Server) replay(w http.ResponseWriter, stream bool, prev meta.Idempotent) {
	if prev.Status == 0 {
		writeError(w, errorf(http.StatusConflict, CodeConflict, "a request with this Idempotency-Key is still running"))
		return
	}
	w.Header().Set("Idempotent-Replayed", "true")
	if !stream {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(prev.Status)
		w.Write(prev.Body)
		return
	}
	sw := newSSEWriter(w, s.frameDeadline())
	var ans api.ChatAnswer
	json.Unmarshal(prev.Body, &ans)
	writeEvent(sw, turn.Event{Kind: turn.Started, SessionID: ans.SessionID, MessageID: ans.MessageID})
	writeEvent(sw, turn.Event{Kind: turn.Completed, Answer: &turn.Answer{ChatAnswer: ans}})
}

func (s *Server) releaseIdem(ctx context.Context, tenant, key string) {
	if key != "" {
		if err := s.meta.ReleaseIdempotent(context.WithoutCancel(ctx), tenant, key); err != nil {
			s.log.WarnContext(ctx, "idempotency key not released", "err", err)
		}
	}
}

func (s *Server) completeIdem(ctx context.Context, tenant, key string, body []byte) {
	if key != "" {
		if err := s.meta.CompleteIdempotent(context.WithoutCancel(ctx), tenant, key, meta.Idempotent{Status: http.StatusOK, Body: body}); err != nil {
			s.log.WarnContext(ctx, "idempotency result not stored", "err", err)
		}
	}
}
