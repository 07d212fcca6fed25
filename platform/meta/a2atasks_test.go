package meta

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestA2ATasks(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) { runA2ATaskContract(t, st.(*SQL)) })
	}
}

func runA2ATaskContract(t *testing.T, s *SQL) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	put := func(task A2ATask) {
		t.Helper()
		if err := s.PutA2ATask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	get := func(tenant, id string) A2ATask {
		t.Helper()
		got, err := s.A2ATask(ctx, tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	task := A2ATask{TenantID: "t1", ID: "task1", AgentID: "a1", ContextID: "ses1", State: "submitted", Owner: "weft_a",
		Data: []byte(`{"id":"task1"}`), CreatedAt: now, UpdatedAt: now, StaleAt: now.Add(time.Hour)}
	put(task)
	if got := get("t1", "task1"); got.AgentID != "a1" || got.ContextID != "ses1" || got.State != "submitted" || got.Final || got.Owner != "weft_a" ||
		string(got.Data) != `{"id":"task1"}` || !got.CreatedAt.Equal(now) || !got.StaleAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("stored task = %+v", got)
	}
	// Another tenant does not see it.
	if _, err := s.A2ATask(ctx, "t2", "task1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another tenant's task: %v", err)
	}
	// A change of state replaces it, keeping its creation time.
	task.State, task.UpdatedAt, task.CreatedAt = "working", now.Add(time.Second), now.Add(time.Minute)
	put(task)
	if got := get("t1", "task1"); got.State != "working" || !got.CreatedAt.Equal(now) || !got.UpdatedAt.Equal(now.Add(time.Second)) {
		t.Fatalf("working task = %+v", got)
	}
	// A cancel made elsewhere finishes it once; the owner's late write of
	// an unfinished state does not undo it, its final write does.
	cancel := A2ATask{TenantID: "t1", ID: "task1", State: "canceled", Data: []byte(`{"canceled":true}`), UpdatedAt: now.Add(2 * time.Second)}
	if ok, err := s.FinishA2ATask(ctx, cancel); !ok || err != nil {
		t.Fatalf("FinishA2ATask = %v, %v", ok, err)
	}
	if ok, err := s.FinishA2ATask(ctx, cancel); ok || err != nil {
		t.Fatalf("second FinishA2ATask = %v, %v; want false", ok, err)
	}
	if ok, _ := s.FinishA2ATask(ctx, A2ATask{TenantID: "t2", ID: "task1", State: "canceled"}); ok {
		t.Fatal("another tenant finished the task")
	}
	put(task) // working again: ignored
	if got := get("t1", "task1"); got.State != "canceled" || !got.Final || got.Owner != "weft_a" || string(got.Data) != `{"canceled":true}` {
		t.Fatalf("after a late unfinished write = %+v", got)
	}
	task.State, task.Final, task.UpdatedAt = "canceled", true, now.Add(3*time.Second)
	put(task)
	if got := get("t1", "task1"); got.State != "canceled" || string(got.Data) != `{"id":"task1"}` {
		t.Fatalf("after the owner's final write = %+v", got)
	}
	// Pruned by age of the last update.
	put(A2ATask{TenantID: "t1", ID: "old", AgentID: "a1", ContextID: "ses1", State: "completed", Final: true, Owner: "weft_a",
		CreatedAt: now.Add(-48 * time.Hour), UpdatedAt: now.Add(-48 * time.Hour), StaleAt: now})
	if n, err := s.PruneA2ATasks(ctx, now.Add(-time.Hour)); n != 1 || err != nil {
		t.Fatalf("PruneA2ATasks = %d, %v; want 1", n, err)
	}
	if _, err := s.A2ATask(ctx, "t1", "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("pruned task: %v", err)
	}
	get("t1", "task1")
}
