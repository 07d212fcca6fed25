package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/a2a"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/turn"
)

// A2A: each agent of a tenant is an A2A agent (package a2a) at
// /a2a/agents/{agent} (its id or name), its card under that path at
// .well-known/agent-card.json; /.well-known/agent-card.json lists the
// tenant's agents. All of it is authenticated like the rest of the API: the
// cards name a tenant's agents, which no other tenant may learn.
//
// A message is one turn of the agent. Its A2A context is the Weft session
// (contextId = session id): a message that carries the contextId of an
// earlier answer continues that conversation. The task is the turn; its id
// is the id of the answer's message (the id GET /v1/sessions/{id}/messages
// and the turn's trace use).
//
// Tasks are stored in the metadata store (meta.A2ATask), so every replica
// and a restarted server find them: the replica running a task writes it
// when the turn starts, at each change of state and when it ends, with
// the answer (never per streamed chunk); while it runs, that replica also
// holds it in memory with the answer so far. tasks/get reads the live copy
// when this replica runs the task, else the stored one. tasks/cancel of a
// task another replica runs marks it canceled in the store and cancels the
// turn through the bus (topic "cancel", as POST /v1/chat/cancel; the turn
// is registered under the task id); that replica ends the task canceled.
// A stored task left unfinished past its stale time (the agent's turn
// timeout, the session lock wait and a minute after its last write) lost
// its server, and reads as failed. Tasks are kept as long as turn traces
// (Config.TraceRetention, default 7 days), counted from their last write.

// a2aArtifactID names the answer's artifact.
const a2aArtifactID = "answer"

// a2aStaleGrace is how long past its turn's deadline a task may stay
// unfinished in the store before it reads as lost: time for the owner's
// last write.
const a2aStaleGrace = time.Minute

// a2aTask is a task this replica runs, and what is needed to cancel it.
type a2aTask struct {
	tenant   string
	agentID  string
	task     a2a.Task
	answer   strings.Builder
	canceled bool
	created  time.Time
	// staleAfter bounds the turn, from any write of the task: past it, an
	// unfinished stored task was lost with this replica.
	staleAfter time.Duration
	// done is set once the ended task is stored: its subscribers send
	// its end (a2afollow.go).
	done bool
	// changed, when set, is closed at the task's next change: the
	// subscribers wait on it.
	changed chan struct{}
	// relaying says a2aRelay publishes the task's changes for the
	// subscribers of other replicas; relayFull asks it for the whole
	// answer in its next message (a new subscriber joined).
	relaying, relayFull bool
}

// notify wakes the task's subscribers (call with the store locked).
func (t *a2aTask) notify() {
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// a2aTaskDB is what A2A tasks need of the metadata store (meta.SQL).
type a2aTaskDB interface {
	PutA2ATask(ctx context.Context, t meta.A2ATask) error
	FinishA2ATask(ctx context.Context, t meta.A2ATask) (bool, error)
	A2ATask(ctx context.Context, tenant, id string) (meta.A2ATask, error)
	ListA2ATasks(ctx context.Context, q meta.A2ATaskQuery) ([]meta.A2ATask, int, error)
	PruneA2ATasks(ctx context.Context, before time.Time) (int64, error)
}

// a2aTaskStore holds the tasks this replica runs and stores every task.
// Without a store (a metadata store that keeps no A2A tasks), a task is
// found only while it runs.
type a2aTaskStore struct {
	mu        sync.Mutex
	live      map[string]*a2aTask // tenant \x00 task id
	db        a2aTaskDB
	owner     string        // this server instance
	retention time.Duration // of stored tasks, from their last write
	log       *slog.Logger
	lastPrune atomic.Int64 // unix nanos
	pruning   sync.Mutex
	// watchers are the subscribers of this replica to tasks another one
	// runs, by tenant \x00 task id (a2afollow.go).
	watchers map[string][]chan string
	// closing is closed when the server shuts down: subscribers to tasks
	// of other replicas stop.
	closing   chan struct{}
	closeOnce sync.Once
}

func newA2ATaskStore(db a2aTaskDB, owner string, retention time.Duration, log *slog.Logger) *a2aTaskStore {
	return &a2aTaskStore{live: map[string]*a2aTask{}, db: db, owner: owner, retention: retention, log: log,
		watchers: map[string][]chan string{}, closing: make(chan struct{})}
}

// shutdown ends the subscriptions to tasks of other replicas.
func (ts *a2aTaskStore) shutdown() { ts.closeOnce.Do(func() { close(ts.closing) }) }

// start holds t while it runs and stores it.
func (ts *a2aTaskStore) start(t *a2aTask) {
	ts.mu.Lock()
	ts.live[t.tenant+"\x00"+t.task.ID] = t
	ts.mu.Unlock()
	ts.save(t)
}

// finish stores t, over, and stops holding it; then its subscribers send
// its end, so that a client that heard it finds the task on any replica.
func (ts *a2aTaskStore) finish(t *a2aTask) {
	ts.save(t)
	ts.mu.Lock()
	t.done = true
	t.notify()
	delete(ts.live, t.tenant+"\x00"+t.task.ID)
	ts.mu.Unlock()
}

// save writes t to the store. A failed write is logged: the task is then
// found on this replica only while it runs, and a stored unfinished copy
// reads as lost once stale.
func (ts *a2aTaskStore) save(t *a2aTask) {
	if ts.db == nil {
		return
	}
	ts.mu.Lock()
	snap := t.snapshot(nil)
	ts.mu.Unlock()
	data, err := json.Marshal(snap)
	if err != nil {
		return
	}
	now := time.Now().UTC()
	row := meta.A2ATask{TenantID: t.tenant, ID: snap.ID, AgentID: t.agentID, ContextID: snap.ContextID,
		State: string(snap.Status.State), Final: snap.Status.State.Terminal(), Owner: ts.owner, Data: data,
		CreatedAt: t.created, UpdatedAt: now, StaleAt: now.Add(t.staleAfter)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.db.PutA2ATask(ctx, row); err != nil {
		ts.log.Warn("A2A task not stored; other replicas do not see its state", "task", snap.ID, "state", snap.Status.State, "err", err)
	}
	ts.prune(now)
}

// prune drops the expired tasks, at most once a minute per server.
func (ts *a2aTaskStore) prune(now time.Time) {
	last := ts.lastPrune.Load()
	if now.UnixNano()-last < int64(time.Minute) || !ts.lastPrune.CompareAndSwap(last, now.UnixNano()) || !ts.pruning.TryLock() {
		return
	}
	go func() {
		defer ts.pruning.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if n, err := ts.db.PruneA2ATasks(ctx, now.Add(-ts.retention)); err != nil {
			ts.log.Warn("expired A2A tasks not pruned", "err", err)
		} else if n > 0 {
			ts.log.Debug("pruned expired A2A tasks", "count", n)
		}
	}()
}

// liveTask is a task of the agent this replica runs.
func (ts *a2aTaskStore) liveTask(tenant, agentID, id string) *a2aTask {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t := ts.live[tenant+"\x00"+id]; t != nil && t.agentID == agentID {
		return t
	}
	return nil
}

// notFound is the error of a task no replica knows.
func (ts *a2aTaskStore) notFound(id string) *a2a.Error {
	if ts.db == nil {
		return a2a.Errorf(a2a.CodeTaskNotFound, "task %q not found (tasks are kept while they run only: the metadata store keeps none)", id)
	}
	return a2a.Errorf(a2a.CodeTaskNotFound, "task %q not found (tasks are kept %v after their last change)", id, ts.retention)
}

// stored reads a stored task of the agent (see storedTask).
func (ts *a2aTaskStore) stored(ctx context.Context, tenant, agentID, id string) (*a2a.Task, *a2a.Error) {
	if ts.db == nil {
		return nil, ts.notFound(id)
	}
	row, err := ts.db.A2ATask(ctx, tenant, id)
	if errors.Is(err, meta.ErrNotFound) || (err == nil && row.AgentID != agentID) {
		return nil, ts.notFound(id)
	}
	if err != nil {
		return nil, a2a.Errorf(a2a.CodeInternalError, "task %q: the store failed: %v", id, err)
	}
	return storedTask(row)
}

// storedTask reads the task of a stored row. An unfinished task past its
// stale time reads as failed: the server running it stopped.
func storedTask(row meta.A2ATask) (*a2a.Task, *a2a.Error) {
	var t a2a.Task
	if err := json.Unmarshal(row.Data, &t); err != nil {
		return nil, a2a.Errorf(a2a.CodeInternalError, "task %q: stored task unreadable: %v", row.ID, err)
	}
	if !t.Status.State.Terminal() && time.Now().After(row.StaleAt) {
		text := fmt.Sprintf("%s: the task was lost: the server running it (%s) stopped before it ended; it was last updated at %s",
			CodeInternal, row.Owner, row.UpdatedAt.Format(time.RFC3339))
		t.Status = a2a.Status{State: a2a.StateFailed, Timestamp: row.StaleAt.Format(time.RFC3339Nano),
			Message: &a2a.Message{MessageID: t.ID, ContextID: t.ContextID, TaskID: t.ID, Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}}
	}
	return &t, nil
}

// view returns a copy of a task of the agent, its history cut to the last
// n messages when n is set: the live one when this replica runs it, else
// the stored one. A task of another agent of the tenant is not found at
// this agent's endpoint.
func (ts *a2aTaskStore) view(ctx context.Context, tenant, agentID, id string, n *int) (*a2a.Task, *a2a.Error) {
	if t := ts.liveTask(tenant, agentID, id); t != nil {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return t.snapshot(n), nil
	}
	t, e := ts.stored(ctx, tenant, agentID, id)
	if e != nil {
		return nil, e
	}
	cutHistory(t, n)
	return t, nil
}

// canceledByBus marks a live task canceled when its turn is cancelled
// through the bus (from another replica's tasks/cancel, or
// POST /v1/chat/cancel by message id): the turn ends as canceled.
func (ts *a2aTaskStore) canceledByBus(tenant, key string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t := ts.live[tenant+"\x00"+key]; t != nil && !t.task.Status.State.Terminal() {
		t.canceled = true
		t.task.Status = a2a.Status{State: a2a.StateCanceled, Timestamp: a2aNow()}
		t.notify()
	}
}

// update changes a task under the store's lock and wakes its
// subscribers.
func (ts *a2aTaskStore) update(t *a2aTask, f func(*a2aTask)) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	f(t)
	t.notify()
}

// snapshot copies the task (call with the store locked).
func (t *a2aTask) snapshot(n *int) *a2a.Task {
	out := t.task
	out.History = append([]a2a.Message(nil), t.task.History...)
	cutHistory(&out, n)
	if t.answer.Len() > 0 {
		out.Artifacts = []a2a.Artifact{{ArtifactID: a2aArtifactID, Name: a2aArtifactID, Parts: []a2a.Part{a2a.TextPart(t.answer.String())}}}
	}
	return &out
}

// cutHistory keeps the last n messages of t's history when n is set.
func cutHistory(t *a2a.Task, n *int) {
	if n != nil && len(t.History) > *n {
		t.History = t.History[len(t.History)-*n:]
	}
}

// a2aRoutes registers the A2A endpoints.
func (s *Server) a2aRoutes() {
	s.handle("GET /.well-known/agent-card.json", use(endUser), s.a2aTenantCard)
	s.handle("GET /a2a/agents/{agent}/.well-known/agent-card.json", use(endUser), s.a2aAgentCard)
	s.handle("POST /a2a/agents/{agent}", use(endUser), s.a2aRPC)
}

// a2aBase is the server's URL in the cards: Config.PublicURL (weft serve:
// --public-url, else its listen address). A Server given none (embedded,
// tests) names the Host the request was addressed to, over https only when
// the connection is TLS: X-Forwarded-* headers are never trusted, any
// client can send them.
func (s *Server) a2aBase(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// parsePublicURL checks a public URL (Config.PublicURL) and returns it
// without its trailing slash.
func parsePublicURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return "", err
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q: want an http or https URL", raw)
	case u.Host == "" || u.Opaque != "":
		return "", fmt.Errorf("%q: the URL names no host", raw)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", fmt.Errorf("%q: want scheme, host and path only (no user, query or fragment)", raw)
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// a2aVersion is the protocol version a request asks for: its A2A-Version
// header (or, as the specification allows, its A2A-Version query
// parameter), none meaning 0.3. ok is false for a version Weft does not
// speak; v is the value sent.
func a2aVersion(r *http.Request) (d a2a.Dialect, v string, ok bool) {
	v = r.Header.Get(a2a.VersionHeader)
	if v == "" {
		v = r.URL.Query().Get(a2a.VersionHeader)
	}
	d, ok = a2a.ParseVersion(v)
	return d, v, ok
}

// a2aVersionError is the error of an A2A-Version Weft does not speak.
func a2aVersionError(v string) string {
	if len(v) > 32 {
		v = v[:32] + "…"
	}
	return fmt.Sprintf("A2A-Version %q is not supported: this agent speaks A2A %s and %s (no header means %s)",
		v, a2a.Version, a2a.LegacyVersion, a2a.LegacyVersion)
}

const a2aBearer = "A Weft API key of the agent's tenant (Authorization: Bearer <key>)."

// a2aAgentByRef finds the caller's agent by id or name.
func (s *Server) a2aAgentByRef(r *http.Request, ref string) (meta.Agent, *apiError) {
	a, e := s.agent(r, ref)
	if e != nil && e.Code == CodeNotFound {
		if byName, err := s.meta.AgentByName(r.Context(), principalFrom(r.Context()).Tenant, ref); err == nil {
			return byName, nil
		}
	}
	return a, e
}

func (s *Server) a2aCard(r *http.Request, a meta.Agent) a2a.Card {
	return a2a.Card{
		Name:        a.Name,
		Description: "Weft agent " + a.Name + ". Each message is a turn of the agent; a message with the contextId of an earlier answer continues that conversation.",
		Version:     a.UpdatedAt.UTC().Format(time.RFC3339),
		URL:         s.a2aBase(r) + "/a2a/agents/" + a.ID,
		Streaming:   true,
		Bearer:      a2aBearer,
		InputModes:  []string{"text/plain", "application/json"},
		OutputModes: []string{"text/plain"},
		Skills:      []a2a.Skill{{ID: "chat", Name: a.Name, Description: "Converse with the agent.", Tags: []string{"chat"}}},
	}
}

// writeCard answers card c in the version the request asks for; a version
// Weft does not speak is a 400 (the specification's
// VersionNotSupportedError over HTTP).
func writeCard(w http.ResponseWriter, r *http.Request, c a2a.Card) {
	w.Header().Set("Vary", a2a.VersionHeader)
	d, v, ok := a2aVersion(r)
	if !ok {
		writeError(w, errorf(http.StatusBadRequest, CodeInvalidRequest, "%s", a2aVersionError(v)))
		return
	}
	writeJSON(w, http.StatusOK, c.Encode(d))
}

// a2aAgentCard: GET /a2a/agents/{agent}/.well-known/agent-card.json.
func (s *Server) a2aAgentCard(w http.ResponseWriter, r *http.Request) {
	a, e := s.a2aAgentByRef(r, r.PathValue("agent"))
	if e != nil {
		writeError(w, e)
		return
	}
	writeCard(w, r, s.a2aCard(r, a))
}

// a2aTenantCard: GET /.well-known/agent-card.json lists the tenant's
// enabled agents as skills, each with its own endpoint (the skill's id is
// the agent's name, its description names its card's URL). The card has
// no endpoint of its own: Weft serves many agents, and a client talks to
// one through its card.
func (s *Server) a2aTenantCard(w http.ResponseWriter, r *http.Request) {
	agents, err := s.meta.ListAgents(r.Context(), principalFrom(r.Context()).Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	c := a2a.Card{
		Name:        "Weft",
		Description: "The agents of this Weft tenant. Each skill is an agent; its A2A card is at /a2a/agents/{skill id}/.well-known/agent-card.json.",
		Version:     "1",
		Streaming:   true,
		Bearer:      a2aBearer,
		InputModes:  []string{"text/plain", "application/json"},
		OutputModes: []string{"text/plain"},
		Skills:      []a2a.Skill{},
	}
	for _, a := range agents {
		if !a.Enabled {
			continue
		}
		c.Skills = append(c.Skills, a2a.Skill{ID: a.Name, Name: a.Name,
			Description: "Agent card: " + s.a2aBase(r) + "/a2a/agents/" + a.ID + "/" + a2a.CardPath, Tags: []string{"agent"}})
	}
	writeCard(w, r, c)
}

// a2aRPC: POST /a2a/agents/{agent}, the JSON-RPC endpoint.
func (s *Server) a2aRPC(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a2a.MaxRequestBytes))
	if err != nil {
		var mb *http.MaxBytesError
		status := http.StatusBadRequest
		if errors.As(err, &mb) {
			status = http.StatusRequestEntityTooLarge
		}
		writeJSON(w, status, a2a.ErrorResponse(nil, a2a.Errorf(a2a.CodeInvalidRequest, "request body: %v", err)))
		return
	}
	req, rerr := a2a.ParseRequest(body)
	if _, v, ok := a2aVersion(r); !ok {
		// The version says how to read the request: checked first.
		rerr = &a2a.Error{Code: a2a.CodeVersionNotSupported, Message: a2aVersionError(v)}
	}
	if rerr != nil {
		writeJSON(w, http.StatusOK, a2a.ErrorResponse(req.ID, rerr))
		return
	}
	fail := func(e *a2a.Error) { writeJSON(w, http.StatusOK, a2a.ErrorResponse(req.ID, e)) }
	agent, e := s.a2aAgentByRef(r, r.PathValue("agent"))
	if e != nil {
		// No such endpoint: an HTTP error, not a JSON-RPC one.
		writeError(w, e)
		return
	}
	p := principalFrom(r.Context())
	switch req.Op {
	case a2a.MethodGetTask, a2a.MethodCancelTask:
		tp, perr := a2a.DecodeTaskParams(req.Params)
		if perr != nil {
			fail(perr)
			return
		}
		var t *a2a.Task
		if req.Op == a2a.MethodCancelTask {
			t, perr = s.a2aCancel(r.Context(), p.Tenant, agent.ID, tp.ID)
		} else {
			t, perr = s.a2aTasks.view(r.Context(), p.Tenant, agent.ID, tp.ID, nil)
		}
		if perr != nil {
			fail(perr)
			return
		}
		cutHistory(t, tp.HistoryLength)
		writeJSON(w, http.StatusOK, a2a.Result(req.ID, a2a.EncodeTask(t, req.Dialect)))
	case a2a.MethodSubscribeTask:
		tp, perr := a2a.DecodeTaskParams(req.Params)
		if perr != nil {
			fail(perr)
			return
		}
		s.a2aSubscribe(w, r, req, tp, agent.ID)
	case a2a.MethodListTasks:
		lp, perr := a2a.DecodeListParams(req.Params)
		if perr != nil {
			fail(perr)
			return
		}
		list, perr := s.a2aTasks.list(r.Context(), p.Tenant, agent.ID, lp)
		if perr != nil {
			fail(perr)
			return
		}
		writeJSON(w, http.StatusOK, a2a.Result(req.ID, list.Encode()))
	case a2a.MethodExtendedCard:
		// The card does not declare capabilities.extendedAgentCard: it is
		// served to authenticated clients only, and is complete. Protocol
		// 1.0 answers UnsupportedOperationError for an undeclared extended
		// card; 0.3 has only AuthenticatedExtendedCardNotConfiguredError.
		if req.Dialect == a2a.V03 {
			fail(a2a.Errorf(a2a.CodeExtendedCardNotConfigured, "this agent has no authenticated extended card: its card, served to authenticated clients only, is complete"))
			return
		}
		fail(a2a.Errorf(a2a.CodeUnsupportedOperation, "GetExtendedAgentCard is not supported: the agent card does not declare capabilities.extendedAgentCard (it is served to authenticated clients only, and is complete)"))
	default:
		sp, perr := a2a.DecodeSendParams(req.Params)
		if perr != nil {
			fail(perr)
			return
		}
		s.a2aSend(w, r, req, sp, agent)
	}
}

// a2aCancel cancels a running task of the agent and returns it. A task
// this replica runs is cancelled here; one another replica runs is marked
// canceled in the store (unless it is over meanwhile) and its turn
// cancelled through the bus.
func (s *Server) a2aCancel(ctx context.Context, tenant, agentID, id string) (*a2a.Task, *a2a.Error) {
	ts := s.a2aTasks
	if t := ts.liveTask(tenant, agentID, id); t != nil {
		var snap *a2a.Task
		canceled := false
		ts.update(t, func(t *a2aTask) {
			if !t.task.Status.State.Terminal() {
				t.canceled, canceled = true, true
				t.task.Status = a2a.Status{State: a2a.StateCanceled, Timestamp: a2aNow()}
			}
			snap = t.snapshot(nil)
		})
		if !canceled {
			return nil, a2a.Errorf(a2a.CodeTaskNotCancelable, "task %q is %s", id, snap.Status.State)
		}
		ts.save(t)
		s.turns.cancel(tenant+"\x00"+id, errCancelledByClient)
		return snap, nil
	}
	t, e := ts.stored(ctx, tenant, agentID, id)
	if e != nil {
		return nil, e
	}
	if t.Status.State.Terminal() {
		return nil, a2a.Errorf(a2a.CodeTaskNotCancelable, "task %q is %s", id, t.Status.State)
	}
	t.Status = a2a.Status{State: a2a.StateCanceled, Timestamp: a2aNow()}
	data, err := json.Marshal(t)
	if err != nil {
		return nil, a2a.Errorf(a2a.CodeInternalError, "task %q: %v", id, err)
	}
	ok, err := ts.db.FinishA2ATask(ctx, meta.A2ATask{TenantID: tenant, ID: id, State: string(a2a.StateCanceled), Data: data, UpdatedAt: time.Now().UTC()})
	if err != nil {
		return nil, a2a.Errorf(a2a.CodeInternalError, "task %q: the store failed: %v", id, err)
	}
	if !ok { // it ended meanwhile
		now, e := ts.stored(ctx, tenant, agentID, id)
		if e != nil {
			return nil, e
		}
		return nil, a2a.Errorf(a2a.CodeTaskNotCancelable, "task %q is %s", id, now.Status.State)
	}
	// The turn is registered under the task id on the replica running it.
	s.bus.publish(ctx, "cancel", tenant, id)
	return t, nil
}

func a2aNow() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// a2aError maps an API error to a JSON-RPC error: a request at fault is
// invalid params, anything else an internal error; data carries the API's
// error code.
func a2aError(e *apiError) *a2a.Error {
	code := a2a.CodeInternalError
	switch e.Status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge:
		code = a2a.CodeInvalidParams
	}
	return &a2a.Error{Code: code, Message: e.Message, Data: map[string]any{"code": e.Code, "status": e.Status}}
}

// a2aQuery is the text of a user message: its text parts, and its data
// parts as JSON text. Files are refused.
func a2aQuery(m *a2a.Message) (string, *a2a.Error) {
	for _, p := range m.Parts {
		if p.IsFile() {
			return "", a2a.Errorf(a2a.CodeContentTypeNotSupported, "file parts are not supported; send text or data parts")
		}
	}
	q := strings.TrimSpace(m.Text())
	switch {
	case q == "":
		return "", a2a.Errorf(a2a.CodeInvalidParams, "the message has no text")
	case len(q) > MaxQueryBytes:
		return "", a2a.Errorf(a2a.CodeInvalidParams, "the message's text exceeds %d bytes", MaxQueryBytes)
	}
	return q, nil
}

// a2aSend serves SendMessage and SendStreamingMessage: one turn of the
// agent, through the turn service. A refusal before the turn starts (a
// disabled agent, a budget, an unknown context) is a JSON-RPC error; once
// it has started, the task reports the outcome.
func (s *Server) a2aSend(w http.ResponseWriter, r *http.Request, req *a2a.Request, sp *a2a.SendParams, agent meta.Agent) {
	fail := func(e *a2a.Error) { writeJSON(w, http.StatusOK, a2a.ErrorResponse(req.ID, e)) }
	query, qerr := a2aQuery(&sp.Message)
	if qerr != nil {
		fail(qerr)
		return
	}
	if sp.Message.TaskID != "" {
		fail(a2a.Errorf(a2a.CodeUnsupportedOperation, "task %q is over: every task of a Weft agent is one complete turn; send the next message with its contextId and no taskId", sp.Message.TaskID))
		return
	}
	p := principalFrom(r.Context())
	// A task the client does not wait for outlives the request.
	background := !sp.Blocking && !req.Streams()
	ctx := r.Context()
	if background {
		ctx = context.WithoutCancel(ctx)
	}
	next, stop := iter.Pull2(s.runTurnStream(ctx, turn.Input{Agent: agent, SessionID: sp.Message.ContextID, Message: llm.UserMessage(query)}))
	first, err, _ := next()
	if err != nil || first.Kind != turn.Started {
		stop()
		e := turnAPIError(err)
		if err == nil {
			e = errorf(http.StatusInternalServerError, CodeInternal, "the turn did not start")
		}
		if e.Code == CodeNotFound && sp.Message.ContextID != "" {
			e = errorf(http.StatusNotFound, CodeNotFound, "contextId %q is not a conversation of this agent; omit it to start one", sp.Message.ContextID)
		}
		fail(a2aError(e))
		return
	}
	user := sp.Message
	user.ContextID, user.TaskID = first.SessionID, first.MessageID
	tt := agent.Timeouts
	tt.Defaults()
	t := &a2aTask{tenant: p.Tenant, agentID: agent.ID, created: time.Now().UTC(),
		staleAfter: s.lockWait() + time.Duration(tt.TurnMS)*time.Millisecond + a2aStaleGrace,
		task:       a2a.Task{ID: first.MessageID, ContextID: first.SessionID, Status: a2a.Status{State: a2a.StateSubmitted, Timestamp: a2aNow()}, History: []a2a.Message{user}}}
	s.a2aTasks.start(t)

	if background {
		s.a2aTasks.update(t, func(t *a2aTask) {
			if !t.canceled {
				t.task.Status = a2a.Status{State: a2a.StateWorking, Timestamp: a2aNow()}
			}
		})
		view := s.a2aView(t, sp.HistoryLength)
		go func() {
			// Off the request's goroutine, a panic would end the process.
			defer func() {
				if v := recover(); v != nil {
					s.log.Error("panic in a background A2A task", "task", t.task.ID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
					stop()
					s.a2aTasks.update(t, func(t *a2aTask) {
						t.task.Status = a2a.Status{State: a2a.StateFailed, Timestamp: a2aNow()}
					})
					s.a2aTasks.finish(t)
				}
			}()
			s.a2aRunTurn(next, stop, t, func(a2a.Event) error { return nil })
		}()
		writeJSON(w, http.StatusOK, a2a.Result(req.ID, a2a.Event{Task: view}.Encode(req.Dialect)))
		return
	}
	if !req.Streams() {
		s.a2aRunTurn(next, stop, t, func(a2a.Event) error { return nil })
		writeJSON(w, http.StatusOK, a2a.Result(req.ID, a2a.Event{Task: s.a2aView(t, sp.HistoryLength)}.Encode(req.Dialect)))
		return
	}
	s.metrics.activeStreams.Inc()
	defer s.metrics.activeStreams.Dec()
	sw := newSSEWriter(w, s.frameDeadline())
	done := make(chan struct{})
	defer close(done)
	go sw.keepAlive(s.pingInterval(), done)
	s.a2aRunTurn(next, stop, t, func(ev a2a.Event) error { return sw.data(a2a.Result(req.ID, ev.Encode(req.Dialect))) })
}

// a2aView is a copy of task t, also once it has ended (and is no longer
// held live).
func (s *Server) a2aView(t *a2aTask, n *int) *a2a.Task {
	s.a2aTasks.mu.Lock()
	defer s.a2aTasks.mu.Unlock()
	return t.snapshot(n)
}

// a2aRunTurn reads the rest of a started turn (next; stop ends it early),
// keeping the task up to date and reporting the stream's events to emit:
// the task (submitted), working, the answer's chunks as artifact updates,
// and the final status. An emit error (the client went away) cancels the
// turn.
func (s *Server) a2aRunTurn(next func() (turn.Event, error, bool), stop func(), t *a2aTask, emit func(a2a.Event) error) {
	defer stop()
	taskID, contextID := t.task.ID, t.task.ContextID
	s.a2aTasks.mu.Lock()
	first := t.snapshot(nil)
	s.a2aTasks.mu.Unlock()
	gone := emit(a2a.Event{Task: first}) != nil
	s.a2aTasks.update(t, func(t *a2aTask) {
		if !t.canceled {
			t.task.Status = a2a.Status{State: a2a.StateWorking, Timestamp: a2aNow()}
		}
	})
	s.a2aTasks.save(t)
	gone = gone || emit(a2a.Event{StatusUpdate: &a2a.StatusUpdate{TaskID: taskID, ContextID: contextID, Status: a2a.Status{State: a2a.StateWorking, Timestamp: a2aNow()}}}) != nil
	chunks := 0
	chunk := func(text string, last bool) error {
		ev := a2a.Event{ArtifactUpdate: &a2a.ArtifactUpdate{TaskID: taskID, ContextID: contextID, Append: chunks > 0, LastChunk: last,
			Artifact: a2a.Artifact{ArtifactID: a2aArtifactID, Name: a2aArtifactID, Parts: []a2a.Part{a2a.TextPart(text)}}}}
		chunks++
		return emit(ev)
	}
	var ans *turn.Answer
	var terr error
	for !gone {
		ev, err, ok := next()
		if !ok {
			terr = errors.New("the turn ended without an answer")
			break
		}
		if err != nil {
			terr = err
			break
		}
		if ev.Kind == turn.TextDelta {
			s.a2aTasks.update(t, func(t *a2aTask) { t.answer.WriteString(ev.Text) })
			gone = chunk(ev.Text, false) != nil
		}
		if ev.Kind == turn.Completed {
			ans = ev.Answer
			break
		}
	}
	if gone {
		stop() // the client went away: the turn is cancelled
		terr = &turn.Error{Code: CodeCancelled, Message: "the client went away"}
	}
	agentMsg := func(text string) *a2a.Message {
		return &a2a.Message{MessageID: taskID, ContextID: contextID, TaskID: taskID, Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
	}
	var te *turn.Error
	if terr != nil && !errors.As(terr, &te) {
		te = &turn.Error{Code: CodeInternal, Message: terr.Error()}
	}
	var status a2a.Status
	s.a2aTasks.update(t, func(t *a2aTask) {
		switch {
		case te == nil:
			if t.answer.Len() == 0 {
				t.answer.WriteString(ans.Answer)
			}
			m := agentMsg(ans.Answer)
			t.task.History = append(t.task.History, *m)
			t.task.Status = a2a.Status{State: a2a.StateCompleted, Message: m, Timestamp: a2aNow()}
		case t.canceled || te.Code == CodeCancelled:
			t.canceled = true
			t.task.Status = a2a.Status{State: a2a.StateCanceled, Message: agentMsg("The task was canceled."), Timestamp: a2aNow()}
		default:
			msg := te.Code + ": " + te.Message
			if te.Partial {
				msg += " (the partial answer is in the task's artifact)"
			}
			t.task.Status = a2a.Status{State: a2a.StateFailed, Message: agentMsg(msg), Timestamp: a2aNow()}
		}
		status = t.task.Status
	})
	// Stored before the client hears the end, so that any replica it asks
	// next has it.
	s.a2aTasks.finish(t)
	if gone {
		return
	}
	if te == nil && chunks == 0 && ans.Answer != "" {
		chunk(ans.Answer, true)
	} else if te == nil {
		chunk("", true)
	}
	emit(a2a.Event{StatusUpdate: &a2a.StatusUpdate{TaskID: taskID, ContextID: contextID, Status: status}})
}
