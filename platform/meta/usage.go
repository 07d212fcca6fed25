package meta

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// The writes of every turn, prepared once on SQLite (see OpenSQLite).
const (
	qAddUsage = `INSERT INTO usage_daily (tenant_id, day, agent_id, key_id, model, turns, prompt_tokens, completion_tokens, cost_nanos)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, day, agent_id, key_id, model) DO UPDATE SET
			turns = usage_daily.turns + excluded.turns,
			prompt_tokens = usage_daily.prompt_tokens + excluded.prompt_tokens,
			completion_tokens = usage_daily.completion_tokens + excluded.completion_tokens,
			cost_nanos = usage_daily.cost_nanos + excluded.cost_nanos`
	qPutTrace = `INSERT INTO turn_traces (tenant_id, session_id, message_id, agent_id, created_at, data) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, session_id, message_id) DO UPDATE SET agent_id = excluded.agent_id, created_at = excluded.created_at, data = excluded.data`
)

// Usage is the model usage of one tenant's turns, summed over what the
// query grouped by: the fields it did not group by are empty. Cost is in
// nanodollars (1e-9 USD), so that sums of small turns stay exact.
type Usage struct {
	TenantID         string
	Day              string // YYYY-MM-DD, UTC
	AgentID          string
	KeyID            string
	Model            string
	Turns            int64
	PromptTokens     int64
	CompletionTokens int64
	CostNanos        int64
}

// AddUsage adds one turn's usage (u.Turns turns, usually 1) to the day's
// row of its tenant, agent, key and model, in one statement.
func (s *SQL) AddUsage(ctx context.Context, u Usage) error {
	_, err := s.exec(ctx, qAddUsage, u.TenantID, u.Day, u.AgentID, u.KeyID, u.Model, u.Turns, u.PromptTokens, u.CompletionTokens, u.CostNanos)
	return wrap("add usage", err)
}

// UsageQuery selects and groups usage rows.
type UsageQuery struct {
	// TenantID is the tenant whose usage is read; empty reads every
	// tenant's (the platform allows it to admin keys only).
	TenantID string
	// From and To bound the days, both included (YYYY-MM-DD).
	From, To string
	// AgentID and KeyID, when set, keep only that agent's or key's usage.
	AgentID, KeyID string
	// GroupBy lists the dimensions of the answer, among "tenant", "day",
	// "agent", "key" and "model"; none sums everything into one row.
	GroupBy []string
}

// usageColumns maps the dimensions of a usage query to their columns.
var usageColumns = map[string]string{"tenant": "tenant_id", "day": "day", "agent": "agent_id", "key": "key_id", "model": "model"}

// QueryUsage returns the usage q selects, summed per group, ordered by the
// groups' dimensions.
func (s *SQL) QueryUsage(ctx context.Context, q UsageQuery) ([]Usage, error) {
	var cols []string
	for _, g := range q.GroupBy {
		c, ok := usageColumns[g]
		if !ok {
			return nil, fmt.Errorf("meta: usage: unknown dimension %q", g)
		}
		cols = append(cols, c)
	}
	var where []string
	var args []any
	add := func(cond string, v any) { where = append(where, cond); args = append(args, v) }
	if q.TenantID != "" {
		add("tenant_id = ?", q.TenantID)
	}
	if q.From != "" {
		add("day >= ?", q.From)
	}
	if q.To != "" {
		add("day <= ?", q.To)
	}
	if q.AgentID != "" {
		add("agent_id = ?", q.AgentID)
	}
	if q.KeyID != "" {
		add("key_id = ?", q.KeyID)
	}
	sel := "SUM(turns), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost_nanos)"
	if len(cols) > 0 {
		sel = strings.Join(cols, ", ") + ", " + sel
	}
	stmt := "SELECT " + sel + " FROM usage_daily"
	if len(where) > 0 {
		stmt += " WHERE " + strings.Join(where, " AND ")
	}
	if len(cols) > 0 {
		stmt += " GROUP BY " + strings.Join(cols, ", ") + " ORDER BY " + strings.Join(cols, ", ")
	} else {
		stmt += " HAVING COUNT(*) > 0"
	}
	rows, err := s.query(ctx, stmt, args...)
	if err != nil {
		return nil, wrap("usage", err)
	}
	defer rows.Close()
	out := []Usage{}
	for rows.Next() {
		var u Usage
		dst := make([]any, 0, len(cols)+4)
		for _, c := range cols {
			switch c {
			case "tenant_id":
				dst = append(dst, &u.TenantID)
			case "day":
				dst = append(dst, &u.Day)
			case "agent_id":
				dst = append(dst, &u.AgentID)
			case "key_id":
				dst = append(dst, &u.KeyID)
			case "model":
				dst = append(dst, &u.Model)
			}
		}
		dst = append(dst, &u.Turns, &u.PromptTokens, &u.CompletionTokens, &u.CostNanos)
		if err := rows.Scan(dst...); err != nil {
			return nil, wrap("usage", err)
		}
		out = append(out, u)
	}
	return out, wrap("usage", rows.Err())
}

// UsageSince sums the tokens and cost of a tenant (of one key when key is
// not empty) from day from (YYYY-MM-DD) on: what a budget has spent.
func (s *SQL) UsageSince(ctx context.Context, tenant, key, from string) (tokens, costNanos int64, err error) {
	q := `SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0), COALESCE(SUM(cost_nanos), 0) FROM usage_daily WHERE tenant_id = ? AND day >= ?`
	args := []any{tenant, from}
	if key != "" {
		q += ` AND key_id = ?`
		args = append(args, key)
	}
	err = s.queryRow(ctx, q, args...).Scan(&tokens, &costNanos)
	return tokens, costNanos, wrap("usage", err)
}

// Budget limits the usage of a tenant, or of one of its keys, per day or
// per month (UTC). A zero maximum is no limit on that measure.
type Budget struct {
	ID       string
	TenantID string
	// KeyID is the key the budget limits; empty limits the whole tenant.
	KeyID string
	// Period is "day" or "month".
	Period       string
	MaxTokens    int64
	MaxCostNanos int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// PutBudget creates the budget of b's tenant, key and period, or replaces
// its limits; it returns the budget as stored (a replaced one keeps its id
// and CreatedAt).
func (s *SQL) PutBudget(ctx context.Context, b Budget) (Budget, error) {
	var created int64
	err := s.queryRow(ctx, `INSERT INTO budgets (tenant_id, id, key_id, period, max_tokens, max_cost_nanos, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, key_id, period) DO UPDATE SET max_tokens = excluded.max_tokens, max_cost_nanos = excluded.max_cost_nanos, updated_at = excluded.updated_at
		RETURNING id, created_at`,
		b.TenantID, b.ID, b.KeyID, b.Period, b.MaxTokens, b.MaxCostNanos, micros(b.CreatedAt), micros(b.UpdatedAt)).Scan(&b.ID, &created)
	b.CreatedAt = fromMicros(created)
	return b, wrap("put budget", err)
}

// Budgets returns a tenant's budgets, the tenant's own first.
func (s *SQL) Budgets(ctx context.Context, tenant string) ([]Budget, error) {
	rows, err := s.query(ctx, `SELECT id, key_id, period, max_tokens, max_cost_nanos, created_at, updated_at FROM budgets WHERE tenant_id = ? ORDER BY key_id, period`, tenant)
	if err != nil {
		return nil, wrap("budgets", err)
	}
	defer rows.Close()
	out := []Budget{}
	for rows.Next() {
		b := Budget{TenantID: tenant}
		var created, updated int64
		if err := rows.Scan(&b.ID, &b.KeyID, &b.Period, &b.MaxTokens, &b.MaxCostNanos, &created, &updated); err != nil {
			return nil, wrap("budgets", err)
		}
		b.CreatedAt, b.UpdatedAt = fromMicros(created), fromMicros(updated)
		out = append(out, b)
	}
	return out, wrap("budgets", rows.Err())
}

// DeleteBudget removes a budget of tenant.
func (s *SQL) DeleteBudget(ctx context.Context, tenant, id string) error {
	return s.deleteOne(ctx, "delete budget "+id, `DELETE FROM budgets WHERE tenant_id = ? AND id = ?`, tenant, id)
}

// TurnTrace is the stored trace of one turn: Data is its JSON (see the
// platform's trace recorder).
type TurnTrace struct {
	TenantID  string
	SessionID string
	MessageID string
	AgentID   string
	CreatedAt time.Time
	Data      []byte
}

// PutTrace stores a turn's trace (replacing one of the same message).
func (s *SQL) PutTrace(ctx context.Context, t TurnTrace) error {
	_, err := s.exec(ctx, qPutTrace, t.TenantID, t.SessionID, t.MessageID, t.AgentID, micros(t.CreatedAt), string(t.Data))
	return wrap("put trace", err)
}

// Trace returns the trace of a message of a tenant's session.
func (s *SQL) Trace(ctx context.Context, tenant, session, message string) (TurnTrace, error) {
	t := TurnTrace{TenantID: tenant, SessionID: session, MessageID: message}
	var created int64
	var data string
	err := s.queryRow(ctx, `SELECT agent_id, created_at, data FROM turn_traces WHERE tenant_id = ? AND session_id = ? AND message_id = ?`, tenant, session, message).
		Scan(&t.AgentID, &created, &data)
	t.CreatedAt, t.Data = fromMicros(created), []byte(data)
	return t, wrap("trace "+message, err)
}

// PruneTraces deletes the traces made before before, and returns how many.
func (s *SQL) PruneTraces(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM turn_traces WHERE created_at < ?`, micros(before))
	if err != nil {
		return 0, wrap("prune traces", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// WriteLedger writes turns' usage (added to their days' rows) and traces
// in one transaction: what the platform's ledger batches off the turns'
// path.
func (s *SQL) WriteLedger(ctx context.Context, usage []Usage, traces []TurnTrace) error {
	if len(usage) == 0 && len(traces) == 0 {
		return nil
	}
	return wrap("write ledger", s.tx(ctx, func(tx *sql.Tx) error {
		add := s.txExec(ctx, tx, qAddUsage)
		for _, u := range usage {
			if err := add(u.TenantID, u.Day, u.AgentID, u.KeyID, u.Model, u.Turns, u.PromptTokens, u.CompletionTokens, u.CostNanos); err != nil {
				return err
			}
		}
		put := s.txExec(ctx, tx, qPutTrace)
		for _, t := range traces {
			if err := put(t.TenantID, t.SessionID, t.MessageID, t.AgentID, micros(t.CreatedAt), string(t.Data)); err != nil {
				return err
			}
		}
		return nil
	}))
}
