package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/workflow"
)

// Workflows (issue J): a tenant saves workflow definitions (package
// workflow: JSON or YAML), checked when saved, and runs them; every run is
// durable (workflowrun.go). A workflow is addressed by id or name.

// workflowStore is what workflows need of the metadata store.
type workflowStore interface {
	CreateWorkflow(ctx context.Context, w meta.Workflow) error
	UpdateWorkflow(ctx context.Context, w meta.Workflow) (meta.Workflow, error)
	Workflow(ctx context.Context, tenant, id string) (meta.Workflow, error)
	WorkflowByName(ctx context.Context, tenant, name string) (meta.Workflow, error)
	WorkflowVersion(ctx context.Context, tenant, id string, version int) (meta.Workflow, error)
	ListWorkflows(ctx context.Context, tenant string) ([]meta.Workflow, error)
	DeleteWorkflow(ctx context.Context, tenant, id string) error

	CreateWorkflowRun(ctx context.Context, r meta.WorkflowRun) error
	WorkflowRun(ctx context.Context, tenant, id string) (meta.WorkflowRun, error)
	ListWorkflowRuns(ctx context.Context, tenant, workflowID string, limit int) ([]meta.WorkflowRun, error)
	ClaimWorkflowRun(ctx context.Context, tenant, id, owner string, now, until time.Time) (meta.WorkflowRun, bool, error)
	RenewWorkflowRun(ctx context.Context, tenant, id, owner string, until time.Time) (held, cancel bool, err error)
	FinishWorkflowRun(ctx context.Context, r meta.WorkflowRun, owner string) (bool, error)
	CancelWorkflowRun(ctx context.Context, tenant, id string, now time.Time) (meta.WorkflowRun, error)
	ExpiredWorkflowRuns(ctx context.Context, now time.Time, limit int) ([]meta.WorkflowRun, error)
	ResetWorkflowLeases(ctx context.Context, owner string) error
	SaveWorkflowCheckpoint(ctx context.Context, tenant, runID, owner string, cp meta.WorkflowCheckpoint) error
	SetWorkflowCheckpointInputs(ctx context.Context, tenant, runID, key string, inputs json.RawMessage) error
	WorkflowCheckpoints(ctx context.Context, tenant, runID string) ([]meta.WorkflowCheckpoint, error)

	WaitWorkflowRun(ctx context.Context, tenant, id, owner string, wake time.Time) (bool, error)
	ResumeWorkflowRun(ctx context.Context, tenant, id, owner string, until time.Time) (meta.WorkflowRun, bool, error)
	DueWorkflowRuns(ctx context.Context, now time.Time, limit int) ([]meta.WorkflowRun, error)
	OpenInterrupts(ctx context.Context, tenant, workflowID string, limit int) ([]meta.OpenInterrupt, error)
}

// workflowRoutes registers the workflow routes.
func (s *Server) workflowRoutes() {
	s.handle("GET /v1/workflows", need(viewer), s.listWorkflows)
	s.handle("POST /v1/workflows", need(builder), s.createWorkflow)
	s.handle("GET /v1/workflows/{id}", need(viewer), s.getWorkflow)
	s.handle("PUT /v1/workflows/{id}", need(builder), s.updateWorkflow)
	s.handle("DELETE /v1/workflows/{id}", need(builder), s.deleteWorkflow)
	s.handle("POST /v1/workflows/{id}/runs", need(builder), s.startWorkflowRun)
	s.handle("GET /v1/workflows/{id}/runs", need(viewer), s.listWorkflowRuns)
	s.handle("GET /v1/workflows/{id}/runs/{run}", need(viewer), s.getWorkflowRun)
	s.handle("POST /v1/workflows/{id}/runs/{run}/cancel", need(builder), s.cancelWorkflowRun)
	s.handle("GET /v1/workflow-node-kinds", need(viewer), s.workflowNodeKinds)
	s.handle("GET /v1/workflows/{id}/runs/{run}/interrupts", need(viewer), s.listRunInterrupts)
	s.handle("POST /v1/workflows/{id}/runs/{run}/interrupts/{interrupt}/resume", need(builder), s.resumeInterrupt)
	s.handle("GET /v1/interrupts", need(viewer), s.listInterrupts)
}

// validateOptions are the options every definition is validated with:
// llm nodes may leave out their model for the server's default, as
// agents do.
func validateOptions() []workflow.ValidateOption {
	return []workflow.ValidateOption{workflow.WithDefaultModel()}
}

// workflowNodeKinds: GET /v1/workflow-node-kinds lists the node kinds a
// definition may use, each with the JSON Schema of its fields (as
// Validate checks them) and of its outputs, for editors and forms.
func (s *Server) workflowNodeKinds(w http.ResponseWriter, r *http.Request) {
	kinds, err := workflow.Kinds(validateOptions()...)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, kinds)
}

// workflowJSON is a workflow as the API shows it: its definition's fields,
// with the server's id, name, version and times.
func workflowJSON(w meta.Workflow) map[string]any {
	out := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(w.Definition))
	dec.UseNumber()
	dec.Decode(&out)
	out["id"], out["name"], out["version"] = w.ID, w.Name, w.Version
	out["created_at"], out["updated_at"] = w.CreatedAt, w.UpdatedAt
	return out
}

// readDefinition reads a request body (JSON, or YAML when the content type
// says so or the body is not a JSON object) as a workflow definition and
// checks it: the answer to a bad one is a 400 that names the node and the
// field (param "nodes.ID.FIELD"). It returns the definition and its JSON,
// without the server-kept fields (id, version, times).
func (s *Server) readDefinition(w http.ResponseWriter, r *http.Request) (*workflow.Definition, json.RawMessage, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, workflow.MaxDefinitionSize))
	if err != nil {
		return nil, nil, decodeError(err)
	}
	trimmed := bytes.TrimSpace(body)
	isJSON := len(trimmed) > 0 && trimmed[0] == '{'
	if isJSON {
		if e := checkJSONText(trimmed); e != nil {
			return nil, nil, e
		}
		// The fields the server keeps may come back from a GET: drop them.
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &obj); err != nil {
			return nil, nil, decodeError(err)
		}
		for _, f := range []string{"id", "version", "created_at", "updated_at"} {
			delete(obj, f)
		}
		trimmed, _ = json.Marshal(obj)
	}
	def, err := workflow.Parse(trimmed)
	if err != nil {
		return nil, nil, definitionError(err)
	}
	def.Name = strings.TrimSpace(def.Name)
	switch {
	case def.Name == "":
		e := invalid("field \"name\" is required")
		e.Param = "name"
		return nil, nil, e
	case len(def.Name) > 128:
		e := invalid("field \"name\": at most 128 characters")
		e.Param = "name"
		return nil, nil, e
	}
	if e := checkText("name", def.Name); e != nil {
		return nil, nil, e
	}
	if err := def.Validate(validateOptions()...); err != nil {
		return nil, nil, definitionError(err)
	}
	raw := json.RawMessage(trimmed)
	if !isJSON {
		if raw, err = json.Marshal(def); err != nil {
			return nil, nil, asAPIError(err)
		}
	}
	return def, raw, nil
}

// createWorkflow: POST /v1/workflows.
func (s *Server) createWorkflow(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	def, raw, e := s.readDefinition(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	now := time.Now().UTC()
	wf := meta.Workflow{ID: meta.NewID("wf"), TenantID: p.Tenant, Name: def.Name, Version: 1, Definition: raw, CreatedAt: now, UpdatedAt: now}
	if err := s.workflows.store.CreateWorkflow(r.Context(), wf); err != nil {
		if errors.Is(err, meta.ErrConflict) {
			writeError(w, nameTaken("a workflow", wf.Name))
			return
		}
		writeError(w, asAPIError(err))
		return
	}
	s.bus.publish(r.Context(), "workflow", p.Tenant, wf.ID)
	writeJSON(w, http.StatusCreated, workflowJSON(wf))
}

// listWorkflows: GET /v1/workflows.
func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) {
	list, err := s.workflows.store.ListWorkflows(r.Context(), principalFrom(r.Context()).Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := make([]map[string]any, 0, len(list))
	for _, wf := range list {
		out = append(out, workflowJSON(wf))
	}
	writeJSON(w, http.StatusOK, out)
}

// workflow returns the caller's workflow ref (an id or a name).
func (s *Server) workflow(ctx context.Context, ref string) (meta.Workflow, *apiError) {
	tenant := principalFrom(ctx).Tenant
	wf, err := s.workflows.store.Workflow(ctx, tenant, ref)
	if errors.Is(err, meta.ErrNotFound) {
		wf, err = s.workflows.store.WorkflowByName(ctx, tenant, ref)
	}
	if err != nil {
		return wf, notFoundOr(err, "workflow", ref)
	}
	return wf, nil
}

// getWorkflow: GET /v1/workflows/{id}.
func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) {
	wf, e := s.workflow(r.Context(), r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, workflowJSON(wf))
}

// updateWorkflow: PUT /v1/workflows/{id} saves a new version of the
// definition (the whole definition: it replaces the stored one). Runs
// started before keep the version they started with.
func (s *Server) updateWorkflow(w http.ResponseWriter, r *http.Request) {
	cur, e := s.workflow(r.Context(), r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	def, raw, e := s.readDefinition(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	wf := cur
	wf.Name, wf.Definition, wf.Version, wf.UpdatedAt = def.Name, raw, 0, time.Now().UTC()
	got, err := s.workflows.store.UpdateWorkflow(r.Context(), wf)
	if err != nil {
		if errors.Is(err, meta.ErrConflict) {
			writeError(w, nameTaken("a workflow", wf.Name))
			return
		}
		writeError(w, notFoundOr(err, "workflow", cur.ID))
		return
	}
	s.bus.publish(r.Context(), "workflow", wf.TenantID, wf.ID)
	writeJSON(w, http.StatusOK, workflowJSON(got))
}

// deleteWorkflow: DELETE /v1/workflows/{id}, with its runs.
func (s *Server) deleteWorkflow(w http.ResponseWriter, r *http.Request) {
	wf, e := s.workflow(r.Context(), r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	if err := s.workflows.store.DeleteWorkflow(r.Context(), wf.TenantID, wf.ID); err != nil {
		writeError(w, notFoundOr(err, "workflow", wf.ID))
		return
	}
	s.bus.publish(r.Context(), "workflow", wf.TenantID, wf.ID)
	w.WriteHeader(http.StatusNoContent)
}

// definitionError is the 400 of a definition that does not check: param
// points at the first fault's node and field ("nodes.ID.FIELD").
func definitionError(err error) *apiError {
	e := invalid("%s", strings.TrimPrefix(err.Error(), "workflow: "))
	var ve *workflow.ValidationError
	if errors.As(err, &ve) {
		switch {
		case ve.Node != "" && ve.Field != "":
			e.Param = "nodes." + ve.Node + "." + ve.Field
		case ve.Node != "":
			e.Param = "nodes." + ve.Node
		default:
			e.Param = ve.Field
		}
	}
	return e
}
