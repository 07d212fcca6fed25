package platform

import (
	"context"

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
