// Package toolargs decodes a model's tool arguments into a JSON object for
// the platform's tool sources (HTTP, MCP, SQL), reporting mistakes as
// *tool.ArgumentError so that the model learns which field was wrong.
package toolargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weftlabs/weft/tool"
)

// Schema is the part of a tool's JSON Schema the decoders check.
type Schema struct {
	// Required lists the fields that must be present.
	Required []string
}

// ParseSchema checks that params is a JSON Schema object with "type":
// "object" (or no type) and returns its required fields. Empty params mean
// a tool without arguments.
func ParseSchema(params json.RawMessage) (Schema, error) {
	params = bytes.TrimSpace(params)
	if len(params) == 0 {
		return Schema{}, nil
	}
	var s struct {
		Type     any      `json:"type"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(params, &s); err != nil {
		return Schema{}, fmt.Errorf("parameters must be a JSON Schema object: %w", err)
	}
	if s.Type != nil && s.Type != "object" {
		return Schema{}, fmt.Errorf("parameters must be a JSON Schema of type \"object\", got type %v", s.Type)
	}
	return Schema{Required: s.Required}, nil
}

// DefaultParameters is the schema of a tool without declared parameters.
var DefaultParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// Object decodes args (a JSON object; empty or null count as {}) and checks
// that the required fields are present. Numbers keep their literal text.
func Object(toolName string, s Schema, args json.RawMessage) (map[string]json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	obj := map[string]json.RawMessage{}
	if len(args) != 0 && string(args) != "null" {
		if args[0] != '{' {
			return nil, &tool.ArgumentError{Tool: toolName, Err: errors.New("arguments must be a JSON object")}
		}
		if err := json.Unmarshal(args, &obj); err != nil {
			return nil, &tool.ArgumentError{Tool: toolName, Err: err}
		}
	}
	for _, r := range s.Required {
		if v, ok := obj[r]; !ok || string(v) == "null" {
			return nil, &tool.ArgumentError{Tool: toolName, Field: r, Err: errors.New("required but missing")}
		}
	}
	return obj, nil
}

// Scalar returns the text of a string, number or boolean JSON value, as it
// goes into a URL or a query parameter. Other kinds are an error.
func Scalar(v json.RawMessage) (string, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", errors.New("empty value")
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", err
		}
		return s, nil
	case '{', '[':
		return "", errors.New("expected a string, number or boolean, got " + kind(v))
	case 'n':
		return "", errors.New("expected a string, number or boolean, got null")
	default: // number, true, false: valid JSON already
		return string(v), nil
	}
}

// Kind names the JSON kind of v for error messages.
func Kind(v json.RawMessage) string { return kind(bytes.TrimSpace(v)) }

func kind(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
