package sqlfacts_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver

	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/memory/facts/factstest"
	"github.com/weftlabs/weft/memory/facts/sqlfacts"
	"github.com/weftlabs/weft/rag/vector"
)

func openSQLite(t *testing.T, opts ...sqlfacts.Option) *sqlfacts.Store {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "facts.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(2)
	t.Cleanup(func() { db.Close() })
	s, err := sqlfacts.NewSQLite(context.Background(), db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// postgresDB opens a database/sql pool on a schema of its own, dropped
// when the test ends, or skips without WEFT_TEST_POSTGRES_URL.
func postgresDB(t *testing.T) *sql.DB {
	t.Helper()
	base := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL is not set")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "weft_factstest_" + hex.EncodeToString(b[:])
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
	db, err := sql.Open("pgx", base+sep+"search_path="+schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openPostgres opens a store in a fresh schema. pgvector must work where
// WEFT_TEST_POSTGRES_URL points (CI installs it): the test fails, not
// skips, without it.
func openPostgres(t *testing.T, opts ...sqlfacts.Option) *sqlfacts.Store {
	t.Helper()
	s, err := sqlfacts.NewPostgres(context.Background(), postgresDB(t), opts...)
	if err != nil {
		t.Fatalf("NewPostgres (pgvector must be installed: ../shared/scripts/install-pgvector): %v", err)
	}
	return s
}

func TestSQLiteContract(t *testing.T) {
	t.Parallel()
	s := openSQLite(t)
	factstest.Run(t, func(*testing.T) facts.Store { return s })
}

func TestPostgresContract(t *testing.T) {
	t.Parallel()
	s := openPostgres(t)
	factstest.Run(t, func(*testing.T) facts.Store { return s })
}

// testLimits: a scope holds at most the limit, a batch over it stores
// nothing, another dimension is refused, and scopes are counted apart.
func testLimits(t *testing.T, s facts.Store) {
	ctx := context.Background()
	a := facts.Scope{Tenant: "t", User: "a"}
	b := facts.Scope{Tenant: "t", User: "b"}
	put := func(fs ...facts.Fact) error { _, err := s.Put(ctx, fs...); return err }
	if err := put(facts.Fact{Scope: a, ID: "1", Text: "one", Embedding: []float32{1, 0}},
		facts.Fact{Scope: a, ID: "2", Text: "two", Embedding: []float32{0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := put(facts.Fact{Scope: a, ID: "3", Text: "three"}, facts.Fact{Scope: a, ID: "4", Text: "four"}); !errors.Is(err, sqlfacts.ErrFull) {
		t.Fatalf("a put over the limit: err = %v, want ErrFull", err)
	}
	if got, _ := s.List(ctx, a); len(got) != 2 {
		t.Fatalf("after a refused batch the scope holds %d facts, want 2", len(got))
	}
	// Replacing a fact is no new fact; another user has a limit of their own.
	if err := put(facts.Fact{Scope: a, ID: "1", Text: "one again", Embedding: []float32{1, 1}}); err != nil {
		t.Fatalf("replacing at the limit: %v", err)
	}
	if err := put(facts.Fact{Scope: b, ID: "1", Text: "b's", Embedding: []float32{1, 0, 0}}); err != nil {
		t.Fatalf("another user's first fact: %v", err)
	}
	if err := put(facts.Fact{Scope: b, ID: "2", Text: "b's 2", Embedding: []float32{1, 0}}); !errors.Is(err, vector.ErrDimension) {
		t.Fatalf("another dimension in a scope: err = %v, want ErrDimension", err)
	}
	for _, bad := range [][]float32{{0, 0, 0}, {1, float32(nan()), 0}} {
		if err := put(facts.Fact{Scope: b, ID: "3", Text: "bad", Embedding: bad}); !errors.Is(err, vector.ErrInvalidVector) {
			t.Fatalf("Put(%v): err = %v, want ErrInvalidVector", bad, err)
		}
	}
	// A query of another dimension finds nothing rather than failing.
	if hits, err := s.Search(ctx, b, []float32{1, 0}, 5); err != nil || len(hits) != 0 {
		t.Fatalf("Search of another dimension = %v, %v", hits, err)
	}
}

func nan() float64 { var z float64; return z / z }

func TestSQLiteLimits(t *testing.T) {
	t.Parallel()
	testLimits(t, openSQLite(t, sqlfacts.WithMaxFacts(2)))
}

func TestPostgresLimits(t *testing.T) {
	t.Parallel()
	testLimits(t, openPostgres(t, sqlfacts.WithMaxFacts(2)))
}

// TestReopen: a second store over the same database (another process, or
// a restart) finds the table made and the facts kept.
func TestReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	open := func() (*sql.DB, *sqlfacts.Store) {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "f.db"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := sqlfacts.NewSQLite(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		return db, s
	}
	db, s := open()
	sc := facts.Scope{Tenant: "t", User: "u"}
	if _, err := s.Put(ctx, facts.Fact{Scope: sc, ID: "x", Text: "Lives in Berlin.", Embedding: []float32{0.5, 0.25}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, s = open()
	defer db.Close()
	hits, err := s.Search(ctx, sc, []float32{0.5, 0.25}, 1)
	if err != nil || len(hits) != 1 || hits[0].Fact.Text != "Lives in Berlin." || hits[0].Score < 0.999 {
		t.Fatalf("after reopening: %+v, %v", hits, err)
	}
}
