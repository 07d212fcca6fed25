package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/workflow"
)

func mustParse(t *testing.T, y string, opts ...workflow.ValidateOption) *workflow.Definition {
	t.Helper()
	d, err := workflow.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(opts...); err != nil {
		t.Fatal(err)
	}
	return d
}

// events runs d and returns every event, and the final error.
func events(t *testing.T, e *workflow.Engine, d *workflow.Definition, in map[string]any, opts ...workflow.RunOption) ([]workflow.Event, error) {
	t.Helper()
	var evs []workflow.Event
	for ev, err := range e.Run(context.Background(), d, in, opts...) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func finished(evs []workflow.Event, key string) (workflow.Event, bool) {
	for _, ev := range evs {
		if ev.Type == workflow.NodeFinished && ev.Key == key {
			return ev, true
		}
	}
	return workflow.Event{}, false
}

func TestKinds(t *testing.T) {
	var mu sync.Mutex
	var httpBody, httpAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		httpBody, httpAuth = string(b), r.Header.Get("Authorization")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id": 42, "ok": true}`)
	}))
	defer srv.Close()

	model := scripted.New(scripted.ReplyJSON(map[string]any{"label": "billing", "confidence": 0.9}))
	var agentReq workflow.AgentRequest
	var knowReq workflow.KnowledgeRequest
	var toolArgs string
	svc := workflow.Services{
		Model: func(_ context.Context, name string) (llm.ChatModel, error) {
			if name != "scripted/classifier" {
				return nil, errors.New("no model " + name)
			}
			return model, nil
		},
		Agent: func(_ context.Context, req workflow.AgentRequest) (workflow.AgentResult, error) {
			agentReq = req
			req.OnDelta("Dear ")
			req.OnDelta("customer")
			return workflow.AgentResult{Answer: "Dear customer", Usage: llm.Usage{TotalTokens: 7}}, nil
		},
		Knowledge: func(_ context.Context, req workflow.KnowledgeRequest) ([]workflow.Fragment, error) {
			knowReq = req
			return []workflow.Fragment{{Text: "Refunds take 5 days.", Source: "faq.md", Score: 0.8}, {Text: "Call us.", Source: "b.md", Score: 0.5}}, nil
		},
		Tool: func(_ context.Context, name string, args json.RawMessage) (string, error) {
			toolArgs = name + " " + string(args)
			return `{"count": 2}`, nil
		},
		HTTP: srv.Client(),
	}
	count, err := workflow.Func("count", func(_ context.Context, in struct {
		Words []string `json:"words"`
	}) (struct {
		N int `json:"n"`
	}, error) {
		return struct {
			N int `json:"n"`
		}{len(in.Words)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d := mustParse(t, `
name: kinds
nodes:
  - id: start
    kind: start
    inputs:
      ticket: {type: string}
      words: {type: array, items: {type: string}}
      tone: {type: string, default: warm}
  - id: classify
    kind: llm
    model: scripted/classifier
    system: "You classify tickets."
    prompt: "Ticket: {{inputs.ticket}}"
    output_schema:
      type: object
      properties:
        label: {type: string}
        confidence: {type: number}
  - id: recall
    kind: knowledge
    knowledge_bases: [faq]
    query: "{{nodes.classify.outputs.label}} policy"
    top_k: 3
  - id: lookup
    kind: tool
    tool: crm_lookup
    args: {label: "{{nodes.classify.outputs.label}}", words: "{{inputs.words}}", limit: 5}
    output_schema: {type: object, properties: {count: {type: integer}}}
  - id: post
    kind: http
    method: post
    url: "`+srv.URL+`/tickets?label={{nodes.classify.outputs.label}}"
    headers: {Authorization: "Bearer t"}
    body: '{"n": {{nodes.lookup.outputs.count}}}'
    output_schema: {type: object, properties: {id: {type: integer}, ok: {type: boolean}}}
  - id: draft
    kind: agent
    agent: writer
    query: "Write a {{inputs.tone}} reply using: {{nodes.recall.outputs.text}}"
  - id: words
    kind: count
    args: {words: "{{inputs.words}}"}
  - id: each
    kind: iteration
    items: "{{inputs.words}}"
    concurrency: 2
    output: {word: "{{item}}", at: "{{index}}", text: "{{nodes.fmt.outputs.text}}"}
    nodes:
      - {id: fmt, kind: template, template: "{{index}}:{{item}}"}
  - id: check
    kind: condition
    cases:
      - {id: sure, when: 'nodes.classify.outputs.confidence > 0.8 && nodes.words.outputs.n == 2', next: [summary]}
    else: [summary]
  - id: summary
    kind: template
    template: "{{nodes.classify.outputs.label}} #{{nodes.post.outputs.id}}: {{nodes.draft.outputs.answer}} ({{nodes.each.outputs.results}})"
  - id: end
    kind: end
    outputs:
      summary: "{{nodes.summary.outputs.text}}"
      branch: "{{nodes.check.outputs.branch}}"
      first: "{{nodes.recall.outputs.fragments}}"
      status: "{{nodes.post.outputs.status}}"
`, workflow.WithNodeTypes(count))
	e := workflow.New(svc, workflow.Register(count))
	evs, err := events(t, e, d, map[string]any{"ticket": "refund please", "words": []string{"a", "b"}}, workflow.WithRunID("run-1"))
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Type != workflow.WorkflowStarted || evs[0].RunID != "run-1" {
		t.Errorf("first event %+v", evs[0])
	}
	last := evs[len(evs)-1]
	if last.Type != workflow.WorkflowFinished {
		t.Fatalf("last event %+v", last)
	}
	want := `billing #42: Dear customer ([{"at":0,"text":"0:a","word":"a"},{"at":1,"text":"1:b","word":"b"}])`
	if got := last.Outputs["summary"]; got != want {
		t.Errorf("summary\n got %v\nwant %v", got, want)
	}
	if last.Outputs["branch"] != "sure" || last.Outputs["status"] != int64(200) {
		t.Errorf("outputs %v", last.Outputs)
	}
	if frags, _ := last.Outputs["first"].([]any); len(frags) != 2 || frags[0].(map[string]any)["source"] != "faq.md" {
		t.Errorf("fragments %v", last.Outputs["first"])
	}
	if agentReq.Agent != "writer" || agentReq.Query != "Write a warm reply using: Refunds take 5 days.\n\nCall us." || agentReq.RunID != "run-1" || agentReq.Key != "draft" {
		t.Errorf("agent request %+v", agentReq)
	}
	if knowReq.Query != "billing policy" || knowReq.TopK != 3 || knowReq.KnowledgeBases[0] != "faq" {
		t.Errorf("knowledge request %+v", knowReq)
	}
	if toolArgs != `crm_lookup {"label":"billing","limit":5,"words":["a","b"]}` {
		t.Errorf("tool args %s", toolArgs)
	}
	if httpBody != `{"n": 2}` || httpAuth != "Bearer t" {
		t.Errorf("http body %q auth %q", httpBody, httpAuth)
	}
	// The model was asked for the output schema, with the system prompt.
	reqs := model.Requests()
	if len(reqs) != 1 || reqs[0].ResponseFormat == nil || reqs[0].ResponseFormat.Type != llm.FormatJSONSchema ||
		reqs[0].Messages[0].Text() != "You classify tickets." || reqs[0].Messages[1].Text() != "Ticket: refund please" {
		t.Errorf("model request %+v", reqs)
	}
	// Deltas: the model's text and the agent's.
	var deltas = map[string]string{}
	for _, ev := range evs {
		if ev.Type == workflow.NodeDelta {
			deltas[ev.Key] += ev.Delta
		}
	}
	if deltas["draft"] != "Dear customer" || !strings.Contains(deltas["classify"], "billing") {
		t.Errorf("deltas %v", deltas)
	}
	// node.finished carries inputs, outputs and usage.
	cl, _ := finished(evs, "classify")
	if cl.Outputs["label"] != "billing" || cl.Outputs["confidence"] != 0.9 || cl.Usage.TotalTokens == 0 || cl.Inputs["prompt"] != "Ticket: refund please" || cl.Status != workflow.Succeeded {
		t.Errorf("classify %+v", cl)
	}
	dr, _ := finished(evs, "draft")
	if dr.Usage.TotalTokens != 7 {
		t.Errorf("draft usage %+v", dr.Usage)
	}
	if last.Usage.TotalTokens != cl.Usage.TotalTokens+7 {
		t.Errorf("run usage %d, want %d", last.Usage.TotalTokens, cl.Usage.TotalTokens+7)
	}
	for _, key := range []string{"each[0].fmt", "each[1].fmt", "words", "lookup", "post"} {
		if ev, ok := finished(evs, key); !ok || ev.Status != workflow.Succeeded {
			t.Errorf("%s: %+v", key, ev)
		}
	}
	if ev, _ := finished(evs, "lookup"); ev.Outputs["count"] != int64(2) {
		t.Errorf("lookup outputs %v", ev.Outputs)
	}
}

func TestMissingServices(t *testing.T) {
	for _, node := range []string{
		`{id: x, kind: llm, model: m, prompt: p, depends_on: [start]}`,
		`{id: x, kind: agent, agent: a, query: q, depends_on: [start]}`,
		`{id: x, kind: knowledge, knowledge_bases: [k], query: q, depends_on: [start]}`,
		`{id: x, kind: tool, tool: t, depends_on: [start]}`,
		`{id: x, kind: http, url: "http://127.0.0.1:1/", depends_on: [start]}`,
	} {
		d := mustParse(t, "name: t\nnodes:\n  - {id: start, kind: start}\n  - "+node+"\n  - {id: end, kind: end, depends_on: [x]}\n")
		_, err := events(t, workflow.New(workflow.Services{}), d, nil)
		var ne *workflow.NodeError
		if !errors.As(err, &ne) || ne.Node != "x" || !strings.Contains(err.Error(), "no ") {
			t.Errorf("%s: %v", node, err)
		}
	}
}

func TestHTTPErrorStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start}
  - {id: x, kind: http, url: "`+srv.URL+`", depends_on: [start], on_error: {action: branch, next: [sorry]}}
  - {id: sorry, kind: template, template: "failed: {{nodes.x.outputs.error}}"}
  - {id: end, kind: end, depends_on: [x, sorry], outputs: {msg: "{{nodes.sorry.outputs.text}}"}}
`)
	res, err := workflow.Collect(workflow.New(workflow.Services{HTTP: srv.Client()}).Run(context.Background(), d, nil))
	if err != nil {
		t.Fatal(err)
	}
	if msg, _ := res.Outputs["msg"].(string); !strings.Contains(msg, "status 503") {
		t.Errorf("outputs %v", res.Outputs)
	}
}

func TestRedact(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"token": "sk-secret-2"}`)
	}))
	defer srv.Close()
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start, inputs: {key: {type: string}}}
  - {id: x, kind: http, url: "`+srv.URL+`", headers: {Authorization: "Bearer {{inputs.key}}"}, output_schema: {type: object, properties: {token: {type: string}}}}
  - {id: end, kind: end, outputs: {token: "{{nodes.x.outputs.token}}"}}
`)
	e := workflow.New(workflow.Services{HTTP: srv.Client()})
	redact := func(s string) string { return regexp.MustCompile(`sk-[a-z0-9-]+`).ReplaceAllString(s, "[redacted]") }
	cp := workflow.NewMemoryCheckpointer()
	evs, err := events(t, e, d, map[string]any{"key": "sk-secret-1"}, workflow.WithRedact(redact), workflow.WithRunID("r"), workflow.WithCheckpointer(cp))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(evs)
	if strings.Contains(string(b), "sk-secret") || !strings.Contains(string(b), "Bearer [redacted]") {
		t.Errorf("events %s", b)
	}
	// The checkpoints keep the values.
	cps, _ := cp.Completed(context.Background(), "r")
	b, _ = json.Marshal(cps)
	if !strings.Contains(string(b), "sk-secret-2") {
		t.Errorf("checkpoints %s", b)
	}
}

func TestInputSchema(t *testing.T) {
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start, inputs: {q: {type: string, description: the question}, n: {type: integer, default: 3}, meta: {type: object}}}
  - {id: end, kind: end, outputs: {q: "{{inputs.q}}"}}
`)
	got := string(d.InputSchema())
	want := `{"additionalProperties":false,"properties":{"meta":{"type":"object"},"n":{"default":3,"type":"integer"},"q":{"description":"the question","type":"string"}},"required":["meta","q"],"type":"object"}`
	if got != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
}

func TestLLMOutputSchema(t *testing.T) {
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start}
  - id: x
    kind: llm
    model: m
    prompt: p
    depends_on: [start]
    retry: {max_attempts: 4}
    output_schema: {type: object, properties: {label: {type: string, enum: [a, b]}, n: {type: integer}, tags: {type: array, items: {type: string}}}}
  - {id: end, kind: end, outputs: {label: "{{nodes.x.outputs.label}}", n: "{{nodes.x.outputs.n}}", tags: "{{nodes.x.outputs.tags}}"}}
`)
	// Three wrong answers (not JSON, a value outside the enum, a fraction
	// for an integer), then one in a Markdown fence, which is accepted.
	m := scripted.New(scripted.Sequence(
		scripted.Reply("I think it is a"),
		scripted.ReplyJSON(map[string]any{"label": "c", "n": 1, "tags": []string{}}),
		scripted.ReplyJSON(map[string]any{"label": "a", "n": 1.5, "tags": []string{}}),
		scripted.Reply("```json\n{\"label\": \"b\", \"n\": 2, \"tags\": [\"x\"]}\n```"),
	))
	evs, err := events(t, workflow.New(workflow.Services{Model: models(m)}), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Outputs["label"] != "b" || last.Outputs["n"] != int64(2) || fmt.Sprint(last.Outputs["tags"]) != "[x]" {
		t.Errorf("outputs %#v", last.Outputs)
	}
	if x, _ := finished(evs, "x"); x.Attempts != 4 {
		t.Errorf("attempts %d", x.Attempts)
	}
	// The same three faults, with no retry, name the problem.
	for i, reply := range []scripted.Rule{
		scripted.Reply("I think it is a"),
		scripted.ReplyJSON(map[string]any{"label": "c", "n": 1, "tags": []string{}}),
		scripted.ReplyJSON(map[string]any{"label": "a", "n": 1.5, "tags": []string{}}),
	} {
		d.Nodes[1].Retry = nil
		d2 := mustParse(t, mustJSON(t, d))
		_, err := events(t, workflow.New(workflow.Services{Model: models(scripted.New(reply))}), d2, nil)
		want := []string{"not JSON", `"c" is not one of ["a","b"]`, "output.n: want integer"}[i]
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reply %d: error %v, want %q", i, err, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestConditionRuntimeError(t *testing.T) {
	// score is read from a tool's JSON, which gives a string here: the
	// comparison fails when it runs, and the node's policy applies.
	d := mustParse(t, `
name: t
nodes:
  - {id: start, kind: start}
  - {id: t, kind: tool, tool: score, depends_on: [start], output_schema: {type: object, properties: {score: {}}}}
  - id: c
    kind: condition
    cases: [{when: 'nodes.t.outputs.score > 0.5', next: [hi]}]
    else: [lo]
    on_error: {action: branch, next: [oops]}
  - {id: hi, kind: template, template: hi}
  - {id: lo, kind: template, template: lo}
  - {id: oops, kind: template, template: "{{nodes.c.outputs.error}}"}
  - {id: end, kind: end, depends_on: [hi, lo, oops], outputs: {hi: "{{nodes.hi.outputs.text}}", lo: "{{nodes.lo.outputs.text}}", oops: "{{nodes.oops.outputs.text}}"}}
`)
	for _, tc := range []struct{ result, key, want string }{
		{`{"score": 0.9}`, "hi", "hi"},
		{`{"score": 0.1}`, "lo", "lo"},
		{`{"score": "high"}`, "oops", "case case_1: invalid operation"},
	} {
		e := workflow.New(workflow.Services{Tool: func(context.Context, string, json.RawMessage) (string, error) { return tc.result, nil }})
		res, err := workflow.Collect(e.Run(context.Background(), d, nil))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := res.Outputs[tc.key].(string)
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: outputs %v", tc.result, res.Outputs)
		}
		for _, k := range []string{"hi", "lo", "oops"} {
			if k != tc.key && res.Outputs[k] != nil {
				t.Errorf("%s: %s ran: %v", tc.result, k, res.Outputs)
			}
		}
	}
}
