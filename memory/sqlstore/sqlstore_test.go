package sqlstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/memorytest"
	"github.com/weftlabs/weft/memory/sqlstore"
)

// The children of the cross-process tests open the store these name.
const (
	envBackend = "WEFT_SQLSTORE_TEST_BACKEND" // sqlite or postgres
	envTarget  = "WEFT_SQLSTORE_TEST_TARGET"  // a file path or a DSN
)

func openSQLite(t testing.TB, path string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSQLiteContract(t *testing.T) {
	t.Parallel()
	memorytest.Run(t, func(t *testing.T) memory.Store {
		return openSQLite(t, filepath.Join(t.TempDir(), "memory.db"))
	})
}

// postgresDSN returns a DSN whose search_path is a fresh schema, dropped
// when the test ends, or skips without WEFT_TEST_POSTGRES_URL.
func postgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL is not set")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "weft_memtest_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect %s: %v", base, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

func openPostgres(t testing.TB, dsn string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPostgresContract(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	s := openPostgres(t, dsn)
	memorytest.Run(t, func(t *testing.T) memory.Store { return s })
}

func TestPostgresConcurrentOpen(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	// Several stores migrating one fresh schema at once apply each step once.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { openPostgres(t, dsn) })
	}
	wg.Wait()
}

func TestSQLiteReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "memory.db")
	ctx := context.Background()
	key := memory.Key{Tenant: "t", Agent: "a", Session: "s"}
	s := openSQLite(t, path)
	if _, err := s.Append(ctx, key, memory.Record{ID: "m1"}, memory.Record{ID: "m2"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Opening again applies no migration twice and keeps the data.
	s = openSQLite(t, path)
	recs, err := s.Append(ctx, key, memory.Record{ID: "m3"})
	if err != nil || recs[0].Seq != 3 {
		t.Fatalf("Append after reopen = %+v, %v; want Seq 3", recs, err)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := sqlstore.OpenSQLite(ctx, ""); err == nil {
		t.Error("OpenSQLite(\"\") succeeded")
	}
	dir := t.TempDir()
	if _, err := sqlstore.OpenSQLite(ctx, filepath.Join(dir, "missing", "memory.db")); err == nil || !strings.Contains(err.Error(), "sqlstore: open sqlite") {
		t.Errorf("OpenSQLite in a missing directory: err = %v", err)
	}
	// Nothing listens on port 1.
	_, err := sqlstore.OpenPostgres(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	if err == nil || !strings.Contains(err.Error(), "sqlstore: open postgres") {
		t.Errorf("OpenPostgres of a closed port: err = %v", err)
	}
}

func TestErrorsNameStoreAndOperation(t *testing.T) {
	t.Parallel()
	s := openSQLite(t, filepath.Join(t.TempDir(), "memory.db"))
	s.Close()
	key := memory.Key{Tenant: "t", Agent: "a", Session: "s"}
	_, err := s.Load(context.Background(), key, memory.Window{})
	if want := "sqlstore: sqlite: load t/a/s: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Load on a closed store: err = %v, want prefix %q", err, want)
	}
}

func TestHelperProcess(t *testing.T) {
	memorytest.HelperProcess(t, func() (memory.Store, error) {
		ctx := context.Background()
		switch os.Getenv(envBackend) {
		case "sqlite":
			return sqlstore.OpenSQLite(ctx, os.Getenv(envTarget))
		case "postgres":
			return sqlstore.OpenPostgres(ctx, os.Getenv(envTarget))
		}
		return nil, fmt.Errorf("unknown %s %q", envBackend, os.Getenv(envBackend))
	})
}

func TestSQLiteCrossProcess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "memory.db")
	s := openSQLite(t, path)
	env := []string{envBackend + "=sqlite", envTarget + "=" + path}
	t.Run("two appenders", func(t *testing.T) { memorytest.CrossProcess(t, s, env, 40) })
	t.Run("SIGKILL", func(t *testing.T) { memorytest.KillMidAppend(t, s, env, 25) })
	t.Run("SIGKILL holder", func(t *testing.T) { memorytest.KillHolder(t, s, env, time.Second) })
	t.Run("SIGKILL turn holder", func(t *testing.T) { memorytest.KillTurnHolder(t, s, env, time.Second) })
}

func TestPostgresCrossProcess(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	s := openPostgres(t, dsn)
	env := []string{envBackend + "=postgres", envTarget + "=" + dsn}
	t.Run("two appenders", func(t *testing.T) { memorytest.CrossProcess(t, s, env, 40) })
	t.Run("SIGKILL", func(t *testing.T) { memorytest.KillMidAppend(t, s, env, 25) })
	t.Run("SIGKILL holder", func(t *testing.T) { memorytest.KillHolder(t, s, env, time.Second) })
	t.Run("SIGKILL turn holder", func(t *testing.T) { memorytest.KillTurnHolder(t, s, env, time.Second) })
}

// statements counts the statements pgx sends.
type statements struct{ n atomic.Int64 }

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	s.n.Add(1)
	return ctx
}
func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func TestPostgresOneStatement(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var st statements
	cfg.ConnConfig.Tracer = &st
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := sqlstore.NewPostgres(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	key := memory.Key{Tenant: "t", Agent: "a", Session: "s"}
	count := func(what string, fn func() error) {
		t.Helper()
		st.n.Store(0)
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := st.n.Load(); n != 1 {
			t.Errorf("%s sent %d statements, want 1", what, n)
		}
	}
	recs := benchRecords(3)
	recs[0].ID = "m0"
	count("Append", func() error {
		_, err := s.Append(ctx, key, append([]memory.Record{{Message: llm.SystemMessage("sys")}}, recs...)...)
		return err
	})
	count("Append of a repeated id", func() error { _, err := s.Append(ctx, key, recs[0]); return err })
	count("Load", func() error { _, err := s.Load(ctx, key, memory.Window{MaxTokens: 100, MaxMessages: 2}); return err })

	// A turn held through a Chat: one statement to begin (lease, window
	// and the first record), one to end (the last records and the
	// release).
	chat := memory.NewChat(s, key, memory.Window{MaxTokens: 100}, memory.KeepAll())
	var h *memory.Hold
	count("Begin", func() error {
		var recs []memory.Record
		var err error
		h, recs, err = chat.Begin(ctx, memory.Record{ID: "q", Message: llm.UserMessage("q"), Tokens: 1})
		if err == nil && len(recs) != 2 { // the system record and one of 60 tokens
			err = fmt.Errorf("Begin loaded %d records, want 2", len(recs))
		}
		return err
	})
	count("End", func() error { return h.End(ctx, memory.Record{ID: "a", Message: llm.AssistantMessage("a"), Tokens: 1}) })
}
