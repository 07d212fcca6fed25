package meta

import (
	"context"
	"database/sql"
	"sync"
)

// creates group-commits new sessions on SQLite: a turn on a new
// conversation must have its session row stored before it answers, and at
// hundreds of new conversations a second one commit each is most of the
// metadata store's work. Callers queue their row; the first becomes the
// writer and inserts every queued row in one transaction; the others wait
// for theirs. A failed batch is retried row by row, so that each caller
// gets its own error (a duplicate id fails only its own insert).
type creates struct {
	mu      sync.Mutex
	pending []*createReq
	writing bool
}

type createReq struct {
	ss   Session
	done chan error
}

// create stores ss through the group.
func (g *creates) create(ctx context.Context, s *SQL, ss Session) error {
	req := &createReq{ss: ss, done: make(chan error, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, req)
	lead := !g.writing
	g.writing = true
	g.mu.Unlock()
	if lead {
		g.write(s)
	}
	return <-req.done
}

// write writes batches until none is pending. The leader writes the batch
// holding its own row, then hands the rest to a goroutine, so that no
// caller waits for more than the batch after its own.
func (g *creates) write(s *SQL) {
	g.mu.Lock()
	batch := g.pending
	g.pending = nil
	if len(batch) == 0 {
		g.writing = false
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	// Detached from the callers' contexts: one caller going away must not
	// fail the others' rows.
	ctx := context.Background()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		insert := s.txExec(ctx, tx, qCreateSession)
		for _, r := range batch {
			if err := insert(sessionArgs(r.ss)...); err != nil {
				return err
			}
		}
		return nil
	})
	for _, r := range batch {
		if err != nil && len(batch) > 1 {
			_, e := s.exec(ctx, qCreateSession, sessionArgs(r.ss)...)
			r.done <- wrap("create session", e)
			continue
		}
		r.done <- wrap("create session", err)
	}
	go g.write(s)
}

func sessionArgs(ss Session) []any {
	return []any{ss.TenantID, ss.ID, ss.AgentID, ss.ParentID, micros(ss.CreatedAt), micros(ss.UpdatedAt)}
}
