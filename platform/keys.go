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

// createKey: POST /v1/api-keys. An admin key may name another tenant
// (created if new); other keys create keys of their own tenant only.
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
	ctx := r.Context()
	tenant, err := s.meta.TenantByID(ctx, p.Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	if req.Tenant != "" && req.Tenant != tenant.Name && req.Tenant != tenant.ID {
		if !p.Key.Admin {
			writeError(w, errorf(http.StatusForbidden, CodeForbidden, "only an admin key may create keys for another tenant"))
			return
		}
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

// listKeys: GET /v1/api-keys, without secrets.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	keys, err := s.meta.ListKeys(r.Context(), p.Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	tenant, err := s.meta.TenantByID(r.Context(), p.Tenant)
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

// deleteKey: DELETE /v1/api-keys/{id} revokes a key of the caller's tenant,
// on every replica at once.
func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	id := r.PathValue("id")
	if err := s.meta.DeleteKey(r.Context(), p.Tenant, id); err != nil {
		writeError(w, notFoundOr(err, "api key", id))
		return
	}
	s.bus.publish(r.Context(), "key", "", id)
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
