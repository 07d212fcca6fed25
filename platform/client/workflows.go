package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/weftlabs/weft/platform/api"
)

// Workflow is a saved workflow: the server's id, name and version, and the
// whole answer (the definition's fields with those) in Raw.
type Workflow struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Raw is the workflow as the server answered it.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the whole answer in Raw.
func (w *Workflow) UnmarshalJSON(b []byte) error {
	type plain Workflow
	if err := json.Unmarshal(b, (*plain)(w)); err != nil {
		return err
	}
	w.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// The wire types of workflow runs.
type (
	// WorkflowRun is one run of a workflow; Nodes are listed when the run
	// is read on its own (RunWorkflow, GetWorkflowRun), not in lists.
	WorkflowRun = api.WorkflowRun
	// WorkflowNode is one finished node of a run.
	WorkflowNode = api.WorkflowNode
	// Interrupt is an open question of a waiting run: the node, the
	// message, the answer's JSON Schema and the route that answers it.
	Interrupt = api.Interrupt
)

// ApplyWorkflow saves a workflow definition (JSON or YAML, as in a file):
// a new version of the workflow of the same name when there is one, else a
// new workflow; created says which. A definition that does not check is an
// *Error (400) whose message names the node and field.
func (c *Client) ApplyWorkflow(ctx context.Context, definition []byte) (w Workflow, created bool, err error) {
	var head struct {
		Name string `json:"name"`
	}
	contentType := "application/yaml"
	if t := bytes.TrimSpace(definition); len(t) > 0 && t[0] == '{' {
		contentType = "application/json"
		if err := json.Unmarshal(t, &head); err != nil {
			return Workflow{}, false, fmt.Errorf("client: workflow definition: %w", err)
		}
	}
	// The name of a YAML definition is found by the server: try to create
	// first, and on a conflict update by name.
	if head.Name != "" {
		if _, err := c.GetWorkflow(ctx, head.Name); err == nil {
			w, err := c.sendWorkflow(ctx, http.MethodPut, "/v1/workflows/"+pathEscape(head.Name), contentType, definition)
			return w, false, err
		} else if !IsNotFound(err) {
			return Workflow{}, false, err
		}
	}
	w, err = c.sendWorkflow(ctx, http.MethodPost, "/v1/workflows", contentType, definition)
	var e *Error
	if errors.As(err, &e) && e.Code == CodeConflict {
		name := head.Name
		if name == "" {
			name = conflictName(e.Message)
		}
		if name != "" {
			w, err = c.sendWorkflow(ctx, http.MethodPut, "/v1/workflows/"+pathEscape(name), contentType, definition)
			return w, false, err
		}
	}
	return w, err == nil, err
}

// conflictName reads the name out of the server's `a workflow named "X"
// already exists`.
func conflictName(msg string) string {
	var name string
	if _, err := fmt.Sscanf(msg, "a workflow named %q already exists", &name); err != nil {
		return ""
	}
	return name
}

func (c *Client) sendWorkflow(ctx context.Context, method, path, contentType string, body []byte) (Workflow, error) {
	req, err := c.newRequest(ctx, method, path, nil)
	if err != nil {
		return Workflow{}, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", contentType)
	resp, err := c.send(req)
	if err != nil {
		return Workflow{}, err
	}
	defer resp.Body.Close()
	var w Workflow
	if err := json.NewDecoder(resp.Body).Decode(&w); err != nil {
		return Workflow{}, fmt.Errorf("client: %s %s: decode answer: %w", method, path, err)
	}
	return w, nil
}

// GetWorkflow reads a workflow by id or name.
func (c *Client) GetWorkflow(ctx context.Context, ref string) (Workflow, error) {
	if ref == "" {
		return Workflow{}, errors.New("client: empty workflow name or id")
	}
	var w Workflow
	err := c.do(ctx, http.MethodGet, "/v1/workflows/"+pathEscape(ref), nil, &w)
	return w, err
}

// ListWorkflows lists the tenant's workflows.
func (c *Client) ListWorkflows(ctx context.Context) ([]Workflow, error) {
	var out []Workflow
	err := c.do(ctx, http.MethodGet, "/v1/workflows", nil, &out)
	return out, err
}

// RunWorkflow runs a workflow (by id or name) with inputs and waits for the
// run to end: the answer is the finished run with its nodes. A failed run
// is not an error: see its Status and Error.
func (c *Client) RunWorkflow(ctx context.Context, ref string, inputs map[string]any) (WorkflowRun, error) {
	if ref == "" {
		return WorkflowRun{}, errors.New("client: empty workflow name or id")
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	var run WorkflowRun
	err := c.do(ctx, http.MethodPost, "/v1/workflows/"+pathEscape(ref)+"/runs", map[string]any{"inputs": inputs}, &run)
	return run, err
}

// ListWorkflowRuns lists a workflow's runs, newest first (at most limit;
// 0 means the server's default).
func (c *Client) ListWorkflowRuns(ctx context.Context, ref string, limit int) ([]WorkflowRun, error) {
	if ref == "" {
		return nil, errors.New("client: empty workflow name or id")
	}
	path := "/v1/workflows/" + pathEscape(ref) + "/runs"
	if limit > 0 {
		path += fmt.Sprintf("?limit=%d", limit)
	}
	var out []WorkflowRun
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// ListInterrupts lists the tenant's open interrupts, oldest first: those
// of kind (api.InterruptWorkflow; "" for every kind), at most limit (0:
// the server's default).
func (c *Client) ListInterrupts(ctx context.Context, kind string, limit int) ([]Interrupt, error) {
	q := url.Values{}
	if kind != "" {
		q.Set("kind", kind)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/interrupts"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out api.InterruptList
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out.Data, err
}

// ResumeInterrupt answers interrupt id of run runID of workflow ref (name
// or id) and returns the run once it stops again: finished, or waiting for
// another answer. An answer that does not fit the interrupt's schema is an
// *Error (400) naming the field; one answered already a 409 whose Answer
// is the stored answer.
func (c *Client) ResumeInterrupt(ctx context.Context, ref, runID, id string, answer map[string]any) (WorkflowRun, error) {
	if ref == "" || runID == "" || id == "" {
		return WorkflowRun{}, errors.New("client: empty workflow, run or interrupt id")
	}
	if answer == nil {
		answer = map[string]any{}
	}
	var run WorkflowRun
	err := c.do(ctx, http.MethodPost, "/v1/workflows/"+pathEscape(ref)+"/runs/"+pathEscape(runID)+"/interrupts/"+pathEscape(id)+"/resume",
		api.ResumeRequest{Answer: answer}, &run)
	return run, err
}
