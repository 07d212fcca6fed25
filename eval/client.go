package eval

import (
	"context"
	"encoding/json"

	"github.com/weftlabs/weft/platform/client"
)

// ClientTarget returns a [Target] over a Weft server's HTTP API: turns go
// to POST /v1/agents/{id}/chat (agents found by name or id), workflow runs
// to POST /v1/workflows/{name}/runs. It lists the server's agents,
// workflows and tools ([Cataloger]) but cannot mock tools: the server runs
// its own.
func ClientTarget(c *client.Client) Target { return &clientTarget{c: c, ids: map[string]string{}} }

type clientTarget struct {
	c   *client.Client
	ids map[string]string // agent name → id
}

func (t *clientTarget) Chat(ctx context.Context, agent, session, message string) (*Answer, error) {
	id, ok := t.ids[agent]
	if !ok {
		a, err := t.c.FindAgent(ctx, agent)
		if err != nil {
			return nil, err
		}
		id = a.ID
		t.ids[agent] = id
	}
	out, err := t.c.Chat(ctx, id, client.ChatRequest{Query: message, SessionID: session})
	if err != nil {
		return nil, err
	}
	a := &Answer{Text: out.Answer, SessionID: out.SessionID, Tokens: out.Usage.TotalTokens, CostUSD: out.CostUSD, Model: out.Model}
	for _, tc := range out.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, ToolCall{Name: tc.Name, Arguments: tc.Arguments, Result: tc.Result, Error: tc.Error})
	}
	for _, f := range out.RagFragments {
		a.Citations = append(a.Citations, Citation{Document: f.DocumentName, DocumentID: f.DocumentID,
			KnowledgeBase: f.KnowledgeBaseID, Content: f.Content, Score: f.Score})
	}
	return a, nil
}

func (t *clientTarget) RunWorkflow(ctx context.Context, workflow string, inputs map[string]any) (*Answer, error) {
	run, err := t.c.RunWorkflow(ctx, workflow, inputs)
	if err != nil {
		return nil, err
	}
	a := &Answer{Status: run.Status, Outputs: run.Outputs, Error: run.Error, Text: outputText(run.Outputs)}
	for _, n := range run.Nodes {
		var u struct {
			Total int `json:"total_tokens"`
		}
		if len(n.Usage) > 0 && json.Unmarshal(n.Usage, &u) == nil {
			a.Tokens += u.Total
		}
	}
	return a, nil
}

// outputText is a workflow's text: its one string output, or else its
// outputs as JSON.
func outputText(outputs json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(outputs, &m) == nil && len(m) == 1 {
		for _, v := range m {
			if s, ok := v.(string); ok {
				return s
			}
		}
	}
	return string(outputs)
}

func (t *clientTarget) Catalog(ctx context.Context) (*Catalog, error) {
	var cat Catalog
	agents, err := t.c.ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		cat.Agents = append(cat.Agents, a.Name)
		t.ids[a.Name] = a.ID
	}
	wfs, err := t.c.ListWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range wfs {
		cat.Workflows = append(cat.Workflows, w.Name)
	}
	tools, err := t.c.ListTools(ctx)
	if err != nil {
		return nil, err
	}
	for _, tl := range tools {
		cat.Tools = append(cat.Tools, tl.Name)
	}
	return &cat, nil
}
