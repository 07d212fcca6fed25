package platform

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/weftlabs/weft/platform/meta"
)

// Versions of agents: every save of an agent is a version (numbered from
// 1); the version that serves traffic — chats, the OpenAI, A2A and MCP
// endpoints, delegations — is the published one, which meta.Agent.Version
// names. PUT /v1/agents/{id} publishes what it saves, as before versions;
// with ?draft=true it saves a draft, which a builder tries with ?version=N
// on the chat route (the playground) and publishes in one call, and a
// rollback publishes again the version published before.

// versionStore keeps agents' versions (meta.SQL).
type versionStore interface {
	SaveAgent(ctx context.Context, a meta.Agent, by string, publish bool) (meta.Agent, error)
	SaveAgentDraft(ctx context.Context, a meta.Agent, by string) (meta.Agent, error)
	AgentVersions(ctx context.Context, tenant, id string) ([]meta.AgentVersion, error)
	AgentVersion(ctx context.Context, tenant, id string, n int) (meta.AgentVersion, error)
	PublishAgentVersion(ctx context.Context, tenant, id string, n int) (meta.Agent, error)
	RollbackAgent(ctx context.Context, tenant, id string) (meta.Agent, error)
}

func (s *Server) versionRoutes() {
	s.handle("GET /v1/agents/{id}/versions", need(viewer), s.listAgentVersions)
	s.handle("GET /v1/agents/{id}/versions/{n}", need(viewer), s.getAgentVersion)
	s.handle("GET /v1/agents/{id}/versions/{n}/diff", need(viewer), s.diffAgentVersions)
	s.handle("POST /v1/agents/{id}/versions/{n}/publish", need(builder), s.publishAgentVersion)
	s.handle("POST /v1/agents/{id}/rollback", need(builder), s.rollbackAgent)
}

// versionParam parses a version number of the request (path {n} or a
// query parameter).
func versionParam(name, v string) (int, *apiError) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, invalid("%s: %q is not a version number (1, 2, …)", name, v)
	}
	return n, nil
}

// agentVersion answers version n of the caller's agent id.
func (s *Server) agentVersion(r *http.Request, id string, n int) (meta.AgentVersion, *apiError) {
	v, err := s.versions.AgentVersion(r.Context(), principalFrom(r.Context()).Tenant, id, n)
	if errors.Is(err, meta.ErrNotFound) {
		if _, err := s.agents.getIn(r.Context(), principalFrom(r.Context()).Tenant, id); err != nil {
			return v, notFoundOr(err, "agent", id)
		}
		return v, errorf(http.StatusNotFound, CodeNotFound, "agent %q has no version %d", id, n)
	}
	if err != nil {
		return v, asAPIError(err)
	}
	return v, nil
}

// versionedAgent is s.agent with the request's ?version=N: that version
// of the agent rather than the published one — to chat with, for a
// builder or higher (drafts are tried in the playground); to read, for a
// viewer or higher; any other role may name only the published version.
func (s *Server) versionedAgent(r *http.Request, a meta.Agent) (meta.Agent, *apiError) {
	q := r.URL.Query().Get("version")
	if q == "" || s.versions == nil {
		return a, nil
	}
	n, e := versionParam("query parameter \"version\"", q)
	if e != nil {
		return a, e
	}
	if n == a.Version {
		return a, nil
	}
	p := principalFrom(r.Context())
	reads := r.Method == http.MethodGet && p.Key.Role.AtLeast(viewer)
	if !reads && !p.Key.Role.AtLeast(builder) {
		return a, errorf(http.StatusForbidden, CodeForbidden, "only a builder or higher may use a version that is not published (version %d; published: %d)", n, a.Version)
	}
	v, e := s.agentVersion(r, a.ID, n)
	if e != nil {
		return a, e
	}
	return v.Agent, nil
}

// listAgentVersions: GET /v1/agents/{id}/versions, newest first.
func (s *Server) listAgentVersions(w http.ResponseWriter, r *http.Request) {
	vs, err := s.versions.AgentVersions(r.Context(), principalFrom(r.Context()).Tenant, r.PathValue("id"))
	if err != nil {
		writeError(w, notFoundOr(err, "agent", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, vs)
}

// getAgentVersion: GET /v1/agents/{id}/versions/{n}.
func (s *Server) getAgentVersion(w http.ResponseWriter, r *http.Request) {
	n, e := versionParam("version", r.PathValue("n"))
	if e != nil {
		writeError(w, e)
		return
	}
	v, e := s.agentVersion(r, r.PathValue("id"), n)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// publishAgentVersion: POST /v1/agents/{id}/versions/{n}/publish makes
// version n the one that serves traffic, on every replica at once.
func (s *Server) publishAgentVersion(w http.ResponseWriter, r *http.Request) {
	n, e := versionParam("version", r.PathValue("n"))
	if e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("id")
	if _, e := s.agentVersion(r, id, n); e != nil {
		writeError(w, e)
		return
	}
	a, err := s.versions.PublishAgentVersion(r.Context(), principalFrom(r.Context()).Tenant, id, n)
	s.published(w, r, a, err)
}

// rollbackAgent: POST /v1/agents/{id}/rollback publishes again the version
// published before the current one (409 when there is none).
func (s *Server) rollbackAgent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a, err := s.versions.RollbackAgent(r.Context(), principalFrom(r.Context()).Tenant, id)
	if errors.Is(err, meta.ErrNoPrevious) {
		writeError(w, errorf(http.StatusConflict, CodeConflict, "agent %q has no version published before the current one", id))
		return
	}
	s.published(w, r, a, err)
}

func (s *Server) published(w http.ResponseWriter, r *http.Request, a meta.Agent, err error) {
	id := r.PathValue("id")
	if err != nil {
		if errors.Is(err, meta.ErrConflict) {
			writeError(w, nameTaken("an agent", a.Name))
			return
		}
		writeError(w, notFoundOr(err, "agent", id))
		return
	}
	s.bus.publish(r.Context(), "agent", principalFrom(r.Context()).Tenant, id)
	writeJSON(w, http.StatusOK, a)
}

// versionDiff is GET /v1/agents/{id}/versions/{n}/diff's answer: the
// fields that differ between version from and version n, with both values.
type versionDiff struct {
	From    int           `json:"from"`
	To      int           `json:"to"`
	Changes []fieldChange `json:"changes"`
}

type fieldChange struct {
	Field string `json:"field"`
	From  any    `json:"from"`
	To    any    `json:"to"`
}

// diffAgentVersions: GET /v1/agents/{id}/versions/{n}/diff[?against=M]
// compares version n with version M (default: the published version).
func (s *Server) diffAgentVersions(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n, e := versionParam("version", r.PathValue("n"))
	if e != nil {
		writeError(w, e)
		return
	}
	to, e := s.agentVersion(r, id, n)
	if e != nil {
		writeError(w, e)
		return
	}
	m := 0
	if q := r.URL.Query().Get("against"); q != "" {
		if m, e = versionParam("query parameter \"against\"", q); e != nil {
			writeError(w, e)
			return
		}
	} else {
		cur, e := s.agent(r, id)
		if e != nil {
			writeError(w, e)
			return
		}
		m = cur.Version
	}
	from, e := s.agentVersion(r, id, m)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, versionDiff{From: m, To: n, Changes: diffAgents(from.Agent, to.Agent)})
}

// diffAgents lists the fields of b that differ from a's, by their JSON
// names, sorted; the version and times are not compared.
func diffAgents(a, b meta.Agent) []fieldChange {
	fields := func(x meta.Agent) map[string]any {
		x.Version, x.CreatedAt, x.UpdatedAt = 0, time.Time{}, time.Time{}
		raw, _ := json.Marshal(x)
		var m map[string]any
		json.Unmarshal(raw, &m)
		delete(m, "version")
		delete(m, "created_at")
		delete(m, "updated_at")
		return m
	}
	fa, fb := fields(a), fields(b)
	var names []string
	for k := range fa {
		names = append(names, k)
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	out := []fieldChange{}
	for _, k := range names {
		if !reflect.DeepEqual(fa[k], fb[k]) {
			out = append(out, fieldChange{Field: k, From: fa[k], To: fb[k]})
		}
	}
	return out
}
