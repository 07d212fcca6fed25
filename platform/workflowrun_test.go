package platform

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/workflow"
)

type runAnswer struct {
	ID      string         `json:"id"`
	Status  string         `json:"status"`
	Error   string         `json:"error"`
	Outputs map[string]any `json:"outputs"`
	Nodes   []struct {
		Key       string         `json:"key"`
		NodeID    string         `json:"node_id"`
		Inputs    map[string]any `json:"inputs"`
		Outputs   map[string]any `json:"outputs"`
		Error     string         `json:"error"`
		LatencyMS int64          `json:"latency_ms"`
	} `json:"nodes"`
}

func (e *testEnv) saveWorkflow(def any) string {
	e.t.Helper()
	var w wfAnswer
	if resp := e.do(e.admin, "POST", "/v1/workflows", def, &w); resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("save workflow: %d %s", resp.StatusCode, body(resp))
	}
	return w.ID
}

func (e *testEnv) runWorkflow(key, ref string, inputs map[string]any) runAnswer {
	e.t.Helper()
	var run runAnswer
	if resp := e.do(key, "POST", "/v1/workflows/"+ref+"/runs", map[string]any{"inputs": inputs}, &run); resp.StatusCode != http.StatusOK {
		e.t.Fatalf("run workflow: %d %s", resp.StatusCode, body(resp))
	}
	return run
}

// slowWorkflow makes an environment holding the workflow "slow", whose
// http node waits until its run is cancelled; entered receives once for
// each time the node has started.
func slowWorkflow(t *testing.T) (*testEnv, <-chan struct{}) {
	t.Helper()
	entered := make(chan struct{}, 1)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(api.Close)
	e := newEnv(t, nil, allowLoopback)
	e.saveWorkflow(map[string]any{"name": "slow", "nodes": []any{
		map[string]any{"id": "start", "kind": "start"},
		map[string]any{"id": "call", "kind": "http", "url": api.URL, "depends_on": []string{"start"}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"s": "{{ nodes.call.outputs.status }}"}},
	}})
	return e, entered
}

// startRun runs the workflow ref (blocking, admin key, no inputs) in the
// background; the channel gets the run's answer.
func (e *testEnv) startRun(ref string) <-chan runAnswer {
	done := make(chan runAnswer, 1)
	go func() {
		var run runAnswer
		e.do(e.admin, "POST", "/v1/workflows/"+ref+"/runs", map[string]any{}, &run)
		done <- run
	}()
	return done
}

// TestWorkflowRunBlockingAndStream: a run answers its outputs and nodes
// (blocking) or its events (SSE); it is listed and readable after.
func TestWorkflowRunBlockingAndStream(t *testing.T) {
	e := newEnv(t, scripted.New(scripted.Echo()))
	def := map[string]any{
		"name": "ask",
		"nodes": []any{
			map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"q": map[string]any{"type": "string"}}},
			map[string]any{"id": "think", "kind": "llm", "model": "scripted/demo", "prompt": "Question: {{ inputs.q }}"},
			map[string]any{"id": "fmt", "kind": "template", "template": "A: {{ nodes.think.outputs.text }}"},
			map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"answer": "{{ nodes.fmt.outputs.text }}"}},
		},
	}
	id := e.saveWorkflow(def)
	run := e.runWorkflow(e.admin, "ask", map[string]any{"q": "why?"})
	if run.Status != meta.RunSucceeded || !strings.Contains(run.Outputs["answer"].(string), "why?") || len(run.Nodes) != 4 {
		t.Fatalf("run = %+v", run)
	}
	var think *struct {
		Key       string         `json:"key"`
		NodeID    string         `json:"node_id"`
		Inputs    map[string]any `json:"inputs"`
		Outputs   map[string]any `json:"outputs"`
		Error     string         `json:"error"`
		LatencyMS int64          `json:"latency_ms"`
	}
	for i := range run.Nodes {
		if run.Nodes[i].NodeID == "think" {
			think = &run.Nodes[i]
		}
	}
	if think == nil || think.Inputs["prompt"] != "Question: why?" || think.Outputs["text"] == nil {
		t.Fatalf("the llm node's record: %+v", think)
	}

	// Bad inputs are a 400 before any run is made.
	var eb struct{ Error struct{ Code, Param string } }
	resp := e.do(e.admin, "POST", "/v1/workflows/ask/runs", map[string]any{"inputs": map[string]any{"q": 3}}, &eb)
	if resp.StatusCode != http.StatusBadRequest || eb.Error.Param != "inputs.q" {
		t.Fatalf("bad input: %d %+v", resp.StatusCode, eb)
	}
	e.wantError(e.do(e.admin, "POST", "/v1/workflows/ask/runs", map[string]any{"inputs": map[string]any{}}, nil), http.StatusBadRequest, CodeInvalidRequest)

	// Streamed.
	req, _ := http.NewRequest("POST", e.http.URL+"/v1/workflows/"+id+"/runs", strings.NewReader(`{"inputs":{"q":"how?"},"stream":true}`))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	frames, _ := readSSE(t, sresp.Body)
	sresp.Body.Close()
	var names []string
	var deltas int
	for _, f := range frames {
		if f.Event == "node.delta" {
			deltas++
			continue
		}
		names = append(names, f.Event)
	}
	if len(names) < 2 || names[0] != "workflow.started" || names[len(names)-1] != "workflow.finished" || deltas == 0 {
		t.Fatalf("events %v (%d deltas)", names, deltas)
	}
	last := frames[len(frames)-1].Data
	if out, _ := last["outputs"].(map[string]any); out == nil || !strings.Contains(out["answer"].(string), "how?") {
		t.Fatalf("workflow.finished %v", last)
	}
	runID := sresp.Header.Get("Weft-Run-Id")

	var runs []runAnswer
	e.do(e.admin, "GET", "/v1/workflows/ask/runs", nil, &runs)
	if len(runs) != 2 || runs[0].ID != runID || runs[0].Status != meta.RunSucceeded {
		t.Fatalf("runs %+v (streamed %s)", runs, runID)
	}
	var got runAnswer
	e.do(e.admin, "GET", "/v1/workflows/ask/runs/"+runID, nil, &got)
	if got.Status != meta.RunSucceeded || len(got.Nodes) != 4 {
		t.Fatalf("run %+v", got)
	}
	other := e.tenantKey("other")
	e.wantError(e.do(other, "GET", "/v1/workflows/"+id+"/runs/"+runID, nil, nil), http.StatusNotFound, CodeNotFound)
}

// TestWorkflowServices: agent, knowledge, tool and http nodes use the
// tenant's objects, the outbound guard, and the tenant's secrets, which
// the run's history shows redacted; another tenant's objects are unknown.
func TestWorkflowServices(t *testing.T) {
	var gotAuth atomic.Value
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1" {
			gotAuth.Store(r.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"city":"Paris","temp":21,"echo":"`+r.Header.Get("Authorization")+`"}`)
	}))
	defer api.Close()
	e := newEnv(t, scripted.New(scripted.Echo()), allowLoopback)
	e.do(e.admin, "PUT", "/v1/secrets/WEATHER_TOKEN", map[string]any{"value": "tok-s3cr3t"}, nil)
	e.createAgent(e.admin, map[string]any{"name": "helper", "system_prompt": "Help."})
	var kb struct{ ID string }
	e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "handbook"}, &kb)
	var doc struct{ ID string }
	e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{"name": "faq.md", "content": "Refunds are paid within 14 days."}, &doc)
	e.waitDocument(kb.ID, doc.ID)
	if resp := e.do(e.admin, "POST", "/v1/tools", map[string]any{"name": "weather", "kind": "http", "description": "Weather.",
		"http":       map[string]any{"method": "GET", "url": api.URL + "/weather"},
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	}, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("tool: %d %s", resp.StatusCode, body(resp))
	}
	def := map[string]any{
		"name": "services",
		"nodes": []any{
			map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"q": map[string]any{"type": "string"}}},
			map[string]any{"id": "ask", "kind": "agent", "agent": "helper", "query": "{{ inputs.q }}"},
			map[string]any{"id": "recall", "kind": "knowledge", "knowledge_bases": []string{"handbook"}, "query": "{{ inputs.q }}"},
			map[string]any{"id": "weather", "kind": "tool", "tool": "weather", "depends_on": []string{"start"}, "args": map[string]any{"city": "Paris"}},
			map[string]any{"id": "call", "kind": "http", "url": api.URL + "/v1", "depends_on": []string{"start"}, "headers": map[string]any{"Authorization": "Bearer ${secret:WEATHER_TOKEN}"}},
			map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{
				"answer": "{{ nodes.ask.outputs.answer }}", "facts": "{{ nodes.recall.outputs.text }}",
				"weather": "{{ nodes.weather.outputs.result }}", "body": "{{ nodes.call.outputs.body }}"}},
		},
	}
	e.saveWorkflow(def)
	run := e.runWorkflow(e.admin, "services", map[string]any{"q": "refunds"})
	if run.Status != meta.RunSucceeded {
		t.Fatalf("run %+v", run)
	}
	if !strings.Contains(run.Outputs["answer"].(string), "refunds") || !strings.Contains(run.Outputs["facts"].(string), "14 days") ||
		!strings.Contains(run.Outputs["weather"].(string), "Paris") {
		t.Fatalf("outputs %v", run.Outputs)
	}
	if gotAuth.Load() != "Bearer tok-s3cr3t" {
		t.Fatalf("the http node sent Authorization %q", gotAuth.Load())
	}
	var got runAnswer
	raw := body(e.do(e.admin, "GET", "/v1/workflows/services/runs/"+run.ID, nil, &got))
	if strings.Contains(raw, "tok-s3cr3t") {
		t.Fatalf("the run's history shows the secret: %s", raw)
	}
	if !strings.Contains(raw, "${secret:WEATHER_TOKEN}") {
		t.Fatalf("the http node's inputs lost the reference: %s", raw)
	}

	// Another tenant's workflow cannot reach this tenant's objects.
	other := e.tenantKey("other")
	var w wfAnswer
	if resp := e.do(other, "POST", "/v1/workflows", def, &w); resp.StatusCode != http.StatusCreated {
		t.Fatalf("other tenant's workflow: %d %s", resp.StatusCode, body(resp))
	}
	run = e.runWorkflow(other, w.ID, map[string]any{"q": "refunds"})
	if run.Status != meta.RunFailed || strings.Contains(run.Error, "tok-s3cr3t") || !strings.Contains(run.Error, "helper") &&
		!strings.Contains(run.Error, "handbook") && !strings.Contains(run.Error, "weather") && !strings.Contains(run.Error, "WEATHER_TOKEN") {
		t.Fatalf("another tenant's run = %+v", run)
	}
}

// TestWorkflowHTTPGuard: an http node cannot reach addresses the outbound
// guard refuses (loopback, without an allow list).
func TestWorkflowHTTPGuard(t *testing.T) {
	var hits atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer api.Close()
	e := newEnv(t, nil)
	e.saveWorkflow(map[string]any{"name": "ssrf", "nodes": []any{
		map[string]any{"id": "start", "kind": "start"},
		map[string]any{"id": "call", "kind": "http", "url": api.URL, "depends_on": []string{"start"}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"s": "{{ nodes.call.outputs.status }}"}},
	}})
	run := e.runWorkflow(e.admin, "ssrf", nil)
	if run.Status != meta.RunFailed || hits.Load() != 0 {
		t.Fatalf("run %+v, %d hits", run, hits.Load())
	}
}

// TestWorkflowCancel: a run blocked in a node is cancelled through the
// cancel route; it ends cancelled.
func TestWorkflowCancel(t *testing.T) {
	e, entered := slowWorkflow(t)
	done := e.startRun("slow")
	<-entered
	var runs []runAnswer
	e.do(e.admin, "GET", "/v1/workflows/slow/runs", nil, &runs)
	if len(runs) != 1 || runs[0].Status != meta.RunRunning {
		t.Fatalf("runs %+v", runs)
	}
	if resp := e.do(e.admin, "POST", "/v1/workflows/slow/runs/"+runs[0].ID+"/cancel", nil, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", resp.StatusCode, body(resp))
	}
	run := <-done
	if run.Status != meta.RunCancelled {
		t.Fatalf("run %+v", run)
	}
}

// TestWorkflowResume: a server stopped in the middle of a run (its lease
// left in place, as a crash leaves it) resumes the run when it starts
// again on the same store: the node that finished does not run again.
func TestWorkflowResume(t *testing.T) {
	var first, second atomic.Int32
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/first":
			first.Add(1)
			io.WriteString(w, "one")
		case "/second":
			n := second.Add(1)
			if n == 1 {
				entered <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, "two")
		}
	}))
	defer api.Close()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	store, err := meta.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	admin, err := Bootstrap(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	newServer := func() (*Server, *httptest.Server) {
		cfg := Config{Meta: store, Sessions: memory.NewInMemory(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			OpenModel: func(spec string) (*llm.Model, error) {
				return llm.New(scripted.New(scripted.Echo()), llm.WithName(spec)), nil
			},
			RateLimit: -1, Instance: "replica-1"}
		allowLoopback(&cfg)
		srv, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return srv, httptest.NewServer(srv)
	}
	srv, hs := newServer()
	e := &testEnv{t: t, srv: srv, http: hs, admin: admin}
	e.saveWorkflow(map[string]any{"name": "two", "nodes": []any{
		map[string]any{"id": "start", "kind": "start"},
		map[string]any{"id": "a", "kind": "http", "url": api.URL + "/first", "depends_on": []string{"start"}},
		map[string]any{"id": "b", "kind": "http", "url": api.URL + "/second", "depends_on": []string{"a"}, "idempotent": true},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"a": "{{ nodes.a.outputs.body }}", "b": "{{ nodes.b.outputs.body }}"}},
	}})
	go e.do(e.admin, "POST", "/v1/workflows/two/runs", map[string]any{"stream": true}, nil)
	<-entered
	// The "crash": the runner stops without finishing the run.
	srv.workflows.close()
	hs.CloseClientConnections()
	hs.Close()
	var runs []meta.WorkflowRun
	wf, _ := store.WorkflowByName(ctx, e.tenant(), "two")
	runs, _ = store.ListWorkflowRuns(ctx, e.tenant(), wf.ID, 10)
	if len(runs) != 1 || runs[0].Status != meta.RunRunning {
		t.Fatalf("runs after the crash: %+v", runs)
	}
	close(release)

	srv2, hs2 := newServer()
	defer func() { hs2.Close(); srv2.Close() }()
	e2 := &testEnv{t: t, srv: srv2, http: hs2, admin: admin}
	var run runAnswer
	for deadline := time.Now().Add(20 * time.Second); ; {
		e2.do(admin, "GET", "/v1/workflows/two/runs/"+runs[0].ID, nil, &run)
		if run.Status != meta.RunRunning || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if run.Status != meta.RunSucceeded || run.Outputs["a"] != "one" || run.Outputs["b"] != "two" {
		t.Fatalf("resumed run %+v", run)
	}
	if first.Load() != 1 || second.Load() != 2 {
		t.Fatalf("calls: first %d (want 1), second %d (want 2: interrupted, idempotent)", first.Load(), second.Load())
	}
}

// TestWorkflowUsage: an llm node's tokens count in the tenant's usage
// (as agent "workflow:<id>") and its budgets stop the next run's model.
func TestWorkflowUsage(t *testing.T) {
	e := newEnv(t, scripted.New(scripted.Echo()))
	id := e.saveWorkflow(map[string]any{"name": "metered", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"q": map[string]any{"type": "string"}}},
		map[string]any{"id": "think", "kind": "llm", "model": "scripted/demo", "prompt": "{{ inputs.q }}"},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"a": "{{ nodes.think.outputs.text }}"}},
	}})
	if run := e.runWorkflow(e.admin, "metered", map[string]any{"q": "count me"}); run.Status != meta.RunSucceeded {
		t.Fatalf("run %+v", run)
	}
	var rep struct {
		Rows []struct {
			AgentID     string `json:"agent_id"`
			TotalTokens int    `json:"total_tokens"`
		} `json:"rows"`
	}
	e.do(e.admin, "GET", "/v1/usage?group_by=agent", nil, &rep)
	if len(rep.Rows) != 1 || rep.Rows[0].AgentID != "workflow:"+id || rep.Rows[0].TotalTokens == 0 {
		t.Fatalf("usage %+v", rep.Rows)
	}
	if resp := e.do(e.admin, "PUT", "/v1/budgets", map[string]any{"period": "day", "max_tokens": 1}, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("budget: %d %s", resp.StatusCode, body(resp))
	}
	run := e.runWorkflow(e.admin, "metered", map[string]any{"q": "again"})
	if run.Status != meta.RunFailed || !strings.Contains(run.Error, "budget") {
		t.Fatalf("run over budget %+v", run)
	}
}

// TestWorkflowTenantLimit: a tenant cannot start more runs on a replica
// than the limit (429); once one ends, it can again.
func TestWorkflowTenantLimit(t *testing.T) {
	e, entered := slowWorkflow(t)
	e.srv.workflows.maxPerTenant = 1
	done := e.startRun("slow")
	<-entered
	resp := e.do(e.admin, "POST", "/v1/workflows/slow/runs", map[string]any{}, nil)
	e.wantError(resp, http.StatusTooManyRequests, CodeRateLimited)
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	var runs []runAnswer
	e.do(e.admin, "GET", "/v1/workflows/slow/runs", nil, &runs)
	if len(runs) != 1 {
		t.Fatalf("a refused run was stored: %+v", runs)
	}
	e.do(e.admin, "POST", "/v1/workflows/slow/runs/"+runs[0].ID+"/cancel", nil, nil)
	if run := <-done; run.Status != meta.RunCancelled {
		t.Fatalf("run %+v", run)
	}
	for deadline := time.Now().Add(10 * time.Second); e.srv.workflows.busy(e.tenant()); {
		if time.Now().After(deadline) {
			t.Fatal("the tenant's slot was not freed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	again := e.startRun("slow")
	<-entered
	e.do(e.admin, "GET", "/v1/workflows/slow/runs", nil, &runs)
	e.do(e.admin, "POST", "/v1/workflows/slow/runs/"+runs[0].ID+"/cancel", nil, nil)
	if run := <-again; run.Status != meta.RunCancelled {
		t.Fatalf("second run %+v", run)
	}
}

// TestWorkflowRunDeepInputs: an input that matches its declared type at
// the top but not inside (a nested field, an item, an enum) is a 400 that
// names the path, and no run is made.
func TestWorkflowRunDeepInputs(t *testing.T) {
	e := newEnv(t, nil)
	e.saveWorkflow(map[string]any{"name": "triage", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"ticket": map[string]any{
			"type": "object", "required": []string{"title"},
			"properties": map[string]any{
				"title":    map[string]any{"type": "string"},
				"priority": map[string]any{"type": "string", "enum": []string{"low", "high"}},
				"tags":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			}}}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"title": "{{ inputs.ticket.title }}"}},
	}})
	for _, c := range []struct {
		ticket map[string]any
		want   string
	}{
		{map[string]any{"priority": "low"}, `inputs.ticket: missing field "title"`},
		{map[string]any{"title": "t", "priority": "urgent"}, `inputs.ticket.priority: "urgent" is not one of ["low","high"]`},
		{map[string]any{"title": "t", "tags": []any{"a", 2}}, `inputs.ticket.tags[1]: want string, got number`},
	} {
		var eb struct {
			Error struct{ Code, Message, Param string }
		}
		resp := e.do(e.admin, "POST", "/v1/workflows/triage/runs", map[string]any{"inputs": map[string]any{"ticket": c.ticket}}, &eb)
		if resp.StatusCode != http.StatusBadRequest || eb.Error.Param != "inputs" || eb.Error.Message != c.want {
			t.Errorf("%v: %d %+v, want 400 %q", c.ticket, resp.StatusCode, eb, c.want)
		}
	}
	if runs := e.workflowRuns("triage"); len(runs) != 0 {
		t.Fatalf("%d runs made of bad inputs", len(runs))
	}
	if run := e.runWorkflow(e.admin, "triage", map[string]any{"ticket": map[string]any{"title": "t", "priority": "high", "tags": []any{"x"}}}); run.Status != meta.RunSucceeded || run.Outputs["title"] != "t" {
		t.Fatalf("good inputs: %+v", run)
	}
}

// TestWorkflowParallelismBounded: 24 independent http nodes of one run
// are in flight at most workflowParallelism at a time.
func TestWorkflowParallelismBounded(t *testing.T) {
	var inFlight, most atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(20 * time.Millisecond) // long enough for every ready node to start if unbounded
		io.WriteString(w, "ok")
	}))
	defer api.Close()
	e := newEnv(t, nil, allowLoopback)
	nodes := []any{map[string]any{"id": "start", "kind": "start"}}
	outputs := map[string]any{}
	for i := range 24 {
		id := "call" + strconv.Itoa(i)
		nodes = append(nodes, map[string]any{"id": id, "kind": "http", "url": api.URL, "depends_on": []string{"start"}})
		outputs[id] = "{{ nodes." + id + ".outputs.status }}"
	}
	nodes = append(nodes, map[string]any{"id": "end", "kind": "end", "outputs": outputs})
	e.saveWorkflow(map[string]any{"name": "wide", "nodes": nodes})
	if run := e.runWorkflow(e.admin, "wide", nil); run.Status != meta.RunSucceeded {
		t.Fatalf("run %+v", run)
	}
	if m := most.Load(); m > workflowParallelism || m < 2 {
		t.Fatalf("%d http nodes in flight at most, want 2 to %d", m, workflowParallelism)
	}
}

// TestWorkflowNodeRunLimit: an iteration that would take a run over its
// node-run limit fails the run before its first item, with an error
// naming the limit; the limit is the server's (WorkflowLimits).
func TestWorkflowNodeRunLimit(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.WorkflowLimits.Run.NodeRuns = 50 })
	e.saveWorkflow(map[string]any{"name": "wide", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"xs": map[string]any{"type": "array"}}},
		map[string]any{"id": "loop", "kind": "iteration", "items": "{{ inputs.xs }}", "output": "{{ nodes.t.outputs.text }}", "nodes": []any{
			map[string]any{"id": "t", "kind": "template", "template": "{{ item }}"},
		}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"r": "{{ nodes.loop.outputs.results }}"}},
	}})
	run := e.runWorkflow(e.admin, "wide", map[string]any{"xs": make([]any, 60)})
	if run.Status != meta.RunFailed || !strings.Contains(run.Error, "items: 60 × 1 node runs would take the run over the limit of 50 node runs") {
		t.Fatalf("run %+v", run)
	}
	for _, n := range run.Nodes {
		if strings.HasPrefix(n.Key, "loop[") {
			t.Fatalf("item node %s ran", n.Key)
		}
	}
	if run := e.runWorkflow(e.admin, "wide", map[string]any{"xs": make([]any, 40)}); run.Status != meta.RunSucceeded {
		t.Fatalf("run within the limit %+v", run)
	}
}

// TestWorkflowOutputLimit: items that each copy a 900 KB input fail
// their iteration once its results pass 8 MiB, before the other items
// run: what the run stored and answers stays near the limit.
func TestWorkflowOutputLimit(t *testing.T) {
	e := newEnv(t, nil)
	e.saveWorkflow(map[string]any{"name": "copies", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"text": map[string]any{"type": "string"}, "xs": map[string]any{"type": "array"}}},
		map[string]any{"id": "loop", "kind": "iteration", "items": "{{ inputs.xs }}", "output": "{{ nodes.copy.outputs.text }}", "nodes": []any{
			map[string]any{"id": "copy", "kind": "template", "template": "{{ index }} {{ inputs.text }}"},
		}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"r": "{{ nodes.loop.outputs.results }}"}},
	}})
	resp := e.do(e.admin, "POST", "/v1/workflows/copies/runs", map[string]any{"inputs": map[string]any{"text": strings.Repeat("x", 900_000), "xs": make([]any, 100)}}, nil)
	answer := body(resp)
	var run runAnswer
	if err := json.Unmarshal([]byte(answer), &run); err != nil {
		t.Fatal(err)
	}
	if run.Status != meta.RunFailed || !strings.Contains(run.Error, "results over the limit of 8388608 bytes") {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	cps, err := e.srv.workflows.store.WorkflowCheckpoints(context.Background(), e.tenant(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, cp := range cps {
		stored += len(cp.Inputs) + len(cp.Outputs)
	}
	// The inputs (the start node's outputs; the answer has the run's
	// too) and ten items of 900 KB (the tenth takes the results over 8
	// MiB), not a hundred.
	if stored > 11*901_000 || len(answer) > 12*901_000 {
		t.Fatalf("%d bytes stored, %d answered", stored, len(answer))
	}
}

// TestWorkflowConditionCancel: a run cancelled while a condition
// evaluates (a pattern whose matching would take hours) ends cancelled.
func TestWorkflowConditionCancel(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.WorkflowLimits.Run.ConditionTime = time.Hour })
	e.saveWorkflow(map[string]any{"name": "regex", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"text": map[string]any{"type": "string"}}},
		map[string]any{"id": "check", "kind": "condition", "cases": []any{
			map[string]any{"when": `none(1..1000, {inputs.text matches ".{0,1000}x"})`, "next": []string{"yes"}}}, "else": []string{"no"}},
		map[string]any{"id": "yes", "kind": "template", "template": "yes"},
		map[string]any{"id": "no", "kind": "template", "template": "no"},
		map[string]any{"id": "end", "kind": "end", "depends_on": []string{"yes", "no"}},
	}})
	raw, _ := json.Marshal(map[string]any{"stream": true, "inputs": map[string]any{"text": strings.Repeat("a", 256<<10)}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the run's end, not its speed
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.http.URL+"/v1/workflows/regex/runs", bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	id := resp.Header.Get("Weft-Run-Id")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	var last string
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "data: ") {
			last = line
		}
		if strings.Contains(line, `"type":"node.started"`) && strings.Contains(line, `"node_id":"check"`) {
			if r := e.do(e.admin, "POST", "/v1/workflows/regex/runs/"+id+"/cancel", nil, nil); r.StatusCode != http.StatusAccepted {
				t.Fatalf("cancel: %d", r.StatusCode)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if !strings.Contains(last, `"code":"cancelled"`) {
		t.Fatalf("last event %s", last)
	}
	var run runAnswer
	e.do(e.admin, "GET", "/v1/workflows/regex/runs/"+id, nil, &run)
	if run.Status != meta.RunCancelled {
		t.Fatalf("run %+v", run)
	}
}

// TestParseWorkflowLimits: the WEFT_WORKFLOW_* variables, and what is
// refused.
func TestParseWorkflowLimits(t *testing.T) {
	env := map[string]string{"WEFT_WORKFLOW_RUNS": "8", "WEFT_WORKFLOW_NODE_RUNS": "20000", "WEFT_WORKFLOW_RUN_BYTES": "1048576",
		"WEFT_WORKFLOW_CONDITION_TIME": "250ms", "WEFT_WORKFLOW_CONDITION_BYTES": "65536"}
	l, err := parseWorkflowLimits(func(k string) string { return env[k] })
	want := WorkflowLimits{Runs: 8, Run: workflow.Limits{NodeRuns: 20000, RunBytes: 1 << 20, ConditionTime: 250 * time.Millisecond, ConditionBytes: 1 << 16}}
	if err != nil || l != want {
		t.Fatalf("limits %+v, %v", l, err)
	}
	if l, err := parseWorkflowLimits(func(string) string { return "" }); err != nil || l != (WorkflowLimits{}) {
		t.Fatalf("unset: %+v, %v", l, err)
	}
	for k, v := range map[string]string{"WEFT_WORKFLOW_RUNS": "0", "WEFT_WORKFLOW_NODE_RUNS": "lots", "WEFT_WORKFLOW_RUN_BYTES": "-1",
		"WEFT_WORKFLOW_CONDITION_TIME": "1h", "WEFT_WORKFLOW_CONDITION_BYTES": "16777216"} {
		if _, err := parseWorkflowLimits(func(n string) string {
			if n == k {
				return v
			}
			return ""
		}); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
