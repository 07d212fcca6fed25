package platform

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider"
)

// createAgent: POST /v1/agents.
func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	a := meta.Agent{Enabled: true}
	if e := decodeJSON(w, r, &a); e != nil {
		writeError(w, e)
		return
	}
	now := time.Now().UTC()
	a.ID, a.TenantID, a.CreatedAt, a.UpdatedAt = meta.NewID("agt"), p.Tenant, now, now
	a.Defaults()
	if e := s.validateAgent(r, &a); e != nil {
		writeError(w, e)
		return
	}
	var err error
	if s.versions != nil {
		a, err = s.versions.SaveAgent(r.Context(), a, p.Key.Name, true)
	} else {
		err = s.meta.CreateAgent(r.Context(), a)
	}
	if err != nil {
		if errors.Is(err, meta.ErrConflict) {
			writeError(w, nameTaken("an agent", a.Name))
			return
		}
		writeError(w, asAPIError(err))
		return
	}
	// Nothing caches a new agent, but its tenant's MCP tool lists change.
	s.bus.publish(r.Context(), "agent", p.Tenant, a.ID)
	writeJSON(w, http.StatusCreated, a)
}

// listAgents: GET /v1/agents.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	agents, err := s.meta.ListAgents(r.Context(), principalFrom(r.Context()).Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, agents)
}

// agent returns the caller's agent id (cached): its published version,
// or the version the request's ?version=N names (versions.go).
func (s *Server) agent(r *http.Request, id string) (meta.Agent, *apiError) {
	a, err := s.agents.getIn(r.Context(), principalFrom(r.Context()).Tenant, id)
	if err != nil {
		return a, notFoundOr(err, "agent", id)
	}
	return s.versionedAgent(r, a)
}

// getAgent: GET /v1/agents/{id}.
func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	a, e := s.agent(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// updateAgent: PUT /v1/agents/{id}[?draft=true]. Fields present in the
// body replace the stored ones; absent fields keep their values. The
// result is the agent's next version, published — or, with draft=true, a
// draft over the latest version (drafts included), which the agent does
// not serve until it is published.
func (s *Server) updateAgent(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	id := r.PathValue("id")
	cur, err := s.meta.Agent(r.Context(), p.Tenant, id)
	if err != nil {
		writeError(w, notFoundOr(err, "agent", id))
		return
	}
	draft := false
	switch r.URL.Query().Get("draft") {
	case "", "false":
	case "true":
		if s.versions == nil {
			writeError(w, invalid("query parameter \"draft\": this server keeps no versions"))
			return
		}
		draft = true
		vs, err := s.versions.AgentVersions(r.Context(), p.Tenant, id)
		if err != nil {
			writeError(w, notFoundOr(err, "agent", id))
			return
		}
		if len(vs) > 0 {
			cur = vs[0].Agent
		}
	default:
		writeError(w, invalid("query parameter \"draft\": want true or false"))
		return
	}
	a := cur
	if e := decodeJSON(w, r, &a); e != nil {
		writeError(w, e)
		return
	}
	a.ID, a.TenantID, a.CreatedAt, a.UpdatedAt = cur.ID, cur.TenantID, cur.CreatedAt, time.Now().UTC()
	a.Defaults()
	if e := s.validateAgent(r, &a); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case draft:
		a, err = s.versions.SaveAgentDraft(r.Context(), a, p.Key.Name)
	case s.versions != nil:
		a, err = s.versions.SaveAgent(r.Context(), a, p.Key.Name, true)
	default:
		err = s.meta.UpdateAgent(r.Context(), a)
	}
	if err != nil {
		if errors.Is(err, meta.ErrConflict) {
			writeError(w, nameTaken("an agent", a.Name))
			return
		}
		writeError(w, notFoundOr(err, "agent", id))
		return
	}
	s.bus.publish(r.Context(), "agent", p.Tenant, id)
	writeJSON(w, http.StatusOK, a)
}

// deleteAgent: DELETE /v1/agents/{id}.
func (s *Server) deleteAgent(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	id := r.PathValue("id")
	if err := s.meta.DeleteAgent(r.Context(), p.Tenant, id); err != nil {
		writeError(w, notFoundOr(err, "agent", id))
		return
	}
	s.bus.publish(r.Context(), "agent", p.Tenant, id)
	w.WriteHeader(http.StatusNoContent)
}

// validateAgent checks an agent's fields, naming the first bad one.
func (s *Server) validateAgent(r *http.Request, a *meta.Agent) *apiError {
	a.Name = strings.TrimSpace(a.Name)
	switch {
	case a.Name == "":
		return invalid("field \"name\" is required")
	case len(a.Name) > 128:
		return invalid("field \"name\": at most 128 characters")
	case a.Temperature != nil && (*a.Temperature < 0 || *a.Temperature > 2):
		return invalid("field \"temperature\": want a number from 0 to 2")
	case a.MaxTokens != nil && *a.MaxTokens < 1:
		return invalid("field \"max_tokens\": want a positive integer")
	case a.ContextWindowTokens < 256:
		return invalid("field \"context_window_tokens\": want at least 256")
	case a.ReserveTokens < 0 || a.ReserveTokens >= a.ContextWindowTokens:
		return invalid("field \"reserve_tokens\": want 0 or more and less than context_window_tokens (%d)", a.ContextWindowTokens)
	case a.Retrieval.TopK < 1 || a.Retrieval.TopK > 100:
		return invalid("field \"retrieval.top_k\": want 1 to 100")
	case !slices.Contains([]string{"hybrid", "vector", "keyword"}, a.Retrieval.Mode):
		return invalid("field \"retrieval.mode\": want \"hybrid\", \"vector\" or \"keyword\"")
	case a.MaxToolRounds < 0 || a.MaxToolRounds > 50:
		return invalid("field \"max_tool_rounds\": want 0 to 50")
	case a.MaxDelegateDepth < 0 || a.MaxDelegateDepth > 10:
		return invalid("field \"max_delegate_depth\": want 0 to 10")
	case a.Timeouts.FirstTokenMS < 100 || a.Timeouts.FirstTokenMS > 600_000:
		return invalid("field \"timeouts.first_token_ms\": want 100 to 600000 (10 minutes)")
	case a.Timeouts.IdleMS < 100 || a.Timeouts.IdleMS > 600_000:
		return invalid("field \"timeouts.idle_ms\": want 100 to 600000 (10 minutes)")
	case a.Timeouts.TurnMS < 100 || a.Timeouts.TurnMS > 3_600_000:
		return invalid("field \"timeouts.turn_ms\": want 100 to 3600000 (an hour)")
	}
	if _, alias := s.cfg.ModelAliases[a.Model]; a.Model != "" && !alias {
		if e := checkModelSpec("model", a.Model); e != nil {
			return e
		}
	}
	if _, err := approver(a.ToolApprovals); err != nil {
		e := invalid("field \"tool_approvals\": %v", err)
		e.Param = "tool_approvals"
		return e
	}
	if e := s.validateMemory(a); e != nil {
		return e
	}
	if e := s.validateRemote(principalFrom(r.Context()), a); e != nil {
		return e
	}
	return s.validateAgentRefs(r, a)
}

// checkModelSpec checks that spec names a registered provider.
func checkModelSpec(field, spec string) *apiError {
	name, _, err := provider.ParseSpec(spec)
	if err != nil {
		return invalid("field %q: want provider/model, e.g. openai/gpt-4o-mini", field)
	}
	if _, ok := provider.Lookup(name); !ok {
		return invalid("field %q: unknown provider %q (known: %s)", field, name, strings.Join(provider.Names(), ", "))
	}
	return nil
}

// validateAgentRefs resolves the names among an agent's references to ids
// and checks that they exist in its tenant.
func (s *Server) validateAgentRefs(r *http.Request, a *meta.Agent) *apiError {
	if e := s.resolveNames(r.Context(), a); e != nil {
		return e
	}
	for _, id := range a.DelegateAgentIDs {
		if id == a.ID {
			return invalid("field \"delegate_agent_ids\": an agent cannot delegate to itself")
		}
		if _, err := s.meta.Agent(r.Context(), a.TenantID, id); err != nil {
			if errors.Is(err, meta.ErrNotFound) {
				return invalid("field \"delegate_agent_ids\": no agent %q", id)
			}
			return asAPIError(err)
		}
	}
	return s.validateResourceRefs(r, a)
}
