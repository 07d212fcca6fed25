package platform

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/memory/facts/sqlfacts"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// End users (the chat request's user) of a tenant: their long-term
// memories (GET, PUT and DELETE /v1/users/{user}/memories[/{id}]) and
// forgetting one (DELETE /v1/users/{user}).

// SourceAPI is the source kind of a memory written through the API.
const sourceAPI = "api"

var memoryIDRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// userStore is what forgetting a user needs of the metadata store.
type userStore interface {
	UserSessions(ctx context.Context, tenant, user string) ([]meta.Session, error)
	ForgetUser(ctx context.Context, f meta.UserForget, sessions []string) error
}

func (s *Server) userRoutes() {
	s.handle("GET /v1/users/{user}/memories", need(viewer), s.listMemories)
	s.handle("PUT /v1/users/{user}/memories/{id}", need(admin), s.putMemory)
	s.handle("DELETE /v1/users/{user}/memories/{id}", need(admin), s.deleteMemory)
	s.handle("DELETE /v1/users/{user}", need(admin), s.forgetUser)
}

// userScope reads the {user} of a route as the caller tenant's end user.
func userScope(r *http.Request) (facts.Scope, *apiError) {
	u := r.PathValue("user")
	if u == "" {
		return facts.Scope{}, invalid("the user in the path is empty")
	}
	if e := checkUser("user", u); e != nil {
		return facts.Scope{}, e
	}
	return facts.Scope{Tenant: principalFrom(r.Context()).Tenant, User: u}, nil
}

// errUserForgotten cancels the turns of a user being forgotten.
var errUserForgotten = errors.New("the end user was forgotten (DELETE /v1/users/{user})")

// noFactStore reports whether err says the server keeps no long-term
// memory (then no user has any).
func noFactStore(err error) bool {
	return errors.Is(err, errNoFactStore) || errors.Is(err, sqlfacts.ErrNoPgvector)
}

// memoryStore returns the server's fact store for a route; nil and no
// error when the server keeps no long-term memory.
func (s *Server) memoryStore(ctx context.Context) (facts.Store, *apiError) {
	fs, err := s.factStore(ctx)
	if noFactStore(err) {
		return nil, nil
	}
	if err != nil {
		return nil, asAPIError(err)
	}
	return fs, nil
}

func viewMemory(f facts.Fact) api.Memory {
	return api.Memory{ID: f.ID, Text: f.Text, CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt,
		Source: api.MemorySource{Kind: f.Source.Kind, AgentID: f.Source.Agent, SessionID: f.Source.Session, MessageID: f.Source.Message}}
}

// listMemories: GET /v1/users/{user}/memories — the user's memories, most
// recently updated first.
func (s *Server) listMemories(w http.ResponseWriter, r *http.Request) {
	scope, e := userScope(r)
	if e != nil {
		writeError(w, e)
		return
	}
	fs, e := s.memoryStore(r.Context())
	if e != nil {
		writeError(w, e)
		return
	}
	if fs == nil {
		writeJSON(w, http.StatusOK, []api.Memory{})
		return
	}
	list, err := fs.List(r.Context(), scope)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := make([]api.Memory, len(list))
	for i, f := range list {
		out[i] = viewMemory(f)
	}
	writeJSON(w, http.StatusOK, out)
}

// putMemory: PUT /v1/users/{user}/memories/{id} {text, agent_id?} — writes
// a memory (201 when new), embedded by the embedding model of agent_id's
// memory setting, else the server's default.
func (s *Server) putMemory(w http.ResponseWriter, r *http.Request) {
	scope, e := userScope(r)
	if e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("id")
	if !memoryIDRe.MatchString(id) {
		writeError(w, invalid("the memory id %q: want 1 to 64 letters, digits, '_', '.' or '-'", id))
		return
	}
	var req api.MemoryRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	req.Text = strings.TrimSpace(req.Text)
	switch {
	case req.Text == "":
		writeError(w, invalid("field \"text\" is required"))
		return
	case len(req.Text) > facts.MaxFactBytes || !utf8.ValidString(req.Text):
		writeError(w, invalid("field \"text\": at most %d bytes of UTF-8 text", facts.MaxFactBytes))
		return
	}
	fs, e := s.memoryStore(r.Context())
	if e != nil {
		writeError(w, e)
		return
	}
	if fs == nil {
		writeError(w, invalid("this server keeps no long-term memory (on PostgreSQL it needs pgvector)"))
		return
	}
	spec := ""
	if req.AgentID != "" {
		a, e := s.agent(r, req.AgentID)
		if e != nil {
			e.Param = "agent_id"
			writeError(w, e)
			return
		}
		if a.Memory != nil {
			spec = a.Memory.EmbeddingModel
		}
	}
	embedder, err := s.factEmbedder(spec)
	if err != nil {
		writeError(w, invalid("field \"agent_id\": %v", err))
		return
	}
	vecs, err := embedder.Embed(r.Context(), []string{req.Text})
	if err != nil || len(vecs) != 1 {
		writeError(w, errorf(http.StatusBadGateway, CodeModelError, "the embedding model failed: %v", err))
		return
	}
	f := facts.Fact{ID: id, Scope: scope, Text: req.Text, Embedding: vecs[0], UpdatedAt: time.Now().UTC().Round(0),
		Source: facts.Source{Kind: sourceAPI}}
	status := http.StatusOK
	old, err := fs.Get(r.Context(), scope, id)
	switch {
	case errors.Is(err, facts.ErrNotFound):
		status = http.StatusCreated
	case err != nil:
		writeError(w, asAPIError(err))
		return
	default:
		f.CreatedAt = old.CreatedAt
	}
	out, err := fs.Put(r.Context(), f)
	if err != nil {
		if errors.Is(err, sqlfacts.ErrFull) {
			writeError(w, errorf(http.StatusConflict, CodeConflict, "the user has %d memories, the most a user may have: delete some first", sqlfacts.DefaultMaxFacts))
			return
		}
		if strings.Contains(err.Error(), "components") {
			writeError(w, invalid("field \"agent_id\": the embedding model's vectors do not match the user's other memories (%v)", err))
			return
		}
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, status, viewMemory(out[0]))
}

// deleteMemory: DELETE /v1/users/{user}/memories/{id}.
func (s *Server) deleteMemory(w http.ResponseWriter, r *http.Request) {
	scope, e := userScope(r)
	if e != nil {
		writeError(w, e)
		return
	}
	fs, e := s.memoryStore(r.Context())
	if e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("id")
	if fs == nil {
		writeError(w, notFound("memory", id))
		return
	}
	n, err := fs.Delete(r.Context(), scope, id)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	if n == 0 {
		writeError(w, notFound("memory", id))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// forgetUser: DELETE /v1/users/{user} — deletes everything stored for the
// tenant's end user: their sessions (with their delegates' sessions), the
// sessions' messages and summaries, traces and A2A tasks, the stored
// replies of idempotent requests naming them, and their long-term
// memories; it answers how many of each, and keeps an audit record with
// the counts and the user's hash, without content.
func (s *Server) forgetUser(w http.ResponseWriter, r *http.Request) {
	scope, e := userScope(r)
	if e != nil {
		writeError(w, e)
		return
	}
	us, ok := s.meta.(userStore)
	if !ok {
		writeError(w, errorf(http.StatusServiceUnavailable, CodeUnavailable, "this server's metadata store cannot forget users"))
		return
	}
	ctx := r.Context()
	p := principalFrom(ctx)
	counts := map[string]int{"messages": 0, "memories": 0}
	// Facts first, with the extractions in flight for the user stopped, so
	// that none stores a fact after this.
	s.memories.stopLearning(scope)
	fs, err := s.factStore(ctx)
	switch {
	case err == nil:
		n, err := fs.Forget(ctx, scope)
		if err != nil {
			writeError(w, asAPIError(err))
			return
		}
		counts["memories"] = n
	case noFactStore(err):
		// No store, no facts.
	default:
		writeError(w, asAPIError(err))
		return
	}
	s.touches.flush(ctx)
	sessions, err := us.UserSessions(ctx, p.Tenant, scope.User)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	// Messages before the registry: when a delete fails, the sessions are
	// still found by the next attempt.
	ids := make([]string, len(sessions))
	for i, ss := range sessions {
		ids[i] = ss.ID
		s.turns.cancel(ss.TenantID+"\x00"+ss.ID, errUserForgotten)
		recs, err := s.sessions.Load(ctx, sessionKey(ss), memory.Window{})
		if err != nil {
			writeError(w, asAPIError(err))
			return
		}
		for _, rec := range recs {
			if rec.Message.Role != llm.RoleSystem {
				counts["messages"]++
			}
		}
		if err := s.sessions.Delete(ctx, sessionKey(ss)); err != nil {
			writeError(w, asAPIError(err))
			return
		}
	}
	s.ledger.flush(ctx)
	f := meta.UserForget{ID: meta.NewID("fgt"), TenantID: p.Tenant, UserHash: meta.UserHash(p.Tenant, scope.User), KeyID: p.Key.ID,
		Counts: counts, At: time.Now().UTC()}
	if err := us.ForgetUser(ctx, f, ids); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	for _, id := range ids {
		s.bus.publish(ctx, "session", p.Tenant, id)
	}
	s.log.InfoContext(ctx, "end user forgotten", "tenant", p.Tenant, "audit", f.ID, "user_hash", f.UserHash,
		"sessions", counts["sessions"], "messages", counts["messages"], "memories", counts["memories"])
	writeJSON(w, http.StatusOK, api.ForgetUserAnswer{AuditID: f.ID, UserHash: f.UserHash, Deleted: counts})
}
