package sqltool_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite"

	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/sqltool"
)

// backend is a database with the test table "items", reached under the
// name items (SQLite) or <schema>.items (PostgreSQL).
type backend struct {
	driver string
	dsn    string
	table  string
	ph     func(n int) string // the n-th placeholder
	pool   *pgxpool.Pool
	exec   func(t *testing.T, stmt string)
}

const fixture = `
CREATE TABLE %[1]s (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL, data BYTEA, created TIMESTAMP);
INSERT INTO %[1]s VALUES (1, 'apple', 1.5, NULL, NULL), (2, 'pear', 2.25, NULL, NULL), (3, 'fig', NULL, NULL, NULL),
 (4, 'kiwi', 4, NULL, NULL), (5, 'lime', 5, NULL, NULL), (6, 'date', 6, NULL, NULL), (7, 'plum', 7, NULL, NULL)`

func sqliteBackend(t *testing.T) *backend {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b := &backend{driver: sqltool.SQLite, dsn: path, table: "items", ph: func(int) string { return "?" }}
	b.exec = func(t *testing.T, stmt string) {
		t.Helper()
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	b.exec(t, strings.ReplaceAll(fmt.Sprintf(fixture, b.table), "BYTEA", "BLOB"))
	b.exec(t, `UPDATE items SET data = x'00ff10', created = '2024-05-06T07:08:09Z' WHERE id = 1`)
	return b
}

func postgresBackend(t *testing.T) *backend {
	t.Helper()
	url := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL is not set")
	}
	var r [6]byte
	rand.Read(r[:])
	schema := "weft_sqltool_" + hex.EncodeToString(r[:])
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{driver: sqltool.Postgres, dsn: url, table: schema + ".items", pool: pool,
		ph: func(n int) string { return fmt.Sprintf("$%d", n) }}
	b.exec = func(t *testing.T, stmt string) {
		t.Helper()
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	b.exec(t, "CREATE SCHEMA "+schema)
	t.Cleanup(func() {
		pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		pool.Close()
	})
	b.exec(t, fmt.Sprintf(fixture, b.table))
	b.exec(t, fmt.Sprintf(`UPDATE %s SET data = '\x00ff10', created = '2024-05-06 07:08:09' WHERE id = 1`, b.table))
	return b
}

func (b *backend) tool(t *testing.T, cfg sqltool.Config) *sqltool.Tool {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "q"
	}
	cfg.Driver, cfg.DSN = b.driver, b.dsn
	tl, err := sqltool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	return tl
}

type result struct {
	Rows      []map[string]any `json:"rows"`
	Truncated bool             `json:"truncated"`
}

func run(t *testing.T, tl tool.Tool, args string) (result, string) {
	t.Helper()
	res, err := tl.Call(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("Call(%s): %v", args, err)
	}
	var r result
	if err := json.Unmarshal([]byte(res.Content), &r); err != nil {
		t.Fatalf("result %s: %v", res.Content, err)
	}
	return r, res.Content
}

func TestSQLite(t *testing.T) {
	t.Parallel()
	testBackend(t, sqliteBackend(t))
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	testBackend(t, postgresBackend(t))
}

func testBackend(t *testing.T, b *backend) {
	t.Run("rows", func(t *testing.T) {
		tl := b.tool(t, sqltool.Config{
			Query: fmt.Sprintf("SELECT id, name, price, data, created, id AS name FROM %s WHERE id <= %s ORDER BY id", b.table, b.ph(1)),
			Bind:  []string{"max_id"},
		})
		_, content := run(t, tl, `{"max_id":2}`)
		want := `{"rows":[{"id":1,"name":"apple","price":1.5,"data":"AP8Q","created":"2024-05-06T07:08:09Z","name_2":1},` +
			`{"id":2,"name":"pear","price":2.25,"data":null,"created":null,"name_2":2}],"truncated":false}`
		if content != want {
			t.Errorf("content =\n%s\nwant\n%s", content, want)
		}
	})

	t.Run("injection is inert", func(t *testing.T) {
		tl := b.tool(t, sqltool.Config{
			Query:      fmt.Sprintf("SELECT id FROM %s WHERE name = %s", b.table, b.ph(1)),
			Bind:       []string{"name"},
			Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		})
		for _, evil := range []string{
			"x' OR '1'='1", "apple'; DROP TABLE items; --", `apple" OR 1=1 --`, "' UNION SELECT 1 --", "apple\x00",
		} {
			args, _ := json.Marshal(map[string]string{"name": evil})
			res, err := tl.Call(context.Background(), args)
			if err != nil {
				// PostgreSQL refuses NUL bytes in text: an error, not an effect.
				if strings.Contains(evil, "\x00") {
					continue
				}
				t.Fatalf("%q: %v", evil, err)
			}
			if res.Content != `{"rows":[],"truncated":false}` {
				t.Errorf("%q matched rows: %s", evil, res.Content)
			}
		}
		count := b.tool(t, sqltool.Config{Query: "SELECT count(*) AS n FROM " + b.table})
		if r, _ := run(t, count, ``); r.Rows[0]["n"] != float64(7) {
			t.Errorf("table changed: %v", r.Rows)
		}
	})

	t.Run("row cap", func(t *testing.T) {
		tl := b.tool(t, sqltool.Config{Query: "SELECT id FROM " + b.table + " ORDER BY id", MaxRows: 3})
		r, _ := run(t, tl, `{}`)
		if len(r.Rows) != 3 || !r.Truncated || r.Rows[2]["id"] != float64(3) {
			t.Errorf("capped = %+v", r)
		}
		exact := b.tool(t, sqltool.Config{Query: "SELECT id FROM " + b.table + " WHERE id <= 3", MaxRows: 3})
		if r, _ := run(t, exact, ``); len(r.Rows) != 3 || r.Truncated {
			t.Errorf("exactly MaxRows = %+v", r)
		}
	})

	t.Run("arguments", func(t *testing.T) {
		tl := b.tool(t, sqltool.Config{
			Query:      fmt.Sprintf("SELECT id FROM %s WHERE id = %s AND name = %s", b.table, b.ph(1), b.ph(2)),
			Bind:       []string{"id", "name"},
			Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}}}`),
		})
		if r, _ := run(t, tl, `{"name":"fig","id":3}`); len(r.Rows) != 1 {
			t.Errorf("bound call = %+v", r)
		}
		for _, c := range []struct{ args, field, msg string }{
			{`{"id":3}`, "name", "missing"},
			{`{"id":3,"name":"fig","extra":1}`, "extra", "unexpected"},
			{`{"id":"3","name":"fig"}`, "id", "expected an integer, got a string"},
			{`{"id":3.5,"name":"fig"}`, "id", "expected an integer"},
			{`{"id":3,"name":["fig"]}`, "name", "expected a string, got an array"},
			{`{"id":3,"name":null}`, "name", "got null"},
			{`[3]`, "", "object"},
		} {
			_, err := tl.Call(context.Background(), json.RawMessage(c.args))
			var ae *tool.ArgumentError
			if !errors.As(err, &ae) || ae.Field != c.field || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("%s: %v, want an ArgumentError on %q mentioning %q", c.args, err, c.field, c.msg)
			}
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		tl := b.tool(t, sqltool.Config{Query: fmt.Sprintf("SELECT name FROM %s WHERE id = %s", b.table, b.ph(1)), Bind: []string{"id"}})
		var wg sync.WaitGroup
		for i := 1; i <= 7; i++ {
			wg.Go(func() {
				res, err := tl.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"id":%d}`, i)))
				if err != nil || !strings.HasPrefix(res.Content, `{"rows":[{"name":`) {
					t.Errorf("call %d: %s, %v", i, res.Content, err)
				}
			})
		}
		wg.Wait()
	})

	t.Run("refused at construction", func(t *testing.T) {
		for _, cfg := range []sqltool.Config{
			{Name: "q", Query: "DELETE FROM " + b.table},
			{Name: "q", Query: "SELECT 1; DELETE FROM " + b.table},
			{Name: "q", Query: "SELECT * FROM " + b.table + " WHERE id = " + b.ph(1)},                                                            // bind missing
			{Name: "q", Query: "SELECT 1", Bind: []string{"x"}},                                                                                  // too many
			{Name: "q", Query: "SELECT " + b.ph(1), Bind: []string{"x"}, Parameters: json.RawMessage(`{"type":"object","properties":{"y":{}}}`)}, // undeclared
			{Name: "bad name", Query: "SELECT 1"},
		} {
			cfg.Driver, cfg.DSN = b.driver, b.dsn
			if tl, err := sqltool.New(cfg); err == nil {
				tl.Close()
				t.Errorf("New(%q, bind %v) succeeded", cfg.Query, cfg.Bind)
			}
		}
	})
}

func TestSQLiteTimeout(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	tl := b.tool(t, sqltool.Config{
		Query:   "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c",
		Timeout: 100 * time.Millisecond,
	})
	_, err := tl.Call(context.Background(), nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not finish within 100ms") {
		t.Errorf("endless query: %v", err)
	}
}

func TestPostgresReadOnly(t *testing.T) {
	t.Parallel()
	b := postgresBackend(t)
	// A function the classifier cannot see into writes: the read-only
	// transaction stops it.
	fn := strings.TrimSuffix(b.table, ".items") + ".add_item"
	b.exec(t, fmt.Sprintf(`CREATE FUNCTION %s() RETURNS int LANGUAGE sql AS $$ INSERT INTO %s (id, name) VALUES (99, 'evil') RETURNING id $$`, fn, b.table))
	tl := b.tool(t, sqltool.Config{Query: "SELECT " + fn + "() AS id", AllowFunctions: []string{fn}})
	_, err := tl.Call(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("write through a function: %v", err)
	}
	count := b.tool(t, sqltool.Config{Query: "SELECT count(*) AS n FROM " + b.table})
	if r, _ := run(t, count, ``); r.Rows[0]["n"] != float64(7) {
		t.Errorf("the write went through: %v", r.Rows)
	}

	slow := b.tool(t, sqltool.Config{Query: "SELECT pg_sleep(10)", Timeout: 100 * time.Millisecond, AllowFunctions: []string{"pg_sleep"}})
	if _, err := slow.Call(context.Background(), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow query: %v", err)
	}

	// Arrays bind as PostgreSQL arrays.
	any := b.tool(t, sqltool.Config{Query: "SELECT name FROM " + b.table + " WHERE id = ANY($1) ORDER BY id", Bind: []string{"ids"}})
	if _, content := run(t, any, `{"ids":[2,3]}`); content != `{"rows":[{"name":"pear"},{"name":"fig"}],"truncated":false}` {
		t.Errorf("ANY($1) = %s", content)
	}

	// Types without a plain JSON form.
	types := b.tool(t, sqltool.Config{Query: `SELECT 1.50::numeric AS n, '6f1c9d0e-8a4b-4b8e-9d2a-0c6a1c1e2f3a'::uuid AS u, '{"a":[1]}'::jsonb AS j, '10.0.0.0/8'::cidr AS c, DATE '2024-02-03' AS d, 'NaN'::float8 AS f`})
	if _, content := run(t, types, ``); content != `{"rows":[{"n":1.50,"u":"6f1c9d0e-8a4b-4b8e-9d2a-0c6a1c1e2f3a","j":{"a":[1]},"c":"10.0.0.0/8","d":"2024-02-03T00:00:00Z","f":"NaN"}],"truncated":false}` {
		t.Errorf("types = %s", content)
	}
}

func TestDSNFromEnv(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	env := map[string]string{"ITEMS_DB": b.dsn}
	getenv := sqltool.WithGetenv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	tl, err := sqltool.New(sqltool.Config{Name: "q", Driver: sqltool.SQLite, DSNEnv: "ITEMS_DB", Query: "SELECT count(*) AS n FROM items"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if tl.Config().DSN != "" {
		t.Error("Config keeps the DSN")
	}
	if r, _ := run(t, tl, ``); r.Rows[0]["n"] != float64(7) {
		t.Errorf("rows = %v", r.Rows)
	}
	if _, err := sqltool.New(sqltool.Config{Name: "q", Driver: sqltool.SQLite, DSNEnv: "NOPE", Query: "SELECT 1"}, getenv); err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Errorf("missing DSN variable: %v", err)
	}
}

// Side effects are default-denied on PostgreSQL: every function the query
// calls must resolve in pg_proc to an immutable or stable one (or be
// allowed). These bypassed the block list (quoted names) before.
func TestPostgresSideEffectsRefused(t *testing.T) {
	t.Parallel()
	b := postgresBackend(t)
	schema := strings.TrimSuffix(b.table, ".items")
	b.exec(t, fmt.Sprintf(`CREATE FUNCTION %s.add_item() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$`, schema))
	for _, q := range []string{
		`SELECT "pg_read_file"('/etc/hostname')`,
		`SELECT "pg_terminate_backend"(pg_backend_pid())`,
		`SELECT "pg_advisory_lock"(42)`,
		`SELECT "pg_catalog"."pg_read_file"('/etc/hostname')`,
		`SELECT pg_catalog . "set_config"('a.b', 'c', false)`,
		`SELECT "nextval"('x')`,
		`SELECT "pg_sleep"(0)`,
		`SELECT random()`,
		`SELECT "PG_READ_FILE"('/etc/hostname')`,
		`SELECT "pg_read_file" /* c */ ('/etc/hostname')`,
		`SELECT "dblink_exec"('x')`,
		`SELECT ` + schema + `."add_item"()`,
		`SELECT "ADD_ITEM"()`,
		`SELECT no_such_function(1)`,
		`SELECT x FROM "pg_ls_dir"('.') AS x`,
		`SELECT count(*) FROM ` + b.table + ` WHERE "pg_advisory_lock"(id) IS NOT NULL`,
	} {
		tl, err := sqltool.New(sqltool.Config{Name: "q", Driver: b.driver, DSN: b.dsn, Query: q})
		if err != nil {
			t.Logf("%s: refused by the check: %v", q, err)
			continue
		}
		_, err = tl.Call(context.Background(), nil)
		tl.Close()
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: %v", q, err)
		}
	}
	// No advisory lock is left held.
	var locks int
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 42`).Scan(&locks); err != nil || locks != 0 {
		t.Errorf("advisory locks held: %d, %v", locks, err)
	}
	if _, err := sqltool.New(sqltool.Config{Name: "q", Driver: b.driver, DSN: b.dsn, Query: `SELECT U&"\0070g_read_file"('/etc/hostname')`}); err == nil {
		t.Error("a Unicode-escaped identifier was accepted")
	}
	// What reads passes: immutable and stable functions, quoted or
	// qualified, casts with type modifiers, syntax that looks like calls.
	ok := b.tool(t, sqltool.Config{Query: `WITH v(a) AS (SELECT 1) SELECT "lower"('A') AS l, pg_catalog.upper('b') AS u, now() IS NOT NULL AS n,
		coalesce(NULL, 2)::numeric(10, 2) AS c, substring('abc' FROM 2 FOR 1) AS s, extract(year FROM DATE '2024-01-02') AS y,
		count(*) AS k, CAST(1 AS varchar(3)) AS t FROM v, generate_series(1, 2) AS g(i) WHERE g.i IN (1, 2) AND EXISTS (SELECT 1)`})
	if _, content := run(t, ok, ``); content != `{"rows":[{"l":"a","u":"B","n":true,"c":2.00,"s":"b","y":2024,"k":2,"t":"1"}],"truncated":false}` {
		t.Errorf("read-only query = %s", content)
	}
	allowed := b.tool(t, sqltool.Config{Query: `SELECT random() < 2 AS r`, AllowFunctions: []string{"random"}})
	if _, content := run(t, allowed, ``); content != `{"rows":[{"r":true}],"truncated":false}` {
		t.Errorf("allowed volatile function = %s", content)
	}
	// An entry matches the call as written: allowing the bare name
	// add_item does not allow a schema-qualified call of it.
	other := b.tool(t, sqltool.Config{Query: `SELECT ` + schema + `.add_item() AS r`, AllowFunctions: []string{"add_item"}})
	if _, err := other.Call(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a qualified call of a bare allowed name: %v", err)
	}
}
