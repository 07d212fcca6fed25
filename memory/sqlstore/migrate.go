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
	version  int
	name     string
	stmts    []string
	postgres []string // run after stmts, on PostgreSQL only
	sqlite   []string // run after stmts, on SQLite only
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
	}, nil, nil},
	{2, "append in one round trip", []string{
		// The hash of a system record's text: an identical one is a no-op.
		`ALTER TABLE memory_messages ADD COLUMN text_hash TEXT NOT NULL DEFAULT ''`,
	}, []string{appendFunction}, nil},
	{3, "covering index for windows", []string{
		`CREATE INDEX memory_messages_window ON memory_messages (tenant, agent, session, seq, tokens)`,
	}, nil, nil},
	// Fewer pages written per commit on SQLite: messages and leases keyed
	// by their primary key (WITHOUT ROWID) instead of a rowid table plus a
	// copy of the key in an index, and no window index (SQLite's Load walks
	// the primary key). An append then writes two b-trees instead of four,
	// a lease one instead of two. PostgreSQL keeps its tables.
	{4, "sqlite: tables keyed by their primary key", nil, nil, []string{
		`CREATE TABLE memory_messages_v4 (
			tenant     TEXT    NOT NULL,
			agent      TEXT    NOT NULL,
			session    TEXT    NOT NULL,
			seq        BIGINT  NOT NULL,
			msg_id     TEXT    NOT NULL,
			tokens     BIGINT  NOT NULL,
			partial    BOOLEAN NOT NULL,
			created_at BIGINT  NOT NULL,
			message    TEXT    NOT NULL,
			text_hash  TEXT    NOT NULL DEFAULT '',
			PRIMARY KEY (tenant, agent, session, seq)
		) WITHOUT ROWID`,
		`INSERT INTO memory_messages_v4 (tenant, agent, session, seq, msg_id, tokens, partial, created_at, message, text_hash)
			SELECT tenant, agent, session, seq, msg_id, tokens, partial, created_at, message, text_hash FROM memory_messages`,
		`DROP TABLE memory_messages`,
		`ALTER TABLE memory_messages_v4 RENAME TO memory_messages`,
		`CREATE UNIQUE INDEX memory_messages_msg_id ON memory_messages (tenant, agent, session, msg_id) WHERE seq > 0`,
		`CREATE TABLE memory_locks_v4 (
			tenant     TEXT   NOT NULL,
			agent      TEXT   NOT NULL,
			session    TEXT   NOT NULL,
			token      TEXT   NOT NULL,
			expires_at BIGINT NOT NULL,
			PRIMARY KEY (tenant, agent, session)
		) WITHOUT ROWID`,
		`INSERT INTO memory_locks_v4 SELECT tenant, agent, session, token, expires_at FROM memory_locks`,
		`DROP TABLE memory_locks`,
		`ALTER TABLE memory_locks_v4 RENAME TO memory_locks`,
	}},
	{5, "postgres: turns in one round trip each", nil, []string{beginFunction, endFunction}, nil},
	// A conversation's running summary (memory.SummaryStore): the text of
	// the records up to through_seq, folded by a model. memory_begin stays
	// for processes of the previous version during an upgrade.
	{6, "running summaries", nil, []string{
		summariesTable, beginSummaryFunction,
	}, []string{
		summariesTable + ` WITHOUT ROWID`,
	}},
}

const summariesTable = `CREATE TABLE memory_summaries (
			tenant      TEXT   NOT NULL,
			agent       TEXT   NOT NULL,
			session     TEXT   NOT NULL,
			through_seq BIGINT NOT NULL,
			tokens      BIGINT NOT NULL,
			updated_at  BIGINT NOT NULL,
			summary     TEXT   NOT NULL,
			PRIMARY KEY (tenant, agent, session)
		)`

// beginSummaryFunction is memory_begin followed by the conversation's
// summary, as one more row: r_seq -2, r_tokens its tokens, r_created its
// time, r_message its text and r_through its through_seq (0 in the rows
// of records).
const beginSummaryFunction = `CREATE FUNCTION memory_begin_summary(p_tenant text, p_agent text, p_session text, p_token text, p_expires bigint,
	p_lock_now bigint, p_max_tokens bigint, p_limit bigint, p_now bigint,
	p_kind text[], p_id text[], p_tokens bigint[], p_partial boolean[], p_created bigint[], p_message text[], p_hash text[])
RETURNS TABLE (r_seq bigint, r_id text, r_tokens bigint, r_partial boolean, r_created bigint, r_message text, r_through bigint)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY
		SELECT b.r_seq, b.r_id, b.r_tokens, b.r_partial, b.r_created, b.r_message, 0::bigint
		FROM memory_begin(p_tenant, p_agent, p_session, p_token, p_expires, p_lock_now, p_max_tokens, p_limit, p_now,
			p_kind, p_id, p_tokens, p_partial, p_created, p_message, p_hash) b;
	RETURN QUERY
		SELECT -2::bigint, ''::text, s.tokens, false, s.updated_at, s.summary, s.through_seq FROM memory_summaries s
		WHERE s.tenant = p_tenant AND s.agent = p_agent AND s.session = p_session;
END
$$`

// appendFunction is Append on PostgreSQL as one statement, hence one round
// trip instead of six (BEGIN, upsert, id lookup, insert, update, COMMIT).
// The upsert of the session row takes its lock first; every later statement
// of the function runs with a fresh READ COMMITTED snapshot, so it sees what
// appenders that held the lock before committed. It returns one row per
// input record: its Seq, and the stored record when it was already there
// (r_found).
const appendFunction = `CREATE FUNCTION memory_append(p_tenant text, p_agent text, p_session text, p_now bigint,
	p_kind text[], p_id text[], p_tokens bigint[], p_partial boolean[], p_created bigint[], p_message text[], p_hash text[])
RETURNS TABLE (r_seq bigint, r_found boolean, r_id text, r_tokens bigint, r_partial boolean, r_created bigint, r_message text)
LANGUAGE plpgsql AS $$
DECLARE
	v_last bigint;
	v_added bigint := 0;
	v_changed boolean := false;
	m memory_messages%ROWTYPE;
BEGIN
	INSERT INTO memory_sessions AS s (tenant, agent, session, last_seq, msg_count, created_at, updated_at)
	VALUES (p_tenant, p_agent, p_session, 0, 0, p_now, p_now)
	ON CONFLICT (tenant, agent, session) DO UPDATE SET last_seq = s.last_seq
	RETURNING s.last_seq INTO v_last;
	FOR i IN 1 .. coalesce(array_length(p_kind, 1), 0) LOOP
		IF p_kind[i] = 's' THEN
			SELECT * INTO m FROM memory_messages x
			WHERE x.tenant = p_tenant AND x.agent = p_agent AND x.session = p_session AND x.seq = 0;
			IF NOT FOUND OR m.text_hash <> p_hash[i] THEN
				INSERT INTO memory_messages AS x (tenant, agent, session, seq, msg_id, tokens, partial, created_at, message, text_hash)
				VALUES (p_tenant, p_agent, p_session, 0, p_id[i], p_tokens[i], p_partial[i], p_created[i], p_message[i], p_hash[i])
				ON CONFLICT (tenant, agent, session, seq) DO UPDATE SET msg_id = excluded.msg_id, tokens = excluded.tokens,
					partial = excluded.partial, created_at = excluded.created_at, message = excluded.message, text_hash = excluded.text_hash
				RETURNING * INTO m;
				v_changed := true;
				r_found := false;
			ELSE
				r_found := true;
			END IF;
		ELSE
			SELECT * INTO m FROM memory_messages x
			WHERE x.tenant = p_tenant AND x.agent = p_agent AND x.session = p_session AND x.seq > 0 AND x.msg_id = p_id[i];
			IF FOUND THEN
				r_found := true;
			ELSE
				v_last := v_last + 1;
				v_added := v_added + 1;
				INSERT INTO memory_messages (tenant, agent, session, seq, msg_id, tokens, partial, created_at, message, text_hash)
				VALUES (p_tenant, p_agent, p_session, v_last, p_id[i], p_tokens[i], p_partial[i], p_created[i], p_message[i], '')
				RETURNING * INTO m;
				r_found := false;
			END IF;
		END IF;
		r_seq := m.seq;
		IF r_found THEN
			r_id := m.msg_id; r_tokens := m.tokens; r_partial := m.partial; r_created := m.created_at; r_message := m.message;
		ELSE
			r_id := ''; r_tokens := 0; r_partial := false; r_created := 0; r_message := '';
		END IF;
		RETURN NEXT;
	END LOOP;
	IF v_added > 0 OR v_changed THEN
		UPDATE memory_sessions x SET last_seq = v_last, msg_count = x.msg_count + v_added, updated_at = p_now
		WHERE x.tenant = p_tenant AND x.agent = p_agent AND x.session = p_session;
	END IF;
END
$$`

// beginFunction is TurnStore.Begin on PostgreSQL as one statement: it
// takes the lease as lockAcquire does, then returns the window as the load
// query does and appends the first records with memory_append. When
// another holder has the lease it changes nothing and returns one row with
// r_seq -1.
const beginFunction = `CREATE FUNCTION memory_begin(p_tenant text, p_agent text, p_session text, p_token text, p_expires bigint,
	p_lock_now bigint, p_max_tokens bigint, p_limit bigint, p_now bigint,
	p_kind text[], p_id text[], p_tokens bigint[], p_partial boolean[], p_created bigint[], p_message text[], p_hash text[])
RETURNS TABLE (r_seq bigint, r_id text, r_tokens bigint, r_partial boolean, r_created bigint, r_message text)
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO memory_locks AS l (tenant, agent, session, token, expires_at)
	VALUES (p_tenant, p_agent, p_session, p_token, p_expires)
	ON CONFLICT (tenant, agent, session) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
	WHERE l.expires_at <= p_lock_now;
	IF NOT FOUND THEN
		r_seq := -1; r_id := ''; r_tokens := 0; r_partial := false; r_created := 0; r_message := '';
		RETURN NEXT;
		RETURN;
	END IF;
	RETURN QUERY
		SELECT m.seq, m.msg_id, m.tokens, m.partial, m.created_at, m.message FROM memory_messages m
		WHERE m.tenant = p_tenant AND m.agent = p_agent AND m.session = p_session AND m.seq = 0
		UNION ALL
		SELECT m.seq, m.msg_id, m.tokens, m.partial, m.created_at, m.message FROM memory_messages m
		WHERE m.tenant = p_tenant AND m.agent = p_agent AND m.session = p_session AND m.seq > (
			SELECT COALESCE(MAX(CASE WHEN w.running > p_max_tokens THEN w.seq END), MIN(w.seq) - 1, 0) FROM (
				SELECT n.seq, SUM(n.tokens) OVER (ORDER BY n.seq DESC ROWS UNBOUNDED PRECEDING) AS running
				FROM (
					SELECT x.seq, x.tokens FROM memory_messages x
					WHERE x.tenant = p_tenant AND x.agent = p_agent AND x.session = p_session AND x.seq > 0
					ORDER BY x.seq DESC LIMIT p_limit
				) n
			) w
		)
		ORDER BY 1;
	IF coalesce(array_length(p_kind, 1), 0) > 0 THEN
		PERFORM * FROM memory_append(p_tenant, p_agent, p_session, p_now, p_kind, p_id, p_tokens, p_partial, p_created, p_message, p_hash);
	END IF;
END
$$`

// endFunction is the end of a TurnStore turn on PostgreSQL as one
// statement: it appends the last records with memory_append, deletes the
// lease if it still holds the holder's token, and returns the greatest Seq
// among the records (0 for none).
const endFunction = `CREATE FUNCTION memory_end(p_tenant text, p_agent text, p_session text, p_token text, p_now bigint,
	p_kind text[], p_id text[], p_tokens bigint[], p_partial boolean[], p_created bigint[], p_message text[], p_hash text[])
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	v_last bigint := 0;
BEGIN
	IF coalesce(array_length(p_kind, 1), 0) > 0 THEN
		SELECT coalesce(max(a.r_seq), 0) INTO v_last
		FROM memory_append(p_tenant, p_agent, p_session, p_now, p_kind, p_id, p_tokens, p_partial, p_created, p_message, p_hash) a;
	END IF;
	DELETE FROM memory_locks l WHERE l.tenant = p_tenant AND l.agent = p_agent AND l.session = p_session AND l.token = p_token;
	RETURN v_last;
END
$$`

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
		extra := m.sqlite
		if s.dialect == postgres {
			extra = m.postgres
		}
		for _, stmt := range extra {
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
