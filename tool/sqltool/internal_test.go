package sqltool

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLiteQueryOnly proves the second line of defence: a write that got
// past the classifier fails on the tool's connections.
func TestSQLiteQueryOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.db")
	rw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	// WAL, as the platform's own databases use, with the writer open.
	if _, err := rw.Exec("PRAGMA journal_mode=WAL; CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	tl, err := New(Config{Name: "q", Driver: SQLite, DSN: path, Query: "SELECT x FROM t"})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if res, err := tl.Call(context.Background(), nil); err != nil || res.Content != `{"rows":[],"truncated":false}` {
		t.Fatalf("read of a WAL database: %q, %v", res.Content, err)
	}
	for _, stmt := range []string{"INSERT INTO t VALUES (1)", "CREATE TABLE u (y)", "PRAGMA query_only = 0; INSERT INTO t VALUES (2)", "SELECT x FROM t; INSERT INTO t VALUES (3)"} {
		tl.cfg.Query = stmt // bypass the classifier
		if _, err := tl.Call(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "readonly") && !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: %v", stmt, err)
		} else {
			t.Logf("%s: %v", stmt, err)
		}
	}
	var n int
	if err := rw.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 0 {
		t.Errorf("rows written: %d, %v", n, err)
	}
}
