package platform

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// The session registry (meta sessions: which tenant and agent own a
// session) is read on every turn and written after it. Turns read it
// through a cache (registry): a session's owner never changes, so an entry
// is only ever invalidated by the session's deletion, here and, through
// the bus, on every replica (the cache TTL bounds staleness when an
// invalidation is lost). The update time a turn writes goes through
// touches (touch.go): gathered, off the turn's path. The session routes
// (list, get) read the registry itself, after this replica's pending
// touches are written.
func (s *Server) initSessions() {
	s.registry = newCache(s.cfg.CacheTTL, func(ctx context.Context, tenant, id string) (meta.Session, error) {
		return s.meta.Session(ctx, tenant, id)
	})
	s.bus.subscribe("session", s.registry.invalidate)
	s.touches = newTouches(s.meta, s.log.WarnContext)
}

// touch records that a turn updated ss (written shortly after, gathered
// with other turns' touches).
func (s *Server) touch(_ context.Context, ss meta.Session) {
	s.touches.add(ss.TenantID, ss.ID, time.Now().UTC())
}

func sessionKey(ss meta.Session) memory.Key {
	return memory.Key{Tenant: ss.TenantID, Agent: ss.AgentID, Session: ss.ID}
}

// listSessions: GET /v1/sessions?agent_id=.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	s.touches.flush(r.Context())
	agentID := s.agentRef(r.Context(), p.Tenant, r.URL.Query().Get("agent_id"))
	list, err := s.meta.ListSessions(r.Context(), p.Tenant, agentID)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	counts := s.messageCounts(r, p.Tenant, agentID)
	titles := s.titles(r.Context(), p.Tenant)
	out := make([]api.Session, len(list))
	for i, ss := range list {
		out[i] = api.Session{ID: ss.ID, AgentID: ss.AgentID, Title: titles[ss.ID], ParentID: ss.ParentID, User: ss.UserID, CreatedAt: ss.CreatedAt, UpdatedAt: ss.UpdatedAt, MessageCount: counts[ss.ID]}
		if ss.Interrupt != nil {
			out[i].Interrupt = interruptAPI(ss)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// messageCounts asks the session store for message counts when it can list.
func (s *Server) messageCounts(r *http.Request, tenant, agent string) map[string]int {
	counts := map[string]int{}
	l, ok := s.sessions.(memory.Lister)
	if !ok {
		return counts
	}
	infos, err := l.List(r.Context(), tenant, agent)
	if err != nil {
		s.log.WarnContext(r.Context(), "session store cannot list", "err", err)
		return counts
	}
	for _, in := range infos {
		counts[in.Key.Session] = in.MessageCount
	}
	return counts
}

// session returns the caller's session id.
func (s *Server) session(r *http.Request, id string) (meta.Session, *apiError) {
	s.touches.flush(r.Context())
	ss, err := s.meta.Session(r.Context(), principalFrom(r.Context()).Tenant, id)
	if err != nil {
		return ss, notFoundOr(err, "session", id)
	}
	return ss, nil
}

// getSession: GET /v1/sessions/{id}.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	ss, e := s.session(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	recs, err := s.sessions.Load(r.Context(), sessionKey(ss), memory.Window{})
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := api.Session{ID: ss.ID, AgentID: ss.AgentID, Title: s.titles(r.Context(), ss.TenantID)[ss.ID], ParentID: ss.ParentID, User: ss.UserID, CreatedAt: ss.CreatedAt, UpdatedAt: ss.UpdatedAt, MessageCount: len(recs)}
	if ss.Interrupt != nil {
		out.Interrupt = interruptAPI(ss)
	}
	if st, ok := s.sessions.(memory.SummaryStore); ok {
		sum, err := st.LoadSummary(r.Context(), sessionKey(ss))
		if err != nil {
			writeError(w, asAPIError(err))
			return
		}
		if sum.Text != "" {
			out.Summary = &api.SessionSummary{Text: sum.Text, Tokens: sum.Tokens, UpdatedAt: sum.UpdatedAt}
			for _, rec := range recs {
				if rec.Seq == sum.Through {
					out.Summary.ThroughMessageID = rec.ID
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// argumentsJSON returns a model's tool arguments as JSON: as they are when
// valid, else as a JSON string holding the raw text.
func argumentsJSON(args string) json.RawMessage {
	if args == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(args)
	return b
}

func viewMessage(rec memory.Record) api.Message {
	v := api.Message{ID: rec.ID, Role: string(rec.Message.Role), Content: rec.Message.Text(), CreatedAt: rec.CreatedAt,
		ToolCallID: rec.Message.ToolCallID, Partial: rec.Partial, IsError: rec.Message.IsError}
	if rec.Message.Role == llm.RoleTool {
		v.Name = rec.Message.Name
	}
	for _, tc := range rec.Message.ToolCalls {
		v.ToolCalls = append(v.ToolCalls, api.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: argumentsJSON(tc.Arguments)})
	}
	return v
}

// sessionMessages: GET /v1/sessions/{id}/messages, in order.
func (s *Server) sessionMessages(w http.ResponseWriter, r *http.Request) {
	ss, e := s.session(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	recs, err := s.sessions.Load(r.Context(), sessionKey(ss), memory.Window{})
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := make([]api.Message, 0, len(recs))
	for _, rec := range recs {
		if rec.Message.Role == llm.RoleSystem {
			continue
		}
		out = append(out, viewMessage(rec))
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteSession: DELETE /v1/sessions/{id} removes the session and its messages.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	ss, e := s.session(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	if err := s.sessions.Delete(r.Context(), sessionKey(ss)); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	err := s.meta.DeleteSession(r.Context(), ss.TenantID, ss.ID)
	s.bus.publish(r.Context(), "session", ss.TenantID, ss.ID)
	if err != nil {
		writeError(w, notFoundOr(err, "session", ss.ID))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// sessionFor returns the session id of agent, or a new one for the end
// user user (the chat request's, recorded so that forgetting the user
// finds it) when id is empty.
func (s *Server) sessionFor(ctx context.Context, tenant string, agent meta.Agent, id, user string) (meta.Session, *apiError) {
	if id != "" {
		ss, err := s.registry.getIn(ctx, tenant, id)
		if err != nil {
			return ss, notFoundOr(err, "session", id)
		}
		if ss.AgentID != agent.ID {
			return ss, invalid("field \"session_id\": session %q belongs to another agent", id)
		}
		return ss, nil
	}
	now := time.Now().UTC()
	ss := meta.Session{ID: meta.NewID("ses"), TenantID: tenant, AgentID: agent.ID, UserID: user, CreatedAt: now, UpdatedAt: now}
	if err := s.meta.CreateSession(ctx, ss); err != nil {
		return ss, asAPIError(err)
	}
	s.registry.put(tenant, ss.ID, ss)
	return ss, nil
}
