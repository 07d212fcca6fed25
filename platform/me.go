package platform

import (
	"net/http"

	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider"
)

// meResponse describes the caller's key: what the console shows after
// sign-in, and what decides which screens it offers.
type meResponse struct {
	Tenant   string `json:"tenant"`
	TenantID string `json:"tenant_id"`
	KeyID    string `json:"key_id"`
	KeyName  string `json:"key_name"`
	Admin    bool   `json:"admin"`
	// Role is the key's role in its tenant (owner, admin, builder,
	// viewer, end_user).
	Role meta.Role `json:"role"`
	// DefaultModel is the model of agents that name none; Providers are
	// the registered model providers (the first part of a model spec).
	DefaultModel string   `json:"default_model"`
	Providers    []string `json:"providers"`
}

// me: GET /v1/me describes the calling key, without its secret.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	t, err := s.meta.TenantByID(r.Context(), p.Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, meResponse{
		Tenant: t.Name, TenantID: t.ID, KeyID: p.Key.ID, KeyName: p.Key.Name, Admin: p.Key.Admin, Role: p.Key.Role,
		DefaultModel: s.cfg.DefaultModel, Providers: provider.Names(),
	})
}
