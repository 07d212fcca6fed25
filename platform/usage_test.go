package platform

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/meta"
)

func TestPriceTable(t *testing.T) {
	pt := newPriceTable(map[string]Price{"openai/gpt-4o-mini": {1, 2}, "acme/*": {10, 20}})
	for _, c := range []struct {
		model string
		want  Price
		known bool
	}{
		{"openai/gpt-4o-mini", Price{1, 2}, true},                  // overridden
		{"openai/gpt-4o-mini-2024-07-18", Price{0.15, 0.60}, true}, // dated version, by prefix
		{"openai/gpt-4o", Price{2.50, 10}, true},
		{"anthropic/claude-sonnet-4-20250514", Price{3, 15}, true},
		{"acme/anything", Price{10, 20}, true},
		{"ollama/llama3.2", Price{}, true},
		{"mystery/model", Price{}, false},
	} {
		got, known := pt.price(c.model)
		if got != c.want || known != c.known {
			t.Errorf("price(%q) = %v, %v; want %v, %v", c.model, got, known, c.want, c.known)
		}
	}
	// $10 and $20 per million tokens: 1000 prompt + 500 completion tokens
	// cost $0.01 + $0.01.
	if got := pt.costNanos("acme/x", llm.Usage{PromptTokens: 1000, CompletionTokens: 500}); got != 20_000_000 {
		t.Errorf("cost = %d nanodollars, want 20000000", got)
	}
	if _, err := ParsePrices(`{"x/y": {"input": -1}}`); err == nil {
		t.Error("negative price accepted")
	}
	if _, err := ParsePrices(`nope`); err == nil {
		t.Error("bad JSON accepted")
	}
	if p, err := ParsePrices(`{"x/y": {"input": 1, "output": 2}}`); err != nil || p["x/y"] != (Price{1, 2}) {
		t.Errorf("ParsePrices = %v, %v", p, err)
	}
}

func TestUsageAPI(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	ten := env.tenant()
	store := env.srv.accounting.store
	env.srv.accounting.now = func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }
	for _, u := range []meta.Usage{
		{TenantID: ten, Day: "2026-12-01", AgentID: "a1", KeyID: "k1", Model: "openai/gpt-4o", Turns: 1, PromptTokens: 100, CompletionTokens: 10, CostNanos: 350_000},
		{TenantID: ten, Day: "2026-12-02", AgentID: "a1", KeyID: "k1", Model: "openai/gpt-4o", Turns: 2, PromptTokens: 200, CompletionTokens: 20, CostNanos: 700_000},
		{TenantID: ten, Day: "2026-12-02", AgentID: "a2", KeyID: "k2", Model: "scripted/demo", Turns: 1, PromptTokens: 5, CompletionTokens: 5},
		{TenantID: "other", Day: "2026-12-02", AgentID: "b", KeyID: "k9", Model: "openai/gpt-4o", Turns: 1, PromptTokens: 1e6, CostNanos: 1e9},
	} {
		if err := store.AddUsage(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	var got usageResponse
	resp := env.do(env.admin, "GET", "/v1/usage", nil, &got)
	if resp.StatusCode != 200 || got.From != "2026-11-03" || got.To != "2026-12-02" || len(got.Rows) != 2 {
		t.Fatalf("default usage: %d %+v", resp.StatusCode, got)
	}
	if r := got.Rows[1]; r.Day != "2026-12-02" || r.Turns != 3 || r.TotalTokens != 230 || r.CostUSD != 0.0007 {
		t.Errorf("day row = %+v", r)
	}
	if got.Total.Turns != 4 || got.Total.CostUSD != 0.00105 {
		t.Errorf("total = %+v", got.Total)
	}
	got = usageResponse{}
	env.do(env.admin, "GET", "/v1/usage?group_by=agent,key&from=2026-12-02&to=2026-12-02", nil, &got)
	if len(got.Rows) != 2 || got.Rows[0].AgentID != "a1" || got.Rows[0].KeyID != "k1" || got.Rows[0].Turns != 2 || got.Rows[0].Day != "" {
		t.Errorf("by agent and key = %+v", got.Rows)
	}
	got = usageResponse{}
	env.do(env.admin, "GET", "/v1/usage?group_by=model&key_id=k2", nil, &got)
	if len(got.Rows) != 1 || got.Rows[0].Model != "scripted/demo" {
		t.Errorf("one key by model = %+v", got.Rows)
	}
	got = usageResponse{}
	env.do(env.admin, "GET", "/v1/usage?group_by=tenant&tenant=*", nil, &got)
	if len(got.Rows) != 2 || got.Rows[0].Tenant+got.Rows[1].Tenant != "otherdefault" && got.Rows[0].Tenant+got.Rows[1].Tenant != "defaultother" {
		t.Errorf("all tenants = %+v", got.Rows)
	}
	env.wantError(env.do(env.admin, "GET", "/v1/usage?group_by=color", nil, nil), 400, CodeInvalidRequest)
	env.wantError(env.do(env.admin, "GET", "/v1/usage?from=yesterday", nil, nil), 400, CodeInvalidRequest)
	env.wantError(env.do(env.admin, "GET", "/v1/usage?from=2020-01-01&to=2026-01-01", nil, nil), 400, CodeInvalidRequest)

	// A tenant's key reads its own tenant only.
	var key keyResponse
	env.do(env.admin, "POST", "/v1/api-keys", map[string]any{"name": "t", "tenant": "acme"}, &key)
	env.wantError(env.do(key.Key, "GET", "/v1/usage?tenant=*", nil, nil), 403, CodeForbidden)
	got = usageResponse{}
	env.do(key.Key, "GET", "/v1/usage", nil, &got)
	if len(got.Rows) != 0 || got.Total.Turns != 0 {
		t.Errorf("another tenant sees %+v", got)
	}
}

func TestBudgetsAPI(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	acc := env.srv.accounting
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	acc.now = func() time.Time { return now }
	var key keyResponse
	env.do(env.admin, "POST", "/v1/api-keys", map[string]any{"name": "spender", "tenant": "acme"}, &key)
	acme, _ := env.srv.meta.TenantByName(ctx, "acme")

	env.wantError(env.do(key.Key, "PUT", "/v1/budgets", map[string]any{"period": "day", "max_tokens": 10}, nil), 403, CodeForbidden)
	env.wantError(env.do(env.admin, "PUT", "/v1/budgets", map[string]any{"period": "week", "max_tokens": 10}, nil), 400, CodeInvalidRequest)
	env.wantError(env.do(env.admin, "PUT", "/v1/budgets", map[string]any{"period": "day"}, nil), 400, CodeInvalidRequest)
	env.wantError(env.do(env.admin, "PUT", "/v1/budgets", map[string]any{"tenant": "acme", "key_id": "key_nope", "period": "day", "max_tokens": 1}, nil), 404, CodeNotFound)

	var b budgetResponse
	resp := env.do(env.admin, "PUT", "/v1/budgets", map[string]any{"tenant": "acme", "key_id": key.ID, "period": "day", "max_tokens": 100}, &b)
	if resp.StatusCode != 200 || b.ID == "" || b.Tenant != "acme" || b.Exceeded || !b.Renews.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("put budget: %d %+v", resp.StatusCode, b)
	}
	var tb budgetResponse
	env.do(env.admin, "PUT", "/v1/budgets", map[string]any{"tenant": "acme", "period": "month", "max_cost_usd": 0.5}, &tb)

	if e := acc.check(ctx, acme.ID, key.ID); e != nil {
		t.Fatalf("fresh budget refused: %v", e)
	}
	acc.store.AddUsage(ctx, meta.Usage{TenantID: acme.ID, Day: "2026-12-02", AgentID: "a", KeyID: key.ID, Model: "m", Turns: 1, PromptTokens: 60, CompletionTokens: 40})
	e := acc.check(ctx, acme.ID, key.ID)
	if e == nil || e.Status != http.StatusTooManyRequests || e.Code != CodeBudgetExceeded || e.retryAfter != 12*3600 {
		t.Fatalf("spent key budget: %+v", e)
	}
	// Another key of the tenant is not limited by that key's budget...
	if e := acc.check(ctx, acme.ID, "key_other"); e != nil {
		t.Fatalf("other key refused: %v", e)
	}
	// ...but by the tenant's monthly money, counted from the 1st.
	acc.store.AddUsage(ctx, meta.Usage{TenantID: acme.ID, Day: "2026-12-01", AgentID: "a", KeyID: "key_other", Model: "m", Turns: 1, CostNanos: 500_000_000})
	acc.budgets.invalidate(acme.ID, "")
	if e := acc.check(ctx, acme.ID, "key_other"); e == nil || e.Code != CodeBudgetExceeded {
		t.Fatalf("spent tenant budget: %+v", e)
	}
	var list []budgetResponse
	env.do(env.admin, "GET", "/v1/budgets?tenant=acme", nil, &list)
	if len(list) != 2 || !list[0].Exceeded || list[0].CostUSD != 0.5 || list[1].Tokens != 100 {
		t.Errorf("budgets = %+v", list)
	}
	// The tenant's own key reads them too, but no other tenant's.
	env.do(key.Key, "GET", "/v1/budgets", nil, &list)
	if len(list) != 2 {
		t.Errorf("own budgets = %+v", list)
	}
	env.wantError(env.do(key.Key, "GET", "/v1/budgets?tenant=default", nil, nil), 403, CodeForbidden)
	if resp := env.do(env.admin, "DELETE", "/v1/budgets/"+tb.ID+"?tenant=acme", nil, nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	env.wantError(env.do(env.admin, "DELETE", "/v1/budgets/"+tb.ID+"?tenant=acme", nil, nil), 404, CodeNotFound)
	if e := acc.check(ctx, acme.ID, "key_other"); e != nil {
		t.Fatalf("deleted budget still refuses: %v", e)
	}
}
