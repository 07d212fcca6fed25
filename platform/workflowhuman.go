package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/workflow"
)

// A person in the loop, on the platform's workflow runs. A run that
// reaches a human node (or a Go node's workflow.Pause) stops: its
// questions are checkpoints of the run (meta.WorkflowCheckpoint.Waiting),
// the run's status becomes waiting and its lease is dropped, so that no
// replica holds a goroutine, timer or lease for it. An answer
// (POST …/interrupts/{interrupt}/resume) claims the waiting run on the
// replica it reaches — one claim of concurrent answers wins, in the store
// — and runs it again with the answer (workflow.WithAnswer): finished
// nodes are restored, the answered node goes on. A run whose question has
// a deadline is woken by the replicas' take-over loop once it passed, and
// takes the timeout branch.

// resumeWait bounds how long an answer waits for a run that is running
// (a parallel branch still going, another answer being taken) to wait
// again before it is refused with a 409.
const resumeWait = 15 * time.Second

// runResume is an answer a run resumes with.
type runResume struct {
	interrupt string
	node      string
	// answerKey is the key of the answer's checkpoint, whose inputs
	// record who answered.
	answerKey string
	answer    map[string]any
	// keyID and keyName are the API key that answered.
	keyID, keyName string
	// waited is how long the question was open.
	waited time.Duration
	// wake is the run's WakeAt before it was claimed: a refused answer
	// leaves the run waiting as it was.
	wake time.Time

	once     sync.Once
	accepted chan error // receives once
}

func newRunResume() *runResume { return &runResume{accepted: make(chan error, 1)} }

// accept reports whether the answer was taken (nil) or refused; only the
// first report counts. Safe on nil.
func (r *runResume) accept(err error) {
	if r == nil {
		return
	}
	r.once.Do(func() { r.accepted <- err })
}

// eventJSON is the data of the workflow.resumed event: which question was
// answered, by which key, after how long.
func (r *runResume) eventJSON(run meta.WorkflowRun) map[string]any {
	return map[string]any{"type": "workflow.resumed", "run_id": run.ID, "workflow_id": run.WorkflowID, "interrupt_id": r.interrupt,
		"node_id": r.node, "resumed_by": r.keyName, "key_id": r.keyID, "waited_ms": r.waited.Milliseconds()}
}

// record is what the answer's checkpoint records of the answer (its
// inputs in the run's history): who answered, after how long.
func (r *runResume) record() json.RawMessage {
	b, _ := json.Marshal(map[string]any{"resumed_by": r.keyName, "key_id": r.keyID, "waited_ms": r.waited.Milliseconds()})
	return b
}

// resumeRoute is the route that answers interrupt id of a run.
func resumeRoute(workflowID, runID, id string) string {
	return "/v1/workflows/" + workflowID + "/runs/" + runID + "/interrupts/" + url.PathEscape(id) + "/resume"
}

// interruptJSON is a run's open question as the API shows it.
func interruptJSON(workflowID string, in workflow.Interrupt) api.Interrupt {
	out := api.Interrupt{ID: in.ID, Kind: api.InterruptWorkflow, RunID: in.RunID, WorkflowID: workflowID, NodeID: in.Node, Key: in.Key,
		Name: in.Name, Message: in.Message, CreatedAt: in.Created.UTC(), Resume: resumeRoute(workflowID, in.RunID, in.ID)}
	if in.Schema != nil {
		out.OutputSchema, _ = json.Marshal(in.Schema)
	}
	if !in.Deadline.IsZero() {
		d := in.Deadline.UTC()
		out.ExpiresAt = &d
	}
	return out
}

func interruptsJSON(workflowID string, ins []workflow.Interrupt) []api.Interrupt {
	out := make([]api.Interrupt, 0, len(ins))
	for _, in := range ins {
		out = append(out, interruptJSON(workflowID, in))
	}
	return out
}

// earliestDeadline is the first deadline of ins (zero: none has one).
func earliestDeadline(ins []workflow.Interrupt) time.Time {
	var t time.Time
	for _, in := range ins {
		if !in.Deadline.IsZero() && (t.IsZero() || in.Deadline.Before(t)) {
			t = in.Deadline
		}
	}
	return t
}

// interruptState is what a run's checkpoints say of one of its questions.
type interruptState struct {
	question *workflow.Interrupt
	// open: the question waits for its answer.
	open bool
	// answer is the stored answer (nil: none).
	answer json.RawMessage
}

// interruptStates reads a run's questions from its checkpoints, by id, and
// the open ones in the order they were asked.
func interruptStates(cps []meta.WorkflowCheckpoint) (map[string]*interruptState, []workflow.Interrupt, error) {
	states := map[string]*interruptState{}
	var order []string
	for _, cp := range cps {
		if len(cp.Waiting) == 0 {
			continue
		}
		var in workflow.Interrupt
		if err := json.Unmarshal(cp.Waiting, &in); err != nil {
			return nil, nil, fmt.Errorf("checkpoint %s: question: %w", cp.Key, err)
		}
		st := states[in.ID]
		if st == nil {
			st = &interruptState{question: &in}
			states[in.ID] = st
			order = append(order, in.ID)
		}
		switch {
		case cp.Key != in.Key:
			// An answer's checkpoint (KEY#answer:NAME).
			if st.answer = nullJSON(cp.Outputs); st.answer == nil {
				st.answer = json.RawMessage(`{}`)
			}
			st.open = false
		case cp.FinishedAt.IsZero() && cp.Error == "" && st.answer == nil:
			st.open = true
		}
	}
	var open []workflow.Interrupt
	for _, id := range order {
		if st := states[id]; st.open {
			open = append(open, *st.question)
		}
	}
	return states, open, nil
}

// runInterrupts returns the open questions of a run (none unless it waits
// or runs).
func (s *Server) runInterrupts(ctx context.Context, run meta.WorkflowRun) ([]workflow.Interrupt, error) {
	if run.Status != meta.RunWaiting && run.Status != meta.RunRunning {
		return nil, nil
	}
	cps, err := s.workflows.store.WorkflowCheckpoints(ctx, run.TenantID, run.ID)
	if err != nil {
		return nil, err
	}
	_, open, err := interruptStates(cps)
	return open, err
}

// listRunInterrupts: GET /v1/workflows/{id}/runs/{run}/interrupts, the
// run's open questions.
func (s *Server) listRunInterrupts(w http.ResponseWriter, r *http.Request) {
	run, e := s.workflowRun(r)
	if e != nil {
		writeError(w, e)
		return
	}
	open, err := s.runInterrupts(r.Context(), run)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, api.InterruptList{Data: interruptsJSON(run.WorkflowID, open)})
}

// listInterrupts: GET /v1/interrupts, the tenant's open questions, oldest
// first: ?kind (workflow; all kinds when absent), ?workflow_id, ?limit
// (default 50, at most 500).
func (s *Server) listInterrupts(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	q := r.URL.Query()
	kind := q.Get("kind")
	switch kind {
	case "", api.InterruptWorkflow, api.InterruptTurn:
	default:
		e := invalid("query parameter \"kind\": unknown kind %q (want %s or %s)", kind, api.InterruptWorkflow, api.InterruptTurn)
		e.Param = "kind"
		writeError(w, e)
		return
	}
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			e := invalid("query parameter \"limit\": want 1 to 500")
			e.Param = "limit"
			writeError(w, e)
			return
		}
		limit = n
	}
	wfID := ""
	if ref := q.Get("workflow_id"); ref != "" {
		wf, e := s.workflow(r.Context(), ref)
		if e != nil {
			writeError(w, e)
			return
		}
		wfID = wf.ID
	}
	out := api.InterruptList{Data: []api.Interrupt{}}
	if kind != api.InterruptWorkflow && wfID == "" {
		turns, err := s.turnInterrupts(r.Context(), p.Tenant, limit)
		if err != nil {
			writeError(w, asAPIError(err))
			return
		}
		out.Data = append(out.Data, turns...)
	}
	if s.workflows != nil && kind != api.InterruptTurn {
		list, err := s.workflows.store.OpenInterrupts(r.Context(), p.Tenant, wfID, limit)
		if err != nil {
			writeError(w, asAPIError(err))
			return
		}
		for _, oi := range list {
			var in workflow.Interrupt
			if err := json.Unmarshal(oi.Waiting, &in); err != nil {
				s.log.WarnContext(r.Context(), "interrupts: unreadable question", "run", oi.RunID, "err", err)
				continue
			}
			out.Data = append(out.Data, interruptJSON(oi.WorkflowID, in))
		}
	}
	// Both kinds, oldest first.
	slices.SortStableFunc(out.Data, func(a, b api.Interrupt) int { return a.CreatedAt.Compare(b.CreatedAt) })
	out.Data = out.Data[:min(len(out.Data), limit)]
	writeJSON(w, http.StatusOK, out)
}

// resumeInterrupt: POST /v1/workflows/{id}/runs/{run}/interrupts/{interrupt}/resume
// answers a waiting run's question and resumes the run on this replica.
// Blocking, it answers the run once it stops again (finished, or waiting
// for another answer); streaming, the resumed run's events as SSE.
func (s *Server) resumeInterrupt(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	run, e := s.workflowRun(r)
	if e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("interrupt")
	var req api.ResumeRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Answer == nil {
		req.Answer = map[string]any{}
	}
	res, run, e := s.claimForAnswer(r.Context(), run, id)
	if e != nil {
		writeError(w, e)
		return
	}
	res.answer, res.keyID, res.keyName = req.Answer, p.Key.ID, p.Key.Name
	feed := newRunFeed()
	if !s.workflows.launch(run, feed, res) {
		if _, err := s.workflows.store.WaitWorkflowRun(context.WithoutCancel(r.Context()), run.TenantID, run.ID, s.workflows.owner, res.wake); err != nil {
			s.log.Error("workflow run: release a refused resume", "run", run.ID, "err", err)
		}
		e := errorf(http.StatusServiceUnavailable, CodeUnavailable, "this server cannot resume run %s now; retry", run.ID)
		if s.workflows.busy(run.TenantID) {
			e = errorf(http.StatusTooManyRequests, CodeRateLimited, "this tenant has %d workflow runs going on this server; retry when one ends", s.workflows.maxPerTenant)
		}
		e.retryAfter = 1
		writeError(w, e)
		return
	}
	if err := <-res.accepted; err != nil {
		var ae *workflow.AnswerError
		if errors.As(err, &ae) {
			if !errors.Is(ae, workflow.ErrExpired) {
				// A refused answer leaves the run waiting: the runner
				// says so before the answer, so that the next request
				// finds it waiting. (An expired one goes on down its
				// timeout branch.)
				feed.wait(r.Context())
			}
			writeError(w, answerError(ae))
			return
		}
		// The run failed before it started (its key was revoked): its
		// record says so.
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

// claimForAnswer makes this replica the owner of run to answer its
// question id: the run must wait for it. A run that runs (another answer
// being taken, or other branches still going) is waited for, up to
// resumeWait.
func (s *Server) claimForAnswer(ctx context.Context, run meta.WorkflowRun, id string) (*runResume, meta.WorkflowRun, *apiError) {
	wr := s.workflows
	unknown := func() *apiError {
		return errorf(http.StatusNotFound, CodeNotFound, "run %s has no interrupt %q", run.ID, id)
	}
	if !strings.HasPrefix(id, run.ID+":") {
		return nil, run, unknown()
	}
	deadline := time.Now().Add(resumeWait)
	for {
		cps, err := wr.store.WorkflowCheckpoints(ctx, run.TenantID, run.ID)
		if err != nil {
			return nil, run, asAPIError(err)
		}
		states, _, err := interruptStates(cps)
		if err != nil {
			return nil, run, asAPIError(err)
		}
		st := states[id]
		switch {
		case st == nil:
			return nil, run, unknown()
		case st.answer != nil:
			e := errorf(http.StatusConflict, CodeConflict, "interrupt %q was answered already", id)
			e.answer = st.answer
			return nil, run, e
		case !st.open:
			return nil, run, errorf(http.StatusConflict, CodeConflict, "interrupt %q expired: the run went on without its answer", id)
		}
		switch run.Status {
		case meta.RunWaiting:
			claimed, ok, err := wr.store.ResumeWorkflowRun(ctx, run.TenantID, run.ID, wr.owner, time.Now().Add(wr.lease))
			if err != nil {
				return nil, run, asAPIError(err)
			}
			if ok {
				res := newRunResume()
				res.interrupt, res.node, res.wake = id, st.question.Node, run.WakeAt
				res.answerKey = st.question.Key + "#answer:" + st.question.Name
				res.waited = time.Since(st.question.Created)
				return res, claimed, nil
			}
		case meta.RunQueued, meta.RunRunning:
		default:
			return nil, run, errorf(http.StatusConflict, CodeConflict, "run %s is %s: it waits for no answer", run.ID, run.Status)
		}
		if time.Now().After(deadline) {
			e := errorf(http.StatusConflict, CodeConflict, "run %s is running; answer interrupt %q once it waits again", run.ID, id)
			e.retryAfter = 1
			return nil, run, e
		}
		select {
		case <-ctx.Done():
			return nil, run, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the request ended")
		case <-time.After(50 * time.Millisecond):
		}
		if run, err = wr.store.WorkflowRun(ctx, run.TenantID, run.ID); err != nil {
			return nil, run, notFoundOr(err, "run", run.ID)
		}
	}
}

// answerError maps a refused answer to the API's error.
func answerError(ae *workflow.AnswerError) *apiError {
	switch {
	case errors.Is(ae, workflow.ErrUnknownInterrupt):
		return errorf(http.StatusNotFound, CodeNotFound, "no interrupt %q", ae.Interrupt)
	case errors.Is(ae, workflow.ErrAnswered):
		e := errorf(http.StatusConflict, CodeConflict, "interrupt %q was answered already", ae.Interrupt)
		e.answer, _ = json.Marshal(ae.Answer)
		return e
	case errors.Is(ae, workflow.ErrExpired):
		return errorf(http.StatusConflict, CodeConflict, "interrupt %q expired: the run takes its timeout branch", ae.Interrupt)
	}
	msg := ae.Err.Error()
	if ae.Field != "" {
		msg = ae.Field + ": " + msg
	}
	e := invalid("answer.%s", msg)
	if ae.Field == "" {
		e = invalid("answer: %s", msg)
	}
	e.Param = strings.TrimSuffix("answer."+ae.Field, ".")
	return e
}

// streamFeed writes a run's events as SSE until the run stops here.
func (s *Server) streamFeed(w http.ResponseWriter, r *http.Request, feed *runFeed) {
	sw := newSSEWriter(w, s.frameDeadline())
	stop := make(chan struct{})
	defer close(stop)
	go sw.keepAlive(s.pingInterval(), stop)
	for i := 0; ; {
		evs, done, ch := feed.next(i)
		i += len(evs)
		for _, ev := range evs {
			if sw.event(ev.name, ev.data) != nil {
				return
			}
		}
		if done {
			return
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	}
}
