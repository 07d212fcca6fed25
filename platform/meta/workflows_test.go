package meta

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWorkflows: workflows are versioned and tenant-scoped; a run is owned
// by one owner at a time through its lease, taken over once the lease
// expired, and only its owner saves checkpoints, never overwriting one.
func TestWorkflows(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := st.(*SQL)
			ctx := context.Background()
			t0 := time.Now().UTC().Truncate(time.Microsecond)
			w := Workflow{ID: "wf1", TenantID: "t1", Name: "triage", Definition: json.RawMessage(`{"nodes":[1]}`), CreatedAt: t0, UpdatedAt: t0}
			if err := s.CreateWorkflow(ctx, w); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateWorkflow(ctx, Workflow{ID: "wf2", TenantID: "t1", Name: "triage", CreatedAt: t0, UpdatedAt: t0}); !errors.Is(err, ErrConflict) {
				t.Fatalf("duplicate name: %v, want ErrConflict", err)
			}
			if err := s.CreateWorkflow(ctx, Workflow{ID: "wf1", TenantID: "t2", Name: "triage", CreatedAt: t0, UpdatedAt: t0}); err != nil {
				t.Fatalf("same id and name in another tenant: %v", err)
			}
			w.Name, w.Definition, w.Version, w.UpdatedAt = "triage2", json.RawMessage(`{"nodes":[2]}`), 1, t0.Add(time.Second)
			up, err := s.UpdateWorkflow(ctx, w)
			if err != nil || up.Version != 2 || !up.CreatedAt.Equal(t0) {
				t.Fatalf("update = %+v, %v", up, err)
			}
			if _, err := s.UpdateWorkflow(ctx, w); !errors.Is(err, ErrConflict) {
				t.Fatalf("update of a stale version: %v, want ErrConflict", err)
			}
			got, err := s.WorkflowByName(ctx, "t1", "triage2")
			if err != nil || got.Version != 2 || string(got.Definition) != `{"nodes":[2]}` {
				t.Fatalf("by name = %+v, %v", got, err)
			}
			v1, err := s.WorkflowVersion(ctx, "t1", "wf1", 1)
			if err != nil || string(v1.Definition) != `{"nodes":[1]}` || v1.Version != 1 {
				t.Fatalf("version 1 = %+v, %v", v1, err)
			}
			if _, err := s.Workflow(ctx, "t3", "wf1"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("another tenant's workflow: %v", err)
			}
			if l, err := s.ListWorkflows(ctx, "t1"); err != nil || len(l) != 1 || l[0].Name != "triage2" {
				t.Fatalf("list = %+v, %v", l, err)
			}

			run := WorkflowRun{ID: "run1", TenantID: "t1", WorkflowID: "wf1", Version: 2, KeyID: "key1", Status: RunQueued,
				Inputs: json.RawMessage(`{"q":"hi"}`), CreatedAt: t0}
			if err := s.CreateWorkflowRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			if exp, err := s.ExpiredWorkflowRuns(ctx, t0, 10); err != nil || len(exp) != 1 || exp[0].TenantID != "t1" || exp[0].KeyID != "key1" {
				t.Fatalf("expired = %+v, %v", exp, err)
			}
			// Two owners race for the run: exactly one wins.
			var wg sync.WaitGroup
			wins := make(chan string, 2)
			for _, owner := range []string{"A", "B"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, ok, err := s.ClaimWorkflowRun(ctx, "t1", "run1", owner, t0, t0.Add(time.Minute))
					if err != nil {
						t.Error(err)
					}
					if ok {
						if r.Status != RunRunning || r.StartedAt.IsZero() {
							t.Errorf("claimed run %+v", r)
						}
						wins <- owner
					}
				}()
			}
			wg.Wait()
			close(wins)
			var winners []string
			for o := range wins {
				winners = append(winners, o)
			}
			if len(winners) != 1 {
				t.Fatalf("winners %v, want one", winners)
			}
			owner, other := winners[0], "A"
			if owner == "A" {
				other = "B"
			}
			cp := WorkflowCheckpoint{Key: "n1", NodeID: "n1", Outputs: json.RawMessage(`{"x":1}`), StartedAt: t0, FinishedAt: t0}
			if err := s.SaveWorkflowCheckpoint(ctx, "t1", "run1", other, cp); !errors.Is(err, ErrConflict) {
				t.Fatalf("checkpoint by a non-owner: %v, want ErrConflict", err)
			}
			if err := s.SaveWorkflowCheckpoint(ctx, "t1", "run1", owner, cp); err != nil {
				t.Fatal(err)
			}
			cp2 := cp
			cp2.Outputs = json.RawMessage(`{"x":2}`)
			if err := s.SaveWorkflowCheckpoint(ctx, "t1", "run1", owner, cp2); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveWorkflowCheckpoint(ctx, "t1", "run1", owner, WorkflowCheckpoint{Key: "n2", NodeID: "n2", Error: "boom"}); err != nil {
				t.Fatal(err)
			}
			if err := s.SetWorkflowCheckpointInputs(ctx, "t1", "run1", "n1", json.RawMessage(`{"in":1}`)); err != nil {
				t.Fatal(err)
			}
			cps, err := s.WorkflowCheckpoints(ctx, "t1", "run1")
			if err != nil || len(cps) != 2 || cps[0].Key != "n1" || string(cps[0].Outputs) != `{"x":2}` || string(cps[0].Inputs) != `{"in":1}` ||
				cps[1].Error != "boom" || !cps[1].StartedAt.IsZero() || !cps[1].FinishedAt.IsZero() {
				t.Fatalf("checkpoints = %+v, %v", cps, err)
			}
			if cps, _ := s.WorkflowCheckpoints(ctx, "t2", "run1"); len(cps) != 0 {
				t.Fatalf("another tenant sees checkpoints: %+v", cps)
			}
			if held, cancel, err := s.RenewWorkflowRun(ctx, "t1", "run1", owner, t0.Add(2*time.Minute)); !held || cancel || err != nil {
				t.Fatalf("renew = %v, %v, %v", held, cancel, err)
			}
			if exp, _ := s.ExpiredWorkflowRuns(ctx, t0.Add(time.Minute), 10); len(exp) != 0 {
				t.Fatalf("a leased run is expired: %+v", exp)
			}
			// The lease expires: the other owner takes over, the first loses it.
			if _, ok, _ := s.ClaimWorkflowRun(ctx, "t1", "run1", other, t0.Add(time.Minute), t0.Add(3*time.Minute)); ok {
				t.Fatal("claimed before the lease expired")
			}
			if _, ok, err := s.ClaimWorkflowRun(ctx, "t1", "run1", other, t0.Add(3*time.Minute), t0.Add(4*time.Minute)); !ok || err != nil {
				t.Fatalf("takeover = %v, %v", ok, err)
			}
			if held, _, _ := s.RenewWorkflowRun(ctx, "t1", "run1", owner, t0.Add(5*time.Minute)); held {
				t.Fatal("the old owner still renews")
			}
			if ok, _ := s.FinishWorkflowRun(ctx, WorkflowRun{TenantID: "t1", ID: "run1", Status: RunSucceeded, FinishedAt: t0}, owner); ok {
				t.Fatal("the old owner finished the run")
			}
			// A cancel is seen by the owner at its next renewal.
			if r, err := s.CancelWorkflowRun(ctx, "t1", "run1", t0.Add(3*time.Minute)); err != nil || !r.CancelRequested || r.Status != RunRunning {
				t.Fatalf("cancel = %+v, %v", r, err)
			}
			if held, cancel, _ := s.RenewWorkflowRun(ctx, "t1", "run1", other, t0.Add(4*time.Minute)); !held || !cancel {
				t.Fatalf("renew after cancel = %v, %v", held, cancel)
			}
			fin := WorkflowRun{TenantID: "t1", ID: "run1", Status: RunSucceeded, Outputs: json.RawMessage(`{"a":1}`), FinishedAt: t0.Add(4 * time.Minute)}
			if ok, err := s.FinishWorkflowRun(ctx, fin, other); !ok || err != nil {
				t.Fatalf("finish = %v, %v", ok, err)
			}
			r, err := s.WorkflowRun(ctx, "t1", "run1")
			if err != nil || r.Status != RunSucceeded || string(r.Outputs) != `{"a":1}` || r.Owner != "" || r.Active() {
				t.Fatalf("finished run = %+v, %v", r, err)
			}
			if _, ok, _ := s.ClaimWorkflowRun(ctx, "t1", "run1", "C", t0.Add(time.Hour), t0.Add(2*time.Hour)); ok {
				t.Fatal("claimed a finished run")
			}
			if err := s.SaveWorkflowCheckpoint(ctx, "t1", "run1", other, WorkflowCheckpoint{Key: "n3"}); !errors.Is(err, ErrConflict) {
				t.Fatalf("checkpoint of a finished run: %v", err)
			}

			// A run whose owner died is cancelled at once; a reset lease of
			// an embedded store's previous process is expired.
			dead := WorkflowRun{ID: "run2", TenantID: "t1", WorkflowID: "wf1", Version: 2, Status: RunRunning, Owner: "D", LeaseUntil: t0.Add(time.Minute), CreatedAt: t0.Add(time.Second)}
			if err := s.CreateWorkflowRun(ctx, dead); err != nil {
				t.Fatal(err)
			}
			if err := s.ResetWorkflowLeases(ctx, "D"); err != nil {
				t.Fatal(err)
			}
			if exp, _ := s.ExpiredWorkflowRuns(ctx, t0, 10); len(exp) != 1 || exp[0].ID != "run2" {
				t.Fatalf("expired after reset = %+v", exp)
			}
			if r, err := s.CancelWorkflowRun(ctx, "t1", "run2", t0); err != nil || r.Status != RunCancelled || r.FinishedAt.IsZero() {
				t.Fatalf("cancel of an orphan run = %+v, %v", r, err)
			}
			runs, err := s.ListWorkflowRuns(ctx, "t1", "wf1", 10)
			if err != nil || len(runs) != 2 || runs[0].ID != "run2" {
				t.Fatalf("runs = %+v, %v", runs, err)
			}
			if err := s.DeleteWorkflow(ctx, "t1", "wf1"); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteWorkflow(ctx, "t1", "wf1"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("delete twice: %v", err)
			}
			if _, err := s.WorkflowRun(ctx, "t1", "run1"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a deleted workflow's run: %v", err)
			}
			if _, err := s.Workflow(ctx, "t2", "wf1"); err != nil {
				t.Fatalf("another tenant's workflow of the same id went: %v", err)
			}
		})
	}
}

// TestCheckpointSeqIndexed: saving a checkpoint reads the run's largest
// seq through an index, not by reading every checkpoint of the run (which
// made a run's checkpoints cost the square of its nodes).
func TestCheckpointSeqIndexed(t *testing.T) {
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.db.Query(`EXPLAIN QUERY PLAN `+qCheckpointSeq, "t", "r")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if got := strings.Join(plan, "; "); !strings.Contains(got, "COVERING INDEX workflow_checkpoints_seq") {
		t.Fatalf("plan %q", got)
	}
}

// TestWorkflowRunWaiting: a run its owner makes wait holds no lease and is
// not taken over; its open questions are listed for its tenant only; of
// concurrent resumes exactly one claims it; it is due once its wake time
// passed; cancelled at once; its questions go with the workflow.
func TestWorkflowRunWaiting(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := st.(*SQL)
			ctx := context.Background()
			t0 := time.Now().UTC().Truncate(time.Microsecond)
			if err := s.CreateWorkflow(ctx, Workflow{ID: "wf1", TenantID: "t1", Name: "ask", CreatedAt: t0, UpdatedAt: t0}); err != nil {
				t.Fatal(err)
			}
			run := WorkflowRun{ID: "run1", TenantID: "t1", WorkflowID: "wf1", Version: 1, KeyID: "k", Status: RunRunning, Owner: "A", LeaseUntil: t0.Add(time.Minute), CreatedAt: t0}
			if err := s.CreateWorkflowRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			q := json.RawMessage(`{"id":"run1:ask","key":"ask"}`)
			for _, cp := range []WorkflowCheckpoint{
				{Key: "start", NodeID: "start", Outputs: json.RawMessage(`{}`), StartedAt: t0, FinishedAt: t0},
				{Key: "ask", NodeID: "ask", StartedAt: t0, Waiting: q},
			} {
				if err := s.SaveWorkflowCheckpoint(ctx, "t1", "run1", "A", cp); err != nil {
					t.Fatal(err)
				}
			}
			if ok, err := s.WaitWorkflowRun(ctx, "t1", "run1", "B", t0.Add(time.Hour)); ok || err != nil {
				t.Fatalf("another owner made the run wait: %v %v", ok, err)
			}
			if ok, err := s.WaitWorkflowRun(ctx, "t1", "run1", "A", t0.Add(time.Hour)); !ok || err != nil {
				t.Fatalf("wait = %v, %v", ok, err)
			}
			r, err := s.WorkflowRun(ctx, "t1", "run1")
			if err != nil || r.Status != RunWaiting || r.Owner != "" || !r.WakeAt.Equal(t0.Add(time.Hour)) || r.Active() {
				t.Fatalf("waiting run = %+v, %v", r, err)
			}
			if exp, _ := s.ExpiredWorkflowRuns(ctx, t0.Add(24*time.Hour), 10); len(exp) != 0 {
				t.Fatalf("a waiting run is taken over: %+v", exp)
			}
			if due, _ := s.DueWorkflowRuns(ctx, t0.Add(time.Minute), 10); len(due) != 0 {
				t.Fatalf("due before its wake time: %+v", due)
			}
			if due, _ := s.DueWorkflowRuns(ctx, t0.Add(2*time.Hour), 10); len(due) != 1 || due[0].ID != "run1" || due[0].TenantID != "t1" {
				t.Fatalf("due after its wake time: %+v", due)
			}
			cps, _ := s.WorkflowCheckpoints(ctx, "t1", "run1")
			if len(cps) != 2 || string(cps[1].Waiting) != string(q) || cps[0].Waiting != nil {
				t.Fatalf("checkpoints %+v", cps)
			}
			open, err := s.OpenInterrupts(ctx, "t1", "", 10)
			if err != nil || len(open) != 1 || open[0].RunID != "run1" || open[0].WorkflowID != "wf1" || string(open[0].Waiting) != string(q) {
				t.Fatalf("open = %+v, %v", open, err)
			}
			if open, _ := s.OpenInterrupts(ctx, "t2", "", 10); len(open) != 0 {
				t.Fatalf("another tenant's open questions: %+v", open)
			}
			if open, _ := s.OpenInterrupts(ctx, "t1", "wf2", 10); len(open) != 0 {
				t.Fatalf("another workflow's open questions: %+v", open)
			}
			if _, ok, _ := s.ResumeWorkflowRun(ctx, "t2", "run1", "C", t0.Add(time.Hour)); ok {
				t.Fatal("another tenant resumed the run")
			}
			// Concurrent resumes: exactly one claims it.
			var wg sync.WaitGroup
			var mu sync.Mutex
			var won []string
			for _, owner := range []string{"A", "B", "C", "D"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, ok, err := s.ResumeWorkflowRun(ctx, "t1", "run1", owner, t0.Add(time.Hour)); ok && err == nil {
						mu.Lock()
						won = append(won, owner)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(won) != 1 {
				t.Fatalf("resumed by %v", won)
			}
			r, _ = s.WorkflowRun(ctx, "t1", "run1")
			if r.Status != RunRunning || r.Owner != won[0] || !r.WakeAt.IsZero() {
				t.Fatalf("resumed run = %+v", r)
			}
			if open, _ := s.OpenInterrupts(ctx, "t1", "", 10); len(open) != 0 {
				t.Fatalf("a running run's questions in the inbox: %+v", open)
			}
			// Waiting again, then cancelled at once.
			if ok, _ := s.WaitWorkflowRun(ctx, "t1", "run1", won[0], time.Time{}); !ok {
				t.Fatal("wait again")
			}
			if due, _ := s.DueWorkflowRuns(ctx, t0.Add(48*time.Hour), 10); len(due) != 0 {
				t.Fatalf("a run without a deadline is due: %+v", due)
			}
			if r, err := s.CancelWorkflowRun(ctx, "t1", "run1", t0); err != nil || r.Status != RunCancelled {
				t.Fatalf("cancel = %+v, %v", r, err)
			}
			if open, _ := s.OpenInterrupts(ctx, "t1", "", 10); len(open) != 0 {
				t.Fatalf("a cancelled run's questions: %+v", open)
			}
			if err := s.DeleteWorkflow(ctx, "t1", "wf1"); err != nil {
				t.Fatal(err)
			}
			if cps, _ := s.WorkflowCheckpoints(ctx, "t1", "run1"); len(cps) != 0 {
				t.Fatalf("checkpoints outlived the run: %+v", cps)
			}
		})
	}
}
