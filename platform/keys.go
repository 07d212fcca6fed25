package platform

import (
	"net/http"
	"strings"
	"time"

	"github.com/weftlabs/weft/platform/meta"
)

type createKeyRequest struct {
	Name   string `json:"name"`
	Tenant string `json:"tenant"`
}

type keyResponse struct {
	ID        string    `json:"id"`
	Key       string    `json:"key,omitempty"`
	Tenant    string    `json:"tenant"`
	Name      string    `json:"name"`
	Admin     bool      `json:"admin"`
	CreatedAt time.Time `json:"created_at"`
}

// Only admin keys manage keys (create, list, revoke): a tenant's key cannot
// mint more keys or revoke any, so a leaked tenant key cannot lock anyone
// out, and the admin key — made only by Bootstrap, from WEFT_ADMIN_KEY or
// generated — cannot be revoked through the API at all (rotate it with
// WEFT_ADMIN_KEY or weft admin reset-key).

// requireAdmin answers 403 unless the request's key is an admin key.
func requireAdmin(w http.ResponseWriter, r *http.Request) bool {
	if principalFrom(r.Context()).Key.Admin {
		return true
	}
	writeError(w, errorf(http.StatusForbidden, CodeForbidden, "only an admin key may manage API keys"))
	return false
}

// createKey: POST /v1/api-keys (admin). The key belongs to the named
// tenant (created if new), else to the admin's own.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	if !requireAdmin(w, r) {
		return
	}
	p := principalFrom(r.Context())
	var req createKeyRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "" {
		writeError(w, invalid("field \"name\" is required"))
		return
	}
	ctx := r.Context()
	tenant, err := s.meta.TenantByID(ctx, p.Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	if req.Tenant != "" && req.Tenant != tenant.Name && req.Tenant != tenant.ID {
		if tenant, err = s.meta.EnsureTenant(ctx, req.Tenant); err != nil {
			writeError(w, asAPIError(err))
			return
		}
	}
	clear, id, hash := newKey()
	k := meta.APIKey{ID: id, TenantID: tenant.ID, Name: req.Name, Hash: hash, CreatedAt: time.Now().UTC()}
	if err := s.meta.CreateKey(ctx, k); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusCreated, keyResponse{ID: id, Key: clear, Tenant: tenant.Name, Name: k.Name, CreatedAt: k.CreatedAt})
}

// listKeys: GET /v1/api-keys[?tenant=NAME] (admin), without secrets: the
// keys of the named tenant, else of the admin's own.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	if !requireAdmin(w, r) {
		return
	}
	ctx := r.Context()
	tenant, err := s.meta.TenantByID(ctx, principalFrom(ctx).Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	if name := r.URL.Query().Get("tenant"); name != "" && name != tenant.Name && name != tenant.ID {
		if tenant, err = s.meta.TenantByName(ctx, name); err != nil {
			writeError(w, notFoundOr(err, "tenant", name))
			return
		}
	}
	keys, err := s.meta.ListKeys(ctx, tenant.ID)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := make([]keyResponse, len(keys))
	for i, k := range keys {
		out[i] = keyResponse{ID: k.ID, Tenant: tenant.Name, Name: k.Name, Admin: k.Admin, CreatedAt: k.CreatedAt}
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteKey: DELETE /v1/api-keys/{id} (admin) revokes a key of any tenant,
// on every replica at once. The admin key itself is refused (409).
func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request) {
	if !requireAdmin(w, r) {
		return
	}
	ctx := r.Context()
	id := r.PathValue("id")
	k, err := s.meta.KeyByID(ctx, id)
	if err != nil {
		writeError(w, notFoundOr(err, "api key", id))
		return
	}
	if k.Admin {
		writeError(w, errorf(http.StatusConflict, CodeConflict, "api key %q is the admin key: it cannot be revoked through the API; set a new WEFT_ADMIN_KEY and restart, or run weft admin reset-key", id))
		return
	}
	if err := s.meta.DeleteKey(ctx, k.TenantID, id); err != nil {
		writeError(w, notFoundOr(err, "api key", id))
		return
	}
	s.bus.publish(ctx, "key", "", id)
	w.WriteHeader(http.StatusNoContent)
}

// notFoundOr maps a store's not-found to a 404 that names the object.
func notFoundOr(err error, what, id string) *apiError {
	e := asAPIError(err)
	if e.Code == CodeNotFound {
		return notFound(what, id)
	}
	return e
}
