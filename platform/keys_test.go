package platform

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/meta"
)

// A tenant's key cannot revoke the admin key (it could, with a 204, which
// locked the operator out for good), nor can the admin revoke its own.
func TestAdminKeyCannotBeRevoked(t *testing.T) {
	e := newEnv(t, nil)
	var member keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "member"}, &member)
	adminID, _, _ := parseKey(e.admin)
	e.wantError(e.do(member.Key, "DELETE", "/v1/api-keys/"+adminID, nil, nil), http.StatusForbidden, CodeForbidden)
	e.wantError(e.do(e.admin, "DELETE", "/v1/api-keys/"+adminID, nil, nil), http.StatusConflict, CodeConflict)
	e.wantError(e.do(e.admin, "DELETE", "/v1/api-keys/key_nothing", nil, nil), http.StatusNotFound, CodeNotFound)
	if resp := e.do(e.admin, "GET", "/v1/agents", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("admin key after the attempts: %d", resp.StatusCode)
	}
	var keys []keyResponse
	e.do(e.admin, "GET", "/v1/api-keys", nil, &keys)
	if len(keys) != 2 || !keys[0].Admin || keys[1].Admin {
		t.Fatalf("keys = %+v", keys)
	}
}

func authOK(t *testing.T, e *testEnv, key string) bool {
	t.Helper()
	// As a restart would: forget the cached keys.
	for _, id := range []string{envAdminKeyID, keyID(key)} {
		e.srv.keys.invalidate("", id)
	}
	resp := e.do(key, "GET", "/v1/agents", nil, nil)
	return resp.StatusCode == http.StatusOK
}

func keyID(key string) string {
	if id, _, ok := parseKey(key); ok {
		return id
	}
	return envAdminKeyID
}

// Restarting with a new WEFT_ADMIN_KEY rotates it: the new key works and the
// old one is revoked (before, the old stayed valid and the new was refused).
func TestAdminKeyRotation(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	store := e.srv.meta
	generated := e.admin
	const first, second = "first-admin-key-0123456789", "second-admin-key-0123456789"
	for _, c := range []struct {
		key      string
		revoked  []string // keys that stop working
		stillSet string   // key that works
	}{
		{first, []string{generated}, first},
		{first, nil, first}, // a restart with the same key changes nothing
		{second, []string{first, generated}, second},
	} {
		if _, err := Bootstrap(ctx, store, c.key); err != nil {
			t.Fatal(err)
		}
		if !authOK(t, e, c.stillSet) {
			t.Fatalf("after bootstrap with %s: it is refused", c.key)
		}
		for _, old := range c.revoked {
			if authOK(t, e, old) {
				t.Fatalf("after bootstrap with %s: %s still works", c.key, old)
			}
		}
	}
	// A generated Weft-format key given as WEFT_ADMIN_KEY works too.
	clear, _, _ := newKey()
	if _, err := Bootstrap(ctx, store, clear); err != nil {
		t.Fatal(err)
	}
	if !authOK(t, e, clear) || authOK(t, e, second) {
		t.Fatal("rotation to a wk_ key")
	}
	// Without WEFT_ADMIN_KEY, a restart keeps the admin key in place.
	if got, err := Bootstrap(ctx, store, ""); err != nil || got != "" || !authOK(t, e, clear) {
		t.Fatalf("bootstrap without a key = %q, %v", got, err)
	}
}

// The log names the keys created and revoked by id, never by secret, and a
// generated key lands in admin.key (0600), which a rotation removes.
func TestBootstrapLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := meta.OpenSQLite(ctx, filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	if err := bootstrapAndLog(ctx, store, "", dir, log); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "admin.key")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin.key mode %v", fi.Mode())
	}
	generated := strings.TrimSpace(string(b))
	genID, _, _ := parseKey(generated)
	buf.Reset()
	const key = "configured-admin-key-0123456789"
	if err := bootstrapAndLog(ctx, store, key, dir, log); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "key_id="+genID) || !strings.Contains(out, "key_id="+envAdminKeyID) {
		t.Fatalf("log lacks the key ids:\n%s", out)
	}
	if strings.Contains(out, key) || strings.Contains(out, generated) {
		t.Fatalf("log shows a secret:\n%s", out)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("admin.key with a revoked key kept: %v", err)
	}
}

// A store whose admin key is gone (deleted through the old bug) gets a new
// one at start, though it holds other keys; ResetAdminKey recovers offline.
func TestAdminKeyRecovery(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	var member keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "member"}, &member)
	id, _, _ := parseKey(e.admin)
	if err := e.srv.meta.DeleteKey(ctx, e.tenant(), id); err != nil {
		t.Fatal(err)
	}
	fresh, err := Bootstrap(ctx, e.srv.meta, "")
	if err != nil || fresh == "" || !authOK(t, e, fresh) {
		t.Fatalf("bootstrap on a store without an admin key = %q, %v", fresh, err)
	}
	clear, newID, revoked, err := ResetAdminKey(ctx, e.srv.meta)
	if err != nil {
		t.Fatal(err)
	}
	if freshID, _, _ := parseKey(fresh); len(revoked) != 1 || revoked[0] != freshID || keyID(clear) != newID {
		t.Fatalf("reset: revoked %v, new %s", revoked, newID)
	}
	if !authOK(t, e, clear) || authOK(t, e, fresh) || !authOK(t, e, member.Key) {
		t.Fatal("after reset: the new key must work, the old not, the member's still")
	}
}
