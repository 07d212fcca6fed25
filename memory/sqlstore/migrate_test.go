package sqlstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

// A database made by the first three migrations (rowid tables, JSON
// messages) opens with its conversations and leases intact after the
// fourth rebuilt its tables on SQLite.
func TestSQLiteMigratesRowidTables(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	old := &Store{db: db, dialect: sqlite}
	saved := migrations
	migrations = migrations[:3]
	err = old.migrate(ctx)
	migrations = saved
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO memory_sessions VALUES ('t', 'a', 's', 2, 2, 1, 1)`,
		`INSERT INTO memory_messages (tenant, agent, session, seq, msg_id, tokens, partial, created_at, message) VALUES
			('t', 'a', 's', 1, 'q', 3, 0, 1, '{"role":"user","parts":[{"kind":"text","text":"hello"}]}'),
			('t', 'a', 's', 2, 'r', 4, 1, 2, '{"role":"assistant","parts":[{"kind":"text","text":"hi there"}]}')`,
		`INSERT INTO memory_locks VALUES ('t', 'a', 'other', 'owner/x', 9223372036854775807)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := memory.Key{Tenant: "t", Agent: "a", Session: "s"}
	recs, err := s.Load(ctx, key, memory.Window{})
	if err != nil || len(recs) != 2 || recs[0].Message.Text() != "hello" || recs[1].Message.Text() != "hi there" || !recs[1].Partial || recs[1].ID != "r" {
		t.Fatalf("Load after migration = %+v, %v", recs, err)
	}
	// Appends go on from the stored sequence, ids still deduplicate.
	got, err := s.Append(ctx, key, memory.Record{ID: "q", Message: llm.UserMessage("hello"), Tokens: 3},
		memory.Record{ID: "n", Message: llm.UserMessage("next"), Tokens: 2})
	if err != nil || got[0].Seq != 1 || got[1].Seq != 3 {
		t.Fatalf("Append after migration = %+v, %v", got, err)
	}
	// The lease survived: the other session stays locked.
	lctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(lctx, memory.Key{Tenant: "t", Agent: "a", Session: "other"}, memory.Lease{Owner: "me"}); err == nil {
		t.Fatal("a lease held before the migration was lost")
	}
	var ddl string
	if err := s.db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE name = 'memory_messages'`).Scan(&ddl); err != nil || !strings.Contains(ddl, "WITHOUT ROWID") {
		t.Fatalf("memory_messages is %q, %v", ddl, err)
	}
}
