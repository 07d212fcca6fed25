package sqlstore

import (
	"context"
	"fmt"
	"time"
)

// migration is one versioned step of the schema. Steps are applied in order,
// once, each recorded in memory_schema_migrations. The same steps serve both
// dialects: the schema uses only types and statements SQLite and PostgreSQL
// share.
type migration struct {
	version int
	name    string
	stmts   []string
}

var migrations = []migration{
	{1, "sessions, messages and locks", []string{
		`CREATE TABLE memory_sessions (
			tenant     TEXT   NOT NULL,
			agent      TEXT   NOT NULL,
			session    TEXT   NOT NULL,
			last_seq   BIGINT NOT NULL,
			msg_count  BIGINT NOT NULL,
			created_at BIGINT NOT NULL,
			updated_at BIGINT NOT NULL,
			PRIMARY KEY (tenant, agent, session)
		)`,
		`CREATE INDEX memory_sessions_updated ON memory_sessions (tenant, agent, updated_at)`,
		// seq 0 holds the conversation's system record; the log is seq ≥ 1.
		// Messages are JSON in TEXT, not JSONB: JSONB rejects \u0000.
		`CREATE TABLE memory_messages (
			tenant     TEXT    NOT NULL,
			agent      TEXT    NOT NULL,
			session    TEXT    NOT NULL,
			seq        BIGINT  NOT NULL,
			msg_id     TEXT    NOT NULL,
			tokens     BIGINT  NOT NULL,
			partial    BOOLEAN NOT NULL,
			created_at BIGINT  NOT NULL,
			message    TEXT    NOT NULL,
			PRIMARY KEY (tenant, agent, session, seq)
		)`,
		`CREATE UNIQUE INDEX memory_messages_msg_id ON memory_messages (tenant, agent, session, msg_id) WHERE seq > 0`,
		`CREATE TABLE memory_locks (
			tenant     TEXT   NOT NULL,
			agent      TEXT   NOT NULL,
			session    TEXT   NOT NULL,
			token      TEXT   NOT NULL,
			expires_at BIGINT NOT NULL,
			PRIMARY KEY (tenant, agent, session)
		)`,
	}},
}

// migrate brings the schema up to date in one transaction, so that
// concurrent processes opening the same database apply each step once.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if s.dialect == postgres {
		// Serialise migrators; SQLite's immediate transaction already does.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('weft memory migrations'))`); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS memory_schema_migrations (
		version    BIGINT NOT NULL PRIMARY KEY,
		name       TEXT   NOT NULL,
		applied_at BIGINT NOT NULL
	)`); err != nil {
		return err
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM memory_schema_migrations`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		for _, stmt := range m.stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO memory_schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
			m.version, m.name, time.Now().UnixNano()); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// rebind turns ? placeholders into PostgreSQL's $1, $2, …. The queries of
// this package hold no ? inside literals.
func rebind(q string) string {
	b := make([]byte, 0, len(q)+16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b = fmt.Appendf(b, "$%d", n)
			continue
		}
		b = append(b, q[i])
	}
	return string(b)
}
