package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weftlabs/weft/jsonschema"
)

// NodeType is a node kind made from a Go function with [Func]. Register it
// with an [Engine] ([Register]) and validate definitions that use it with
// [WithNodeTypes].
type NodeType struct {
	kind    Kind
	args    *Schema
	outputs *Schema
	run     func(ctx context.Context, args map[string]any) (map[string]any, error)
}

// Func makes a node kind from a Go function. A node of the kind gives its
// Args to fn, decoded into In, and fn's result, encoded as a JSON object,
// becomes the node's outputs. The types of In's and Out's fields, derived
// as package jsonschema does, check references when definitions are
// validated. With map[string]any as In or Out the values pass as they are,
// unchecked and without encoding.
//
// Nodes of kinds made with Func are taken to have effects outside the run:
// a run that resumes after one started and did not finish fails it with
// [ErrInterrupted] unless the node is marked idempotent.
func Func[In, Out any](kind Kind, fn func(ctx context.Context, in In) (Out, error)) (*NodeType, error) {
	if _, builtin := kindFields[kind]; builtin || !isIdent(string(kind)) {
		return nil, fmt.Errorf("workflow: kind %q: want a name that is not a built-in kind", kind)
	}
	t := &NodeType{kind: kind}
	var err error
	if t.args, err = schemaFor[In](); err != nil {
		return nil, fmt.Errorf("workflow: kind %s arguments: %w", kind, err)
	}
	if t.outputs, err = schemaFor[Out](); err != nil {
		return nil, fmt.Errorf("workflow: kind %s outputs: %w", kind, err)
	}
	_, plainIn := any(*new(In)).(map[string]any)
	t.run = func(ctx context.Context, args map[string]any) (map[string]any, error) {
		var in In
		if plainIn {
			in = any(args).(In)
		} else {
			b, err := json.Marshal(args)
			if err != nil {
				return nil, err
			}
			if err := json.Unmarshal(b, &in); err != nil {
				return nil, fmt.Errorf("arguments: %w", err)
			}
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		if m, ok := any(out).(map[string]any); ok {
			return m, nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("outputs: %w", err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("outputs: want a JSON object: %w", err)
		}
		return m, nil
	}
	return t, nil
}

// Kind returns the kind's name.
func (t *NodeType) Kind() Kind { return t.kind }

// schemaFor returns the type of T's JSON encoding, or nil (unchecked) for
// map[string]any.
func schemaFor[T any]() (*Schema, error) {
	var zero T
	if _, ok := any(zero).(map[string]any); ok {
		return nil, nil
	}
	raw, err := jsonschema.For[T]()
	if err != nil {
		return nil, err
	}
	var s Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s.Type != TypeObject {
		return nil, fmt.Errorf("want a struct or a map, got JSON type %q", s.Type)
	}
	return &s, nil
}
