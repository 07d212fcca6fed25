package pgstore_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weftlabs/weft/rag/pgstore"
)

// FuzzTSQuery checks that any user query becomes a tsquery of quoted
// literal terms, and, with WEFT_TEST_POSTGRES_URL set, that PostgreSQL
// parses it.
func FuzzTSQuery(f *testing.F) {
	for _, s := range []string{"", "hello world", "東京都の人口", `'x' | !y & <-> :*`, "a\\'b", "don't stop", "\xff\x00ü", "서울 수도", "x200 v2 3.5"} {
		f.Add(s)
	}
	var conn *pgx.Conn
	if dsn := os.Getenv("WEFT_TEST_POSTGRES_URL"); dsn != "" {
		c, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			f.Fatal(err)
		}
		conn = c
		f.Cleanup(func() { conn.Close(context.Background()) })
	}
	f.Fuzz(func(t *testing.T, query string) {
		q := pgstore.TSQuery(query)
		if q == "" {
			return
		}
		for _, term := range strings.Split(q, " | ") {
			inner, opened := strings.CutPrefix(term, "'")
			inner, closed := strings.CutSuffix(inner, "'")
			if !opened || !closed || inner == "" || strings.ContainsAny(inner, `'\ |&!():*<>`) {
				t.Fatalf("TSQuery(%q) = %q: term %q is not a plain quoted literal", query, q, term)
			}
		}
		if conn != nil {
			var out string
			if err := conn.QueryRow(context.Background(), `SELECT to_tsquery('simple', $1)::text`, q).Scan(&out); err != nil {
				t.Fatalf("to_tsquery(%q) from %q: %v", q, query, err)
			}
		}
	})
}
