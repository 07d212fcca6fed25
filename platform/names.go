package platform

import (
	"context"
	"net/http"
	"strings"

	"github.com/weftlabs/weft/platform/meta"
)

// References by name: an agent's knowledge_base_ids, tool_ids and
// delegate_agent_ids accept each object's name as well as its id, so agent
// files carry no server-specific ids and move between servers. Names are
// resolved to ids when the agent is written (an id wins over a name that
// happens to equal it); the stored agent and every answer hold ids.

// resolveNames replaces the names among an agent's references by the ids
// of the tenant's objects of those names. A reference that is neither is
// left as it is, for the validators to report.
func (s *Server) resolveNames(ctx context.Context, a *meta.Agent) *apiError {
	if len(a.DelegateAgentIDs) > 0 {
		agents, err := s.meta.ListAgents(ctx, a.TenantID)
		if err != nil {
			return asAPIError(err)
		}
		ids := make(map[string]string, len(agents))
		for _, x := range agents {
			ids[x.ID] = x.ID
		}
		for _, x := range agents {
			if _, isID := ids[x.Name]; !isID {
				ids[x.Name] = x.ID
			}
		}
		// The agent's own name means itself (refused by the caller).
		if _, taken := ids[a.Name]; !taken && a.Name != "" {
			ids[a.Name] = a.ID
		}
		mapRefs(a.DelegateAgentIDs, ids)
	}
	if ts, ok := s.meta.(toolStore); ok && len(a.ToolIDs) > 0 {
		list, err := ts.ListTools(ctx, a.TenantID)
		if err != nil {
			return asAPIError(err)
		}
		ids := map[string]string{}
		for _, x := range list {
			ids[x.ID] = x.ID
		}
		for _, x := range list {
			if _, isID := ids[x.Name]; !isID {
				ids[x.Name] = x.ID
			}
		}
		mapRefs(a.ToolIDs, ids)
	}
	if ks, ok := s.meta.(kbStore); ok && len(a.KnowledgeBaseIDs) > 0 {
		list, err := ks.ListKBs(ctx, a.TenantID)
		if err != nil {
			return asAPIError(err)
		}
		ids := map[string]string{}
		for _, x := range list {
			ids[x.ID] = x.ID
		}
		for _, x := range list {
			if _, isID := ids[x.Name]; !isID {
				ids[x.Name] = x.ID
			}
		}
		mapRefs(a.KnowledgeBaseIDs, ids)
	}
	return s.resolveWorkflowNames(ctx, a)
}

// mapRefs replaces each reference found in ids by its id.
func mapRefs(refs []string, ids map[string]string) {
	for i, r := range refs {
		if id, ok := ids[r]; ok {
			refs[i] = id
		}
	}
}

// Routes by name: every route whose path takes an agent, tool, knowledge
// base or workflow id ({id} after /v1/agents/, /v1/tools/,
// /v1/knowledge-bases/, /v1/workflows/) takes the object's name too, as
// `weft chat NAME` and agent files do: handle wraps them in byName, which
// puts the id of the tenant's object of that name in the path before the
// handler runs. A reference with the kind's id prefix is an id and is not
// looked up (an id wins over a name equal to it); a reference that is
// neither is left as it is, for the handler's 404 to name.

// refKind is a kind of object routes take by id or name.
type refKind struct {
	path     string // the route's path up to {id}
	kind     string // "agent", "tool", "knowledge base", "workflow"
	idPrefix string
}

var refKinds = []refKind{
	{"/v1/agents/{id}", "agent", "agt_"},
	{"/v1/tools/{id}", "tool", "tool_"},
	{"/v1/knowledge-bases/{id}", "knowledge base", "kb_"},
	{"/v1/workflows/{id}", "workflow", "wf_"},
}

// refKindOf returns the kind of object a route pattern's {id} names.
func refKindOf(pattern string) (refKind, bool) {
	_, path, _ := strings.Cut(pattern, " ")
	for _, k := range refKinds {
		if path == k.path || strings.HasPrefix(path, k.path+"/") {
			return k, true
		}
	}
	return refKind{}, false
}

// byName resolves the {id} of a route of kind k from a name.
func (s *Server) byName(k refKind, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ref := r.PathValue("id")
		if id, ok := s.resolveRef(r.Context(), principalFrom(r.Context()).Tenant, k, ref); ok {
			r.SetPathValue("id", id)
		}
		h(w, r)
	}
}

// resolveRef returns the id of the tenant's object of kind k that ref
// names, and whether ref was a name that resolved.
func (s *Server) resolveRef(ctx context.Context, tenant string, k refKind, ref string) (string, bool) {
	if ref == "" || strings.HasPrefix(ref, k.idPrefix) {
		return ref, false
	}
	switch k.kind {
	case "agent":
		if a, err := s.meta.AgentByName(ctx, tenant, ref); err == nil {
			return a.ID, true
		}
	case "tool":
		if ts, ok := s.meta.(toolStore); ok {
			if list, err := ts.ListTools(ctx, tenant); err == nil {
				for _, t := range list {
					if t.Name == ref {
						return t.ID, true
					}
				}
			}
		}
	case "knowledge base":
		if ks, ok := s.meta.(kbStore); ok {
			if list, err := ks.ListKBs(ctx, tenant); err == nil {
				for _, kb := range list {
					if kb.Name == ref {
						return kb.ID, true
					}
				}
			}
		}
	case "workflow":
		if s.workflows != nil {
			if wf, err := s.workflows.store.WorkflowByName(ctx, tenant, ref); err == nil {
				return wf.ID, true
			}
		}
	}
	return ref, false
}

// agentRef returns the agent id a query parameter names (an id, a name,
// or for usage "workflow:" and a workflow's id or name).
func (s *Server) agentRef(ctx context.Context, tenant, ref string) string {
	if wf, ok := strings.CutPrefix(ref, "workflow:"); ok {
		id, _ := s.resolveRef(ctx, tenant, refKinds[3], wf)
		return "workflow:" + id
	}
	id, _ := s.resolveRef(ctx, tenant, refKinds[0], ref)
	return id
}
