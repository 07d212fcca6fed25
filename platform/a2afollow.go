package platform

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/weftlabs/weft/platform/a2a"
)

// A2A SubscribeToTask (0.3: tasks/resubscribe): a client joins a running
// task. Its stream starts with the task as it is (with the answer so far),
// then carries the changes until the task ends: a new state, the answer's
// new text as artifact updates (appended to the answer; lastChunk on the
// last of a completed answer) and the final status, after which it
// closes. A subscriber that falls behind gets the text it missed in one
// update: nothing is dropped and no queue grows. Closing a subscription
// leaves the task and the other streams alone. A task that has ended is
// -32004 (the specification's UnsupportedOperationError: GetTask reads
// it), an unknown one -32001.
//
// A task another replica runs is followed through the Redis bus: the
// subscriber's replica asks for it (topic "a2a.watch") and the replica
// running it publishes its changes (topic "a2a.update": the answer's text
// from an offset, the status, whether it has ended), the whole answer
// first and again when a subscriber joins or has missed a message. The
// subscriber's replica also reads the stored task every second, so its
// stream ends even when messages are lost, when the replica running the
// task stops (the task reads as failed once stale) or without Redis (the
// stream then carries the stored states and the whole answer at the end).

const (
	// a2aRelayWait bounds the wait for the running replica's first
	// message; past it, the task is sent as stored.
	a2aRelayWait = 2 * time.Second
	// a2aRelayPoll is how often a subscriber to another replica's task
	// reads the stored task.
	a2aRelayPoll = time.Second
	// a2aRelayBuffer is how many relayed messages a subscriber holds;
	// past it they are dropped, and it asks for the whole answer again.
	a2aRelayBuffer = 64
)

// a2aRelayMsg is a change of a task, published by the replica running it
// for the subscribers of other replicas.
type a2aRelayMsg struct {
	// From is the offset of Text in the answer (0: the whole answer).
	From   int        `json:"from"`
	Text   string     `json:"text,omitempty"`
	Status a2a.Status `json:"status"`
	Done   bool       `json:"done,omitempty"`
}

// a2aWatch follows a task for a subscriber.
type a2aWatch interface {
	// view returns the answer so far, the status and whether the task
	// has ended (its status is then final).
	view() (answer string, status a2a.Status, done bool)
	// wait returns once the task may have changed; false stops the
	// stream, with the error to end it with, if any.
	wait(ctx context.Context) (bool, *a2a.Error)
	close()
}

// a2aOver is the error of a subscription to a task that has ended.
func a2aOver(id string, state a2a.State) *a2a.Error {
	return a2a.Errorf(a2a.CodeUnsupportedOperation, "task %q is %s: it has ended, so there is nothing to subscribe to; GetTask reads it", id, state)
}

// a2aSubscribe serves SubscribeToTask and tasks/resubscribe.
func (s *Server) a2aSubscribe(w http.ResponseWriter, r *http.Request, req *a2a.Request, tp *a2a.TaskParams, agentID string) {
	ctx := r.Context()
	tenant := principalFrom(ctx).Tenant
	var watch a2aWatch
	var first *a2a.Task
	var e *a2a.Error
	if t := s.a2aTasks.liveTask(tenant, agentID, tp.ID); t != nil {
		watch, first, e = s.a2aTasks.followLive(t)
	} else {
		watch, first, e = s.a2aFollowRemote(ctx, tenant, agentID, tp.ID)
	}
	if e != nil {
		writeJSON(w, http.StatusOK, a2a.ErrorResponse(req.ID, e))
		return
	}
	defer watch.close()
	f := &a2aFollower{taskID: first.ID, contextID: first.ContextID, state: first.Status.State}
	if len(first.Artifacts) > 0 {
		// The answer so far, in the task sent first.
		f.sent, f.artifact = len(*first.Artifacts[0].Parts[0].Text), true
	}
	cutHistory(first, tp.HistoryLength)

	s.metrics.activeStreams.Inc()
	defer s.metrics.activeStreams.Dec()
	sw := newSSEWriter(w, s.frameDeadline())
	done := make(chan struct{})
	defer close(done)
	go sw.keepAlive(s.pingInterval(), done)
	emit := func(ev a2a.Event) error { return sw.data(a2a.Result(req.ID, ev.Encode(req.Dialect))) }
	if emit(a2a.Event{Task: first}) != nil {
		return
	}
	for {
		answer, status, over := watch.view()
		for _, ev := range f.events(answer, status, over) {
			if emit(ev) != nil {
				return
			}
		}
		if over {
			return
		}
		if ok, e := watch.wait(ctx); !ok {
			if e != nil {
				sw.data(a2a.ErrorResponse(req.ID, e))
			}
			return
		}
	}
}

// a2aFollower turns what a subscriber sees of a task into its events.
type a2aFollower struct {
	taskID, contextID string
	// sent is how much of the answer the subscriber has; state the last
	// state it was sent; artifact whether it has the answer's artifact.
	sent     int
	state    a2a.State
	artifact bool
}

// events brings the subscriber up to date with the task's answer and
// status; once the task has ended (done), the answer's rest and the final
// status end its stream. A terminal state before the end (a cancel while
// the turn stops) waits for the end.
func (f *a2aFollower) events(answer string, status a2a.Status, done bool) []a2a.Event {
	var out []a2a.Event
	if !done && status.State != f.state && !status.State.Terminal() {
		f.state = status.State
		out = append(out, a2a.Event{StatusUpdate: &a2a.StatusUpdate{TaskID: f.taskID, ContextID: f.contextID, Status: status}})
	}
	last := done && status.State == a2a.StateCompleted
	if len(answer) > f.sent || last {
		var text string
		if len(answer) > f.sent {
			text = answer[f.sent:]
		}
		out = append(out, a2a.Event{ArtifactUpdate: &a2a.ArtifactUpdate{TaskID: f.taskID, ContextID: f.contextID, Append: f.artifact, LastChunk: last,
			Artifact: a2a.Artifact{ArtifactID: a2aArtifactID, Name: a2aArtifactID, Parts: []a2a.Part{a2a.TextPart(text)}}}})
		f.sent, f.artifact = max(f.sent, len(answer)), true
	}
	if done {
		out = append(out, a2a.Event{StatusUpdate: &a2a.StatusUpdate{TaskID: f.taskID, ContextID: f.contextID, Status: status}})
	}
	return out
}

// a2aLiveWatch follows a task this replica runs.
type a2aLiveWatch struct {
	ts      *a2aTaskStore
	t       *a2aTask
	changed chan struct{}
}

// followLive starts following t, returning it as it is now.
func (ts *a2aTaskStore) followLive(t *a2aTask) (a2aWatch, *a2a.Task, *a2a.Error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t.done || t.task.Status.State.Terminal() {
		return nil, nil, a2aOver(t.task.ID, t.task.Status.State)
	}
	return &a2aLiveWatch{ts: ts, t: t}, t.snapshot(nil), nil
}

func (lw *a2aLiveWatch) view() (string, a2a.Status, bool) {
	lw.ts.mu.Lock()
	defer lw.ts.mu.Unlock()
	t := lw.t
	lw.changed = nil
	if !t.done {
		if t.changed == nil {
			t.changed = make(chan struct{})
		}
		lw.changed = t.changed
	}
	// The builder only appends: the string stays valid as it grows.
	return t.answer.String(), t.task.Status, t.done
}

func (lw *a2aLiveWatch) wait(ctx context.Context) (bool, *a2a.Error) {
	select {
	case <-lw.changed:
		return true, nil
	case <-ctx.Done():
		return false, nil
	}
}

func (lw *a2aLiveWatch) close() {}

// a2aRemoteWatch follows a task another replica runs (see above).
type a2aRemoteWatch struct {
	s                   *Server
	tenant, agentID, id string
	msgs                chan string
	tick                *time.Ticker
	answer              strings.Builder
	status              a2a.Status
	done                bool
	// whole says a message with the whole answer came; asked that one
	// was asked for since a message was missed.
	whole, asked bool
}

// a2aFollowRemote starts following a task of the agent that this replica
// does not run, returning it as stored, with the answer so far when the
// replica running it answers within a2aRelayWait.
func (s *Server) a2aFollowRemote(ctx context.Context, tenant, agentID, id string) (a2aWatch, *a2a.Task, *a2a.Error) {
	ts := s.a2aTasks
	stored, e := ts.stored(ctx, tenant, agentID, id)
	if e != nil {
		return nil, nil, e
	}
	if stored.Status.State.Terminal() {
		return nil, nil, a2aOver(id, stored.Status.State)
	}
	rw := &a2aRemoteWatch{s: s, tenant: tenant, agentID: agentID, id: id, status: stored.Status,
		msgs: ts.watch(tenant + "\x00" + id), tick: time.NewTicker(a2aRelayPoll)}
	if s.bus.rdb != nil {
		s.bus.publishRemote(ctx, "a2a.watch", tenant, id)
		timer := time.NewTimer(a2aRelayWait)
		defer timer.Stop()
	first:
		for !rw.whole {
			select {
			case m := <-rw.msgs:
				rw.apply(ctx, m)
			case <-timer.C:
				break first
			case <-ctx.Done():
				break first
			}
		}
	}
	if answer := rw.answer.String(); answer != "" {
		stored.Artifacts = []a2a.Artifact{{ArtifactID: a2aArtifactID, Name: a2aArtifactID, Parts: []a2a.Part{a2a.TextPart(answer)}}}
	}
	if !rw.status.State.Terminal() {
		stored.Status = rw.status
	}
	return rw, stored, nil
}

// apply takes in a relayed message.
func (rw *a2aRemoteWatch) apply(ctx context.Context, payload string) {
	var m a2aRelayMsg
	if json.Unmarshal([]byte(payload), &m) != nil || m.From < 0 {
		return
	}
	known := rw.answer.Len()
	if m.From > known {
		// A message was missed: ask for the whole answer again.
		if !rw.asked {
			rw.asked = true
			rw.s.bus.publishRemote(ctx, "a2a.watch", rw.tenant, rw.id)
		}
		return
	}
	if m.From+len(m.Text) > known {
		rw.answer.WriteString(m.Text[known-m.From:])
	}
	if m.From == 0 {
		rw.whole, rw.asked = true, false
	}
	rw.status, rw.done = m.Status, rw.done || m.Done
}

// poll reads the stored task: its state, while no message of the running
// replica came (they are newer); once it has ended, so has the stream
// (with the rest of the stored answer).
func (rw *a2aRemoteWatch) poll(ctx context.Context) *a2a.Error {
	t, e := rw.s.a2aTasks.stored(ctx, rw.tenant, rw.agentID, rw.id)
	switch {
	case e != nil && e.Code == a2a.CodeTaskNotFound:
		return e
	case e != nil:
		return nil
	case !t.Status.State.Terminal():
		if !rw.whole {
			rw.status = t.Status
		}
		return nil
	}
	rw.status, rw.done = t.Status, true
	if len(t.Artifacts) == 1 && len(t.Artifacts[0].Parts) == 1 && t.Artifacts[0].Parts[0].Text != nil {
		stored, known := *t.Artifacts[0].Parts[0].Text, rw.answer.String()
		if len(stored) > len(known) && strings.HasPrefix(stored, known) {
			rw.answer.WriteString(stored[len(known):])
		}
	}
	return nil
}

func (rw *a2aRemoteWatch) view() (string, a2a.Status, bool) {
	return rw.answer.String(), rw.status, rw.done
}

func (rw *a2aRemoteWatch) wait(ctx context.Context) (bool, *a2a.Error) {
	select {
	case m := <-rw.msgs:
		rw.apply(ctx, m)
	case <-rw.tick.C:
		if e := rw.poll(ctx); e != nil {
			return false, e
		}
	case <-ctx.Done():
		return false, nil
	case <-rw.s.a2aTasks.closing:
		return false, a2a.Errorf(a2a.CodeInternalError, "the server is shutting down: subscribe to the task again")
	}
	return true, nil
}

func (rw *a2aRemoteWatch) close() {
	rw.tick.Stop()
	rw.s.a2aTasks.unwatch(rw.tenant+"\x00"+rw.id, rw.msgs)
}

// watch registers a subscriber to the relayed messages of a task (key:
// tenant \x00 task id).
func (ts *a2aTaskStore) watch(key string) chan string {
	ch := make(chan string, a2aRelayBuffer)
	ts.mu.Lock()
	ts.watchers[key] = append(ts.watchers[key], ch)
	ts.mu.Unlock()
	return ch
}

func (ts *a2aTaskStore) unwatch(key string, ch chan string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ws := slices.DeleteFunc(ts.watchers[key], func(c chan string) bool { return c == ch }); len(ws) > 0 {
		ts.watchers[key] = ws
	} else {
		delete(ts.watchers, key)
	}
}

// relayed hands a message of topic "a2a.update" (task id \x00 JSON) to the
// subscribers of its task; a subscriber that is behind misses it.
func (ts *a2aTaskStore) relayed(tenant, payload string) {
	id, msg, ok := strings.Cut(payload, "\x00")
	if !ok {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, ch := range ts.watchers[tenant+"\x00"+id] {
		select {
		case ch <- msg:
		default:
		}
	}
}

// a2aRelayTopics subscribes the server to the bus topics of A2A
// subscriptions across replicas.
func (s *Server) a2aRelayTopics() {
	s.bus.subscribe("a2a.watch", s.a2aWatched)
	s.bus.subscribe("a2a.update", s.a2aTasks.relayed)
}

// a2aWatched: another replica subscribes to a task. If this replica runs
// it, its changes are published from now on, starting with the whole
// answer.
func (s *Server) a2aWatched(tenant, id string) {
	ts := s.a2aTasks
	ts.mu.Lock()
	t := ts.live[tenant+"\x00"+id]
	if t == nil || t.done {
		ts.mu.Unlock()
		return
	}
	start := !t.relaying
	t.relaying, t.relayFull = true, true
	t.notify()
	ts.mu.Unlock()
	if start {
		go s.a2aRelay(t)
	}
}

// a2aRelay publishes the changes of task t, which this replica runs, until
// it has ended.
func (s *Server) a2aRelay(t *a2aTask) {
	ts := s.a2aTasks
	sent := 0
	var state a2a.State
	for {
		ts.mu.Lock()
		whole := t.relayFull
		if whole {
			sent, t.relayFull = 0, false
		}
		answer, status, done := t.answer.String(), t.task.Status, t.done
		var changed chan struct{}
		if !done {
			if t.changed == nil {
				t.changed = make(chan struct{})
			}
			changed = t.changed
		}
		ts.mu.Unlock()
		if whole || len(answer) > sent || status.State != state || done {
			payload, _ := json.Marshal(a2aRelayMsg{From: sent, Text: answer[sent:], Status: status, Done: done})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s.bus.publishRemote(ctx, "a2a.update", t.tenant, t.task.ID+"\x00"+string(payload))
			cancel()
			sent, state = len(answer), status.State
		}
		if done {
			return
		}
		<-changed
	}
}
