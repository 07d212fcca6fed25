package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/toolname"
	"github.com/weftlabs/weft/workflow"
)

// Composition: a workflow is a tool of the agents that list it in
// workflow_ids (named workflow_<name>, its start inputs as parameters, its
// outputs as the result), and a model of the OpenAI-compatible endpoint
// ("workflow:<name>"). Either way the run is an ordinary durable run of
// the caller's tenant and key, listed with the workflow's runs.

// workflowToolPrefix starts the name of every workflow tool.
const workflowToolPrefix = "workflow"

// workflowTools is the tool source of an agent's workflows.
func (s *Server) workflowTools(ctx context.Context, agent meta.Agent, _ turnInput) ([]tool.Tool, error) {
	if s.workflows == nil || len(agent.WorkflowIDs) == 0 {
		return nil, nil
	}
	out := make([]tool.Tool, 0, len(agent.WorkflowIDs))
	for _, id := range agent.WorkflowIDs {
		wf, err := s.workflows.store.Workflow(ctx, agent.TenantID, id)
		if err != nil {
			s.log.WarnContext(ctx, "workflow tool unavailable", "agent", agent.ID, "workflow", id, "err", err)
			continue
		}
		def, err := parseStored(wf)
		if err != nil {
			s.log.WarnContext(ctx, "workflow tool unavailable", "agent", agent.ID, "workflow", id, "err", err)
			continue
		}
		params, _ := json.Marshal(inputsSchema(def))
		out = append(out, &workflowTool{s: s, tenant: agent.TenantID, workflowID: wf.ID, spec: llm.ToolSpec{
			Name: toolname.Join(workflowToolPrefix, wf.Name), Description: workflowDescription(def, wf.Name), Parameters: params,
		}})
	}
	return out, nil
}

// workflowDescription describes a workflow as a tool: its own
// description, or what calling it does.
func workflowDescription(def *workflow.Definition, name string) string {
	if def.Description != "" {
		return def.Description
	}
	return fmt.Sprintf("Run the workflow %q and get its outputs as JSON.", name)
}

// inputsSchema is the JSON Schema of a workflow's start inputs.
func inputsSchema(def *workflow.Definition) map[string]any {
	props := map[string]any{}
	required := []string{}
	if start := startNode(def); start != nil {
		for name, sc := range start.Inputs {
			if sc == nil {
				props[name] = map[string]any{}
				required = append(required, name)
				continue
			}
			props[name] = sc
			if sc.Default == nil {
				required = append(required, name)
			}
		}
	}
	sort.Strings(required)
	return map[string]any{"type": "object", "properties": props, "required": required}
}

// validateWorkflowRefs checks an agent's workflow_ids against its tenant's
// workflows (names were resolved to ids before).
func (s *Server) validateWorkflowRefs(ctx context.Context, a *meta.Agent) *apiError {
	for _, id := range a.WorkflowIDs {
		if _, err := s.workflows.store.Workflow(ctx, a.TenantID, id); err != nil {
			if errors.Is(err, meta.ErrNotFound) {
				return invalid("field \"workflow_ids\": no workflow %q", id)
			}
			return asAPIError(err)
		}
	}
	return nil
}

// resolveWorkflowNames replaces workflow names among an agent's
// workflow_ids by ids.
func (s *Server) resolveWorkflowNames(ctx context.Context, a *meta.Agent) *apiError {
	if s.workflows == nil || len(a.WorkflowIDs) == 0 {
		return nil
	}
	list, err := s.workflows.store.ListWorkflows(ctx, a.TenantID)
	if err != nil {
		return asAPIError(err)
	}
	ids := make(map[string]string, 2*len(list))
	for _, w := range list {
		ids[w.ID] = w.ID
	}
	for _, w := range list {
		if _, isID := ids[w.Name]; !isID {
			ids[w.Name] = w.ID
		}
	}
	mapRefs(a.WorkflowIDs, ids)
	return nil
}

type workflowTool struct {
	s          *Server
	tenant     string
	workflowID string
	spec       llm.ToolSpec
}

func (t *workflowTool) Spec() llm.ToolSpec { return t.spec }

// Call runs the workflow with the arguments as inputs, as the turn's key,
// and returns its outputs. A turn that ends first cancels the run.
func (t *workflowTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var inputs map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &inputs); err != nil {
			return tool.Result{}, &tool.ArgumentError{Tool: t.spec.Name, Err: err}
		}
	}
	out, _, err := t.s.runWorkflowFor(ctx, principalFrom(ctx), t.workflowID, inputs, nil)
	var we *runWaitingError
	if errors.As(err, &we) {
		// Not a failure: the model tells the user what is awaited.
		return tool.Result{Content: we.Error()}, nil
	}
	if err != nil {
		return tool.Result{}, err
	}
	b, _ := json.Marshal(out)
	return tool.Result{Content: string(b)}, nil
}

// runWorkflowFor runs a workflow of p's tenant (by id or name) to its end
// and returns its outputs and usage; onEvent, when not nil, sees each of
// the run's events as it comes. When ctx ends first, the run is
// cancelled. A run that stops to wait for people is a *runWaitingError
// (not cancelled: it waits for its answers).
func (s *Server) runWorkflowFor(ctx context.Context, p principal, ref string, inputs map[string]any, onEvent func(runEvent)) (map[string]any, llm.Usage, error) {
	wf, e := s.workflow(context.WithValue(ctx, principalKey{}, p), ref)
	if e != nil {
		return nil, llm.Usage{}, e
	}
	run, feed, e := s.beginRun(ctx, p, wf, inputs)
	if e != nil {
		return nil, llm.Usage{}, e
	}
	var (
		outputs map[string]any
		usage   llm.Usage
		failure error
		waiting []api.Interrupt
	)
	for i := 0; ; {
		evs, done, ch := feed.next(i)
		i += len(evs)
		for _, ev := range evs {
			if onEvent != nil {
				onEvent(ev)
			}
			data, _ := ev.data.(map[string]any)
			switch ev.name {
			case "workflow.finished":
				out, _ := data["outputs"].(json.RawMessage)
				json.Unmarshal(out, &outputs)
				usage, _ = data["usage"].(llm.Usage)
				if outputs == nil {
					outputs = map[string]any{}
				}
			case "workflow.waiting":
				waiting, _ = data["interrupts"].([]api.Interrupt)
				usage, _ = data["usage"].(llm.Usage)
			case "error":
				if d, ok := data["error"].(map[string]any); ok {
					failure = fmt.Errorf("workflow %q run %s: %v", wf.Name, run.ID, d["message"])
				}
			}
		}
		// The run is answered once it is recorded: the feed ends after.
		if done {
			switch {
			case failure != nil:
				return nil, llm.Usage{}, failure
			case outputs != nil:
				return outputs, usage, nil
			case waiting != nil:
				return nil, usage, &runWaitingError{workflow: wf.Name, runID: run.ID, interrupts: waiting}
			}
			return nil, llm.Usage{}, fmt.Errorf("workflow %q run %s stopped on this server; it will be resumed", wf.Name, run.ID)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			s.workflows.store.CancelWorkflowRun(context.WithoutCancel(ctx), run.TenantID, run.ID, time.Now().UTC())
			s.workflows.cancelLocal(run.TenantID, run.ID)
			return nil, llm.Usage{}, ctx.Err()
		}
	}
}

// openaiWorkflow answers a chat completion whose model is
// "workflow:<name>": the last user message is the run's input (a JSON
// object of inputs, or the text itself when the workflow has one string
// input), the outputs the answer (the one string output as it is, else
// JSON). A stream passes on the model's tokens as they come when the one
// output is an llm node's text ([workflow.Definition.StreamedOutput]);
// otherwise it carries the answer in one chunk when the run ends. As on
// the agents' path, the stream starts with the first piece of answer, so
// a run that fails before it is an HTTP error.
func (s *Server) openaiWorkflow(w http.ResponseWriter, r *http.Request, req *api.ChatCompletionRequest, ref string, query string) {
	p := principalFrom(r.Context())
	wf, e := s.workflow(r.Context(), ref)
	if e != nil {
		e.Param = "model"
		writeOpenAIError(w, e)
		return
	}
	def, err := parseStored(wf)
	if err != nil {
		writeOpenAIError(w, asAPIError(err))
		return
	}
	inputs := map[string]any{}
	if start := startNode(def); start != nil && len(start.Inputs) == 1 && !strings.HasPrefix(strings.TrimSpace(query), "{") {
		for name := range start.Inputs {
			inputs[name] = query
		}
	} else if strings.TrimSpace(query) != "" {
		if err := json.Unmarshal([]byte(query), &inputs); err != nil {
			writeOpenAIError(w, badParam("messages", "workflow %q takes its inputs as a JSON object in the last user message", wf.Name))
			return
		}
	}
	id, created, model := "chatcmpl-"+memory.NewID(), time.Now().Unix(), "workflow:"+wf.Name
	if !req.Stream {
		outputs, usage, err := s.runWorkflowFor(r.Context(), p, wf.ID, inputs, nil)
		var we *runWaitingError
		if errors.As(err, &we) {
			outputs, err = nil, nil
		}
		if err != nil {
			writeOpenAIError(w, workflowModelError(err))
			return
		}
		content := workflowAnswer(outputs)
		if we != nil {
			content = we.Error()
		}
		writeJSON(w, http.StatusOK, api.ChatCompletion{ID: id, Object: "chat.completion", Created: created, Model: model,
			Choices: []api.ChatChoice{{Message: api.AnswerMessage{Role: "assistant", Content: &content}, FinishReason: "stop"}},
			Usage:   workflowUsage(usage)})
		return
	}
	var (
		sw       *sseWriter
		streamed strings.Builder
		gone     bool // the client stopped reading
	)
	stop := make(chan struct{})
	defer close(stop)
	chunk := func(delta api.ChunkDelta, finish *string) {
		if !gone && sw.data(api.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []api.ChunkChoice{{Delta: delta, FinishReason: finish}}}) != nil {
			gone = true
		}
	}
	send := func(text string) {
		if sw == nil {
			s.metrics.activeStreams.Inc()
			sw = newSSEWriter(w, s.frameDeadline())
			go sw.keepAlive(s.pingInterval(), stop)
			chunk(api.ChunkDelta{Role: "assistant", Content: new(string)}, nil)
		}
		chunk(api.ChunkDelta{Content: &text}, nil)
	}
	defer func() {
		if sw != nil {
			s.metrics.activeStreams.Dec()
		}
	}()
	var onEvent func(runEvent)
	if node, ok := def.StreamedOutput(); ok {
		onEvent = func(ev runEvent) {
			d, _ := ev.data.(map[string]any)
			if text, _ := d["text"].(string); ev.name == "node.delta" && d["key"] == node && text != "" {
				streamed.WriteString(text)
				send(text)
			}
		}
	}
	outputs, usage, err := s.runWorkflowFor(r.Context(), p, wf.ID, inputs, onEvent)
	var we *runWaitingError
	if errors.As(err, &we) {
		err = nil
	}
	if err != nil {
		if sw == nil {
			writeOpenAIError(w, workflowModelError(err))
			return
		}
		if !gone {
			sw.data(openAIErrorBody(workflowModelError(err)))
		}
		return
	}
	content := workflowAnswer(outputs)
	if we != nil {
		// The run waits: the answer says for what, and how to answer,
		// after whatever streamed before the pause.
		content = streamed.String() + we.Error()
	}
	if rest, ok := strings.CutPrefix(content, streamed.String()); ok {
		if rest != "" || sw == nil {
			send(rest)
		}
	} else {
		// The tokens passed on are not the start of the output: only
		// redaction of a secret split across tokens can do that.
		s.log.WarnContext(r.Context(), "workflow stream differs from its output", "request_id", requestID(r.Context()), "workflow", wf.ID)
	}
	stopReason := "stop"
	chunk(api.ChunkDelta{}, &stopReason)
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage && !gone {
		u := workflowUsage(usage)
		sw.data(api.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Choices: []api.ChunkChoice{}, Usage: &u})
	}
	if !gone {
		sw.raw([]byte("data: [DONE]\n\n"))
	}
}

// workflowAnswer is a run's outputs as a workflow model's answer: the one
// string output as it is, else the outputs as JSON.
func workflowAnswer(outputs map[string]any) string {
	if len(outputs) == 1 {
		for _, v := range outputs {
			if s, ok := v.(string); ok && s != "" {
				return s
			}
		}
	}
	b, _ := json.Marshal(outputs)
	return string(b)
}

func workflowUsage(u llm.Usage) api.Usage {
	return api.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

// workflowModelError is the API error of a workflow run that failed as a
// model of the OpenAI-compatible endpoint.
func workflowModelError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(err, context.Canceled) {
		return errorf(499, CodeCancelled, "cancelled")
	}
	return errorf(http.StatusBadGateway, CodeModelError, "%v", err)
}

// runWaitingError is a run that stopped to wait for people: what a
// caller that runs a workflow as a tool or a model answers instead of
// outputs — what is awaited and the route that answers it.
type runWaitingError struct {
	workflow, runID string
	interrupts      []api.Interrupt
}

// Error says what the run waits for and how to answer it.
func (e *runWaitingError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Workflow %q run %s is waiting for a person's answer", e.workflow, e.runID)
	for i, in := range e.interrupts {
		if i == 0 {
			b.WriteString(":")
		}
		fmt.Fprintf(&b, "\n- %s", in.ID)
		if in.Message != "" {
			fmt.Fprintf(&b, ": %q", in.Message)
		}
		if len(in.OutputSchema) > 0 {
			fmt.Fprintf(&b, " (answer fitting %s)", in.OutputSchema)
		}
		fmt.Fprintf(&b, ". Answer it with POST %s {\"answer\": {...}}", in.Resume)
		if in.ExpiresAt != nil {
			fmt.Fprintf(&b, " before %s", in.ExpiresAt.Format(time.RFC3339))
		}
		b.WriteString(".")
	}
	return b.String()
}
