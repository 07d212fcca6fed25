package platform

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// The chat playground's notes on sessions: a session's title (the
// console sets it from the first message; anyone may rename it) and the
// feedback on an answer (thumbs up or down, a comment), stored by session
// and message id beside the session store, shown with the turn's trace.

// Bounds of what a note holds.
const (
	maxTitleRunes   = 200
	maxCommentRunes = 2000
)

// notesStore is what titles and feedback need of the metadata store.
type notesStore interface {
	SetSessionTitle(ctx context.Context, tenant, session, title string) error
	SessionTitles(ctx context.Context, tenant string) (map[string]string, error)
	PutFeedback(ctx context.Context, tenant string, f meta.Feedback) error
	DeleteFeedback(ctx context.Context, tenant, session, message string) error
	SessionFeedback(ctx context.Context, tenant, session string) ([]meta.Feedback, error)
}

// notesRoutes registers the title and feedback routes.
func (s *Server) notesRoutes() {
	if _, ok := s.meta.(notesStore); !ok {
		return
	}
	s.handle("PUT /v1/sessions/{id}", need(builder), s.renameSession)
	s.handle("GET /v1/sessions/{id}/feedback", need(viewer), s.sessionFeedback)
	s.handle("PUT /v1/sessions/{id}/messages/{message}/feedback", use(endUser), s.putFeedback)
	s.handle("DELETE /v1/sessions/{id}/messages/{message}/feedback", use(endUser), s.deleteFeedback)
}

// titles returns the titles of the tenant's sessions (none when the store
// keeps none).
func (s *Server) titles(ctx context.Context, tenant string) map[string]string {
	if ns, ok := s.meta.(notesStore); ok {
		if t, err := ns.SessionTitles(ctx, tenant); err == nil {
			return t
		}
	}
	return map[string]string{}
}

// renameSession: PUT /v1/sessions/{id} {title} sets (or, empty, clears)
// the session's title.
func (s *Server) renameSession(w http.ResponseWriter, r *http.Request) {
	ss, e := s.session(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	var req struct {
		Title *string `json:"title"`
	}
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Title == nil {
		e := invalid("field \"title\" is required (empty clears it)")
		e.Param = "title"
		writeError(w, e)
		return
	}
	title := strings.Join(strings.Fields(*req.Title), " ")
	if utf8.RuneCountInString(title) > maxTitleRunes {
		e := invalid("field \"title\": at most %d characters", maxTitleRunes)
		e.Param = "title"
		writeError(w, e)
		return
	}
	if e := checkText("title", title); e != nil {
		writeError(w, e)
		return
	}
	if err := s.meta.(notesStore).SetSessionTitle(r.Context(), ss.TenantID, ss.ID, title); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, api.Session{ID: ss.ID, AgentID: ss.AgentID, Title: title, ParentID: ss.ParentID, User: ss.UserID, CreatedAt: ss.CreatedAt, UpdatedAt: ss.UpdatedAt})
}

// answerOf checks that message is an answer of the session: feedback is
// given on what the agent said.
func (s *Server) answerOf(r *http.Request, ss meta.Session, message string) *apiError {
	recs, err := s.sessions.Load(r.Context(), sessionKey(ss), memory.Window{})
	if err != nil {
		return asAPIError(err)
	}
	for _, rec := range recs {
		if rec.ID == message {
			if rec.Message.Role != llm.RoleAssistant {
				e := invalid("message %q is not an answer: feedback rates answers", message)
				e.Param = "message"
				return e
			}
			return nil
		}
	}
	return errorf(http.StatusNotFound, CodeNotFound, "message %q not found in session %s", message, ss.ID)
}

// putFeedback: PUT /v1/sessions/{id}/messages/{message}/feedback
// {rating: 1 | -1, comment?} stores (or replaces) the caller's rating of
// an answer.
func (s *Server) putFeedback(w http.ResponseWriter, r *http.Request) {
	ss, e := s.session(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	var req struct {
		Rating  int    `json:"rating"`
		Comment string `json:"comment"`
	}
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Rating != 1 && req.Rating != -1 {
		e := invalid("field \"rating\": want 1 (thumbs up) or -1 (thumbs down), got %d", req.Rating)
		e.Param = "rating"
		writeError(w, e)
		return
	}
	comment := strings.TrimSpace(req.Comment)
	if utf8.RuneCountInString(comment) > maxCommentRunes {
		e := invalid("field \"comment\": at most %d characters", maxCommentRunes)
		e.Param = "comment"
		writeError(w, e)
		return
	}
	if e := checkText("comment", comment); e != nil {
		writeError(w, e)
		return
	}
	msg := r.PathValue("message")
	if e := s.answerOf(r, ss, msg); e != nil {
		writeError(w, e)
		return
	}
	f := meta.Feedback{SessionID: ss.ID, MessageID: msg, Rating: req.Rating, Comment: comment, KeyID: principalFrom(r.Context()).Key.ID, At: time.Now().UTC()}
	if err := s.meta.(notesStore).PutFeedback(r.Context(), ss.TenantID, f); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// deleteFeedback: DELETE /v1/sessions/{id}/messages/{message}/feedback
// removes the rating of an answer; none left is not an error.
func (s *Server) deleteFeedback(w http.ResponseWriter, r *http.Request) {
	ss, e := s.session(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	msg := r.PathValue("message")
	if err := s.meta.(notesStore).DeleteFeedback(r.Context(), ss.TenantID, ss.ID, msg); err != nil && !errors.Is(err, meta.ErrNotFound) {
		writeError(w, asAPIError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// sessionFeedback: GET /v1/sessions/{id}/feedback lists the feedback on
// the session's answers.
func (s *Server) sessionFeedback(w http.ResponseWriter, r *http.Request) {
	ss, e := s.session(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	list, err := s.meta.(notesStore).SessionFeedback(r.Context(), ss.TenantID, ss.ID)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// withFeedback adds the feedback on a turn's answer to its trace's JSON.
func (s *Server) withFeedback(ctx context.Context, ss meta.Session, message string, trace []byte) []byte {
	ns, ok := s.meta.(notesStore)
	if !ok {
		return trace
	}
	list, err := ns.SessionFeedback(ctx, ss.TenantID, ss.ID)
	if err != nil {
		return trace
	}
	for _, f := range list {
		if f.MessageID != message {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(trace, &obj) != nil {
			return trace
		}
		obj["feedback"], _ = json.Marshal(f)
		if b, err := json.Marshal(obj); err == nil {
			return b
		}
	}
	return trace
}
