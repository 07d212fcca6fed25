package meta

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// AgentVersion is one saved version of an agent. Every save of an agent
// (create, update, draft) is a new version, numbered from 1; the agent that
// serves traffic is its published version ([Agent.Version]).
type AgentVersion struct {
	Version   int       `json:"version"`
	Agent     Agent     `json:"agent"`
	CreatedAt time.Time `json:"created_at"`
	// CreatedBy names who saved it (a key's name).
	CreatedBy string `json:"created_by"`
	// Published reports whether it is the version that serves traffic;
	// PublishedAt is when it was last published (nil: never).
	Published   bool       `json:"published"`
	PublishedAt *time.Time `json:"published_at,omitempty"`
}

// ErrNoPrevious: a rollback found no version published before the
// current one.
var ErrNoPrevious = errors.New("no version was published before this one")

// saveVersion stores a's config as the next version of its agent in tx,
// published (and made the agent's row) when publish is set, and returns
// it: a.Version is set to its number.
func (s *SQL) saveVersion(ctx context.Context, tx *sql.Tx, a *Agent, by string, publish bool) error {
	var n int
	if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT COALESCE(MAX(version), 0) FROM agent_versions WHERE tenant_id = ? AND agent_id = ?`), a.TenantID, a.ID).Scan(&n); err != nil {
		return err
	}
	a.Version = n + 1
	cfg, err := json.Marshal(a)
	if err != nil {
		return err
	}
	var published int64
	if publish {
		published = micros(a.UpdatedAt)
	}
	_, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO agent_versions (tenant_id, agent_id, version, config, created_at, created_by, published_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		a.TenantID, a.ID, a.Version, string(cfg), micros(a.UpdatedAt), by, published)
	return err
}

// SaveAgentDraft stores a (an existing agent's new configuration) as its
// next version without publishing it: the agent keeps serving its
// published version. It returns a with its Version set.
func (s *SQL) SaveAgentDraft(ctx context.Context, a Agent, by string) (Agent, error) {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// Lock the agent's row (PostgreSQL): concurrent saves number their
		// versions one after the other.
		res, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE agents SET updated_at = updated_at WHERE tenant_id = ? AND id = ?`), a.TenantID, a.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return sql.ErrNoRows
		}
		return s.saveVersion(ctx, tx, &a, by, false)
	})
	return a, wrap("save draft of agent "+a.ID, err)
}

// AgentVersions lists an agent's versions, newest first.
func (s *SQL) AgentVersions(ctx context.Context, tenant, id string) ([]AgentVersion, error) {
	cur, err := s.Agent(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, `SELECT version, config, created_at, created_by, published_at FROM agent_versions WHERE tenant_id = ? AND agent_id = ? ORDER BY version DESC`, tenant, id)
	if err != nil {
		return nil, wrap("agent versions", err)
	}
	defer rows.Close()
	out := []AgentVersion{}
	for rows.Next() {
		v, err := scanVersion(tenant, cur.Version, rows)
		if err != nil {
			return nil, wrap("agent versions", err)
		}
		out = append(out, v)
	}
	return out, wrap("agent versions", rows.Err())
}

// AgentVersion returns version n of an agent.
func (s *SQL) AgentVersion(ctx context.Context, tenant, id string, n int) (AgentVersion, error) {
	cur, err := s.Agent(ctx, tenant, id)
	if err != nil {
		return AgentVersion{}, err
	}
	v, err := scanVersion(tenant, cur.Version, s.queryRow(ctx, `SELECT version, config, created_at, created_by, published_at FROM agent_versions WHERE tenant_id = ? AND agent_id = ? AND version = ?`, tenant, id, n))
	return v, wrap(fmt.Sprintf("version %d of agent %s", n, id), err)
}

func scanVersion(tenant string, published int, sc interface{ Scan(...any) error }) (AgentVersion, error) {
	var v AgentVersion
	var cfg string
	var created, pub int64
	if err := sc.Scan(&v.Version, &cfg, &created, &v.CreatedBy, &pub); err != nil {
		return v, err
	}
	if err := json.Unmarshal([]byte(cfg), &v.Agent); err != nil {
		return v, fmt.Errorf("decode agent version: %w", err)
	}
	v.Agent.Timeouts.Defaults()
	v.Agent.TenantID, v.Agent.Version = tenant, v.Version
	v.CreatedAt = fromMicros(created)
	v.Published = v.Version == published
	if pub != 0 {
		t := fromMicros(pub)
		v.PublishedAt = &t
	}
	return v, nil
}

// PublishAgentVersion makes version n the agent's published version: the
// one chats, OpenAI, A2A and MCP calls and delegations are served by. It
// returns the agent as now published.
func (s *SQL) PublishAgentVersion(ctx context.Context, tenant, id string, n int) (Agent, error) {
	var a Agent
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		a, err = s.publishIn(ctx, tx, tenant, id, n)
		return err
	})
	return a, wrap(fmt.Sprintf("publish version %d of agent %s", n, id), err)
}

func (s *SQL) publishIn(ctx context.Context, tx *sql.Tx, tenant, id string, n int) (Agent, error) {
	var cfg string
	if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT config FROM agent_versions WHERE tenant_id = ? AND agent_id = ? AND version = ?`), tenant, id, n).Scan(&cfg); err != nil {
		return Agent{}, err
	}
	var a Agent
	if err := json.Unmarshal([]byte(cfg), &a); err != nil {
		return Agent{}, fmt.Errorf("decode agent version: %w", err)
	}
	var created int64
	if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT created_at FROM agents WHERE tenant_id = ? AND id = ?`), tenant, id).Scan(&created); err != nil {
		return Agent{}, err
	}
	now := time.Now().UTC()
	a.TenantID, a.Version, a.CreatedAt, a.UpdatedAt = tenant, n, fromMicros(created), now
	a.Timeouts.Defaults()
	out, err := json.Marshal(a)
	if err != nil {
		return Agent{}, err
	}
	if _, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE agents SET name = ?, config = ?, updated_at = ? WHERE tenant_id = ? AND id = ?`), a.Name, string(out), micros(now), tenant, id); err != nil {
		return Agent{}, err
	}
	_, err = tx.ExecContext(ctx, s.d.rebind(`UPDATE agent_versions SET published_at = ? WHERE tenant_id = ? AND agent_id = ? AND version = ?`), micros(now), tenant, id, n)
	return a, err
}

// RollbackAgent publishes again the version published before the current
// one (the latest published_at among the other versions), and marks the
// current one as never published, so that rollbacks walk back through the
// publications; ErrNoPrevious when there is none.
func (s *SQL) RollbackAgent(ctx context.Context, tenant, id string) (Agent, error) {
	var a Agent
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var cfg string
		if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT config FROM agents WHERE tenant_id = ? AND id = ?`), tenant, id).Scan(&cfg); err != nil {
			return err
		}
		var cur Agent
		if err := json.Unmarshal([]byte(cfg), &cur); err != nil {
			return fmt.Errorf("decode agent: %w", err)
		}
		if cur.Version == 0 {
			cur.Version = 1 // saved before versions
		}
		var prev int
		err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT version FROM agent_versions WHERE tenant_id = ? AND agent_id = ? AND version <> ? AND published_at > 0 ORDER BY published_at DESC, version DESC LIMIT 1`), tenant, id, cur.Version).Scan(&prev)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoPrevious
		}
		if err != nil {
			return err
		}
		if a, err = s.publishIn(ctx, tx, tenant, id, prev); err != nil {
			return err
		}
		// The version rolled back from counts as never published, so that
		// a second rollback goes further back rather than back to it.
		_, err = tx.ExecContext(ctx, s.d.rebind(`UPDATE agent_versions SET published_at = 0 WHERE tenant_id = ? AND agent_id = ? AND version = ?`), tenant, id, cur.Version)
		return err
	})
	if errors.Is(err, ErrNoPrevious) {
		return Agent{}, fmt.Errorf("meta: roll back agent %s: %w", id, ErrNoPrevious)
	}
	return a, wrap("roll back agent "+id, err)
}
