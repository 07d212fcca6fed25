package platform

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// TestWorkflowAsTool: an agent that lists a workflow in workflow_ids (by
// name) calls it as the tool workflow_<name>; the run is one of the
// workflow's runs. An unknown workflow is a 400 naming the field.
func TestWorkflowAsTool(t *testing.T) {
	caller := scripted.New(scripted.SummarizeToolResults(), scripted.CallTool("workflow_echo", `{"text":"ping"}`))
	e := newEnv(t, nil, multiModel(map[string]*scripted.Model{"caller": caller}))
	e.saveWorkflow(echoWorkflow("echo"))
	a := e.createAgent(e.admin, map[string]any{"name": "runner", "model": "scripted/caller", "workflow_ids": []string{"echo"}})
	if len(a.WorkflowIDs) != 1 || !strings.HasPrefix(a.WorkflowIDs[0], "wf_") {
		t.Fatalf("workflow_ids %v: want the id", a.WorkflowIDs)
	}
	var ans api.ChatAnswer
	if resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "go"}, &ans); resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	if !strings.Contains(ans.Answer, "You said: ping") {
		t.Fatalf("answer %q", ans.Answer)
	}
	var runs []runAnswer
	e.do(e.admin, "GET", "/v1/workflows/echo/runs", nil, &runs)
	if len(runs) != 1 || runs[0].Status != meta.RunSucceeded {
		t.Fatalf("runs %+v", runs)
	}
	e.wantError(e.do(e.admin, "POST", "/v1/agents", map[string]any{"name": "x", "workflow_ids": []string{"nope"}}, nil), http.StatusBadRequest, CodeInvalidRequest)
	other := e.tenantKey("other")
	e.wantError(e.do(other, "POST", "/v1/agents", map[string]any{"name": "x", "workflow_ids": []string{"echo"}}, nil), http.StatusBadRequest, CodeInvalidRequest)
}

// TestWorkflowAsModel: "workflow:<name>" is a model of the
// OpenAI-compatible endpoint: the last user message is the input, the
// output the answer; it is listed by /v1/models.
func TestWorkflowAsModel(t *testing.T) {
	e := newEnv(t, nil)
	e.saveWorkflow(echoWorkflow("echo"))
	var cc api.ChatCompletion
	resp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "workflow:echo",
		"messages": []any{map[string]any{"role": "user", "content": "hello"}}}, &cc)
	if resp.StatusCode != http.StatusOK || len(cc.Choices) != 1 || cc.Choices[0].Message.Content == nil || *cc.Choices[0].Message.Content != "You said: hello" {
		t.Fatalf("completion: %d %s", resp.StatusCode, body(resp))
	}
	// Streamed: one chunk of content, then [DONE].
	sresp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "workflow:echo", "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "again"}}}, nil)
	if raw := body(sresp); !strings.Contains(raw, "You said: again") || !strings.HasSuffix(raw, "data: [DONE]\n\n") {
		t.Fatalf("stream %s", raw)
	}
	var models api.ModelList
	e.do(e.admin, "GET", "/v1/models", nil, &models)
	found := false
	for _, m := range models.Data {
		found = found || m.ID == "workflow:echo"
	}
	if !found {
		t.Fatalf("models %+v", models.Data)
	}
	if resp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "workflow:nope",
		"messages": []any{map[string]any{"role": "user", "content": "x"}}}, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown workflow: %d", resp.StatusCode)
	}
}

// gatedModel streams its first words, then waits for release before the
// last: what a client reads before release was passed on while the run
// was still going.
type gatedModel struct {
	first   []string
	last    string
	release chan struct{}
}

func (m *gatedModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return llm.Collect(m.Stream(ctx, req))
}

func (m *gatedModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		for _, w := range m.first {
			if !yield(llm.TextChunk(w), nil) {
				return
			}
		}
		select {
		case <-m.release:
		case <-ctx.Done():
			yield(llm.Chunk{}, ctx.Err())
			return
		}
		yield(llm.TextChunk(m.last), nil)
	}
}

// TestWorkflowModelStreamsTokens: a "workflow:<name>" model whose one
// output is an llm node's text streams that node's tokens as the model
// produces them, then finishes like any chat completion stream.
func TestWorkflowModelStreamsTokens(t *testing.T) {
	gated := &gatedModel{first: []string{"Hel", "lo "}, last: "world", release: make(chan struct{})}
	e := newEnv(t, nil, func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) {
			return llm.New(gated, llm.WithName(spec), llm.WithRetries(0)), nil
		}
	})
	e.saveWorkflow(map[string]any{"name": "writer", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"topic": map[string]any{"type": "string"}}},
		map[string]any{"id": "write", "kind": "llm", "model": "scripted/any", "prompt": "Write about {{ inputs.topic }}"},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"text": "{{ nodes.write.outputs.text }}"}},
	}})
	// Read as it comes (testEnv.do reads the whole body).
	reqBody, _ := json.Marshal(map[string]any{"model": "workflow:writer", "stream": true,
		"stream_options": map[string]any{"include_usage": true},
		"messages":       []any{map[string]any{"role": "user", "content": "greetings"}}})
	req, _ := http.NewRequest("POST", e.http.URL+"/v1/chat/completions", bytes.NewReader(reqBody))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %s", resp.Status)
	}
	lines := bufio.NewScanner(resp.Body)
	var text strings.Builder
	finish, done, usage := "", false, false
	next := func() bool {
		for lines.Scan() {
			data, ok := strings.CutPrefix(lines.Text(), "data: ")
			if !ok {
				continue
			}
			if data == "[DONE]" {
				done = true
				return false
			}
			var c api.ChatCompletionChunk
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatalf("chunk %s: %v", data, err)
			}
			if !strings.HasPrefix(c.ID, "chatcmpl-") {
				t.Fatalf("chunk id %q, want OpenAI's chatcmpl- prefix", c.ID)
			}
			if c.Model != "workflow:writer" {
				t.Fatalf("chunk model %q: %s", c.Model, data)
			}
			usage = usage || c.Usage != nil
			for _, ch := range c.Choices {
				if ch.Delta.Content != nil {
					text.WriteString(*ch.Delta.Content)
				}
				if ch.FinishReason != nil {
					finish = *ch.FinishReason
				}
			}
			return true
		}
		return false
	}
	// The first words arrive while the model is held.
	for text.String() != "Hello " {
		if !next() {
			t.Fatalf("stream ended before the held model was released; read %q", text.String())
		}
	}
	close(gated.release)
	for next() {
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "Hello world" || finish != "stop" || !done || !usage {
		t.Fatalf("text %q, finish %q, [DONE] %v, usage %v", text.String(), finish, done, usage)
	}
	var runs []runAnswer
	e.do(e.admin, "GET", "/v1/workflows/writer/runs", nil, &runs)
	if len(runs) != 1 || runs[0].Status != meta.RunSucceeded {
		t.Fatalf("runs %+v", runs)
	}
}

// TestWorkflowModelStreamError: a run that fails before any token is an
// HTTP error in OpenAI's shape, also when streamed; one that fails after
// tokens were passed on ends the stream with an error frame.
func TestWorkflowModelStreamError(t *testing.T) {
	models := map[string]*gatedModel{
		"scripted/late":  {first: []string{"partial "}, release: make(chan struct{})},
		"scripted/early": {release: make(chan struct{})},
	}
	e := newEnv(t, nil, func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) {
			return llm.New(models[spec], llm.WithName(spec), llm.WithRetries(0)), nil
		}
	})
	for _, name := range []string{"late", "early"} {
		e.saveWorkflow(map[string]any{"name": name, "nodes": []any{
			map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"topic": map[string]any{"type": "string"}}},
			// The model is never released: the node times out.
			map[string]any{"id": "write", "kind": "llm", "model": "scripted/" + name, "prompt": "{{ inputs.topic }}", "timeout": "50ms"},
			map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"text": "{{ nodes.write.outputs.text }}"}},
		}})
	}
	chat := func(model, content string) *http.Response {
		return e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": model, "stream": true,
			"messages": []any{map[string]any{"role": "user", "content": content}}}, nil)
	}
	// Bad inputs: no run, an HTTP error.
	if resp := chat("workflow:late", `{"topic": 3}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad inputs: %d %s", resp.StatusCode, body(resp))
	}
	// Failed before any token: an HTTP error in OpenAI's shape.
	resp := chat("workflow:early", "x")
	var oe api.OpenAIError
	if raw := body(resp); resp.StatusCode < 400 || json.Unmarshal([]byte(raw), &oe) != nil || oe.Error.Message == "" {
		t.Fatalf("failed before a token: %d %s", resp.StatusCode, raw)
	}
	// Failed after a token: an error frame ends the stream, with no [DONE].
	resp = chat("workflow:late", "x")
	raw := body(resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(raw, `"content":"partial "`) || !strings.Contains(raw, `"error":`) || strings.Contains(raw, "[DONE]") {
		t.Fatalf("failed after a token: %d %s", resp.StatusCode, raw)
	}
}
