package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/meta"
)

// resetKeyCase bootstraps a store, runs weft admin reset-key on it, and
// checks that the old admin key is gone and the printed one is stored.
func resetKeyCase(t *testing.T, open func() meta.Store, vars map[string]string, args ...string) string {
	t.Helper()
	ctx := context.Background()
	store := open()
	old, err := platform.Bootstrap(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	r := runCLI(t, t.Context(), vars, "", append([]string{"admin", "reset-key"}, args...)...)
	if r.code != 0 {
		t.Fatalf("code %d stderr %q", r.code, r.stderr)
	}
	clear := strings.TrimSpace(r.stdout)
	oldID := strings.Split(old, "_")[1] + "_" + strings.Split(old, "_")[2]
	newID := strings.Split(clear, "_")[1] + "_" + strings.Split(clear, "_")[2]
	if !strings.HasPrefix(clear, "wk_") || !strings.Contains(r.stderr, "revoked "+oldID) || strings.Contains(r.stderr, clear) {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	store = open()
	defer store.Close()
	if _, err := store.KeyByID(ctx, oldID); err == nil {
		t.Fatal("the old admin key is still stored")
	}
	if k, err := store.KeyByID(ctx, newID); err != nil || !k.Admin {
		t.Fatalf("new key %s: %+v, %v", newID, k, err)
	}
	// A restart without WEFT_ADMIN_KEY keeps the reset key.
	if again, err := platform.Bootstrap(ctx, store, ""); err != nil || again != "" {
		t.Fatalf("bootstrap after reset = %q, %v", again, err)
	}
	return clear
}

func TestAdminResetKeySQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func() meta.Store {
		s, err := meta.OpenSQLite(context.Background(), filepath.Join(dir, "weft.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	clear := resetKeyCase(t, open, nil, "--data", dir)
	b, err := os.ReadFile(filepath.Join(dir, "admin.key"))
	if err != nil || strings.TrimSpace(string(b)) != clear {
		t.Fatalf("admin.key = %q, %v", b, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "admin.key")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin.key mode %v", fi.Mode())
	}
	// A wrong --data is an error, not a new empty store.
	r := runCLI(t, t.Context(), nil, "", "admin", "reset-key", "--data", filepath.Join(dir, "nothing"))
	if r.code != exitFailure || !strings.Contains(r.stderr, "no Weft store") {
		t.Fatalf("wrong --data: code %d stderr %q", r.code, r.stderr)
	}
}

func TestAdminResetKeyPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t, "admin_test")
	open := func() meta.Store {
		s, err := meta.OpenPostgres(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// From the environment, as weft serve reads it.
	resetKeyCase(t, open, map[string]string{"WEFT_POSTGRES_URL": dsn})
}
