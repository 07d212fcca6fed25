package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/workflow"
)

// Durable workflow runs. A run is a row of the metadata store owned by one
// server instance through a lease (Config.Instance until now + lease)
// that the owner renews while the run goes on; each finished node's outputs
// are checkpointed under that lease. When an owner dies, its lease expires
// and any replica (the same one after a restart) claims the run and
// resumes it from its checkpoints: finished nodes are not run again. A
// cancel is a flag on the row that the owner sees when it renews (at once
// when the cancel reaches the owning replica).

// DefaultWorkflowLease is how long a run's owner holds it without renewing.
const DefaultWorkflowLease = 30 * time.Second

// Errors that stop a run's execution on this replica.
var (
	errRunCancelled = errors.New("the run was cancelled")
	errLeaseLost    = errors.New("the run's lease was lost to another replica")
	errRunShutdown  = errors.New("the server is shutting down")
)

// runEvent is one event of a run's stream: its SSE name and data.
type runEvent struct {
	name string
	data any
}

// runFeed passes a run's events to the request that started it, never
// blocking the run: events queue until read.
type runFeed struct {
	mu     sync.Mutex
	events []runEvent
	done   bool
	notify chan struct{} // closed and replaced at every change
}

func newRunFeed() *runFeed { return &runFeed{notify: make(chan struct{})} }

func (f *runFeed) publish(e runEvent) {
	if f == nil {
		return
	}
	f.mu.Lock()
	if !f.done {
		f.events = append(f.events, e)
		close(f.notify)
		f.notify = make(chan struct{})
	}
	f.mu.Unlock()
}

func (f *runFeed) close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	if !f.done {
		f.done = true
		close(f.notify)
	}
	f.mu.Unlock()
}

// next returns the events from index i on, whether the feed ended, and a
// channel closed at the next change.
func (f *runFeed) next(i int) ([]runEvent, bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.events[i:], f.done, f.notify
}

// wait returns the feed's events once it has ended, or ctx's error.
func (f *runFeed) wait(ctx context.Context) ([]runEvent, error) {
	for {
		evs, done, ch := f.next(0)
		if done {
			return evs, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// liveRun is a run this replica executes.
type liveRun struct {
	cancel context.CancelCauseFunc
	feed   *runFeed
	done   chan struct{}
}

// workflowRunner executes the runs this replica owns and takes over the
// runs whose owner died.
type workflowRunner struct {
	s     *Server
	store workflowStore
	owner string
	lease time.Duration

	mu   sync.Mutex
	live map[string]*liveRun // by tenant + "\x00" + run id
	// perTenant counts the live runs of each tenant, at most maxPerTenant
	// (WorkflowLimits.Runs) started by requests.
	perTenant    map[string]int
	maxPerTenant int
	closing      bool
	stop         chan struct{}
	wg           sync.WaitGroup
}

func newWorkflowRunner(s *Server, store workflowStore) *workflowRunner {
	lease := s.cfg.WorkflowLease
	if lease <= 0 {
		lease = DefaultWorkflowLease
	}
	return &workflowRunner{s: s, store: store, owner: s.cfg.Instance, lease: lease, live: map[string]*liveRun{}, perTenant: map[string]int{},
		maxPerTenant: s.cfg.WorkflowLimits.withDefaults().Runs, stop: make(chan struct{})}
}

// start drops the leases this instance held in a previous process (it is
// the same instance, so they are a dead process's) and starts the loop
// that takes over runs whose lease expired.
func (wr *workflowRunner) start() {
	wr.wg.Add(1)
	go func() {
		defer wr.wg.Done()
		ctx := context.Background()
		if err := wr.store.ResetWorkflowLeases(ctx, wr.owner); err != nil {
			wr.s.log.Error("workflow runs: reset leases", "err", err)
		}
		t := time.NewTicker(wr.lease / 2)
		defer t.Stop()
		for {
			wr.takeOver(ctx)
			select {
			case <-wr.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// takeOver claims and resumes the runs whose lease expired.
func (wr *workflowRunner) takeOver(ctx context.Context) {
	now := time.Now().UTC()
	runs, err := wr.store.ExpiredWorkflowRuns(ctx, now, 100)
	if err != nil {
		wr.s.log.Error("workflow runs: list expired", "err", err)
		return
	}
	for _, r := range runs {
		claimed, ok, err := wr.store.ClaimWorkflowRun(ctx, r.TenantID, r.ID, wr.owner, now, now.Add(wr.lease))
		if err != nil {
			wr.s.log.Error("workflow runs: claim", "run", r.ID, "err", err)
			continue
		}
		if !ok {
			continue
		}
		wr.s.log.Info("workflow run resumed", "run", r.ID, "tenant", r.TenantID, "workflow", r.WorkflowID, "previous_owner", r.Owner)
		wr.launch(claimed, nil, nil)
	}
	// Waiting runs whose question timed out: run again, they take the
	// timeout branch.
	due, err := wr.store.DueWorkflowRuns(ctx, now, 100)
	if err != nil {
		wr.s.log.Error("workflow runs: list due", "err", err)
		return
	}
	for _, r := range due {
		claimed, ok, err := wr.store.ResumeWorkflowRun(ctx, r.TenantID, r.ID, wr.owner, now.Add(wr.lease))
		if err != nil {
			wr.s.log.Error("workflow runs: wake", "run", r.ID, "err", err)
			continue
		}
		if !ok {
			continue
		}
		wr.s.log.Info("workflow run woken: a question timed out", "run", r.ID, "tenant", r.TenantID, "workflow", r.WorkflowID)
		wr.launch(claimed, nil, nil)
	}
}

// launch executes a run this replica holds, in the background; feed, when
// not nil, receives its events; res, when not nil, is the answer it
// resumes with. It reports false when the runner is closing (the run
// stays for another replica or the next start).
func (wr *workflowRunner) launch(run meta.WorkflowRun, feed *runFeed, res *runResume) bool {
	key := run.TenantID + "\x00" + run.ID
	ctx, cancel := context.WithCancelCause(context.Background())
	lr := &liveRun{cancel: cancel, feed: feed, done: make(chan struct{})}
	wr.mu.Lock()
	if wr.closing {
		wr.mu.Unlock()
		cancel(errRunShutdown)
		return false
	}
	if feed != nil && wr.perTenant[run.TenantID] >= wr.maxPerTenant {
		wr.mu.Unlock()
		cancel(nil)
		return false
	}
	if _, dup := wr.live[key]; dup {
		wr.mu.Unlock()
		cancel(nil)
		return false
	}
	wr.live[key] = lr
	wr.perTenant[run.TenantID]++
	wr.wg.Add(1)
	wr.mu.Unlock()
	go func() {
		defer wr.wg.Done()
		defer func() {
			wr.mu.Lock()
			delete(wr.live, key)
			if wr.perTenant[run.TenantID]--; wr.perTenant[run.TenantID] == 0 {
				delete(wr.perTenant, run.TenantID)
			}
			wr.mu.Unlock()
			cancel(nil)
			feed.close()
			close(lr.done)
		}()
		wr.execute(ctx, cancel, run, feed, res)
	}()
	return true
}

// busy reports whether tenant has as many runs going here as it may.
func (wr *workflowRunner) busy(tenant string) bool {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return wr.perTenant[tenant] >= wr.maxPerTenant
}

// cancelLocal cancels a run this replica executes, at once.
func (wr *workflowRunner) cancelLocal(tenant, id string) {
	wr.mu.Lock()
	lr := wr.live[tenant+"\x00"+id]
	wr.mu.Unlock()
	if lr != nil {
		lr.cancel(errRunCancelled)
	}
}

// close stops taking over runs and stops the runs this replica executes,
// without finishing them: their leases expire and the next owner resumes
// them. It waits for them to stop.
func (wr *workflowRunner) close() {
	wr.mu.Lock()
	if wr.closing {
		wr.mu.Unlock()
		return
	}
	wr.closing = true
	close(wr.stop)
	for _, lr := range wr.live {
		lr.cancel(errRunShutdown)
	}
	wr.mu.Unlock()
	wr.wg.Wait()
}

// execute runs a claimed run to its end (or until this replica loses it),
// renewing the lease meanwhile, and records the outcome.
func (wr *workflowRunner) execute(ctx context.Context, cancel context.CancelCauseFunc, run meta.WorkflowRun, feed *runFeed, res *runResume) {
	s := wr.s
	renewDone := make(chan struct{})
	defer close(renewDone)
	go func() {
		t := time.NewTicker(wr.lease / 3)
		defer t.Stop()
		for {
			select {
			case <-renewDone:
				return
			case <-t.C:
			}
			held, cancelled, err := wr.store.RenewWorkflowRun(context.Background(), run.TenantID, run.ID, wr.owner, time.Now().Add(wr.lease))
			switch {
			case err != nil:
				s.log.Warn("workflow run: renew lease", "run", run.ID, "err", err)
			case !held:
				cancel(errLeaseLost)
				return
			case cancelled:
				cancel(errRunCancelled)
			}
		}
	}()
	defer res.accept(errRunShutdown) // when it never got as far as the answer
	outputs, waiting, err := s.execWorkflowRun(ctx, run, feed, res)
	var ae *workflow.AnswerError
	if errors.As(err, &ae) {
		if !errors.Is(ae, workflow.ErrExpired) {
			// Refused: nothing was stored, the run waits as it did.
			if _, err := wr.store.WaitWorkflowRun(context.Background(), run.TenantID, run.ID, wr.owner, res.wake); err != nil {
				s.log.Error("workflow run: wait again", "run", run.ID, "err", err)
			}
			return
		}
		// Too late: the run goes on without the answer, down the timeout
		// branch.
		outputs, waiting, err = s.execWorkflowRun(ctx, run, feed, nil)
	}
	cause := context.Cause(ctx)
	if errors.Is(cause, errLeaseLost) || errors.Is(cause, errRunShutdown) {
		s.log.Info("workflow run stopped on this replica", "run", run.ID, "reason", cause.Error())
		return
	}
	if err == nil && waiting != nil {
		ok, werr := wr.store.WaitWorkflowRun(context.Background(), run.TenantID, run.ID, wr.owner, earliestDeadline(waiting))
		switch {
		case werr != nil:
			s.log.Error("workflow run: wait", "run", run.ID, "err", werr)
		case !ok:
			s.log.Info("workflow run finished elsewhere", "run", run.ID)
		default:
			s.log.Info("workflow run waiting", "run", run.ID, "tenant", run.TenantID, "interrupts", len(waiting))
		}
		return
	}
	fin := meta.WorkflowRun{TenantID: run.TenantID, ID: run.ID, FinishedAt: time.Now().UTC()}
	switch {
	case err == nil:
		fin.Status = meta.RunSucceeded
		fin.Outputs, _ = json.Marshal(outputs)
	case errors.Is(cause, errRunCancelled):
		fin.Status, fin.Error = meta.RunCancelled, "cancelled"
	default:
		fin.Status, fin.Error = meta.RunFailed, err.Error()
	}
	if fin.Status != meta.RunSucceeded {
		e := runErrorJSON(fin.Status, fin.Error)
		feed.publish(runEvent{name: "error", data: e})
	}
	ok, ferr := wr.store.FinishWorkflowRun(context.Background(), fin, wr.owner)
	if ferr != nil {
		s.log.Error("workflow run: finish", "run", run.ID, "err", ferr)
		return
	}
	if !ok {
		s.log.Info("workflow run finished elsewhere", "run", run.ID)
		return
	}
	s.log.Log(context.Background(), slog.LevelInfo, "workflow run finished", "run", run.ID, "tenant", run.TenantID, "status", fin.Status)
}

// runErrorJSON is the data of a run's error event.
func runErrorJSON(status, msg string) map[string]any {
	code := CodeInternal
	switch status {
	case meta.RunCancelled:
		code = CodeCancelled
	case meta.RunFailed:
		code = "workflow_failed"
	}
	return map[string]any{"type": "error", "error": map[string]any{"code": code, "message": msg}}
}

// runRequest is the body of POST /v1/workflows/{id}/runs.
type runRequest struct {
	Inputs map[string]any `json:"inputs"`
	Stream bool           `json:"stream"`
}

// startWorkflowRun: POST /v1/workflows/{id}/runs starts a run of the
// workflow's current version. Blocking, it answers the finished run (with
// its nodes); streaming, the run's events as SSE. The run goes on if the
// client goes away: it is durable, and cancelled only through the cancel
// route.
func (s *Server) startWorkflowRun(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	wf, e := s.workflow(r.Context(), r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	var req runRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	run, feed, e := s.beginRun(r.Context(), p, wf, req.Inputs)
	if e != nil {
		writeError(w, e)
		return
	}
	w.Header().Set("Weft-Run-Id", run.ID)
	if !req.Stream {
		if _, err := feed.wait(r.Context()); err != nil {
			return
		}
		s.writeRun(w, r, run.TenantID, run.ID)
		return
	}
	s.streamFeed(w, r, feed)
}

// beginRun checks inputs against wf's current version, stores a run owned
// by this replica for principal p and starts it.
func (s *Server) beginRun(ctx context.Context, p principal, wf meta.Workflow, inputs map[string]any) (meta.WorkflowRun, *runFeed, *apiError) {
	if inputs == nil {
		inputs = map[string]any{}
	}
	def, err := parseStored(wf)
	if err != nil {
		return meta.WorkflowRun{}, nil, asAPIError(err)
	}
	if e := checkRunInputs(def, inputs); e != nil {
		return meta.WorkflowRun{}, nil, e
	}
	wr := s.workflows
	if wr.busy(p.Tenant) {
		e := errorf(http.StatusTooManyRequests, CodeRateLimited, "this tenant has %d workflow runs going on this server; retry when one ends", wr.maxPerTenant)
		e.retryAfter = 1
		return meta.WorkflowRun{}, nil, e
	}
	in, _ := json.Marshal(inputs)
	now := time.Now().UTC()
	run := meta.WorkflowRun{ID: meta.NewID("run"), TenantID: p.Tenant, WorkflowID: wf.ID, Version: wf.Version, KeyID: p.Key.ID,
		Status: meta.RunRunning, Inputs: in, Owner: wr.owner, LeaseUntil: now.Add(wr.lease), CreatedAt: now, StartedAt: now}
	if err := wr.store.CreateWorkflowRun(ctx, run); err != nil {
		return meta.WorkflowRun{}, nil, asAPIError(err)
	}
	feed := newRunFeed()
	if !wr.launch(run, feed, nil) {
		// Refused after all (closing, or the tenant's last slot taken
		// meanwhile): the run is left for a replica (or this one) to take
		// over once its lease expires.
		return meta.WorkflowRun{}, nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "this server cannot start run %s now; it will be resumed", run.ID)
	}
	return run, feed, nil
}

func toRunJSON(r meta.WorkflowRun) api.WorkflowRun {
	return api.WorkflowRun{ID: r.ID, WorkflowID: r.WorkflowID, Version: r.Version, Status: r.Status, Inputs: r.Inputs, Outputs: r.Outputs,
		Error: r.Error, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
}

func nullJSON(b json.RawMessage) json.RawMessage {
	if string(b) == "null" {
		return nil
	}
	return b
}

// writeRun answers a run with its nodes.
func (s *Server) writeRun(w http.ResponseWriter, r *http.Request, tenant, id string) {
	run, err := s.workflows.store.WorkflowRun(r.Context(), tenant, id)
	if err != nil {
		writeError(w, notFoundOr(err, "run", id))
		return
	}
	cps, err := s.workflows.store.WorkflowCheckpoints(r.Context(), tenant, id)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := toRunJSON(run)
	out.Nodes = make([]api.WorkflowNode, 0, len(cps))
	for _, cp := range cps {
		out.Nodes = append(out.Nodes, api.WorkflowNode{Key: cp.Key, NodeID: cp.NodeID, Inputs: nullJSON(cp.Inputs), Outputs: nullJSON(cp.Outputs),
			Error: cp.Error, Usage: nullJSON(cp.Usage), StartedAt: cp.StartedAt, FinishedAt: cp.FinishedAt})
		if n := &out.Nodes[len(out.Nodes)-1]; !n.StartedAt.IsZero() && !n.FinishedAt.IsZero() {
			n.LatencyMS = n.FinishedAt.Sub(n.StartedAt).Milliseconds()
		}
	}
	if run.Status == meta.RunWaiting || run.Status == meta.RunRunning {
		_, open, err := interruptStates(cps)
		if err != nil {
			writeError(w, asAPIError(err))
			return
		}
		if len(open) > 0 {
			out.Interrupts = interruptsJSON(run.WorkflowID, open)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// listWorkflowRuns: GET /v1/workflows/{id}/runs, newest first (?limit,
// default 50, at most 500).
func (s *Server) listWorkflowRuns(w http.ResponseWriter, r *http.Request) {
	wf, e := s.workflow(r.Context(), r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			e := invalid("query parameter \"limit\": want 1 to 500")
			e.Param = "limit"
			writeError(w, e)
			return
		}
		limit = n
	}
	runs, err := s.workflows.store.ListWorkflowRuns(r.Context(), wf.TenantID, wf.ID, limit)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := make([]api.WorkflowRun, 0, len(runs))
	for _, run := range runs {
		out = append(out, toRunJSON(run))
	}
	writeJSON(w, http.StatusOK, out)
}

// workflowRun returns the caller's run id of workflow ref.
func (s *Server) workflowRun(r *http.Request) (meta.WorkflowRun, *apiError) {
	wf, e := s.workflow(r.Context(), r.PathValue("id"))
	if e != nil {
		return meta.WorkflowRun{}, e
	}
	id := r.PathValue("run")
	run, err := s.workflows.store.WorkflowRun(r.Context(), wf.TenantID, id)
	if err == nil && run.WorkflowID != wf.ID {
		err = meta.ErrNotFound
	}
	if err != nil {
		return run, notFoundOr(err, "run", id)
	}
	return run, nil
}

// getWorkflowRun: GET /v1/workflows/{id}/runs/{run}, with each finished
// node's inputs, outputs, usage and timing.
func (s *Server) getWorkflowRun(w http.ResponseWriter, r *http.Request) {
	run, e := s.workflowRun(r)
	if e != nil {
		writeError(w, e)
		return
	}
	s.writeRun(w, r, run.TenantID, run.ID)
}

// cancelWorkflowRun: POST /v1/workflows/{id}/runs/{run}/cancel. The run
// stops at once on this replica, or within a lease renewal (a third of
// the lease) on another; cancelling a finished run changes nothing.
func (s *Server) cancelWorkflowRun(w http.ResponseWriter, r *http.Request) {
	run, e := s.workflowRun(r)
	if e != nil {
		writeError(w, e)
		return
	}
	got, err := s.workflows.store.CancelWorkflowRun(r.Context(), run.TenantID, run.ID, time.Now().UTC())
	if err != nil {
		writeError(w, notFoundOr(err, "run", run.ID))
		return
	}
	s.workflows.cancelLocal(run.TenantID, run.ID)
	writeJSON(w, http.StatusAccepted, toRunJSON(got))
}

// errRunKey is a resumed run whose key was revoked meanwhile.
func errRunKey(id string) error {
	return fmt.Errorf("the API key that started the run (%s) no longer exists", id)
}
