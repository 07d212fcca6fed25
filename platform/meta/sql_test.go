package meta

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/internal/pgtest"
)

// stores returns the stores the contract runs on: SQLite always, PostgreSQL
// when WEFT_TEST_POSTGRES_URL is set (in a schema of its own, dropped after).
func stores(t *testing.T) map[string]Store {
	t.Helper()
	ctx := context.Background()
	out := map[string]Store{}
	lite, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	out["sqlite"] = lite
	if os.Getenv("WEFT_TEST_POSTGRES_URL") != "" {
		out["postgres"] = openTestPostgres(t)
	}
	return out
}

func openTestPostgres(t *testing.T) *SQL {
	t.Helper()
	pg, err := OpenPostgres(context.Background(), pgtest.DSN(t, "meta_test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	return pg
}

func TestStoreContract(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) { runContract(t, s) })
	}
}

func runContract(t *testing.T, s Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)

	a, err := s.EnsureTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.EnsureTenant(ctx, "acme")
	if err != nil || again.ID != a.ID {
		t.Fatalf("EnsureTenant twice = %v, %v; want the same tenant %s", again, err, a.ID)
	}
	b, _ := s.EnsureTenant(ctx, "globex")

	// Keys.
	k := APIKey{ID: NewID("key"), TenantID: a.ID, Name: "ci", Admin: true, Hash: []byte{1, 2, 3}, CreatedAt: now}
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	got, err := s.KeyByID(ctx, k.ID)
	if err != nil || got.TenantID != a.ID || !got.Admin || string(got.Hash) != string(k.Hash) || !got.CreatedAt.Equal(now) {
		t.Fatalf("KeyByID = %+v, %v", got, err)
	}
	if keys, _ := s.ListKeys(ctx, b.ID); len(keys) != 0 {
		t.Fatalf("tenant globex sees acme's keys: %v", keys)
	}
	if err := s.DeleteKey(ctx, b.ID, k.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cross-tenant DeleteKey = %v, want ErrNotFound", err)
	}
	if n, _ := s.CountKeys(ctx); n != 1 {
		t.Fatalf("CountKeys = %d, want 1", n)
	}

	// Agents.
	ag := Agent{ID: NewID("agt"), TenantID: a.ID, Name: "support", SystemPrompt: "be kind", Enabled: true, CreatedAt: now, UpdatedAt: now}
	ag.Defaults()
	if err := s.CreateAgent(ctx, ag); err != nil {
		t.Fatal(err)
	}
	dup := ag
	dup.ID = NewID("agt")
	if err := s.CreateAgent(ctx, dup); !errors.Is(err, ErrConflict) {
		t.Fatalf("duplicate name = %v, want ErrConflict", err)
	}
	other := ag
	other.ID, other.TenantID = NewID("agt"), b.ID
	if err := s.CreateAgent(ctx, other); err != nil {
		t.Fatalf("same name in another tenant: %v", err)
	}
	ga, err := s.Agent(ctx, a.ID, ag.ID)
	if err != nil || ga.SystemPrompt != "be kind" || ga.ContextWindowTokens != DefaultContextWindow || ga.TenantID != a.ID {
		t.Fatalf("Agent = %+v, %v", ga, err)
	}
	if _, err := s.Agent(ctx, b.ID, ag.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cross-tenant Agent = %v, want ErrNotFound", err)
	}
	if byName, err := s.AgentByName(ctx, a.ID, "support"); err != nil || byName.ID != ag.ID {
		t.Fatalf("AgentByName = %+v, %v", byName, err)
	}
	ga.SystemPrompt = "be brief"
	ga.UpdatedAt = now.Add(time.Second)
	if err := s.UpdateAgent(ctx, ga); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.ListAgents(ctx, a.ID); len(list) != 1 || list[0].SystemPrompt != "be brief" {
		t.Fatalf("ListAgents = %+v", list)
	}
	ghost := ga
	ghost.TenantID = b.ID
	if err := s.UpdateAgent(ctx, ghost); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cross-tenant UpdateAgent = %v, want ErrNotFound", err)
	}

	// Sessions.
	ss := Session{ID: NewID("ses"), TenantID: a.ID, AgentID: ag.ID, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateSession(ctx, ss); err != nil {
		t.Fatal(err)
	}
	ss2 := Session{ID: NewID("ses"), TenantID: a.ID, AgentID: ag.ID, ParentID: ss.ID, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateSession(ctx, ss2); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchSessions(ctx, []SessionTouch{{TenantID: a.ID, ID: ss.ID, At: now.Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	// Several at once, one of them gone, one going back in time (kept).
	if err := s.TouchSessions(ctx, []SessionTouch{{TenantID: a.ID, ID: ss2.ID, At: now.Add(time.Second)},
		{TenantID: a.ID, ID: "ses_gone", At: now}, {TenantID: a.ID, ID: ss.ID, At: now}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Session(ctx, a.ID, ss2.ID); err != nil || !got.UpdatedAt.Equal(now.Add(time.Second).Truncate(time.Microsecond)) {
		t.Fatalf("touched session = %+v, %v", got, err)
	}
	list, err := s.ListSessions(ctx, a.ID, ag.ID)
	if err != nil || len(list) != 2 || list[0].ID != ss.ID || list[1].ParentID != ss.ID {
		t.Fatalf("ListSessions = %+v, %v (want the touched session first)", list, err)
	}
	if _, err := s.Session(ctx, b.ID, ss.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cross-tenant Session = %v", err)
	}
	if err := s.DeleteSession(ctx, a.ID, ss2.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAgent(ctx, a.ID, ag.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAgent(ctx, a.ID, ag.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second DeleteAgent = %v, want ErrNotFound", err)
	}

	// Idempotency: one claim wins among concurrent ones; the outcome replays.
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, seen, err := s.ClaimIdempotent(ctx, a.ID, "k1", time.Hour)
			if err != nil {
				t.Error(err)
				return
			}
			if !seen {
				mu.Lock()
				winners++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if winners != 1 {
		t.Fatalf("%d claims won, want exactly 1", winners)
	}
	if err := s.CompleteIdempotent(ctx, a.ID, "k1", Idempotent{Status: 200, Body: []byte(`{"ok":true}`)}); err != nil {
		t.Fatal(err)
	}
	out, seen, err := s.ClaimIdempotent(ctx, a.ID, "k1", time.Hour)
	if err != nil || !seen || out.Status != 200 || string(out.Body) != `{"ok":true}` {
		t.Fatalf("replay = %+v, %v, %v", out, seen, err)
	}
	if _, seen, _ := s.ClaimIdempotent(ctx, b.ID, "k1", time.Hour); seen {
		t.Fatalf("another tenant's key replayed")
	}
	if err := s.ReleaseIdempotent(ctx, a.ID, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, seen, _ := s.ClaimIdempotent(ctx, a.ID, "k1", time.Hour); seen {
		t.Fatalf("released key still replays")
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestMigrationsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	for range 2 {
		s, err := OpenSQLite(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}

func TestDollarParams(t *testing.T) {
	if got := dollarParams("a = ? AND b = ?"); got != "a = $1 AND b = $2" {
		t.Fatalf("dollarParams = %q", got)
	}
}

// ReplaceAdminKeys leaves exactly one admin key and keeps other keys.
func TestReplaceAdminKeys(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ten, err := s.EnsureTenant(ctx, "default")
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			old := APIKey{ID: "key_old", TenantID: ten.ID, Name: "admin", Admin: true, Hash: []byte("h1"), CreatedAt: now}
			member := APIKey{ID: "key_member", TenantID: ten.ID, Name: "m", Hash: []byte("h2"), CreatedAt: now}
			for _, k := range []APIKey{old, member} {
				if err := s.CreateKey(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			// Same id, new hash: the stored key is replaced.
			same := old
			same.Hash = []byte("h3")
			revoked, err := s.ReplaceAdminKeys(ctx, same)
			if err != nil || len(revoked) != 1 || revoked[0] != "key_old" {
				t.Fatalf("revoked %v, %v", revoked, err)
			}
			if k, err := s.KeyByID(ctx, "key_old"); err != nil || string(k.Hash) != "h3" || !k.Admin {
				t.Fatalf("key_old = %+v, %v", k, err)
			}
			if revoked, err := s.ReplaceAdminKeys(ctx, same); err != nil || len(revoked) != 0 {
				t.Fatalf("again: revoked %v, %v", revoked, err)
			}
			fresh := APIKey{ID: "key_new", TenantID: ten.ID, Name: "admin", Admin: true, Hash: []byte("h4"), CreatedAt: now}
			if revoked, err := s.ReplaceAdminKeys(ctx, fresh); err != nil || len(revoked) != 1 || revoked[0] != "key_old" {
				t.Fatalf("new id: revoked %v, %v", revoked, err)
			}
			keys, err := s.ListKeys(ctx, ten.ID)
			if err != nil || len(keys) != 2 {
				t.Fatalf("keys = %+v, %v", keys, err)
			}
			if _, err := s.KeyByID(ctx, "key_member"); err != nil {
				t.Fatal("the member key was revoked")
			}
			if got, err := s.TenantByName(ctx, "default"); err != nil || got.ID != ten.ID {
				t.Fatalf("TenantByName = %+v, %v", got, err)
			}
			if _, err := s.TenantByName(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("TenantByName(nobody) = %v", err)
			}
		})
	}
}

// TestConcurrentCreateSession: sessions created at once are all stored (on
// SQLite they are group-committed), and a duplicate id among them fails
// only its own caller, with ErrConflict.
func TestConcurrentCreateSession(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ten, err := s.EnsureTenant(ctx, "group-"+name)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC().Truncate(time.Microsecond)
			const n = 64
			errs := make([]error, n+1)
			var wg sync.WaitGroup
			for i := range n + 1 {
				id := NewID("ses")
				if i == n {
					id = "ses-dup-" + name // created again in the second wave
				}
				wg.Go(func() {
					errs[i] = s.CreateSession(ctx, Session{ID: id, TenantID: ten.ID, AgentID: "agt", CreatedAt: now, UpdatedAt: now})
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("create %d: %v", i, err)
				}
			}
			// The same id again, among new ones.
			dupErrs := make([]error, 8)
			for i := range dupErrs {
				id := NewID("ses")
				if i == 3 {
					id = "ses-dup-" + name
				}
				wg.Go(func() {
					dupErrs[i] = s.CreateSession(ctx, Session{ID: id, TenantID: ten.ID, AgentID: "agt", CreatedAt: now, UpdatedAt: now})
				})
			}
			wg.Wait()
			for i, err := range dupErrs {
				if (i == 3) != errors.Is(err, ErrConflict) || (i != 3 && err != nil) {
					t.Errorf("create %d of the second wave: %v", i, err)
				}
			}
			list, err := s.ListSessions(ctx, ten.ID, "agt")
			if err != nil || len(list) != n+1+7 {
				t.Fatalf("listed %d sessions, %v; want %d", len(list), err, n+1+7)
			}
		})
	}
}
