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
	// Role is the new key's role; empty means admin, what a key made
	// before roles could do (everything but manage keys).
	Role string `json:"role"`
}

type updateKeyRequest struct {
	Role string `json:"role"`
}

type keyResponse struct {
	ID        string    `json:"id"`
	Key       string    `json:"key,omitempty"`
	Tenant    string    `json:"tenant"`
	Name      string    `json:"name"`
	Admin     bool      `json:"admin"`
	Role      meta.Role `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

// Keys are managed by the owners of a tenant (the route table says so):
// an owner creates, lists, re-roles and revokes its own tenant's keys; only
// the operator's key (Admin, made by Bootstrap from WEFT_ADMIN_KEY or
// generated) reaches other tenants, and it cannot be revoked or re-roled
// through the API at all (rotate it with WEFT_ADMIN_KEY or weft admin
// reset-key). A key of any other role mints no key and revokes none, so a
// leaked one cannot lock anyone out.

// forOtherTenant answers 403 unless the caller is the operator's key, the
// only one that reaches other tenants' keys.
func forOtherTenant(p principal) *apiError {
	if p.Key.Admin {
		return nil
	}
	return errorf(http.StatusForbidden, CodeForbidden, "only the operator's admin key may manage another tenant's keys")
}

// createKey: POST /v1/api-keys (owner). The key belongs to the named
// tenant (created if new; operator's key only), else to the caller's own.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
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
	role := meta.RoleAdmin
	if req.Role != "" {
		var err error
		if role, err = meta.ParseRole(req.Role); err != nil {
			writeError(w, invalid("field \"role\": %v", err))
			return
		}
	}
	ctx := r.Context()
	tenant, err := s.meta.TenantByID(ctx, p.Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	if req.Tenant != "" && req.Tenant != tenant.Name && req.Tenant != tenant.ID {
		if e := forOtherTenant(p); e != nil {
			writeError(w, e)
			return
		}
		if tenant, err = s.meta.EnsureTenant(ctx, req.Tenant); err != nil {
			writeError(w, asAPIError(err))
			return
		}
	}
	clear, id, hash := newKey()
	k := meta.APIKey{ID: id, TenantID: tenant.ID, Name: req.Name, Role: role, Hash: hash, CreatedAt: time.Now().UTC()}
	if err := s.meta.CreateKey(ctx, k); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusCreated, keyResponse{ID: id, Key: clear, Tenant: tenant.Name, Name: k.Name, Role: role, CreatedAt: k.CreatedAt})
}

// listKeys: GET /v1/api-keys[?tenant=NAME] (owner), without secrets: the
// keys of the caller's tenant, or of the named one (operator's key only).
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := principalFrom(ctx)
	tenant, err := s.meta.TenantByID(ctx, p.Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	if name := r.URL.Query().Get("tenant"); name != "" && name != tenant.Name && name != tenant.ID {
		if e := forOtherTenant(p); e != nil {
			writeError(w, e)
			return
		}
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
		out[i] = keyResponse{ID: k.ID, Tenant: tenant.Name, Name: k.Name, Admin: k.Admin, Role: k.Role, CreatedAt: k.CreatedAt}
	}
	writeJSON(w, http.StatusOK, out)
}

// manageableKey returns the key id names, if the caller may manage it: a
// key of its own tenant, or of any tenant for the operator's key (another
// tenant's key is 404 to anyone else, as if it did not exist). The
// operator's key itself is 409.
func (s *Server) manageableKey(r *http.Request, id string) (meta.APIKey, *apiError) {
	p := principalFrom(r.Context())
	k, err := s.meta.KeyByID(r.Context(), id)
	if err != nil {
		return meta.APIKey{}, notFoundOr(err, "api key", id)
	}
	if k.TenantID != p.Tenant && !p.Key.Admin {
		return meta.APIKey{}, notFound("api key", id)
	}
	if k.Admin {
		return meta.APIKey{}, errorf(http.StatusConflict, CodeConflict, "api key %q is the admin key: it cannot be changed or revoked through the API; set a new WEFT_ADMIN_KEY and restart, or run weft admin reset-key", id)
	}
	return k, nil
}

// updateKey: PATCH /v1/api-keys/{id} {"role"} (owner) changes a key's
// role; every replica sees the change on the key's next request.
func (s *Server) updateKey(w http.ResponseWriter, r *http.Request) {
	var req updateKeyRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	role, err := meta.ParseRole(req.Role)
	if err != nil {
		writeError(w, invalid("field \"role\": %v", err))
		return
	}
	ctx := r.Context()
	k, e := s.manageableKey(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	if err := s.meta.SetKeyRole(ctx, k.TenantID, k.ID, role); err != nil {
		writeError(w, notFoundOr(err, "api key", k.ID))
		return
	}
	s.bus.publish(ctx, "key", "", k.ID)
	t, err := s.meta.TenantByID(ctx, k.TenantID)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, keyResponse{ID: k.ID, Tenant: t.Name, Name: k.Name, Role: role, CreatedAt: k.CreatedAt})
}

// deleteKey: DELETE /v1/api-keys/{id} (owner) revokes a key, on every
// replica at once. The admin key itself is refused (409).
func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	k, e := s.manageableKey(r, r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	if err := s.meta.DeleteKey(ctx, k.TenantID, k.ID); err != nil {
		writeError(w, notFoundOr(err, "api key", k.ID))
		return
	}
	s.bus.publish(ctx, "key", "", k.ID)
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
