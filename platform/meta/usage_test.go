package meta

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestUsageBudgetsTraces(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) { runUsageContract(t, st.(*SQL)) })
	}
}

func runUsageContract(t *testing.T, s *SQL) {
	ctx := context.Background()
	add := func(u Usage) {
		t.Helper()
		u.Turns = 1
		if err := s.AddUsage(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	add(Usage{TenantID: "t1", Day: "2026-11-30", AgentID: "a1", KeyID: "k1", Model: "m", PromptTokens: 10, CompletionTokens: 5, CostNanos: 100})
	add(Usage{TenantID: "t1", Day: "2026-12-01", AgentID: "a1", KeyID: "k1", Model: "m", PromptTokens: 20, CompletionTokens: 5, CostNanos: 200})
	add(Usage{TenantID: "t1", Day: "2026-12-01", AgentID: "a1", KeyID: "k1", Model: "m", PromptTokens: 1, CompletionTokens: 1, CostNanos: 1})
	add(Usage{TenantID: "t1", Day: "2026-12-01", AgentID: "a2", KeyID: "k2", Model: "m", PromptTokens: 7, CompletionTokens: 3, CostNanos: 50})
	add(Usage{TenantID: "t2", Day: "2026-12-01", AgentID: "b1", KeyID: "k3", Model: "m", PromptTokens: 1000, CompletionTokens: 1000, CostNanos: 9999})

	got, err := s.QueryUsage(ctx, UsageQuery{TenantID: "t1", GroupBy: []string{"day", "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Usage{
		{Day: "2026-11-30", AgentID: "a1", Turns: 1, PromptTokens: 10, CompletionTokens: 5, CostNanos: 100},
		{Day: "2026-12-01", AgentID: "a1", Turns: 2, PromptTokens: 21, CompletionTokens: 6, CostNanos: 201},
		{Day: "2026-12-01", AgentID: "a2", Turns: 1, PromptTokens: 7, CompletionTokens: 3, CostNanos: 50},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("by day and agent:\n got %+v\nwant %+v", got, want)
	}
	got, _ = s.QueryUsage(ctx, UsageQuery{TenantID: "t1", From: "2026-12-01", To: "2026-12-01", KeyID: "k1"})
	if want := []Usage{{Turns: 2, PromptTokens: 21, CompletionTokens: 6, CostNanos: 201}}; !reflect.DeepEqual(got, want) {
		t.Errorf("one key, one day = %+v, want %+v", got, want)
	}
	got, _ = s.QueryUsage(ctx, UsageQuery{GroupBy: []string{"tenant"}})
	if len(got) != 2 || got[0].TenantID != "t1" || got[1].TenantID != "t2" || got[1].CostNanos != 9999 {
		t.Errorf("by tenant = %+v", got)
	}
	got, _ = s.QueryUsage(ctx, UsageQuery{TenantID: "nobody"})
	if len(got) != 0 {
		t.Errorf("a tenant without usage = %+v, want no row", got)
	}
	if _, err := s.QueryUsage(ctx, UsageQuery{GroupBy: []string{"day; DROP TABLE x"}}); err == nil {
		t.Error("unknown dimension accepted")
	}
	tok, cost, err := s.UsageSince(ctx, "t1", "", "2026-12-01")
	if err != nil || tok != 37 || cost != 251 {
		t.Errorf("tenant since = %d, %d, %v; want 37, 251", tok, cost, err)
	}
	tok, cost, _ = s.UsageSince(ctx, "t1", "k2", "2026-11-01")
	if tok != 10 || cost != 50 {
		t.Errorf("key since = %d, %d; want 10, 50", tok, cost)
	}

	// Budgets: one per tenant, key and period; a put replaces the limits.
	now := time.Now().UTC().Truncate(time.Microsecond)
	b, err := s.PutBudget(ctx, Budget{ID: "bud_1", TenantID: "t1", Period: "day", MaxTokens: 100, CreatedAt: now, UpdatedAt: now})
	if err != nil || b.ID != "bud_1" {
		t.Fatalf("PutBudget = %+v, %v", b, err)
	}
	b, err = s.PutBudget(ctx, Budget{ID: "bud_2", TenantID: "t1", Period: "day", MaxCostNanos: 5, CreatedAt: now.Add(time.Second), UpdatedAt: now.Add(time.Second)})
	if err != nil || b.ID != "bud_1" || !b.CreatedAt.Equal(now) {
		t.Fatalf("PutBudget again = %+v, %v; want bud_1 kept", b, err)
	}
	if _, err := s.PutBudget(ctx, Budget{ID: "bud_3", TenantID: "t1", KeyID: "k1", Period: "month", MaxTokens: 7, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	bs, err := s.Budgets(ctx, "t1")
	if err != nil || len(bs) != 2 || bs[0].ID != "bud_1" || bs[0].MaxTokens != 0 || bs[0].MaxCostNanos != 5 || bs[1].KeyID != "k1" {
		t.Fatalf("Budgets = %+v, %v", bs, err)
	}
	if bs, _ := s.Budgets(ctx, "t2"); len(bs) != 0 {
		t.Errorf("another tenant's budgets = %+v", bs)
	}
	if err := s.DeleteBudget(ctx, "t2", "bud_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete another tenant's budget: %v", err)
	}
	if err := s.DeleteBudget(ctx, "t1", "bud_1"); err != nil {
		t.Error(err)
	}

	// Traces: by tenant, session and message; pruned by age.
	old := TurnTrace{TenantID: "t1", SessionID: "s1", MessageID: "m1", AgentID: "a1", CreatedAt: now.Add(-48 * time.Hour), Data: []byte(`{"a":1}`)}
	recent := TurnTrace{TenantID: "t1", SessionID: "s1", MessageID: "m2", AgentID: "a1", CreatedAt: now, Data: []byte(`{"b":2}`)}
	for _, tr := range []TurnTrace{old, recent} {
		if err := s.PutTrace(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := s.Trace(ctx, "t1", "s1", "m2")
	if err != nil || string(tr.Data) != `{"b":2}` || tr.AgentID != "a1" || !tr.CreatedAt.Equal(now) {
		t.Fatalf("Trace = %+v, %v", tr, err)
	}
	if _, err := s.Trace(ctx, "t2", "s1", "m2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another tenant's trace: %v", err)
	}
	n, err := s.PruneTraces(ctx, now.Add(-time.Hour))
	if err != nil || n != 1 {
		t.Errorf("PruneTraces = %d, %v; want 1", n, err)
	}
	if _, err := s.Trace(ctx, "t1", "s1", "m1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("pruned trace: %v", err)
	}
}
