package sqlgroup_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/weftlabs/weft/internal/sqlgroup"
)

func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "g.db")+"?_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func insert(k string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kv (k) VALUES (?)`, k)
		return err
	}
}

// TestBatchWithAFailure: writes queued behind a running transaction share
// the next one; when one of them fails (a duplicate key), it alone fails
// and the others are committed, each run again on its own.
func TestBatchWithAFailure(t *testing.T) {
	db := open(t)
	g := sqlgroup.New(db)
	ctx := context.Background()
	if err := g.Do(ctx, insert("a")); err != nil {
		t.Fatal(err)
	}
	// Hold the lead in a transaction while the next writes queue.
	entered, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := g.Do(ctx, func(ctx context.Context, tx *sql.Tx) error { close(entered); <-release; return nil }); err != nil {
			t.Error(err)
		}
	})
	<-entered
	keys := []string{"b", "a", "c"}
	errs := make([]error, len(keys))
	var queued sync.WaitGroup
	for i, k := range keys {
		queued.Add(1)
		wg.Go(func() { queued.Done(); errs[i] = g.Do(ctx, insert(k)) })
	}
	queued.Wait()
	close(release)
	wg.Wait()
	for i, k := range keys {
		if (k == "a") != (errs[i] != nil) {
			t.Errorf("write of %q: %v", k, errs[i])
		}
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM kv`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d rows, %v; want a, b and c", n, err)
	}
}

// TestAsyncAndWait: an asynchronous write reports its outcome; Wait
// returns once nothing is queued or running.
func TestAsyncAndWait(t *testing.T) {
	db := open(t)
	g := sqlgroup.New(db)
	var got error = errors.New("not called")
	g.Async(insert("x"), func(err error) { got = err })
	g.Wait()
	if got != nil {
		t.Fatalf("async write: %v", got)
	}
}
