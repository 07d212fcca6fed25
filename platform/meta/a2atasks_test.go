package meta

import (
	"context"
	"errors"
	"strings"
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

// TestListA2ATasks: an agent's tasks, newest first, filtered by context,
// state (an unfinished task past its stale time in the lost state) and
// update time, in pages through the cursor; the count ignores the cursor.
func TestListA2ATasks(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := st.(*SQL)
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Microsecond)
			put := func(id, agent, ctxID, state string, final bool, updated, stale time.Time) {
				t.Helper()
				err := s.PutA2ATask(ctx, A2ATask{TenantID: "t1", ID: id, AgentID: agent, ContextID: ctxID, State: state, Final: final, Owner: "weft_a",
					Data: []byte(`{"id":"` + id + `"}`), CreatedAt: updated, UpdatedAt: updated, StaleAt: stale})
				if err != nil {
					t.Fatal(err)
				}
			}
			later := now.Add(time.Hour)
			put("a", "ag1", "c1", "completed", true, now.Add(-4*time.Second), now)
			put("b", "ag1", "c1", "working", false, now.Add(-3*time.Second), later)
			put("c", "ag1", "c2", "working", false, now.Add(-2*time.Second), now.Add(-time.Second)) // lost
			put("d", "ag1", "c2", "failed", true, now.Add(-time.Second), now)
			put("e", "ag1", "c2", "completed", true, now.Add(-time.Second), now) // ties d: by id
			put("x", "ag2", "c1", "completed", true, now, now)
			if err := s.PutA2ATask(ctx, A2ATask{TenantID: "t2", ID: "y", AgentID: "ag1", ContextID: "c1", State: "completed", Final: true,
				CreatedAt: now, UpdatedAt: now, StaleAt: now}); err != nil {
				t.Fatal(err)
			}
			list := func(q A2ATaskQuery) (string, int) {
				t.Helper()
				q.TenantID, q.AgentID, q.Lost, q.Now = "t1", "ag1", "failed", now
				if q.Limit == 0 {
					q.Limit = 10
				}
				got, total, err := s.ListA2ATasks(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, g := range got {
					if g.TenantID != "t1" || g.AgentID != "ag1" || string(g.Data) != `{"id":"`+g.ID+`"}` {
						t.Fatalf("task %+v", g)
					}
					ids = append(ids, g.ID)
				}
				return strings.Join(ids, ","), total
			}
			for _, c := range []struct {
				q     A2ATaskQuery
				ids   string
				total int
			}{
				{A2ATaskQuery{}, "e,d,c,b,a", 5},
				{A2ATaskQuery{ContextID: "c1"}, "b,a", 2},
				{A2ATaskQuery{State: "working"}, "b", 1},
				{A2ATaskQuery{State: "failed"}, "d,c", 2},
				{A2ATaskQuery{State: "completed", ContextID: "c2"}, "e", 1},
				{A2ATaskQuery{UpdatedSince: now.Add(-2 * time.Second)}, "e,d,c", 3},
				{A2ATaskQuery{Limit: 2}, "e,d", 5},
				{A2ATaskQuery{Limit: 2, AfterUpdated: now.Add(-time.Second), AfterID: "d"}, "c,b", 5},
				{A2ATaskQuery{Limit: 2, AfterUpdated: now.Add(-3 * time.Second), AfterID: "b"}, "a", 5},
				{A2ATaskQuery{ContextID: "c3"}, "", 0},
			} {
				if ids, total := list(c.q); ids != c.ids || total != c.total {
					t.Errorf("%+v: %q (%d), want %q (%d)", c.q, ids, total, c.ids, c.total)
				}
			}
		})
	}
}
