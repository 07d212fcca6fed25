package platform

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/platform/meta"
)

// tool returns the listed tool name.
func (c *mcpClient) tool(t *testing.T, name string) *mcp.Tool {
	t.Helper()
	res, err := c.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res.Tools {
		if x.Name == name {
			return x
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

// workflowRuns lists the runs of workflow ref.
func (e *testEnv) workflowRuns(ref string) []runAnswer {
	e.t.Helper()
	var runs []runAnswer
	if resp := e.do(e.admin, "GET", "/v1/workflows/"+ref+"/runs", nil, &runs); resp.StatusCode != http.StatusOK {
		e.t.Fatalf("list runs: %d %s", resp.StatusCode, body(resp))
	}
	return runs
}

// TestMCPWorkflowTools: a workflow is a tool whose input schema is its
// start inputs; a call is a recorded run that answers the outputs as text
// and structured content, with a progress notification per finished node;
// bad inputs are error results and make no run.
func TestMCPWorkflowTools(t *testing.T) {
	e := newEnv(t, nil)
	e.createAgent(e.admin, map[string]any{"name": "support"})
	def := echoWorkflow("echo")
	def["description"] = "Echo the text back."
	e.saveWorkflow(def)
	c := e.mcpClient(e.admin)
	if names := c.toolNames(t); !slices.Equal(names, []string{"support", "workflow_echo"}) {
		t.Fatalf("tools = %v, want the agent and the workflow", names)
	}
	echo := c.tool(t, "workflow_echo")
	var schema struct {
		Type       string
		Properties map[string]struct{ Type string }
		Required   []string
	}
	raw, _ := json.Marshal(echo.InputSchema)
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || len(schema.Properties) != 1 || schema.Properties["text"].Type != "string" || !slices.Equal(schema.Required, []string{"text"}) ||
		echo.Title != "echo" || echo.Description != "Echo the text back." || echo.OutputSchema != nil {
		t.Fatalf("workflow tool = %+v, input schema %s", echo, raw)
	}

	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "workflow_echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{"progressToken": "tok-wf"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %s", textOf(res))
	}
	var text map[string]any
	if err := json.Unmarshal([]byte(textOf(res)), &text); err != nil || text["reply"] != "You said: hi" || len(text) != 1 {
		t.Fatalf("text content %q (%v), want the outputs as JSON", textOf(res), err)
	}
	if out, _ := res.StructuredContent.(map[string]any); out["reply"] != "You said: hi" || len(out) != 1 {
		t.Fatalf("structured content %#v, want the outputs", res.StructuredContent)
	}
	runs := e.workflowRuns("echo")
	if len(runs) != 1 || runs[0].Status != meta.RunSucceeded || runs[0].Outputs["reply"] != "You said: hi" {
		t.Fatalf("runs %+v, want the call's run recorded", runs)
	}
	// The run's start, then each of its three nodes. The client may hand
	// notifications to its handler after CallTool returns.
	want := []string{"run " + runs[0].ID + " started", "node start succeeded", "node shout succeeded", "node end succeeded"}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		got := slices.Clone(c.progress)
		c.mu.Unlock()
		if slices.Equal(got, want) {
			break
		}
		if len(got) > len(want) || time.Now().After(deadline) {
			t.Fatalf("progress messages %q, want %q", got, want)
		}
	}

	for _, x := range []struct {
		args any
		want string
	}{
		{map[string]any{"text": 3}, "inputs.text: want string, got integer"},
		{map[string]any{}, "inputs.text: required"},
		{map[string]any{"text": "hi", "mood": "glad"}, "inputs.mood: the workflow has no such input"},
		{[]any{"hi"}, "arguments: want a JSON object of the workflow's inputs"},
	} {
		res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "workflow_echo", Arguments: x.args})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(textOf(res), x.want) {
			t.Errorf("call with %v = %+v (%s), want an error result saying %q", x.args, res, textOf(res), x.want)
		}
	}
	if runs := e.workflowRuns("echo"); len(runs) != 1 {
		t.Fatalf("%d runs after bad calls, want 1", len(runs))
	}

	// A failed run is an error result with its error.
	e.saveWorkflow(map[string]any{"name": "broken", "nodes": []any{
		map[string]any{"id": "start", "kind": "start"},
		map[string]any{"id": "ask", "kind": "agent", "agent": "nobody", "query": "hi", "depends_on": []string{"start"}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"a": "{{ nodes.ask.outputs.answer }}"}},
	}})
	c.waitChanged(t)
	res, err = c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "workflow_broken"})
	if err != nil {
		t.Fatal(err)
	}
	runs = e.workflowRuns("broken")
	if !res.IsError || len(runs) != 1 || runs[0].Status != meta.RunFailed || !strings.Contains(textOf(res), runs[0].ID) || !strings.Contains(textOf(res), "nobody") {
		t.Fatalf("failed run's result %+v (%s), runs %+v", res, textOf(res), runs)
	}
}

// TestMCPWorkflowTenants: a tenant lists and calls only its own workflows.
func TestMCPWorkflowTenants(t *testing.T) {
	e := newEnv(t, nil)
	e.saveWorkflow(echoWorkflow("echo"))
	other := e.tenantKey("globex")
	if resp := e.do(other, "POST", "/v1/workflows", echoWorkflow("private"), nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("save globex's workflow: %d %s", resp.StatusCode, body(resp))
	}
	mine, theirs := e.mcpClient(e.admin), e.mcpClient(other)
	if names := mine.toolNames(t); !slices.Equal(names, []string{"workflow_echo"}) {
		t.Fatalf("tenant's tools = %v", names)
	}
	if names := theirs.toolNames(t); !slices.Equal(names, []string{"workflow_private"}) {
		t.Fatalf("globex's tools = %v", names)
	}
	res, err := theirs.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "workflow_echo", Arguments: map[string]any{"text": "hi"}})
	if err == nil && !res.IsError {
		t.Fatalf("globex ran the tenant's workflow: %+v", res)
	}
	if runs := e.workflowRuns("echo"); len(runs) != 0 {
		t.Fatalf("runs %+v", runs)
	}
}

// TestMCPWorkflowListChanged: creating, updating and deleting a workflow
// changes the tool list, and the client is told.
func TestMCPWorkflowListChanged(t *testing.T) {
	e := newEnv(t, nil)
	e.createAgent(e.admin, map[string]any{"name": "support"})
	c := e.mcpClient(e.admin)
	if names := c.toolNames(t); !slices.Equal(names, []string{"support"}) {
		t.Fatalf("tools = %v", names)
	}
	id := e.saveWorkflow(echoWorkflow("echo"))
	c.waitChanged(t)
	if names := c.toolNames(t); !slices.Equal(names, []string{"support", "workflow_echo"}) {
		t.Fatalf("tools after create = %v", names)
	}
	def := echoWorkflow("echo")
	def["description"] = "Now described."
	if resp := e.do(e.admin, "PUT", "/v1/workflows/"+id, def, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("update: %d %s", resp.StatusCode, body(resp))
	}
	c.waitChanged(t)
	if d := c.tool(t, "workflow_echo").Description; d != "Now described." {
		t.Fatalf("description after update = %q", d)
	}
	if resp := e.do(e.admin, "DELETE", "/v1/workflows/"+id, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body(resp))
	}
	c.waitChanged(t)
	if names := c.toolNames(t); !slices.Equal(names, []string{"support"}) {
		t.Fatalf("tools after delete = %v", names)
	}
}

// TestMCPWorkflowCancel: the client cancels a call while the run waits in
// a node; the run stops and ends cancelled.
func TestMCPWorkflowCancel(t *testing.T) {
	e, entered := slowWorkflow(t)
	c := e.mcpClient(e.admin)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "workflow_slow"})
		done <- err
	}()
	<-entered
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call succeeded")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runs := e.workflowRuns("slow")
		e.srv.workflows.mu.Lock()
		live := len(e.srv.workflows.live)
		e.srv.workflows.mu.Unlock()
		if len(runs) == 1 && runs[0].Status == meta.RunCancelled && live == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs %+v (%d still executing), want the run cancelled and stopped", runs, live)
		}
	}
}
