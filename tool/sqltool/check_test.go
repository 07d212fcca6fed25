package sqltool_test

import (
	"strings"
	"testing"

	"github.com/weftlabs/weft/tool/sqltool"
)

const (
	pg   = sqltool.Postgres
	lite = sqltool.SQLite
)

func TestCheckQueryAccepts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ driver, q string }{
		{pg, "SELECT 1"},
		{pg, "select * from users where id = $1;"},
		{pg, "  -- leading comment\n SELECT name FROM t /* trailing */ ; -- done"},
		{pg, "WITH x AS (SELECT 1 AS a) SELECT a FROM x"},
		{pg, "VALUES (1), (2)"},
		{pg, "(SELECT 1) UNION (SELECT 2)"},
		{pg, "SELECT 'DELETE FROM users; DROP TABLE x' AS s"},
		{pg, `SELECT "update", "delete" FROM t`},
		{pg, "SELECT $$ INSERT INTO t $$, $tag$ ; DROP $tag$"},
		{pg, `SELECT E'it\'s; DELETE' AS s`},
		{pg, `SELECT E'\'; DELETE FROM t; --'`}, // one escape string
		{pg, "SELECT 1 /* nested /* DELETE */ still comment; DROP */"},
		{pg, "SELECT doc ? 'key', x::text FROM t WHERE a = $2 OR b = $1"},
		{pg, "SELECT pg_sleep(0.01)"},
		{pg, "SELECT replace(name, 'a', 'b') FROM t"},
		{lite, "SELECT * FROM t WHERE a = ? AND b = ?"},
		{lite, "SELECT [order], `group` FROM t WHERE x = ?2 OR y = ?1"},
		{lite, "SELECT 'it''s; DROP TABLE t' FROM t"},
		{lite, "SELECT X'00ff'"},
		{lite, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 5) SELECT x FROM c"},
	} {
		if err := sqltool.CheckQuery(c.driver, c.q); err != nil {
			t.Errorf("%s %q: %v", c.driver, c.q, err)
		}
	}
}

func TestCheckQueryRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ driver, q, want string }{
		{pg, "", "empty"},
		{pg, "-- only a comment", "empty"},
		{pg, "DELETE FROM users", "starts with DELETE"},
		{pg, "INSERT INTO t VALUES (1)", "starts with INSERT"},
		{pg, "UPDATE t SET a = 1", "starts with UPDATE"},
		{pg, "EXPLAIN ANALYZE DELETE FROM t", "starts with EXPLAIN"},
		{pg, "SELECT 1; DELETE FROM users", "more than one statement"},
		{pg, "SELECT 1;;", "more than one statement"},
		{pg, "SELECT 1; -- ok\n SELECT 2", "more than one statement"},
		{pg, "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "DELETE"},
		{pg, "WITH u AS (UPDATE t SET a = 1 RETURNING *) SELECT 1", "UPDATE"},
		{pg, "WITH m AS (MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE) SELECT 1", "MERGE"},
		{pg, "WITH i AS (insert into t values (1) returning 1) select 1", "INSERT"},
		{pg, "SELECT * INTO new_table FROM t", "INTO"},
		{pg, "SELECT * FROM t FOR UPDATE", "UPDATE"},
		{pg, "SELECT * FROM t FOR NO KEY UPDATE", "UPDATE"},
		{pg, "SELECT * FROM t FOR SHARE", "SHARE"},
		{pg, "SELECT * FROM t FOR KEY SHARE", "SHARE"},
		{pg, "SELECT set_config('statement_timeout', '0', true)", "set_config"},
		{pg, "SELECT nextval('s')", "nextval"},
		{pg, "SELECT lo_import('/etc/passwd')", "lo_import"},
		{pg, "SELECT pg_read_file('/etc/passwd')", "pg_read_file"},
		{pg, "SELECT * FROM dblink('host=x', 'DELETE FROM t') AS r(a int)", "dblink"},
		{pg, "SELECT query_to_xml('DELETE FROM t', true, true, '')", "query_to_xml"},
		{pg, "SELECT pg_advisory_lock(1)", "pg_advisory_lock"},
		{pg, "SELECT pg_terminate_backend(1)", "pg_terminate_backend"},
		{pg, "SELECT 'unterminated", "unterminated"},
		{pg, "SELECT 1 /* unterminated", "unterminated"},
		{pg, "SELECT $a$ unterminated", "unterminated"},
		{pg, "SELECT 1 /* /* nested */ ; DELETE FROM t", "unterminated"},
		{pg, `SELECT 'a\'; DELETE FROM t; --'`, "backslash"},
		{pg, "SELECT $1 FROM t WHERE a = $x", "stray"},
		{pg, "SELECT 1\x00", "NUL"},
		{pg, "/* SELECT */ DROP TABLE t", "starts with DROP"},
		{pg, "SELECT 1 /**/; DROP TABLE t", "more than one statement"},
		{pg, "COPY t TO PROGRAM 'rm -rf /'", "starts with COPY"},
		{pg, "SELECT 1 FROM t; COMMIT; DELETE FROM t", "more than one statement"},
		{lite, "SELECT load_extension('evil.so')", "load_extension"},
		{lite, "SELECT writefile('/tmp/x', 'y')", "writefile"},
		{lite, "ATTACH DATABASE '/tmp/x' AS x", "starts with ATTACH"},
		{lite, "PRAGMA query_only = 0", "starts with PRAGMA"},
		{lite, "SELECT 1; PRAGMA query_only = 0", "more than one statement"},
		{lite, "REPLACE INTO t VALUES (1)", "starts with REPLACE"},
		{lite, "SELECT * FROM t WHERE a = :name", "named parameters"},
		{lite, "SELECT * FROM t WHERE a = ? AND b = ?1", "mixing"},
		{lite, "SELECT 1 /* /* */ DELETE FROM t */", "DELETE"},
		{lite, "SELECT [unterminated", "unterminated"},
		{"mysql", "SELECT 1", "driver"},
	} {
		err := sqltool.CheckQuery(c.driver, c.q)
		if err == nil {
			t.Errorf("%s %q: accepted", c.driver, c.q)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %q does not mention %q", c.driver, c.q, err, c.want)
		}
	}
}

// FuzzCheckQuery checks the classifier never panics and that what it
// accepts has no forbidden statement hidden where a database would see it:
// appending a second statement after an accepted query is always refused.
func FuzzCheckQuery(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "SELECT 'a''b' -- c\n", "SELECT $$x$$", "SELECT E'\\''", "SELECT /* /* */ */ 1",
		"WITH x AS (SELECT 1) SELECT * FROM x", "SELECT [a] FROM `b`", "SELECT ?1", "SELECT $1",
		"SELECT U&'d\\0061t'", "SELECT \"a\"\"b\"",
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, q string, usePG bool) {
		driver := lite
		if usePG {
			driver = pg
		}
		if sqltool.CheckQuery(driver, q) != nil {
			return
		}
		// A statement appended on a new line cannot hide inside a
		// literal or comment that the classifier thought was closed.
		for _, tail := range []string{"\n; DELETE FROM t", "\n DELETE FROM t"} {
			if err := sqltool.CheckQuery(driver, q+tail); err == nil {
				// Only a still-open line comment could hide the tail,
				// but a newline ends it: this is a classifier bug.
				t.Fatalf("%s: %q accepted with %q appended", driver, q, tail)
			}
		}
	})
}
