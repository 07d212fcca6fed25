// Package pgtest gives a test a schema of its own on the test PostgreSQL
// server (WEFT_TEST_POSTGRES_URL, set by .ci/run), so that tests of
// different packages, and concurrent runs, never share tables.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// DSN returns the test server's DSN with its search_path set to a fresh
// schema named prefix_<random>, dropped when the test ends. The test is
// skipped when WEFT_TEST_POSTGRES_URL is not set.
func DSN(t testing.TB, prefix string) string {
	t.Helper()
	base := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL is not set")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := prefix + "_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}
