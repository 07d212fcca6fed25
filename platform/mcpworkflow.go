package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/tool/toolname"
)

// Workflows as MCP tools: each workflow of the tenant (its current
// version) is a tool named workflow_<name>, as an agent's workflow tool
// is, whose arguments are the workflow's start inputs. A call is an
// ordinary durable run of the caller's key (runWorkflowFor, as for a
// workflow tool of an agent): it is listed with the workflow's runs, and
// the tenant's run limit applies. The run's start and each finished node
// go out as progress notifications; the client's cancellation cancels
// the run.

// workflowTools lists the workflows of tenant as MCP tools, oldest first
// (so that the older of two workflows whose names sanitise alike keeps the
// plain name). A stored definition that no longer parses is left out.
func (h *mcpHub) workflowTools(ctx context.Context, tenant string) ([]mcpTool, error) {
	list, err := h.s.workflows.store.ListWorkflows(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	slices.SortStableFunc(list, func(a, b meta.Workflow) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	out := make([]mcpTool, 0, len(list))
	for _, wf := range list {
		def, err := parseStored(wf)
		if err != nil {
			h.s.log.WarnContext(ctx, "workflow left out of the MCP tools", "tenant", tenant, "workflow", wf.ID, "err", err)
			continue
		}
		input, err := json.Marshal(inputsSchema(def))
		if err != nil {
			h.s.log.WarnContext(ctx, "workflow left out of the MCP tools", "tenant", tenant, "workflow", wf.ID, "err", err)
			continue
		}
		id := wf.ID
		out = append(out, mcpTool{
			name: toolname.Join(workflowToolPrefix, wf.Name), title: wf.Name, description: workflowDescription(def, wf.Name), input: input,
			version: "workflow\x00" + wf.ID + "\x00" + strconv.Itoa(wf.Version) + "\x00" + wf.Name,
			call: func(ctx context.Context, c *mcpCall) *mcp.CallToolResult {
				return h.callWorkflow(ctx, c, id)
			},
		})
	}
	return out, nil
}

// callWorkflow runs workflow id for an MCP tool call with the arguments as
// its inputs. Its outputs are the result: as JSON text, and as structured
// content.
func (h *mcpHub) callWorkflow(ctx context.Context, c *mcpCall, id string) *mcp.CallToolResult {
	inputs, err := parseWorkflowArgs(c.req.Params.Arguments)
	if err != nil {
		return toolError(err.Error())
	}
	outputs, _, err := h.s.runWorkflowFor(ctx, c.p, id, inputs, func(ev runEvent) {
		if msg := workflowProgress(ev); msg != "" {
			c.notify(ctx, msg)
		}
	})
	var we *runWaitingError
	if errors.As(err, &we) {
		// The run waits for people: not an error; the text says what for
		// and the route that answers it, the structured content the same
		// as data.
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: we.Error()}},
			StructuredContent: map[string]any{"status": meta.RunWaiting, "run_id": we.runID, "interrupts": we.interrupts}}
	}
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			return toolError(ae.Message)
		}
		if ctx.Err() != nil {
			return toolError("cancelled: " + context.Cause(ctx).Error())
		}
		return toolError(err.Error())
	}
	text, _ := json.Marshal(outputs)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: outputs}
}

// parseWorkflowArgs reads a workflow tool's arguments: a JSON object of
// inputs, read as the run API reads its body. The inputs are checked
// against the workflow when the run begins.
func parseWorkflowArgs(raw json.RawMessage) (map[string]any, error) {
	inputs := map[string]any{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return inputs, nil
	}
	if e := decodeBody(bytes.NewReader(raw), &inputs); e != nil {
		return nil, fmt.Errorf("arguments: want a JSON object of the workflow's inputs: %s", e.Message)
	}
	if inputs == nil { // "null"
		inputs = map[string]any{}
	}
	return inputs, nil
}

// workflowProgress is the progress message of a run event: the run's start,
// each finished node and each node that waits for a person; "" for the
// others.
func workflowProgress(ev runEvent) string {
	data, _ := ev.data.(map[string]any)
	switch ev.name {
	case "workflow.started":
		return fmt.Sprintf("run %v started", data["run_id"])
	case "node.waiting":
		return fmt.Sprintf("node %v waits for a person's answer", data["key"])
	case "node.finished":
		msg := fmt.Sprintf("node %v %v", data["key"], data["status"])
		if e, ok := data["error"].(string); ok && e != "" {
			msg += ": " + e
		}
		return msg
	}
	return ""
}
