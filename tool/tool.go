// Package tool gives models tools to call: Go functions and methods described
// by JSON Schema (derived from their argument types), a [Set] with unique
// names, and an [Executor] that runs a round of calls concurrently and
// answers every failure to the model according to its [Policy].
//
// [Tool] is the small interface every tool implements — Go funcs ([Func]),
// methods ([FromMethods]), and the platform's HTTP, MCP and SQL tools.
//
// An [Approver] picks the calls that wait for a person before they run
// (per tool: [Always], [Never], a condition over the arguments with
// [When]; package ai pauses the turn for them), and [Set.CheckArguments]
// checks arguments a person edited against the tool's JSON Schema.
//
// For LangChain4j users: [Func] and [FromMethods] take the place of @Tool;
// a parameter's `description` tag is @P's description and its `default`
// tag @P(defaultValue = …), filled in when the model leaves the parameter
// out; [MemoryID] is @ToolMemoryId, read from the tool's context (as is
// [User], the end user); and [Executor]'s UnknownAnswer is
// hallucinatedToolNameStrategy.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"

	"github.com/weftlabs/weft/jsonschema"
	"github.com/weftlabs/weft/llm"
)

// Tool is something a model can call.
type Tool interface {
	// Spec describes the tool to the model. It is called once, when the
	// tool joins a Set.
	Spec() llm.ToolSpec
	// Call runs the tool with the JSON arguments the model produced. A
	// returned error is reported to the model (or aborts the turn, as the
	// Executor's policy says); an *ArgumentError says the arguments were at
	// fault.
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a tool call returns to the model.
type Result struct {
	// Content is the text the model sees, normally JSON.
	Content string
	// Immediate asks the pipeline to return this result to the caller
	// instead of calling the model again (see ai's immediate return).
	Immediate bool
}

// ArgumentError reports arguments that do not fit the tool's parameters.
// Field names the offending JSON field ("" when the JSON itself is bad).
type ArgumentError struct {
	Tool  string
	Field string
	Err   error
}

// Error names the tool, the field and the problem.
func (e *ArgumentError) Error() string {
	if e.Field != "" {
		return "tool " + e.Tool + ": argument \"" + e.Field + "\": " + e.Err.Error()
	}
	return "tool " + e.Tool + ": invalid arguments: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *ArgumentError) Unwrap() error { return e.Err }

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidName reports whether name is accepted by every provider
// (^[a-zA-Z0-9_-]{1,64}$).
func ValidName(name string) bool { return nameRE.MatchString(name) }

// FuncOption configures a tool made by [Func] or [FromMethods].
type FuncOption func(*funcConfig)

type funcConfig struct {
	immediate bool
}

// Immediate marks the tool's results as final: when the round's results are
// immediate (see ai.ImmediateReturn) the pipeline returns them to the caller
// without calling the model again.
func Immediate() FuncOption { return func(c *funcConfig) { c.immediate = true } }

// funcTool is a Tool over a typed Go function.
type funcTool[In, Out any] struct {
	spec      llm.ToolSpec
	fn        func(context.Context, In) (Out, error)
	args      *argDecoder
	immediate bool
	err       error
}

// Func returns a tool that calls fn. Its parameters are the JSON Schema of
// In (a struct, normally; see package jsonschema for the mapping) and its
// result is Out encoded as JSON — a string Out is passed as it is.
//
// Mistakes in the declaration (an invalid name, an In without a schema) are
// reported when the tool joins a [Set].
func Func[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...FuncOption) Tool {
	var cfg funcConfig
	for _, o := range opts {
		o(&cfg)
	}
	t := &funcTool[In, Out]{fn: fn, immediate: cfg.immediate}
	t.spec = llm.ToolSpec{Name: name, Description: description}
	params, err := jsonschema.For[In]()
	switch {
	case fn == nil:
		t.err = fmt.Errorf("tool %q: nil function", name)
	case err != nil:
		t.err = fmt.Errorf("tool %q: parameters: %w", name, err)
	}
	t.spec.Parameters = params
	t.args, err = newArgDecoder(name, params, reflect.TypeFor[In]())
	if err != nil && t.err == nil {
		t.err = fmt.Errorf("tool %q: parameters: %w", name, err)
	}
	return t
}

func (t *funcTool[In, Out]) Spec() llm.ToolSpec { return t.spec }

func (t *funcTool[In, Out]) validate() error { return t.err }

func (t *funcTool[In, Out]) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	var in In
	if err := t.args.decode(args, &in); err != nil {
		return Result{}, err
	}
	out, err := t.fn(ctx, in)
	if err != nil {
		return Result{}, err
	}
	if r, ok := any(out).(Result); ok {
		r.Immediate = r.Immediate || t.immediate
		return r, nil
	}
	content, err := encode(out)
	if err != nil {
		return Result{}, fmt.Errorf("tool %s: encode result: %w", t.spec.Name, err)
	}
	return Result{Content: content, Immediate: t.immediate}, nil
}

// encode renders a tool's output for the model: strings as they are,
// everything else as JSON.
func encode(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case nil:
		return "null", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// validator is implemented by tools whose declaration may be wrong.
type validator interface{ validate() error }
