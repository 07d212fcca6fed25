package platform

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"net/http"
	"strings"

	"github.com/weftlabs/weft/platform/meta"
)

// API keys look like "wk_<key id>_<secret>". The key id finds the stored row;
// the secret is checked against its SHA-256 hash in constant time. Only the
// hash is stored. The secret carries 160 random bits, so a fast hash is
// sound here (unlike passwords, keys cannot be guessed from a dictionary).
const keyPrefix = "wk_"

// envAdminKeyID is the id under which a free-form WEFT_ADMIN_KEY is stored.
const envAdminKeyID = "key_admin_env"

var secretEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newKey returns a new key's clear text, its stored id and its hash.
func newKey() (clear, id string, hash []byte) {
	id = meta.NewID("key")
	var b [20]byte
	rand.Read(b[:])
	secret := secretEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(secret))
	return keyPrefix + id + "_" + secret, id, sum[:]
}

// parseKey splits a clear key into its id and secret.
func parseKey(clear string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(clear, keyPrefix)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// hashOf returns the hash a key's secret is stored as.
func hashOf(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// principal is the authenticated caller of a request.
type principal struct {
	Key    meta.APIKey
	Tenant string
}

type principalKey struct{}

func principalFrom(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

// authenticate resolves the bearer key of r. Every failure gets the same
// answer so that nobody can probe which key ids exist.
func (s *Server) authenticate(r *http.Request) (principal, *apiError) {
	if p, ok := r.Context().Value(inProcessKey{}).(principal); ok {
		return p, nil // a request made inside this process (see inProcess)
	}
	h := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return principal{}, errorf(http.StatusUnauthorized, CodeUnauthorized, "missing API key: send Authorization: Bearer <key>")
	}
	token = strings.TrimSpace(token)
	id, secret, ok := parseKey(token)
	if !ok {
		// Not a generated key: it can only be the configured WEFT_ADMIN_KEY.
		id, secret = envAdminKeyID, token
	}
	bad := errorf(http.StatusUnauthorized, CodeUnauthorized, "invalid API key")
	k, err := s.keys.get(r.Context(), id)
	if err != nil {
		if errors.Is(err, meta.ErrNotFound) {
			return principal{}, bad
		}
		// The store failed: say so, rather than call a good key invalid.
		s.log.ErrorContext(r.Context(), "API key lookup failed", "request_id", requestID(r.Context()), "err", err)
		return principal{}, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the key store is unavailable; retry")
	}
	if subtle.ConstantTimeCompare(k.Hash, hashOf(secret)) != 1 {
		return principal{}, bad
	}
	return principal{Key: k, Tenant: k.TenantID}, nil
}

// requireAuth wraps h with authentication, the route's access (the
// key's role, read from the store — or the cache the key's changes
// invalidate — on every request) and the per-key rate limit.
// A change it lets through is recorded in the audit log (audit.go).
func (s *Server) requireAuth(pattern string, a access, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, aerr := s.authenticate(r)
		if aerr != nil {
			s.metrics.authFailures.Inc()
			writeRouteError(w, r, aerr)
			return
		}
		if aerr := a.allows(p); aerr != nil {
			writeRouteError(w, r, aerr)
			return
		}
		if s.limiter != nil {
			ok, wait, err := s.limiter.Allow(r.Context(), p.Key.ID, 1)
			if err != nil {
				// The limiter is a guard, not a dependency: when Redis is
				// unreachable, serve and say so in the log.
				s.log.WarnContext(r.Context(), "rate limiter unavailable", "err", err)
			} else if !ok {
				secs := int(wait.Seconds() + 0.999)
				if secs < 1 {
					secs = 1
				}
				s.log.WarnContext(r.Context(), "request refused: rate limited", "request_id", requestID(r.Context()),
					"tenant", p.Tenant, "key_id", p.Key.ID, "method", r.Method, "path", r.URL.Path, "retry_after_s", secs)
				e := errorf(http.StatusTooManyRequests, CodeRateLimited, "rate limit exceeded for this API key; retry after %d s", secs)
				e.retryAfter = secs
				writeRouteError(w, r, e)
				return
			}
		}
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		if s.audit != nil && a.audited(r.Method) {
			s.serveAudited(w, r, pattern, p, h)
			return
		}
		h(w, r)
	}
}
