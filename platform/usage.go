package platform

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/meta"
)

// Usage, cost and budgets. Every turn adds its tokens and cost to a daily
// row per tenant, agent, API key and model (GET /v1/usage reads them);
// budgets per tenant or key cap tokens or money per day or month, and a
// turn whose budget is spent is refused with 429 budget_exceeded before the
// model is called. Costs come from a price table per model: defaults for
// well-known models, overridden by Config.Prices (WEFT_PRICES).

// CodeBudgetExceeded is the error code of a turn refused because a budget
// of its key or tenant is spent.
const CodeBudgetExceeded = "budget_exceeded"

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// defaultPrices are list prices of well-known models (USD per million
// tokens, input and output). A key ending in "*" matches every model name
// it prefixes (dated versions); the longest match wins. Local models cost
// nothing.
var defaultPrices = map[string]Price{
	"openai/gpt-4o":                 {2.50, 10.00},
	"openai/gpt-4o-*":               {2.50, 10.00},
	"openai/gpt-4o-mini":            {0.15, 0.60},
	"openai/gpt-4o-mini-*":          {0.15, 0.60},
	"openai/gpt-4.1":                {2.00, 8.00},
	"openai/gpt-4.1-*":              {2.00, 8.00},
	"openai/gpt-4.1-mini*":          {0.40, 1.60},
	"openai/gpt-4.1-nano*":          {0.10, 0.40},
	"openai/gpt-5":                  {1.25, 10.00},
	"openai/gpt-5-*":                {1.25, 10.00},
	"openai/gpt-5-mini*":            {0.25, 2.00},
	"openai/gpt-5-nano*":            {0.05, 0.40},
	"openai/o3":                     {2.00, 8.00},
	"openai/o3-mini*":               {1.10, 4.40},
	"openai/o4-mini*":               {1.10, 4.40},
	"openai/text-embedding-3-small": {0.02, 0},
	"openai/text-embedding-3-large": {0.13, 0},
	"anthropic/claude-3-5-haiku*":   {0.80, 4.00},
	"anthropic/claude-haiku-4*":     {1.00, 5.00},
	"anthropic/claude-3-5-sonnet*":  {3.00, 15.00},
	"anthropic/claude-3-7-sonnet*":  {3.00, 15.00},
	"anthropic/claude-sonnet-4*":    {3.00, 15.00},
	"anthropic/claude-opus-4*":      {15.00, 75.00},
	"deepseek/deepseek-chat":        {0.27, 1.10},
	"deepseek/deepseek-reasoner":    {0.55, 2.19},
	"ollama/*":                      {0, 0},
	"scripted/*":                    {0, 0},
}

// priceTable finds a model's price.
type priceTable struct {
	exact    map[string]Price
	prefixes []string // keys ending in "*", without it, longest first
	byPrefix map[string]Price
}

func newPriceTable(overrides map[string]Price) *priceTable {
	t := &priceTable{exact: map[string]Price{}, byPrefix: map[string]Price{}}
	add := func(k string, p Price) {
		if pre, ok := strings.CutSuffix(k, "*"); ok {
			if _, seen := t.byPrefix[pre]; !seen {
				t.prefixes = append(t.prefixes, pre)
			}
			t.byPrefix[pre] = p
			return
		}
		t.exact[k] = p
	}
	for k, p := range defaultPrices {
		add(k, p)
	}
	for k, p := range overrides {
		add(k, p)
	}
	sort.Slice(t.prefixes, func(i, j int) bool { return len(t.prefixes[i]) > len(t.prefixes[j]) })
	return t
}

// price returns model's price and whether the table knows it.
func (t *priceTable) price(model string) (Price, bool) {
	if p, ok := t.exact[model]; ok {
		return p, true
	}
	for _, pre := range t.prefixes {
		if strings.HasPrefix(model, pre) {
			return t.byPrefix[pre], true
		}
	}
	return Price{}, false
}

// costNanos is what usage of model costs, in nanodollars.
func (t *priceTable) costNanos(model string, u llm.Usage) int64 {
	p, _ := t.price(model)
	// USD per million tokens = 1000 nanodollars per token.
	return int64(math.Round(float64(u.PromptTokens)*p.Input*1000 + float64(u.CompletionTokens)*p.Output*1000))
}

// ParsePrices reads a price table override: a JSON object from model name
// (or name prefix ending in "*") to {"input": USD, "output": USD} per
// million tokens, as WEFT_PRICES holds it.
func ParsePrices(s string) (map[string]Price, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out map[string]Price
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("WEFT_PRICES: want {\"provider/model\": {\"input\": USD, \"output\": USD}} per million tokens: %w", err)
	}
	for k, p := range out {
		if k == "" || p.Input < 0 || p.Output < 0 || math.IsNaN(p.Input) || math.IsNaN(p.Output) {
			return nil, fmt.Errorf("WEFT_PRICES: bad entry %q", k)
		}
	}
	return out, nil
}

// dollars converts nanodollars to US dollars.
func dollars(nanos int64) float64 { return float64(nanos) / 1e9 }

// nanos converts US dollars to nanodollars.
func nanos(usd float64) int64 { return int64(math.Round(usd * 1e9)) }

// usageStore is what usage accounting needs of the metadata store.
type usageStore interface {
	AddUsage(ctx context.Context, u meta.Usage) error
	QueryUsage(ctx context.Context, q meta.UsageQuery) ([]meta.Usage, error)
	UsageSince(ctx context.Context, tenant, key, from string) (tokens, costNanos int64, err error)
	PutBudget(ctx context.Context, b meta.Budget) (meta.Budget, error)
	Budgets(ctx context.Context, tenant string) ([]meta.Budget, error)
	DeleteBudget(ctx context.Context, tenant, id string) error
}

// accounting records usage and enforces budgets.
type accounting struct {
	s       *Server
	store   usageStore
	prices  *priceTable
	budgets *cache[[]meta.Budget]
	now     func() time.Time
}

func newAccounting(s *Server, store usageStore, prices map[string]Price) *accounting {
	a := &accounting{s: s, store: store, prices: newPriceTable(prices), now: time.Now}
	a.budgets = newCache(s.cfg.CacheTTL, func(ctx context.Context, tenant, _ string) ([]meta.Budget, error) {
		return store.Budgets(ctx, tenant)
	})
	s.bus.subscribe("budget", func(tenant, _ string) { a.budgets.invalidate(tenant, "") })
	return a
}

// day is the UTC day of t as usage rows name it.
func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// periodStart returns the first day of the budget period containing now,
// and when the period ends.
func periodStart(period string, now time.Time) (from string, ends time.Time) {
	now = now.UTC()
	if period == "month" {
		start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		return day(start), start.AddDate(0, 1, 0)
	}
	start := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	return day(start), start.AddDate(0, 0, 1)
}

// check refuses a turn of key in tenant when one of their budgets is
// spent. A store failure lets the turn through (budgets are a guard, not a
// dependency) and is logged.
func (a *accounting) check(ctx context.Context, tenant, key string) *apiError {
	if a == nil {
		return nil
	}
	budgets, err := a.budgets.getIn(ctx, tenant, "")
	if err != nil {
		a.s.log.WarnContext(ctx, "budgets unavailable; turn not checked", "tenant", tenant, "err", err)
		return nil
	}
	if len(budgets) > 0 {
		// This replica's own turns count at once.
		a.s.ledger.flush(ctx)
	}
	now := a.now()
	for _, b := range budgets {
		if b.KeyID != "" && b.KeyID != key {
			continue
		}
		from, ends := periodStart(b.Period, now)
		tokens, cost, err := a.store.UsageSince(ctx, tenant, b.KeyID, from)
		if err != nil {
			a.s.log.WarnContext(ctx, "usage unavailable; budget not checked", "tenant", tenant, "budget", b.ID, "err", err)
			continue
		}
		spent := ""
		switch {
		case b.MaxTokens > 0 && tokens >= b.MaxTokens:
			spent = fmt.Sprintf("%d of %d tokens", tokens, b.MaxTokens)
		case b.MaxCostNanos > 0 && cost >= b.MaxCostNanos:
			spent = fmt.Sprintf("$%.6f of $%.6f", dollars(cost), dollars(b.MaxCostNanos))
		default:
			continue
		}
		whose := "this tenant"
		if b.KeyID != "" {
			whose = "this API key"
		}
		retry := max(int(math.Ceil(ends.Sub(now).Seconds())), 1)
		e := errorf(http.StatusTooManyRequests, CodeBudgetExceeded, "the %sly budget of %s is spent (%s); it renews at %s", b.Period, whose, spent, ends.Format(time.RFC3339))
		e.retryAfter = retry
		a.s.metrics.budgetRefusals.Inc()
		a.s.log.WarnContext(ctx, "turn refused: budget exceeded", "request_id", requestID(ctx), "tenant", tenant, "key_id", key, "budget", b.ID, "period", b.Period, "spent", spent)
		return e
	}
	return nil
}

// record adds a turn's usage to its day's row and returns its cost in
// nanodollars. It is called once per turn, failed turns included (their
// tokens were spent too).
func (a *accounting) record(ctx context.Context, tenant, agent, key, model string, u llm.Usage) int64 {
	if a == nil {
		return 0
	}
	cost := a.prices.costNanos(model, u)
	if cost > 0 {
		a.s.metrics.cost.WithLabelValues(model).Add(dollars(cost))
	}
	row := meta.Usage{TenantID: tenant, Day: day(a.now()), AgentID: agent, KeyID: key, Model: model,
		Turns: 1, PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens), CostNanos: cost}
	if a.s.ledger != nil {
		a.s.ledger.add(ledgerItem{usage: &row})
		return cost
	}
	if err := a.store.AddUsage(context.WithoutCancel(ctx), row); err != nil {
		a.s.log.WarnContext(ctx, "usage not recorded", "tenant", tenant, "agent", agent, "model", model, "err", err)
	}
	return cost
}

// usageRow is one row of GET /v1/usage: the dimensions grouped by, and the
// sums.
type usageRow struct {
	Tenant  string `json:"tenant,omitempty"`
	Day     string `json:"day,omitempty"`
	AgentID string `json:"agent_id,omitempty"`
	// AgentName is the agent's name ("workflow:NAME" for a workflow's
	// llm nodes), when it still exists.
	AgentName        string  `json:"agent_name,omitempty"`
	KeyID            string  `json:"key_id,omitempty"`
	Model            string  `json:"model,omitempty"`
	Turns            int64   `json:"turns"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	TotalTokens      int64   `json:"total_tokens"`
	CostUSD          float64 `json:"cost_usd"`
}

type usageResponse struct {
	From    string     `json:"from"`
	To      string     `json:"to"`
	GroupBy []string   `json:"group_by"`
	Rows    []usageRow `json:"rows"`
	Total   usageRow   `json:"total"`
}

// maxUsageDays bounds the range of one usage query.
const maxUsageDays = 366

// usage: GET /v1/usage?from=&to=&group_by=day,agent,key,model[,tenant]
// &agent_id=&key_id=&tenant= — the caller's tenant's usage (an admin key
// may name another tenant, or tenant=* for all), by the dimensions asked
// (default day), from and to included (default the last 30 days).
func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	q := r.URL.Query()
	now := s.accounting.now().UTC()
	uq := meta.UsageQuery{TenantID: p.Tenant, From: q.Get("from"), To: q.Get("to"), AgentID: q.Get("agent_id"), KeyID: q.Get("key_id")}
	if uq.AgentID != "" {
		uq.AgentID = s.agentRef(r.Context(), p.Tenant, uq.AgentID)
	}
	if uq.To == "" {
		uq.To = day(now)
	}
	if uq.From == "" {
		uq.From = day(now.AddDate(0, 0, -29))
	}
	from, err1 := time.Parse(time.DateOnly, uq.From)
	to, err2 := time.Parse(time.DateOnly, uq.To)
	switch {
	case err1 != nil:
		writeError(w, invalid("field \"from\": want a day, YYYY-MM-DD"))
		return
	case err2 != nil:
		writeError(w, invalid("field \"to\": want a day, YYYY-MM-DD"))
		return
	case to.Before(from):
		writeError(w, invalid("field \"to\" is before \"from\""))
		return
	case to.Sub(from) > maxUsageDays*24*time.Hour:
		writeError(w, invalid("the range from %s to %s exceeds %d days", uq.From, uq.To, maxUsageDays))
		return
	}
	groupBy := "day"
	if v, ok := q["group_by"]; ok {
		groupBy = strings.Join(v, ",")
	}
	allowed := map[string]bool{"tenant": true, "day": true, "agent": true, "key": true, "model": true}
	seen := map[string]bool{}
	uq.GroupBy = []string{}
	for _, g := range strings.Split(groupBy, ",") {
		if g = strings.TrimSpace(g); g == "" || seen[g] {
			continue
		}
		if !allowed[g] {
			writeError(w, invalid("field \"group_by\": %q is not one of tenant, day, agent, key, model", g))
			return
		}
		seen[g] = true
		uq.GroupBy = append(uq.GroupBy, g)
	}
	tenantNames := map[string]string{}
	if t := q.Get("tenant"); t != "" {
		if !p.Key.Admin {
			writeError(w, errorf(http.StatusForbidden, CodeForbidden, "only an admin key may read another tenant's usage"))
			return
		}
		if t == "*" {
			uq.TenantID = ""
		} else {
			tn, err := s.meta.TenantByName(r.Context(), t)
			if err != nil {
				if tn, err = s.meta.TenantByID(r.Context(), t); err != nil {
					writeError(w, notFoundOr(err, "tenant", t))
					return
				}
			}
			uq.TenantID = tn.ID
		}
	}
	s.ledger.flush(r.Context())
	rows, err := s.accounting.store.QueryUsage(r.Context(), uq)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := usageResponse{From: uq.From, To: uq.To, GroupBy: uq.GroupBy, Rows: make([]usageRow, 0, len(rows))}
	names := agentNames{s: s, seen: map[[2]string]string{}}
	var total meta.Usage
	for _, u := range rows {
		row := toUsageRow(u)
		if u.TenantID != "" {
			name, ok := tenantNames[u.TenantID]
			if !ok {
				name = u.TenantID
				if t, err := s.meta.TenantByID(r.Context(), u.TenantID); err == nil {
					name = t.Name
				}
				tenantNames[u.TenantID] = name
			}
			row.Tenant = name
		}
		row.AgentName = names.of(r.Context(), cmp.Or(u.TenantID, uq.TenantID), u.AgentID)
		out.Rows = append(out.Rows, row)
		total.Turns += u.Turns
		total.PromptTokens += u.PromptTokens
		total.CompletionTokens += u.CompletionTokens
		total.CostNanos += u.CostNanos
	}
	out.Total = toUsageRow(total)
	writeJSON(w, http.StatusOK, out)
}

// agentNames finds the names of usage rows' agents and workflows, once
// each per request.
type agentNames struct {
	s    *Server
	seen map[[2]string]string
}

func (n agentNames) of(ctx context.Context, tenant, agentID string) string {
	if agentID == "" || tenant == "" {
		return ""
	}
	key := [2]string{tenant, agentID}
	if name, ok := n.seen[key]; ok {
		return name
	}
	name := ""
	if wf, ok := strings.CutPrefix(agentID, "workflow:"); ok {
		if n.s.workflows != nil {
			if w, err := n.s.workflows.store.Workflow(ctx, tenant, wf); err == nil {
				name = "workflow:" + w.Name
			}
		}
	} else if a, err := n.s.meta.Agent(ctx, tenant, agentID); err == nil {
		name = a.Name
	}
	n.seen[key] = name
	return name
}

func toUsageRow(u meta.Usage) usageRow {
	return usageRow{Day: u.Day, AgentID: u.AgentID, KeyID: u.KeyID, Model: u.Model, Turns: u.Turns,
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens,
		CostUSD: dollars(u.CostNanos)}
}

// budgetRequest is the body of PUT /v1/budgets.
type budgetRequest struct {
	// Tenant names the tenant (default the admin's own).
	Tenant string `json:"tenant"`
	// KeyID limits one key; empty limits the whole tenant.
	KeyID      string   `json:"key_id"`
	Period     string   `json:"period"`
	MaxTokens  int64    `json:"max_tokens"`
	MaxCostUSD *float64 `json:"max_cost_usd"`
}

// budgetResponse is a budget with what its current period has spent.
type budgetResponse struct {
	ID         string    `json:"id"`
	Tenant     string    `json:"tenant"`
	KeyID      string    `json:"key_id,omitempty"`
	Period     string    `json:"period"`
	MaxTokens  int64     `json:"max_tokens,omitempty"`
	MaxCostUSD float64   `json:"max_cost_usd,omitempty"`
	Tokens     int64     `json:"tokens"`
	CostUSD    float64   `json:"cost_usd"`
	Renews     time.Time `json:"renews_at"`
	Exceeded   bool      `json:"exceeded"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// budgetTenant resolves the tenant a budget request names (admin only).
func (s *Server) budgetTenant(r *http.Request, name string) (meta.Tenant, *apiError) {
	ctx := r.Context()
	own, err := s.meta.TenantByID(ctx, principalFrom(ctx).Tenant)
	if err != nil {
		return meta.Tenant{}, asAPIError(err)
	}
	if name == "" || name == own.Name || name == own.ID {
		return own, nil
	}
	t, err := s.meta.TenantByName(ctx, name)
	if err != nil {
		if t, err = s.meta.TenantByID(ctx, name); err != nil {
			return meta.Tenant{}, notFoundOr(err, "tenant", name)
		}
	}
	return t, nil
}

// putBudget: PUT /v1/budgets (admin) sets the budget of a tenant or key for
// a period, creating it or replacing its limits.
func (s *Server) putBudget(w http.ResponseWriter, r *http.Request) {
	if !requireAdminTo(w, r, "manage budgets") {
		return
	}
	var req budgetRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case req.Period != "day" && req.Period != "month":
		writeError(w, invalid("field \"period\": want \"day\" or \"month\""))
		return
	case req.MaxTokens < 0:
		writeError(w, invalid("field \"max_tokens\" must not be negative"))
		return
	case req.MaxCostUSD != nil && (*req.MaxCostUSD < 0 || math.IsNaN(*req.MaxCostUSD) || *req.MaxCostUSD > 1e9):
		writeError(w, invalid("field \"max_cost_usd\" must be between 0 and 1e9"))
		return
	case req.MaxTokens == 0 && (req.MaxCostUSD == nil || *req.MaxCostUSD == 0):
		writeError(w, invalid("field \"max_tokens\" or \"max_cost_usd\" is required"))
		return
	}
	t, e := s.budgetTenant(r, req.Tenant)
	if e != nil {
		writeError(w, e)
		return
	}
	if req.KeyID != "" {
		k, err := s.meta.KeyByID(r.Context(), req.KeyID)
		if err != nil || k.TenantID != t.ID {
			writeError(w, notFound("api key", req.KeyID))
			return
		}
	}
	now := time.Now().UTC()
	b := meta.Budget{ID: meta.NewID("bud"), TenantID: t.ID, KeyID: req.KeyID, Period: req.Period, MaxTokens: req.MaxTokens, CreatedAt: now, UpdatedAt: now}
	if req.MaxCostUSD != nil {
		b.MaxCostNanos = nanos(*req.MaxCostUSD)
	}
	b, err := s.accounting.store.PutBudget(r.Context(), b)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	s.bus.publish(r.Context(), "budget", t.ID, b.ID)
	out, e := s.budgetView(r.Context(), t, b)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) budgetView(ctx context.Context, t meta.Tenant, b meta.Budget) (budgetResponse, *apiError) {
	s.ledger.flush(ctx)
	from, ends := periodStart(b.Period, s.accounting.now())
	tokens, cost, err := s.accounting.store.UsageSince(ctx, t.ID, b.KeyID, from)
	if err != nil {
		return budgetResponse{}, asAPIError(err)
	}
	return budgetResponse{ID: b.ID, Tenant: t.Name, KeyID: b.KeyID, Period: b.Period, MaxTokens: b.MaxTokens, MaxCostUSD: dollars(b.MaxCostNanos),
		Tokens: tokens, CostUSD: dollars(cost), Renews: ends,
		Exceeded:  (b.MaxTokens > 0 && tokens >= b.MaxTokens) || (b.MaxCostNanos > 0 && cost >= b.MaxCostNanos),
		CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}, nil
}

// listBudgets: GET /v1/budgets[?tenant=] — an admin key sees any tenant's
// budgets, another key its own tenant's, each with what its period spent.
func (s *Server) listBudgets(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	name := r.URL.Query().Get("tenant")
	if name != "" && !p.Key.Admin {
		writeError(w, errorf(http.StatusForbidden, CodeForbidden, "only an admin key may read another tenant's budgets"))
		return
	}
	t, e := s.budgetTenant(r, name)
	if e != nil {
		writeError(w, e)
		return
	}
	bs, err := s.accounting.store.Budgets(r.Context(), t.ID)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := make([]budgetResponse, 0, len(bs))
	for _, b := range bs {
		v, e := s.budgetView(r.Context(), t, b)
		if e != nil {
			writeError(w, e)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteBudget: DELETE /v1/budgets/{id}[?tenant=] (admin).
func (s *Server) deleteBudget(w http.ResponseWriter, r *http.Request) {
	if !requireAdminTo(w, r, "manage budgets") {
		return
	}
	t, e := s.budgetTenant(r, r.URL.Query().Get("tenant"))
	if e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("id")
	if err := s.accounting.store.DeleteBudget(r.Context(), t.ID, id); err != nil {
		writeError(w, notFoundOr(err, "budget", id))
		return
	}
	s.bus.publish(r.Context(), "budget", t.ID, id)
	w.WriteHeader(http.StatusNoContent)
}

// requireAdminTo answers 403 unless the request's key is an admin key.
func requireAdminTo(w http.ResponseWriter, r *http.Request, what string) bool {
	if principalFrom(r.Context()).Key.Admin {
		return true
	}
	writeError(w, errorf(http.StatusForbidden, CodeForbidden, "only an admin key may %s", what))
	return false
}

// pricesResponse is GET /v1/prices: the price table in force.
type pricesResponse struct {
	// Prices maps model names (a trailing "*" matches by prefix) to USD
	// per million tokens.
	Prices map[string]Price `json:"prices"`
}

// prices: GET /v1/prices.
func (s *Server) prices(w http.ResponseWriter, r *http.Request) {
	out := pricesResponse{Prices: map[string]Price{}}
	for k, p := range s.accounting.prices.exact {
		out.Prices[k] = p
	}
	for k, p := range s.accounting.prices.byPrefix {
		out.Prices[k+"*"] = p
	}
	writeJSON(w, http.StatusOK, out)
}
