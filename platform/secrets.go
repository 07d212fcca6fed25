package platform

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/secrets"
	"github.com/weftlabs/weft/tool/secretref"
)

// Tenant secrets (issue M). A tenant stores values once with PUT
// /v1/secrets and references them as ${secret:NAME} in HTTP tool headers,
// MCP server headers and environments, and a remote agent's api_key. The
// server's own environment is off limits to tenants: a ${NAME} reference
// (or a remote agent's api_key_env) is accepted only from an admin key and
// only for the variables the operator lists in WEFT_ENV_SECRETS_ALLOW, both
// when the object is registered and on every use — so records stored before
// this rule (wave 1) fail at use with the same explanation.

// EnvSecretsAllowEnv lists (comma-separated) the environment variables that
// objects registered with an admin key may reference as ${NAME}.
const EnvSecretsAllowEnv = "WEFT_ENV_SECRETS_ALLOW"

func (s *Server) secretRoutes() {
	s.handle("GET /v1/secrets", need(builder), s.listSecrets)
	s.handle("POST /v1/secrets", need(admin), s.putSecret)
	s.handle("PUT /v1/secrets", need(admin), s.putSecret)
	s.handle("PUT /v1/secrets/{name}", need(admin), s.putSecret)
	s.handle("DELETE /v1/secrets/{name}", need(admin), s.deleteSecret)
}

// putSecret: POST|PUT /v1/secrets {name, value}, PUT /v1/secrets/{name}
// {value}. 201 when created, 200 when replaced; the value is never shown.
func (s *Server) putSecret(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	var in struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	if e := decodeJSON(w, r, &in); e != nil {
		writeError(w, e)
		return
	}
	if name := r.PathValue("name"); name != "" {
		if in.Name != "" && in.Name != name {
			writeError(w, invalid("field \"name\": %q differs from the name in the path", in.Name))
			return
		}
		in.Name = name
	}
	if !secretref.NameRE.MatchString(in.Name) {
		writeError(w, invalid("field \"name\": want a letter or _ followed by up to 127 letters, digits, _ or -"))
		return
	}
	if err := secrets.CheckValue(in.Value); err != nil {
		writeError(w, invalid("field \"value\": %v", err))
		return
	}
	info, created, err := s.secrets.Put(r.Context(), p.Tenant, in.Name, in.Value)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, info)
}

// listSecrets: GET /v1/secrets → names and dates, never values.
func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	list, err := s.secrets.List(r.Context(), principalFrom(r.Context()).Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// deleteSecret: DELETE /v1/secrets/{name}.
func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := s.secrets.Delete(r.Context(), principalFrom(r.Context()).Tenant, name); err != nil {
		writeError(w, notFoundOr(err, "secret", name))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// envAllowed reports whether the operator lets admin-registered objects
// read the environment variable name.
func (s *Server) envAllowed(name string) bool { return s.envAllow[name] }

// envRefError explains why a ${NAME} reference is refused, and what to do
// instead. It is the answer at registration and at use.
func (s *Server) envRefError(name string, admin bool) error {
	instead := fmt.Sprintf("store the value as a tenant secret (PUT /v1/secrets {\"name\": %q, \"value\": \"…\"}) and write ${secret:%s} instead", name, name)
	if !admin {
		return fmt.Errorf("${%s} reads the server's environment, which only objects registered with an admin key may do; %s", name, instead)
	}
	return fmt.Errorf("${%s} reads the server's environment and %s is not listed in %s (the operator's list of variables admin-registered objects may read); %s", name, name, EnvSecretsAllowEnv, instead)
}

// checkRefs checks the references in values (field → value) as registered
// by a key that is admin or not.
func (s *Server) checkRefs(field string, values map[string]string, admin bool) *apiError {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		for _, ref := range secretref.Parse(values[k]) {
			if ref.Env && (!admin || !s.envAllowed(ref.Name)) {
				return invalid("field %q: %v", field+"."+k, s.envRefError(ref.Name, admin))
			}
			if !ref.Env && s.secrets == nil {
				return invalid("field %q: %s: this server has no secret store", field+"."+k, ref)
			}
		}
	}
	return nil
}

// lookup resolves references for an object of tenant registered by an
// admin key or not: ${secret:NAME} from the tenant's own secrets, ${NAME}
// from the environment only when allowed (see envRefError).
func (s *Server) lookup(tenant string, admin bool) secretref.Lookup {
	return func(ctx context.Context, ref secretref.Ref) (string, error) {
		if !ref.Env {
			if s.secrets == nil {
				return "", fmt.Errorf("%s: this server has no secret store", ref)
			}
			return s.secrets.Get(ctx, tenant, ref.Name)
		}
		if !admin || !s.envAllowed(ref.Name) {
			return "", s.envRefError(ref.Name, admin)
		}
		v := s.cfg.Getenv(ref.Name)
		if v == "" {
			return "", fmt.Errorf("environment variable %s is not set on this server", ref.Name)
		}
		return v, nil
	}
}

// validateRemote checks a remote agent's URL and key reference as given by
// p, and records whether an admin registered it.
func (s *Server) validateRemote(p principal, a *meta.Agent) *apiError {
	rm := a.Remote
	if rm == nil {
		return nil
	}
	rm.RegisteredByAdmin = p.Key.Admin
	switch rm.Protocol {
	case "", "weft":
		if rm.URL == "" || rm.AgentID == "" {
			return invalid("field \"remote\": url and agent_id are required")
		}
	case meta.RemoteA2A:
		if rm.URL == "" {
			return invalid("field \"remote\": url is required (the A2A agent's card or base URL)")
		}
		if rm.AgentID != "" {
			return invalid("field \"remote.agent_id\": an A2A agent is named by its url alone")
		}
	default:
		return invalid("field \"remote.protocol\": want \"weft\" or \"a2a\", not %q", rm.Protocol)
	}
	if err := s.guard.CheckURL(rm.URL); err != nil {
		return invalid("field \"remote.url\": %v", err)
	}
	if rm.APIKey != "" {
		refs := secretref.Parse(rm.APIKey)
		if len(refs) != 1 || refs[0].String() != strings.TrimSpace(rm.APIKey) {
			return invalid("field \"remote.api_key\": want a reference to a secret, ${secret:NAME}; a key written here would be stored in clear")
		}
		if e := s.checkRefs("remote", map[string]string{"api_key": rm.APIKey}, p.Key.Admin); e != nil {
			return e
		}
	}
	if rm.APIKeyEnv != "" {
		if rm.APIKey != "" {
			return invalid("field \"remote\": give api_key or api_key_env, not both")
		}
		if e := s.checkRefs("remote", map[string]string{"api_key_env": "${" + rm.APIKeyEnv + "}"}, p.Key.Admin); e != nil {
			return e
		}
	}
	return nil
}

// remoteKey resolves a remote agent's API key, per call.
func (s *Server) remoteKey(ctx context.Context, target meta.Agent, red *secretref.Redactor) (string, error) {
	rm := target.Remote
	ref := rm.APIKey
	if ref == "" && rm.APIKeyEnv != "" {
		ref = "${" + rm.APIKeyEnv + "}"
	}
	if ref == "" {
		return "", nil
	}
	key, err := secretref.Expand(ctx, ref, s.lookup(target.TenantID, rm.RegisteredByAdmin), red)
	if err != nil {
		return "", fmt.Errorf("remote agent %q: api key: %w", target.Name, err)
	}
	return key, nil
}
