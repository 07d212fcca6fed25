package platform

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/turn"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/secretref"
	"github.com/weftlabs/weft/workflow"
)

// The platform's side of package workflow: the services nodes use (the
// tenant's models, agents, knowledge bases and tools, and HTTP through the
// outbound guard), the checkpointer over the metadata store, and a run's
// events as the API streams them. A run acts for the tenant and API key
// that started it: it sees that tenant's objects only.

// workflowParallelism bounds how many nodes of one run (its iterations'
// items included) run at once on the server: a tenant's wide graph (up
// to 2,000 nodes) or long iteration waits its turn instead of opening
// thousands of model calls and connections, or of goroutines, together.
const workflowParallelism = 16

// DefaultWorkflowRuns is the default of WorkflowLimits.Runs.
const DefaultWorkflowRuns = 64

// WorkflowLimits bound the workflow runs of a server (Config.WorkflowLimits),
// so that one tenant's runs cannot take it over. Zero fields take the
// defaults.
type WorkflowLimits struct {
	// Runs bounds the runs one tenant has going on this server (default
	// DefaultWorkflowRuns): a run started beyond it is refused (429), so
	// that no tenant holds the server's goroutines and connections with
	// runs that wait.
	Runs int
	// Run bounds each run: its node runs, the bytes of its nodes' inputs
	// and outputs, and its conditions' time and inputs (see
	// workflow.Limits for them and their defaults). A run that reaches one
	// fails, with an error naming the limit.
	Run workflow.Limits
}

func (l WorkflowLimits) withDefaults() WorkflowLimits {
	if l.Runs <= 0 {
		l.Runs = DefaultWorkflowRuns
	}
	return l
}

// parseWorkflowLimits reads the workflow limits from the environment
// (getenv): WEFT_WORKFLOW_RUNS (runs per tenant), WEFT_WORKFLOW_NODE_RUNS,
// WEFT_WORKFLOW_RUN_BYTES, WEFT_WORKFLOW_CONDITION_TIME (a duration) and
// WEFT_WORKFLOW_CONDITION_BYTES. Unset variables keep the defaults.
func parseWorkflowLimits(getenv func(string) string) (WorkflowLimits, error) {
	var l WorkflowLimits
	ints := []struct {
		name     string
		dst      *int
		min, max int
		def      int
	}{
		{"WEFT_WORKFLOW_RUNS", &l.Runs, 1, 100_000, DefaultWorkflowRuns},
		{"WEFT_WORKFLOW_NODE_RUNS", &l.Run.NodeRuns, 1, 10_000_000, workflow.DefaultNodeRuns},
		{"WEFT_WORKFLOW_RUN_BYTES", &l.Run.RunBytes, 1 << 10, 1 << 40, workflow.DefaultRunBytes},
		{"WEFT_WORKFLOW_CONDITION_BYTES", &l.Run.ConditionBytes, 1 << 10, workflow.MaxValueSize, workflow.DefaultConditionBytes},
	}
	for _, v := range ints {
		raw := strings.TrimSpace(getenv(v.name))
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < v.min || n > v.max {
			return l, fmt.Errorf("%s=%q: want an integer from %d to %d (default %d)", v.name, raw, v.min, v.max, v.def)
		}
		*v.dst = n
	}
	if raw := strings.TrimSpace(getenv("WEFT_WORKFLOW_CONDITION_TIME")); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < time.Millisecond || d > time.Minute {
			return l, fmt.Errorf("WEFT_WORKFLOW_CONDITION_TIME=%q: want a duration from 1ms to 1m (default %v)", raw, workflow.DefaultConditionTime)
		}
		l.Run.ConditionTime = d
	}
	return l, nil
}

// parseStored parses and checks a stored workflow version.
func parseStored(wf meta.Workflow) (*workflow.Definition, error) {
	def, err := workflow.Parse(wf.Definition)
	if err != nil {
		return nil, fmt.Errorf("workflow %s version %d: %w", wf.ID, wf.Version, err)
	}
	if err := def.Validate(validateOptions()...); err != nil {
		return nil, fmt.Errorf("workflow %s version %d: %w", wf.ID, wf.Version, err)
	}
	return def, nil
}

// startNode returns the definition's start node.
func startNode(def *workflow.Definition) *workflow.Node {
	for i := range def.Nodes {
		if def.Nodes[i].Kind == workflow.KindStart {
			return &def.Nodes[i]
		}
	}
	return nil
}

// checkRunInputs checks a run's inputs against the start node's
// declaration before the run is stored: unknown and missing inputs and the
// JSON type of each (a 400 naming the input), then in depth as the engine
// will (nested fields, items, enums: a 400 naming the path).
func checkRunInputs(def *workflow.Definition, inputs map[string]any) *apiError {
	start := startNode(def)
	if start == nil {
		return nil
	}
	bad := func(name, format string, args ...any) *apiError {
		e := invalid("inputs.%s: "+format, append([]any{name}, args...)...)
		e.Param = "inputs." + name
		return e
	}
	for name := range inputs {
		if _, ok := start.Inputs[name]; !ok {
			return bad(name, "the workflow has no such input")
		}
	}
	for name, sc := range start.Inputs {
		v, ok := inputs[name]
		if !ok || v == nil {
			if sc == nil || sc.Default == nil {
				return bad(name, "required")
			}
			continue
		}
		if sc == nil || sc.Type == "" {
			continue
		}
		if got := jsonKind(v); got != sc.Type && !(sc.Type == workflow.TypeNumber && got == workflow.TypeInteger) {
			return bad(name, "want %s, got %s", sc.Type, got)
		}
	}
	if err := def.CheckInputs(inputs); err != nil {
		e := invalid("%s", strings.Replace(err.Error(), "workflow: invalid inputs: ", "inputs.", 1))
		e.Param = "inputs"
		return e
	}
	return nil
}

// jsonKind names the JSON Schema type of a decoded JSON value.
func jsonKind(v any) string {
	switch x := v.(type) {
	case string:
		return workflow.TypeString
	case bool:
		return workflow.TypeBoolean
	case float64:
		if x == float64(int64(x)) {
			return workflow.TypeInteger
		}
		return workflow.TypeNumber
	case []any:
		return workflow.TypeArray
	case map[string]any:
		return workflow.TypeObject
	}
	return "null"
}

// execWorkflowRun runs (or resumes) a claimed run to its end and returns
// its outputs, or the open interrupts of a run that stopped to wait for
// answers; its events go to feed (nil for a run nobody watches). res, when
// not nil, answers an interrupt first: its accept hears whether the answer
// was taken (an *workflow.AnswerError when refused, the run then not
// started).
func (s *Server) execWorkflowRun(ctx context.Context, run meta.WorkflowRun, feed *runFeed, res *runResume) (map[string]any, []workflow.Interrupt, error) {
	outputs, waiting, err := s.execWorkflowRunOnce(ctx, run, feed, res)
	res.accept(err)
	return outputs, waiting, err
}

func (s *Server) execWorkflowRunOnce(ctx context.Context, run meta.WorkflowRun, feed *runFeed, res *runResume) (map[string]any, []workflow.Interrupt, error) {
	store := s.workflows.store
	key, err := s.meta.KeyByID(ctx, run.KeyID)
	if err != nil {
		if errors.Is(err, meta.ErrNotFound) {
			return nil, nil, errRunKey(run.KeyID)
		}
		return nil, nil, err
	}
	ctx = context.WithValue(ctx, principalKey{}, principal{Key: key, Tenant: run.TenantID})
	wf, err := store.WorkflowVersion(ctx, run.TenantID, run.WorkflowID, run.Version)
	if err != nil {
		return nil, nil, err
	}
	def, err := parseStored(wf)
	if err != nil {
		return nil, nil, err
	}
	var inputs map[string]any
	if err := json.Unmarshal(run.Inputs, &inputs); err != nil {
		return nil, nil, fmt.Errorf("run %s: inputs: %w", run.ID, err)
	}
	red := &runSecrets{}
	svc := s.workflowServices(run, red)
	// The run's connections go with it: a run that stops (to wait for a
	// person, say) keeps no idle connection and its goroutines.
	defer svc.HTTP.CloseIdleConnections()
	eng := workflow.New(svc, workflow.Parallelism(workflowParallelism), workflow.WithLimits(s.cfg.WorkflowLimits.Run))
	cp := &runCheckpointer{store: store, tenant: run.TenantID, owner: s.workflows.owner, red: red}
	opts := []workflow.RunOption{workflow.WithRunID(run.ID), workflow.WithCheckpointer(cp)}
	if res != nil {
		opts = append(opts, workflow.WithAnswer(res.interrupt, res.answer))
	} else {
		feed.publish(runEvent{name: "workflow.started", data: map[string]any{"type": "workflow.started", "run_id": run.ID, "workflow_id": run.WorkflowID, "version": run.Version}})
	}
	var (
		outputs map[string]any
		waiting []workflow.Interrupt
	)
	for ev, err := range eng.Run(ctx, def, inputs, opts...) {
		if err != nil {
			var ae *workflow.AnswerError
			if errors.As(err, &ae) {
				return nil, nil, ae
			}
			return nil, nil, errors.New(red.redactError(err.Error()))
		}
		switch ev.Type {
		case workflow.WorkflowStarted:
			if res != nil {
				// The answer is stored: the run goes on.
				res.accept(nil)
				if err := store.SetWorkflowCheckpointInputs(ctx, run.TenantID, run.ID, res.answerKey, res.record()); err != nil {
					s.log.Warn("workflow run: record who answered", "run", run.ID, "interrupt", res.interrupt, "err", err)
				}
				feed.publish(runEvent{name: "workflow.resumed", data: res.eventJSON(run)})
				feed.publish(runEvent{name: "workflow.started", data: map[string]any{"type": "workflow.started", "run_id": run.ID, "workflow_id": run.WorkflowID, "version": run.Version}})
				s.log.Info("workflow run resumed by a person", "run", run.ID, "tenant", run.TenantID, "interrupt", res.interrupt,
					"key", res.keyID, "key_name", res.keyName, "waited_ms", res.waited.Milliseconds())
			}
			continue // announced above, with the workflow
		case workflow.NodeFinished:
			if !ev.Restored && len(ev.Inputs) > 0 {
				if err := store.SetWorkflowCheckpointInputs(ctx, run.TenantID, run.ID, ev.Key, redactJSON(red, ev.Inputs)); err != nil {
					s.log.Warn("workflow run: record node inputs", "run", run.ID, "node", ev.Key, "err", err)
				}
			}
		case workflow.WorkflowFinished:
			outputs = ev.Outputs
		case workflow.WorkflowWaiting:
			waiting = ev.Interrupts
		}
		if feed != nil {
			feed.publish(runEvent{name: string(ev.Type), data: eventJSON(run, ev, red)})
		}
	}
	if waiting != nil {
		return nil, waiting, nil
	}
	if outputs == nil {
		outputs = map[string]any{}
	}
	if !red.empty() {
		var clean map[string]any
		if err := json.Unmarshal(redactJSON(red, outputs), &clean); err == nil {
			outputs = clean
		}
	}
	return outputs, nil, nil
}

// eventJSON is a run event as the API streams it.
func eventJSON(run meta.WorkflowRun, ev workflow.Event, red *runSecrets) map[string]any {
	out := map[string]any{"type": string(ev.Type), "run_id": run.ID}
	if ev.Node != "" {
		out["node_id"], out["key"] = ev.Node, ev.Key
	}
	if ev.Kind != "" {
		out["kind"] = string(ev.Kind)
	}
	switch ev.Type {
	case workflow.NodeDelta:
		out["text"] = red.redact(ev.Delta)
	case workflow.NodeFinished:
		out["status"] = string(ev.Status)
		out["inputs"] = redactJSON(red, ev.Inputs)
		out["outputs"] = redactJSON(red, ev.Outputs)
		out["usage"] = ev.Usage
		out["latency_ms"] = ev.Latency.Milliseconds()
		if ev.Error != "" {
			out["error"] = red.redactError(ev.Error)
		}
		if ev.Attempts > 1 {
			out["attempts"] = ev.Attempts
		}
		if ev.Restored {
			out["restored"] = true
		}
	case workflow.WorkflowFinished:
		out["status"] = meta.RunSucceeded
		out["outputs"] = redactJSON(red, ev.Outputs)
		out["usage"] = ev.Usage
		out["latency_ms"] = ev.Latency.Milliseconds()
	case workflow.NodeWaiting:
		out["status"] = meta.RunWaiting
		if len(ev.Inputs) > 0 {
			out["inputs"] = redactJSON(red, ev.Inputs)
		}
		out["interrupts"] = interruptsJSON(run.WorkflowID, ev.Interrupts)
	case workflow.WorkflowWaiting:
		out["status"] = meta.RunWaiting
		out["interrupts"] = interruptsJSON(run.WorkflowID, ev.Interrupts)
		out["usage"] = ev.Usage
		out["latency_ms"] = ev.Latency.Milliseconds()
	}
	return out
}

// runSecrets are the secret values a run used, to redact from its
// events and history; safe for concurrent use (nodes run concurrently).
type runSecrets struct {
	mu  sync.Mutex
	red secretref.Redactor
}

func (r *runSecrets) add(o *secretref.Redactor) {
	r.mu.Lock()
	r.red.Merge(o)
	r.mu.Unlock()
}

func (r *runSecrets) empty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.red.Empty()
}

func (r *runSecrets) redact(s string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.red.Redact(s)
}

// redactError is an error's text without the run's secret values and the
// process's (see processSecrets).
func (r *runSecrets) redactError(s string) string {
	return processSecrets.Text(r.redact(s))
}

// redactJSON is v as JSON with the run's secret values replaced.
func redactJSON(red *runSecrets, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(err.Error())
	}
	if red.empty() {
		return b
	}
	return json.RawMessage(red.redact(string(b)))
}

// runCheckpointer is a run's workflow.Checkpointer over the metadata
// store: saves succeed only while this replica holds the run's lease.
type runCheckpointer struct {
	store  workflowStore
	tenant string
	owner  string
	red    *runSecrets
}

// Completed implements workflow.Checkpointer.
func (c *runCheckpointer) Completed(ctx context.Context, runID string) ([]workflow.Checkpoint, error) {
	cps, err := c.store.WorkflowCheckpoints(ctx, c.tenant, runID)
	if err != nil {
		return nil, err
	}
	out := make([]workflow.Checkpoint, 0, len(cps))
	for _, cp := range cps {
		w := workflow.Checkpoint{NodeID: cp.NodeID, Key: cp.Key, Error: cp.Error, Started: cp.StartedAt, Finished: cp.FinishedAt}
		if len(cp.Outputs) > 0 && string(cp.Outputs) != "null" {
			if err := json.Unmarshal(cp.Outputs, &w.Outputs); err != nil {
				return nil, fmt.Errorf("checkpoint %s: %w", cp.Key, err)
			}
		}
		if len(cp.Usage) > 0 && string(cp.Usage) != "null" {
			json.Unmarshal(cp.Usage, &w.Usage)
		}
		if len(cp.Waiting) > 0 {
			w.Waiting = new(workflow.Interrupt)
			if err := json.Unmarshal(cp.Waiting, w.Waiting); err != nil {
				return nil, fmt.Errorf("checkpoint %s: question: %w", cp.Key, err)
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// Save implements workflow.Checkpointer. The secret values the run used
// are redacted from what is stored: the history never shows them, and a
// resumed run's later nodes see them redacted.
func (c *runCheckpointer) Save(ctx context.Context, runID string, cp workflow.Checkpoint) error {
	rec := meta.WorkflowCheckpoint{Key: cp.Key, NodeID: cp.NodeID, Error: c.red.redactError(cp.Error), StartedAt: cp.Started, FinishedAt: cp.Finished}
	if cp.Outputs != nil {
		rec.Outputs = redactJSON(c.red, cp.Outputs)
	}
	if cp.Waiting != nil {
		rec.Waiting = redactJSON(c.red, cp.Waiting)
	}
	if cp.Usage != (llm.Usage{}) {
		rec.Usage, _ = json.Marshal(cp.Usage)
	}
	return c.store.SaveWorkflowCheckpoint(ctx, c.tenant, runID, c.owner, rec)
}

// workflowServices are the services of one run's nodes: the tenant's
// objects only.
func (s *Server) workflowServices(run meta.WorkflowRun, red *runSecrets) workflow.Services {
	tenant := run.TenantID
	svc := workflow.Services{
		Model: func(ctx context.Context, name string) (llm.ChatModel, error) {
			m, err := s.model(name)
			if err != nil {
				return nil, err
			}
			return &meteredModel{s: s, m: m, tenant: tenant, key: run.KeyID, source: "workflow:" + run.WorkflowID}, nil
		},
		Agent: func(ctx context.Context, req workflow.AgentRequest) (workflow.AgentResult, error) {
			return s.workflowAgentTurn(ctx, tenant, req)
		},
		HTTP: &http.Client{
			Transport:     &secretHeaders{next: s.guard.Transport(), lookup: s.lookup(tenant, false), red: red},
			CheckRedirect: s.guard.CheckRedirect,
			Timeout:       5 * time.Minute,
		},
	}
	if k, ok := s.knowledge.(*knowledge); ok {
		svc.Knowledge = func(ctx context.Context, req workflow.KnowledgeRequest) ([]workflow.Fragment, error) {
			return k.workflowRecall(ctx, tenant, req)
		}
	}
	if s.tools != nil {
		svc.Tool = func(ctx context.Context, name string, args json.RawMessage) (string, error) {
			return s.tools.workflowCall(ctx, tenant, name, args)
		}
	}
	return svc
}

// secretHeaders expands ${secret:NAME} in the header values of an http
// node's requests with the tenant's secrets (never the server's
// environment), and remembers the values to redact them from the run's
// history.
type secretHeaders struct {
	next   http.RoundTripper
	lookup secretref.Lookup
	red    *runSecrets
}

// CloseIdleConnections closes the idle connections of the transport
// underneath.
func (t *secretHeaders) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *secretHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	var out *http.Request
	for name, vals := range req.Header {
		for i, v := range vals {
			if !strings.Contains(v, "${") {
				continue
			}
			red := &secretref.Redactor{}
			x, err := secretref.Expand(req.Context(), v, t.lookup, red)
			if err != nil {
				return nil, fmt.Errorf("header %s: %w", name, err)
			}
			t.red.add(red)
			if out == nil {
				out = req.Clone(req.Context())
			}
			out.Header[name][i] = x
		}
	}
	if out == nil {
		out = req
	}
	return t.next.RoundTrip(out)
}

// workflowAgentTurn runs an agent node's turn: the tenant's agent (by id
// or name), in a session of its own per run and node (so a resumed node
// continues the same conversation).
func (s *Server) workflowAgentTurn(ctx context.Context, tenant string, req workflow.AgentRequest) (workflow.AgentResult, error) {
	agent, err := s.agents.getIn(ctx, tenant, req.Agent)
	if errors.Is(err, meta.ErrNotFound) {
		agent, err = s.meta.AgentByName(ctx, tenant, req.Agent)
	}
	if err != nil {
		if errors.Is(err, meta.ErrNotFound) {
			return workflow.AgentResult{}, fmt.Errorf("no agent %q", req.Agent)
		}
		return workflow.AgentResult{}, err
	}
	if !agent.Enabled {
		return workflow.AgentResult{}, fmt.Errorf("agent %q is disabled", agent.Name)
	}
	sum := sha256.Sum256([]byte(req.RunID + "\x00" + req.Key))
	ss := meta.Session{ID: "ses_w" + idEncodingLower(sum[:10]), TenantID: tenant, AgentID: agent.ID}
	if _, err := s.meta.Session(ctx, tenant, ss.ID); errors.Is(err, meta.ErrNotFound) {
		now := time.Now().UTC()
		ss.CreatedAt, ss.UpdatedAt = now, now
		if err := s.meta.CreateSession(ctx, ss); err != nil && !errors.Is(err, meta.ErrConflict) {
			return workflow.AgentResult{}, err
		}
	} else if err != nil {
		return workflow.AgentResult{}, err
	}
	var ans *turn.Answer
	for ev, err := range s.runTurnStream(ctx, turn.Input{Agent: agent, SessionID: ss.ID, Message: llm.UserMessage(req.Query)}) {
		if err != nil {
			return workflow.AgentResult{}, fmt.Errorf("agent %q: %w", agent.Name, err)
		}
		switch ev.Kind {
		case turn.TextDelta:
			if req.OnDelta != nil {
				req.OnDelta(ev.Text)
			}
		case turn.Completed:
			ans = ev.Answer
		}
	}
	if ans == nil {
		return workflow.AgentResult{}, fmt.Errorf("agent %q: the turn ended without an answer", agent.Name)
	}
	return workflow.AgentResult{Answer: ans.Answer, Usage: llm.Usage{PromptTokens: ans.Usage.PromptTokens,
		CompletionTokens: ans.Usage.CompletionTokens, TotalTokens: ans.Usage.TotalTokens}}, nil
}

// workflowRecall is a knowledge node's recall: the tenant's knowledge
// bases named (by id or name), hybrid, fused.
func (k *knowledge) workflowRecall(ctx context.Context, tenant string, req workflow.KnowledgeRequest) ([]workflow.Fragment, error) {
	topK := req.TopK
	if topK <= 0 {
		topK = meta.DefaultTopK
	}
	var named map[string]meta.KnowledgeBase
	multi := &rag.MultiRetriever{}
	for _, ref := range req.KnowledgeBases {
		kb, err := k.store.KB(ctx, tenant, ref)
		if errors.Is(err, meta.ErrNotFound) {
			if named == nil {
				list, err := k.store.ListKBs(ctx, tenant)
				if err != nil {
					return nil, err
				}
				named = map[string]meta.KnowledgeBase{}
				for _, x := range list {
					named[x.Name] = x
				}
			}
			var ok bool
			if kb, ok = named[ref]; ok {
				err = nil
			}
		}
		if err != nil {
			if errors.Is(err, meta.ErrNotFound) {
				return nil, fmt.Errorf("no knowledge base %q", ref)
			}
			return nil, err
		}
		h, err := k.open(ctx, kb)
		if err != nil {
			return nil, fmt.Errorf("knowledge base %q: %w", kb.Name, err)
		}
		r, err := h.retriever(meta.DefaultRetrievalMode, topK, 0)
		if err != nil {
			return nil, fmt.Errorf("knowledge base %q: %w", kb.Name, err)
		}
		multi.Retrievers = append(multi.Retrievers, rag.NamedRetriever{Name: kb.Name, Retriever: r})
	}
	rc := multi.Recall(ctx, req.Query, topK)
	for _, d := range rc.Degraded {
		k.s.log.WarnContext(ctx, "workflow recall degraded", "step", d.Step, "name", d.Name, "err", d.Err)
	}
	out := make([]workflow.Fragment, 0, len(rc.Sources))
	for _, f := range fragments(rc.Sources) {
		out = append(out, workflow.Fragment{Text: f.Content, Source: f.DocumentName, Score: f.Score})
	}
	return out, nil
}

// workflowCall is a tool node's call: the tenant's tool (by id or name;
// an MCP server's tools by their own records), with its JSON arguments.
func (ts *tools) workflowCall(ctx context.Context, tenant, ref string, args json.RawMessage) (string, error) {
	rec, err := ts.store.Tool(ctx, tenant, ref)
	if errors.Is(err, meta.ErrNotFound) {
		list, lerr := ts.store.ListTools(ctx, tenant)
		if lerr != nil {
			return "", lerr
		}
		for _, t := range list {
			if t.Name == ref && t.Kind != kindMCP {
				rec, err = t, nil
				break
			}
		}
	}
	if err != nil {
		if errors.Is(err, meta.ErrNotFound) {
			return "", fmt.Errorf("no tool %q", ref)
		}
		return "", err
	}
	got, err := ts.runnable(ctx, rec)
	if err != nil {
		return "", fmt.Errorf("tool %q: %w", rec.Name, err)
	}
	if len(got) != 1 {
		return "", fmt.Errorf("tool %q is an MCP server: name one of its tools", rec.Name)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := got[0].Call(ctx, args)
	if err != nil {
		var ae *tool.ArgumentError
		if errors.As(err, &ae) {
			return "", fmt.Errorf("tool %q: bad arguments: %w", rec.Name, err)
		}
		return "", fmt.Errorf("tool %q: %w", rec.Name, err)
	}
	return res.Content, nil
}

// meteredModel is an llm node's model: the budgets of the run's key and
// tenant are checked before each call (a spent budget fails the node), and
// the call's usage is recorded under the agent "workflow:<id>".
type meteredModel struct {
	s                   *Server
	m                   *llm.Model
	tenant, key, source string
}

func (mm *meteredModel) check(ctx context.Context) error {
	if e := mm.s.accounting.check(ctx, mm.tenant, mm.key); e != nil {
		return errors.New(e.Message)
	}
	return nil
}

// Generate implements llm.ChatModel.
func (mm *meteredModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := mm.check(ctx); err != nil {
		return nil, err
	}
	resp, err := mm.m.Generate(ctx, req)
	if resp != nil {
		mm.s.accounting.record(ctx, mm.tenant, mm.source, mm.key, mm.m.Name(), resp.Usage)
	}
	return resp, err
}

// Stream implements llm.ChatModel.
func (mm *meteredModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		if err := mm.check(ctx); err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		var usage llm.Usage
		defer func() { mm.s.accounting.record(ctx, mm.tenant, mm.source, mm.key, mm.m.Name(), usage) }()
		for c, err := range mm.m.Stream(ctx, req) {
			if c.Type == llm.ChunkUsage {
				usage = c.Usage
			}
			if !yield(c, err) {
				return
			}
		}
	}
}
