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
		if _, err := tl.Call(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "readonly") && !strings.Contains(err.Error(), "read-only") && !strings.Contains(err.Error(), "not authorized") {
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

// The authorizer refuses what the statement check cannot see: a quoted
// function name (SQLite calls "load_extension"(…) like load_extension(…)).
func TestSQLiteAuthorizer(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.db")
	rw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.Exec("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`SELECT "load_extension"('/nonexistent')`, "SELECT `readfile`('/etc/hostname')", `SELECT [writefile]('/tmp/x', 'y')`} {
		tl, err := New(Config{Name: "q", Driver: SQLite, DSN: path, Query: q})
		if err != nil {
			t.Logf("%s: refused by the check: %v", q, err)
			continue
		}
		_, err = tl.Call(context.Background(), nil)
		tl.Close()
		// readfile and writefile are not compiled into this SQLite: they
		// fail as unknown; load_extension is.
		if err == nil || !strings.Contains(err.Error(), "not authorized") && !strings.Contains(err.Error(), "no such function") {
			t.Errorf("%s: %v", q, err)
		}
	}
	ok, err := New(Config{Name: "q", Driver: SQLite, DSN: path, Query: `WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM c WHERE n < 3) SELECT count(*) AS n, lower('A') AS l, max(x) AS m FROM c, t`})
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	if res, err := ok.Call(context.Background(), nil); err != nil || res.Content != `{"rows":[{"n":3,"l":"a","m":1}],"truncated":false}` {
		t.Fatalf("a plain query: %q, %v", res.Content, err)
	}
}

// FuzzCalls: a quoted call appended to an accepted query is always found,
// so that no literal or comment the scanner misread can hide one from the
// pg_proc resolution.
func FuzzCalls(f *testing.F) {
	for _, s := range []string{"SELECT 1", "SELECT 'a''b' -- c\n", "SELECT $$x$$", "SELECT E'\\''", "SELECT /* /* */ */ 1",
		"WITH x AS (SELECT 1) SELECT * FROM x", "SELECT \"a\"\"b\"", "SELECT x::numeric(3", "SELECT count(*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		s, err := check(Postgres, q+"\n, \"evil\"(1)")
		if err != nil {
			return
		}
		for _, c := range s.calls() {
			if c.name == "evil" {
				return
			}
		}
		t.Fatalf("%q: the appended call was not found", q)
	})
}
