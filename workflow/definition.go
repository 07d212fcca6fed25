package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Kind names what a node does.
type Kind string

// The built-in node kinds. A kind registered with [Func] adds to them.
const (
	// KindStart declares the workflow's typed inputs; its outputs are the
	// inputs of the run. A workflow has exactly one.
	KindStart Kind = "start"
	// KindLLM asks a model: a prompt template over variables, the model's
	// name, and an optional output schema whose properties become typed
	// outputs beside "text".
	KindLLM Kind = "llm"
	// KindAgent runs one turn of a Weft agent: outputs "answer".
	KindAgent Kind = "agent"
	// KindKnowledge recalls fragments from knowledge bases: outputs
	// "fragments" (a list of {text, source, score}) and "text" (the
	// fragments' texts joined by blank lines).
	KindKnowledge Kind = "knowledge"
	// KindTool calls a registered tool with JSON arguments made from
	// variables: outputs "result" (the tool's text) and, with an output
	// schema, the fields of the result parsed as JSON.
	KindTool Kind = "tool"
	// KindHTTP sends an HTTP request through the injected client: outputs
	// "status", "headers" and "body" and, with an output schema, the fields
	// of the body parsed as JSON.
	KindHTTP Kind = "http"
	// KindCondition chooses a branch: the first case whose expression is
	// true, else the else branch. Outputs "branch" (the case's id, or
	// "else").
	KindCondition Kind = "condition"
	// KindIteration runs a sub-graph once per item of a list, with a
	// concurrency bound: outputs "results", one value per item in order.
	KindIteration Kind = "iteration"
	// KindTemplate renders text from variables: outputs "text".
	KindTemplate Kind = "template"
	// KindEnd declares the workflow's outputs.
	KindEnd Kind = "end"
	// KindHuman waits for a person: the run stops there, waiting, with an
	// open [Interrupt] carrying the rendered Message and the answer's type
	// (OutputSchema), until a run answers it ([WithAnswer]); the answer's
	// fields become the node's outputs, beside "timed_out" (false). With a
	// Timeout, a run after the deadline takes the OnTimeout branch
	// ("timed_out" true, the answer's fields null) or, without one, fails
	// the node with an error wrapping [ErrTimedOut].
	KindHuman Kind = "human"
)

// MaxDefinitionSize is the largest definition [Parse] reads, in bytes.
const MaxDefinitionSize = 1 << 20

// Definition is a workflow as data: a directed acyclic graph of nodes that
// pass typed values along references. It reads from JSON or YAML with
// [Parse] and is checked with [Definition.Validate] when it is saved, so
// that a run never meets a typo.
//
// Edges are implied: a node runs after every node it names in DependsOn,
// every node whose outputs it references, the condition cases that list it
// in Next, and the nodes that route their errors to it (OnError.Next).
// The first kind are data edges, the others control edges. A node with
// control edges in runs when at least one of them is live (its source ran,
// the case was taken, the error branch was taken): that is how branches
// join. A node with only data edges in runs when every node it reads ran.
// Otherwise the node is skipped, and its references read null.
type Definition struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Version     int    `json:"version,omitempty"`
	Nodes       []Node `json:"nodes"`

	plan *plan
}

// Node is one step of a [Definition]. Which fields apply depends on Kind;
// Validate rejects a field set on a kind that does not read it.
//
// Templates (Prompt, Query, URL, Body, header values, Template) are text in
// which {{ reference }} is replaced by the value referenced: a string as is,
// anything else as JSON. References are
//
//	inputs.NAME                      the run's input NAME (the start node's output)
//	nodes.ID.outputs.FIELD[.SUB…]    an output of node ID, or a field inside it
//	item[.SUB…], index               the current item and its position, inside an iteration
//
// Values (Args, Outputs, Items, Output, Default) are JSON values in which a
// string that is exactly one {{ reference }} stands for the referenced value
// with its type, any other string is a template, and arrays and objects are
// resolved element by element.
type Node struct {
	// ID names the node in references: letters, digits and underscores,
	// not starting with a digit.
	ID    string `json:"id" description:"the node's name in references: letters, digits and _"`
	Kind  Kind   `json:"kind"`
	Title string `json:"title,omitempty" description:"a label for people"`
	// DependsOn lists nodes that must finish first, besides those the
	// node references.
	DependsOn []string `json:"depends_on,omitempty" description:"nodes that must finish first, besides those referenced"`

	// Inputs (start) declares the run's inputs and their types.
	Inputs map[string]*Schema `json:"inputs,omitempty" description:"the run's inputs by name, each with its type"`

	// Model (llm) is the model's name, as the Services.Model resolver knows it.
	Model string `json:"model,omitempty" description:"the model (provider/model or an alias); the server's default when left out"`
	// System (llm) is the system prompt template.
	System string `json:"system,omitempty" description:"the system prompt template"`
	// Prompt (llm) is the user message template.
	Prompt string `json:"prompt,omitempty" description:"the user message template"`
	// OutputSchema (llm, tool, http, human) declares an object whose
	// properties become outputs of the node: an llm node asks the model
	// for it; tool and http nodes parse their result as JSON into it; a
	// human node's answer must fit it.
	OutputSchema *Schema `json:"output_schema,omitempty" description:"an object whose properties become outputs of the node"`

	// Agent (agent) names the agent; Query (agent, knowledge) is the
	// question template.
	Agent string `json:"agent,omitempty" description:"the agent's name"`
	Query string `json:"query,omitempty" description:"the question template"`

	// KnowledgeBases (knowledge) names the knowledge bases to recall from;
	// TopK caps the fragments (0 means the service's default).
	KnowledgeBases []string `json:"knowledge_bases,omitempty" description:"the knowledge bases to recall from, by name"`
	TopK           int      `json:"top_k,omitempty" description:"at most this many fragments (0 to 100; 0: the default)"`

	// Tool (tool) is the registered tool's name; Args (tool and kinds
	// made with Func) is the arguments value.
	Tool string         `json:"tool,omitempty" description:"the registered tool's name"`
	Args map[string]any `json:"args,omitempty" description:"the arguments: a JSON object with references"`

	// Method, URL, Headers and Body (http) are the request; Method
	// defaults to GET.
	Method  string            `json:"method,omitempty" description:"GET (the default), HEAD, POST, PUT, PATCH or DELETE"`
	URL     string            `json:"url,omitempty" description:"the URL template"`
	Headers map[string]string `json:"headers,omitempty" description:"request headers, each value a template"`
	Body    string            `json:"body,omitempty" description:"the request body template"`

	// Cases (condition) are tried in order; the first whose When is true
	// is taken; when none is, the Else branch is.
	Cases []Case   `json:"cases,omitempty" description:"branches tried in order: the first whose when is true is taken"`
	Else  []string `json:"else,omitempty" description:"the nodes taken when no case is"`

	// Items (iteration) is a value that resolves to a list; the sub-graph
	// Nodes runs once per item, at most Concurrency at a time (0 means 1),
	// and Output is the value collected from each run into "results".
	Items       any    `json:"items,omitempty" description:"a reference to a list"`
	Concurrency int    `json:"concurrency,omitempty" description:"items run at once (0 to 64; 0 means 1)"`
	Nodes       []Node `json:"nodes,omitempty" description:"the nodes run for each item"`
	Output      any    `json:"output,omitempty" description:"the value collected from each item into results"`

	// Template (template) is the text template.
	Template string `json:"template,omitempty" description:"the text template"`

	// Message (human) is the template of what the person is asked;
	// OnTimeout lists the nodes a run takes when nobody answered before
	// the node's Timeout (instead of the node's other successors).
	Message   string   `json:"message,omitempty" description:"the template of what the person is asked"`
	OnTimeout []string `json:"on_timeout,omitempty" description:"the nodes taken when nobody answered in time"`

	// Outputs (end) maps output names to values.
	Outputs map[string]any `json:"outputs,omitempty" description:"the workflow's outputs by name, each a value with references"`

	// Timeout bounds one attempt of the node ("30s"); zero means none.
	// A human node's is how long it waits for its answer.
	Timeout Duration `json:"timeout,omitzero" description:"bounds one attempt (30s); a human node's wait for its answer"`
	// Retry says how often and how patiently a failed node is tried again.
	Retry *Retry `json:"retry,omitempty" description:"how often and how patiently a failed node is tried again"`
	// OnError says what a failure does once the retries are spent; the
	// default fails the run.
	OnError *OnError `json:"on_error,omitempty" description:"what a failure does once the retries are spent (default: fail the run)"`
	// Idempotent marks an agent, tool, http or Func node as safe to run
	// again when a run resumes after it started and never finished. Other
	// kinds have no effect outside the run and are always run again.
	Idempotent bool `json:"idempotent,omitempty" description:"safe to run again when a run resumes after it started"`
}

// Case is one branch of a condition node.
type Case struct {
	// ID names the branch in the node's "branch" output; empty means
	// "case_N" with N counted from 1.
	ID string `json:"id,omitempty"`
	// When is an expr-lang expression over the variables inputs, nodes
	// (nodes.ID.outputs.FIELD), and item and index inside an iteration.
	// It must be boolean; it is compiled and type-checked by Validate.
	When string `json:"when" description:"an expression over inputs, nodes, item and index that is true or false"`
	// Next lists the nodes this branch leads to.
	Next []string `json:"next" description:"the nodes this branch leads to"`
}

// Retry is a node's retry policy.
type Retry struct {
	// MaxAttempts counts the first try; 0 or 1 means no retry.
	MaxAttempts int `json:"max_attempts"`
	// Backoff is the wait before the second attempt; it doubles before
	// each later one, up to MaxBackoff when that is set.
	Backoff    Duration `json:"backoff,omitzero"`
	MaxBackoff Duration `json:"max_backoff,omitzero"`
}

// FailureAction is what a node's failure does.
type FailureAction string

// The failure actions.
const (
	// FailRun ends the run with the node's error (the default).
	FailRun FailureAction = "fail"
	// Continue finishes the node with OnError.Default as its outputs, and
	// the run goes on.
	Continue FailureAction = "continue"
	// Branch takes the node's error branch (OnError.Next) instead of its
	// normal successors; the node's output "error" holds the message.
	Branch FailureAction = "branch"
)

// OnError is a node's failure policy.
type OnError struct {
	Action FailureAction `json:"action"`
	// Default (continue) is the outputs the node finishes with: an object
	// value, resolved like Args.
	Default map[string]any `json:"default,omitempty"`
	// Next (branch) lists the nodes the error branch leads to.
	Next []string `json:"next,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("1.5s") in
// JSON and YAML; a number is taken as seconds.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration %s: want a string such as \"30s\" or a number of seconds", b)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// Parse reads a definition from JSON or YAML (at most [MaxDefinitionSize]
// bytes). Unknown fields are errors: [ValidationErrors] naming the node
// and the field, and the fields the node's kind has. Parse checks only
// the form; call
// [Definition.Validate] before saving or running it.
func Parse(data []byte) (*Definition, error) {
	if len(data) > MaxDefinitionSize {
		return nil, fmt.Errorf("workflow: definition of %d bytes is over the limit of %d", len(data), MaxDefinitionSize)
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) == 0 {
		return nil, errors.New("workflow: empty definition")
	}
	js := trimmed
	if trimmed[0] != '{' {
		var doc any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("workflow: parse yaml: %w", err)
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("workflow: parse yaml: %w", err)
		}
		js = b
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var d Definition
	if err := dec.Decode(&d); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			if e := unknownField(js); e != nil {
				return nil, e
			}
		}
		return nil, fmt.Errorf("workflow: parse: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("workflow: parse: data after the definition")
	}
	return &d, nil
}

// InputSchema returns the JSON Schema of the run's inputs: an object with
// the start node's inputs as properties, those without a default required.
// It is what a caller (a model calling the workflow as a tool, a form)
// must send. It returns nil when the definition has no start node.
func (d *Definition) InputSchema() json.RawMessage {
	for i := range d.Nodes {
		n := &d.Nodes[i]
		if n.Kind != KindStart {
			continue
		}
		props := map[string]any{}
		required := []string{}
		for _, name := range sortedKeys(n.Inputs) {
			s := n.Inputs[name]
			if s == nil {
				continue
			}
			js := s.jsonSchema()
			if s.Default != nil {
				js["default"] = s.Default
			} else {
				required = append(required, name)
			}
			props[name] = js
		}
		b, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
		if err != nil {
			return nil
		}
		return b
	}
	return nil
}

// StreamedOutput returns the ID of the node whose text is, verbatim, the
// run's one output, so that its [NodeDelta] events spell out that output
// while the run goes on: the definition has one end node with one output,
// which is exactly the reference {{ nodes.ID.outputs.text }} to a
// top-level llm node that is tried once and fails the run when it fails
// (so no retry or default can replace text already passed on). It
// reports false for any other shape.
func (d *Definition) StreamedOutput() (string, bool) {
	var end *Node
	for i := range d.Nodes {
		if d.Nodes[i].Kind == KindEnd {
			if end != nil {
				return "", false
			}
			end = &d.Nodes[i]
		}
	}
	if end == nil || len(end.Outputs) != 1 {
		return "", false
	}
	var out any
	for _, v := range end.Outputs {
		out = v
	}
	v, err := parseValue(out)
	if err != nil || v.kind != valRef || v.ref.root != rootNode || v.ref.node == "" || len(v.ref.path) != 1 || v.ref.path[0] != "text" {
		return "", false
	}
	for i := range d.Nodes {
		n := &d.Nodes[i]
		if n.ID != v.ref.node {
			continue
		}
		if n.Kind != KindLLM || (n.Retry != nil && n.Retry.MaxAttempts > 1) || (n.OnError != nil && n.OnError.Action != "" && n.OnError.Action != FailRun) {
			return "", false
		}
		return n.ID, true
	}
	return "", false
}
