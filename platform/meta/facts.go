package meta

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/memory/facts/sqlfacts"
)

// FactStore returns the end users' long-term memory (package sqlfacts) in
// the metadata database, made on first use: on SQLite beside the other
// tables, on PostgreSQL with pgvector, without which it fails with an
// error matching sqlfacts.ErrNoPgvector (and is tried again on the next
// call).
func (s *SQL) FactStore(ctx context.Context) (facts.Store, error) {
	s.factsMu.Lock()
	defer s.factsMu.Unlock()
	if s.facts != nil {
		return s.facts, nil
	}
	var (
		fs  *sqlfacts.Store
		err error
	)
	if s.d.name == "postgres" {
		fs, err = sqlfacts.NewPostgres(ctx, s.db)
	} else {
		fs, err = sqlfacts.NewSQLite(ctx, s.db)
	}
	if err != nil {
		return nil, fmt.Errorf("meta: long-term memory: %w", err)
	}
	s.facts = fs
	return fs, nil
}
