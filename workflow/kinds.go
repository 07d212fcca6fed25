package workflow

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/weftlabs/weft/jsonschema"
)

// KindInfo describes a node kind for an editor: what a node of the kind
// may set and what it outputs. It is derived from the types Parse reads
// and the rules Validate applies, so a form made from it asks for what a
// definition must hold.
type KindInfo struct {
	Kind        Kind   `json:"kind"`
	Description string `json:"description"`
	// Fields are the node's fields in the order a form shows them: id,
	// kind and title, the kind's own, then the other common ones
	// (depends_on, timeout, retry, on_error, idempotent).
	Fields []string `json:"fields"`
	// Schema is the JSON Schema of a node of the kind: an object with the
	// fields as properties, those Validate requires listed as required,
	// and no others allowed. Properties carry "x-weft" hints for editors:
	// "template" (text with {{ references }}), "model", "agent",
	// "knowledge_base", "tool" (names of the server's objects), "node"
	// (node ids), "value" (a JSON value with references).
	Schema json.RawMessage `json:"schema"`
	// Outputs is the JSON Schema of the node's outputs before an
	// output_schema adds to them (a start node's are the inputs it
	// declares, an end node's the outputs it maps).
	Outputs json.RawMessage `json:"outputs"`
}

// kindDocs describe the built-in kinds, in the order editors list them.
var kindDocs = []struct {
	kind Kind
	doc  string
}{
	{KindStart, "The run's typed inputs; its outputs are the inputs of the run. A workflow has exactly one."},
	{KindLLM, "Asks a model: a prompt template over references; outputs text, and the fields of an output schema when one is set."},
	{KindAgent, "Runs one turn of an agent with a query template; outputs answer."},
	{KindKnowledge, "Recalls fragments from knowledge bases for a query template; outputs fragments ({text, source, score}) and text."},
	{KindTool, "Calls a registered tool with arguments made from references; outputs result, and the fields of an output schema when one is set."},
	{KindHTTP, "Sends an HTTP request through the server's outbound guard; outputs status, headers and body."},
	{KindCondition, "Chooses a branch: the first case whose expression is true, else the else branch; outputs branch."},
	{KindIteration, "Runs its nodes once per item of a list; outputs results, one value per item."},
	{KindTemplate, "Renders text from references; outputs text."},
	{KindHuman, "Waits for a person's answer to a message; outputs the answer's fields and timed_out."},
	{KindEnd, "The workflow's outputs, each a value over references."},
}

// fieldHints are the "x-weft" hints of Node's fields.
var fieldHints = map[string]string{
	"model": "model", "agent": "agent", "knowledge_bases": "knowledge_base", "tool": "tool",
	"system": "template", "prompt": "template", "query": "template", "url": "template",
	"body": "template", "template": "template", "message": "template",
	"depends_on": "node", "else": "node", "on_timeout": "node",
	"args": "value", "items": "value", "output": "value", "outputs": "value",
}

var (
	nodeFieldList  = jsonschema.Fields(reflect.TypeFor[Node]())
	nodeFields     = fieldNames(nodeFieldList)
	durationType   = reflect.TypeFor[Duration]()
	schemaPtrType  = reflect.TypeFor[*Schema]()
	schemaMapType  = reflect.TypeFor[map[string]*Schema]()
	nodeSliceType  = reflect.TypeFor[[]Node]()
	schemaTypeEnum = []any{TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeArray, TypeObject}
)

func fieldNames(fs []jsonschema.Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// Kinds describes the node kinds a definition validated with opts may
// use: the built-in ones, then those of [WithNodeTypes] by name. With
// [WithDefaultModel] an llm node's model is not required.
func Kinds(opts ...ValidateOption) ([]KindInfo, error) {
	c := &compiler{kinds: map[Kind]*NodeType{}, ids: map[string]string{}}
	for _, o := range opts {
		o(c)
	}
	kinds := make([]Kind, 0, len(kindDocs)+len(c.kinds))
	docs := map[Kind]string{}
	for _, d := range kindDocs {
		kinds = append(kinds, d.kind)
		docs[d.kind] = d.doc
	}
	custom := sortedKeys(kindNames(c.kinds))
	for _, k := range custom {
		kinds = append(kinds, Kind(k))
		docs[Kind(k)] = "A node kind of this server, made from a Go function: args are its arguments."
	}
	out := make([]KindInfo, 0, len(kinds))
	for _, k := range kinds {
		info, err := c.kindInfo(k, docs[k])
		if err != nil {
			return nil, fmt.Errorf("workflow: kind %s: %w", k, err)
		}
		out = append(out, info)
	}
	return out, nil
}

func kindNames(m map[Kind]*NodeType) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[string(k)] = true
	}
	return out
}

func (c *compiler) kindInfo(k Kind, doc string) (KindInfo, error) {
	fields := c.fieldsOf(k)
	props := map[string]any{}
	for _, f := range nodeFieldList {
		if !slices.Contains(fields, f.Name) {
			continue
		}
		s, err := typeSchema(f.Type, 0)
		if err != nil {
			return KindInfo{}, fmt.Errorf("field %s: %w", f.Name, err)
		}
		if f.Description != "" {
			s["description"] = f.Description
		}
		if h := fieldHints[f.Name]; h != "" {
			s["x-weft"] = h
		}
		props[f.Name] = s
	}
	props["kind"] = map[string]any{"type": "string", "const": string(k), "description": "the node's kind"}
	if t := c.kinds[k]; t != nil {
		args := map[string]any{"type": "object"}
		if t.args != nil {
			args = t.args.jsonSchema()
		}
		args["description"] = "the arguments of the kind's function: a JSON value with references"
		args["x-weft"] = "value"
		props["args"] = args
	}
	required := append([]string{"id", "kind"}, c.required(k)...)
	schema, err := json.Marshal(map[string]any{
		"type": "object", "title": string(k), "description": doc,
		"properties": props, "required": required, "additionalProperties": false,
	})
	if err != nil {
		return KindInfo{}, err
	}
	lv := c.declare([]Node{{ID: "n", Kind: k}}, nil, 0, "")
	outs := c.nodeSchema(lv, 0)
	if k == KindStart || k == KindEnd {
		outs = objectSchema
	}
	outputs, err := json.Marshal(outs.jsonSchema())
	if err != nil {
		return KindInfo{}, err
	}
	return KindInfo{Kind: k, Description: doc, Fields: fields, Schema: schema, Outputs: outputs}, nil
}

// typeSchema returns the JSON Schema of a type of Node's fields: as
// package jsonschema derives it, with durations as text, the recursive
// Schema and Node types cut at one level, and objects open where Parse
// reads any value.
func typeSchema(t reflect.Type, depth int) (map[string]any, error) {
	switch t {
	case durationType:
		return map[string]any{"type": "string", "format": "duration", "examples": []any{"30s", "1m"}}, nil
	case schemaPtrType:
		if depth > 0 {
			return map[string]any{"type": "object", "description": "a type: type, properties, items, enum, …"}, nil
		}
		return structSchema(reflect.TypeFor[Schema](), depth+1)
	case schemaMapType:
		s, err := typeSchema(schemaPtrType, depth)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": s}, nil
	case nodeSliceType:
		return map[string]any{"type": "array", "items": map[string]any{"type": "object", "description": "a node, as at the top level"}}, nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		return structSchema(t, depth+1)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			items, err := typeSchema(t.Elem(), depth)
			if err != nil {
				return nil, err
			}
			return map[string]any{"type": "array", "items": items}, nil
		}
	}
	raw, err := jsonschema.ForType(t)
	if err != nil {
		return nil, err
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s, nil
}

func structSchema(t reflect.Type, depth int) (map[string]any, error) {
	props := map[string]any{}
	var required []string
	for _, f := range jsonschema.Fields(t) {
		s, err := typeSchema(f.Type, depth)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if f.Description != "" {
			s["description"] = f.Description
		}
		if t == reflect.TypeFor[Schema]() && f.Name == "type" {
			s["enum"] = schemaTypeEnum
		}
		if t == reflect.TypeFor[OnError]() && f.Name == "action" {
			s["enum"] = []any{string(FailRun), string(Continue), string(Branch)}
		}
		if f.Required {
			required = append(required, f.Name)
		}
		props[f.Name] = s
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out, nil
}

// unknownField explains a definition's unknown field, which Parse's
// decoder reports without saying where: the node and the field, and the
// fields the node's kind has. It returns nil when it finds none.
func unknownField(js []byte) error {
	var doc map[string]any
	if json.Unmarshal(js, &doc) != nil {
		return nil
	}
	defFields := fieldNames(jsonschema.Fields(reflect.TypeFor[Definition]()))
	for _, k := range sortedKeys(doc) {
		if !slices.Contains(defFields, k) {
			return ValidationErrors{{Field: k, Msg: "unknown field; a definition's fields: " + strings.Join(defFields, ", ")}}
		}
	}
	nodes, _ := doc["nodes"].([]any)
	if e := unknownNodeField(nodes, ""); e != nil {
		return ValidationErrors{e}
	}
	return nil
}

func unknownNodeField(nodes []any, prefix string) *ValidationError {
	c := &compiler{kinds: map[Kind]*NodeType{}}
	for i, x := range nodes {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		id, _ := m["id"].(string)
		name := prefix + id
		if id == "" {
			name = fmt.Sprintf("%snodes[%d]", prefix, i)
		}
		kind, _ := m["kind"].(string)
		for _, k := range sortedKeys(m) {
			if slices.Contains(nodeFields, k) {
				continue
			}
			what := "a node's fields"
			if _, ok := kindFields[Kind(kind)]; ok {
				what = fmt.Sprintf("a %s node's fields", kind)
			}
			return &ValidationError{Node: name, Field: k, Msg: "unknown field; " + what + ": " + strings.Join(c.fieldsOf(Kind(kind)), ", ")}
		}
		nested := []struct {
			field string
			t     reflect.Type
		}{{"retry", reflect.TypeFor[Retry]()}, {"on_error", reflect.TypeFor[OnError]()}}
		for _, n := range nested {
			if e := unknownIn(m[n.field], name, n.field, n.t); e != nil {
				return e
			}
		}
		cases, _ := m["cases"].([]any)
		for j, cs := range cases {
			if e := unknownIn(cs, name, fmt.Sprintf("cases[%d]", j), reflect.TypeFor[Case]()); e != nil {
				return e
			}
		}
		if sub, ok := m["nodes"].([]any); ok {
			if e := unknownNodeField(sub, name+"."); e != nil {
				return e
			}
		}
	}
	return nil
}

func unknownIn(v any, node, field string, t reflect.Type) *ValidationError {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	fields := fieldNames(jsonschema.Fields(t))
	for _, k := range sortedKeys(m) {
		if !slices.Contains(fields, k) {
			return &ValidationError{Node: node, Field: field + "." + k, Msg: "unknown field; " + field + "'s fields: " + strings.Join(fields, ", ")}
		}
	}
	return nil
}
