package workflow

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/vm"
)

// ValidationError is one fault of a definition: the node (its ID, or
// "ITERATION.ID" inside an iteration; empty for the definition itself), the
// field, and what is wrong.
type ValidationError struct {
	Node  string `json:"node,omitempty"`
	Field string `json:"field,omitempty"`
	Msg   string `json:"message"`
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("workflow: ")
	if e.Node != "" {
		b.WriteString("node ")
		b.WriteString(e.Node)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ValidationErrors is every fault [Definition.Validate] found, in the order
// of the definition. errors.As finds the first as a [*ValidationError].
type ValidationErrors []*ValidationError

func (es ValidationErrors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "workflow: %d faults: ", len(es))
	for i, e := range es {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.TrimPrefix(e.Error(), "workflow: "))
	}
	return b.String()
}

// Unwrap returns the faults, for errors.As and errors.Is.
func (es ValidationErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// ValidateOption configures [Definition.Validate].
type ValidateOption func(*compiler)

// WithNodeTypes lets a definition use the node kinds made with [Func].
func WithNodeTypes(types ...*NodeType) ValidateOption {
	return func(c *compiler) {
		for _, t := range types {
			c.kinds[t.kind] = t
		}
	}
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Limits on a definition, beyond its size.
const (
	maxNodes      = 2000
	maxCases      = 64
	maxAttempts   = 10
	maxExprLength = 4096
	maxDepth      = 4
)

// Validate checks the definition as a whole, as it must be before it is
// saved or run: names and kinds; the fields each kind needs; that the graph
// is acyclic (only an iteration repeats), has one start and an end, and
// that every node, every end in particular, is reachable from the start;
// that every reference names a node the referencing node can see and a
// field of that node's outputs, of a fitting type; and it compiles and
// type-checks condition expressions. The error is [ValidationErrors].
//
// A valid definition keeps its compiled form for runs; do not change it
// afterwards (parse or copy a new one instead), and do not validate it
// while it runs.
func (d *Definition) Validate(opts ...ValidateOption) error {
	p, err := compile(d, opts...)
	if err != nil {
		return err
	}
	d.plan = p
	return nil
}

// WithDefaultModel lets an llm node leave out its model: the
// [Services].Model resolver is then asked for the model named "", which
// it resolves to its default (as the Weft server does with its default
// model).
func WithDefaultModel() ValidateOption {
	return func(c *compiler) { c.defaultModel = true }
}

// compiler turns a definition into a plan, collecting faults.
type compiler struct {
	kinds        map[Kind]*NodeType
	defaultModel bool
	errs         ValidationErrors
	ids          map[string]string // node ID → its error name
}

// level is one graph being compiled: the top level or an iteration's
// sub-graph.
type level struct {
	p      *plan
	byID   map[string]int
	parent *level
	owner  int // the iteration node's index in parent
	depth  int
	prefix string
	item   *Schema // the item type, inside an iteration
}

func compile(d *Definition, opts ...ValidateOption) (*plan, error) {
	c := &compiler{kinds: map[Kind]*NodeType{}, ids: map[string]string{}}
	for _, o := range opts {
		o(c)
	}
	if !nameRE.MatchString(d.Name) {
		c.fault("", "name", "want 1 to 64 letters, digits, '_' or '-', got %q", d.Name)
	}
	if d.Version < 0 {
		c.fault("", "version", "must not be negative")
	}
	if len(d.Nodes) == 0 {
		c.fault("", "nodes", "a workflow needs a start and an end node")
		return nil, c.errs
	}
	total := 0
	countNodes(d.Nodes, &total)
	if total > maxNodes {
		c.fault("", "nodes", "%d nodes is over the limit of %d", total, maxNodes)
		return nil, c.errs
	}
	top := c.declare(d.Nodes, nil, -1, "")
	c.compileLevel(top)
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return top.p, nil
}

func countNodes(ns []Node, n *int) {
	for i := range ns {
		*n++
		countNodes(ns[i].Nodes, n)
	}
}

func (c *compiler) fault(node, field, format string, args ...any) {
	c.errs = append(c.errs, &ValidationError{Node: node, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// declare builds a level's nodes and IDs, recursively, so that references
// can be resolved in any order afterwards.
func (c *compiler) declare(ns []Node, parent *level, owner int, prefix string) *level {
	lv := &level{p: &plan{start: -1}, byID: map[string]int{}, parent: parent, owner: owner, prefix: prefix}
	if parent != nil {
		lv.depth = parent.depth + 1
	}
	for i := range ns {
		n := &ns[i]
		pn := &pnode{n: n, idx: i, name: prefix + n.ID}
		lv.p.nodes = append(lv.p.nodes, pn)
		if !isIdent(n.ID) {
			c.fault(pn.name, "id", "want a name of letters, digits and '_' not starting with a digit, got %q", n.ID)
			continue
		}
		if prev, dup := c.ids[n.ID]; dup {
			c.fault(pn.name, "id", "duplicate id (also %s)", prev)
			continue
		}
		c.ids[n.ID] = pn.name
		lv.byID[n.ID] = i
		if n.Kind == KindIteration && len(n.Nodes) > 0 {
			if lv.depth+1 >= maxDepth {
				c.fault(pn.name, "nodes", "iterations nest at most %d deep", maxDepth-1)
				continue
			}
			pn.level = c.declare(n.Nodes, lv, i, pn.name+".")
			pn.sub = pn.level.p
		}
	}
	return lv
}

// fields each kind reads, besides the common ones.
var kindFields = map[Kind][]string{
	KindStart:     {"inputs"},
	KindLLM:       {"model", "system", "prompt", "output_schema"},
	KindAgent:     {"agent", "query"},
	KindKnowledge: {"knowledge_bases", "query", "top_k"},
	KindTool:      {"tool", "args", "output_schema"},
	KindHTTP:      {"method", "url", "headers", "body", "output_schema"},
	KindCondition: {"cases", "else"},
	KindIteration: {"items", "concurrency", "nodes", "output"},
	KindTemplate:  {"template"},
	KindEnd:       {"outputs"},
	KindHuman:     {"message", "output_schema", "on_timeout"},
}

var commonFields = []string{"id", "kind", "title", "depends_on", "timeout", "retry", "on_error", "idempotent"}

// fields each kind must set, besides id and kind; missingHint says what a
// missing one should be, where "missing" alone says too little.
var kindRequired = map[Kind][]string{
	KindLLM:       {"model", "prompt"},
	KindAgent:     {"agent", "query"},
	KindKnowledge: {"knowledge_bases", "query"},
	KindTool:      {"tool"},
	KindHTTP:      {"url"},
	KindCondition: {"cases"},
	KindIteration: {"items", "nodes", "output"},
	KindTemplate:  {"template"},
	KindHuman:     {"message"},
}

var missingHint = map[string]string{
	"knowledge_bases": "name at least one knowledge base",
	"cases":           "a condition needs at least one case",
	"items":           "missing: a reference to a list",
	"nodes":           "an iteration needs nodes to run for each item",
	"output":          "missing: the value collected from each item, such as \"{{nodes.ID.outputs.FIELD}}\"",
}

// required returns the fields a node of kind k must set.
func (c *compiler) required(k Kind) []string {
	req := kindRequired[k]
	if k == KindLLM && c.defaultModel {
		req = req[1:]
	}
	return req
}

// kindList names the kinds a definition may use.
func (c *compiler) kindList() []string {
	var out []string
	for _, d := range kindDocs {
		out = append(out, string(d.kind))
	}
	return append(out, sortedKeys(kindNames(c.kinds))...)
}

// fieldsOf returns every field a node of kind k may set: id, kind and
// title, the kind's own, then the other common ones. An unknown kind may
// set any of Node's.
func (c *compiler) fieldsOf(k Kind) []string {
	own, ok := kindFields[k]
	if _, custom := c.kinds[k]; custom {
		own, ok = []string{"args"}, true
	}
	if !ok {
		return nodeFields
	}
	out := append(slices.Clone(commonFields[:3]), own...)
	return append(out, commonFields[3:]...)
}

func (c *compiler) compileLevel(lv *level) {
	for _, pn := range lv.p.nodes {
		c.compileNode(lv, pn)
	}
	for _, pn := range lv.p.nodes {
		if pn.level != nil {
			c.compileLevel(pn.level)
		}
	}
	c.checkGraph(lv)
}

func (c *compiler) compileNode(lv *level, pn *pnode) {
	n := pn.n
	name := pn.name
	allowed := kindFields[n.Kind]
	if t, ok := c.kinds[n.Kind]; ok {
		pn.custom = t
		allowed = []string{"args"}
	} else if allowed == nil {
		c.fault(name, "kind", "unknown kind %q; kinds: %s", n.Kind, strings.Join(c.kindList(), ", "))
		return
	}
	set := c.checkFields(pn, allowed)
	for _, f := range c.required(n.Kind) {
		if !isSet(set[f]) {
			c.fault(name, f, "%s", cmp.Or(missingHint[f], "missing"))
		}
	}

	switch n.Kind {
	case KindStart:
		if lv.parent != nil {
			c.fault(name, "kind", "an iteration's nodes have no start; they read item and index")
		} else if lv.p.start >= 0 {
			c.fault(name, "kind", "a workflow has one start node (also %s)", lv.p.nodes[lv.p.start].name)
		} else {
			lv.p.start = pn.idx
		}
		for _, in := range sortedKeys(n.Inputs) {
			if !isIdent(in) {
				c.fault(name, "inputs."+in, "input names are letters, digits and '_'")
			}
			if err := n.Inputs[in].check("inputs." + in); err != nil {
				c.fault(name, "inputs."+in, "%v", err)
			}
		}
	case KindEnd:
		if lv.parent != nil {
			c.fault(name, "kind", "an iteration's nodes have no end; the iteration collects its output")
		}
		lv.p.ends = append(lv.p.ends, pn.idx)
		v := c.value(lv, pn, "outputs", anyMap(n.Outputs))
		pn.args = v
	case KindLLM:
		pn.system = c.template(lv, pn, "system", n.System)
		pn.prompt = c.template(lv, pn, "prompt", n.Prompt)
		c.outputSchema(pn, "text")
	case KindAgent:
		pn.prompt = c.template(lv, pn, "query", n.Query)
	case KindKnowledge:
		if n.TopK < 0 || n.TopK > 100 {
			c.fault(name, "top_k", "want 0 to 100, got %d", n.TopK)
		}
		pn.prompt = c.template(lv, pn, "query", n.Query)
	case KindTool:
		pn.args = c.value(lv, pn, "args", anyMap(n.Args))
		c.outputSchema(pn, "result")
	case KindHTTP:
		switch strings.ToUpper(n.Method) {
		case "", http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			c.fault(name, "method", "unsupported method %q", n.Method)
		}
		pn.prompt = c.template(lv, pn, "url", n.URL)
		pn.system = c.template(lv, pn, "body", n.Body)
		pn.headers = map[string]*tmpl{}
		for _, h := range sortedKeys(n.Headers) {
			pn.headers[h] = c.template(lv, pn, "headers."+h, n.Headers[h])
		}
		c.outputSchema(pn, "status", "headers", "body")
	case KindCondition:
		c.compileCases(lv, pn)
	case KindIteration:
		if n.Items != nil {
			pn.items = c.value(lv, pn, "items", n.Items)
			if pn.items != nil {
				s := c.valueSchema(lv, pn.items)
				if s.typ() != "" && s.Type != TypeArray {
					c.fault(name, "items", "want a list, got %s", s.Type)
				}
				if pn.level != nil {
					pn.level.item = anySchema
					if s.Items != nil {
						pn.level.item = s.Items
					}
				}
			}
		}
		if n.Concurrency < 0 || n.Concurrency > 64 {
			c.fault(name, "concurrency", "want 0 to 64, got %d", n.Concurrency)
		}
		if n.Output != nil && pn.level != nil {
			pn.output = c.value(pn.level, pn, "output", n.Output)
		}
	case KindTemplate:
		pn.prompt = c.template(lv, pn, "template", n.Template)
	case KindHuman:
		pn.prompt = c.template(lv, pn, "message", n.Message)
		c.outputSchema(pn, "timed_out")
		if n.Retry != nil {
			c.fault(name, "retry", "a human node is asked once; it is not retried")
		}
		if len(n.OnTimeout) > 0 && n.Timeout <= 0 {
			c.fault(name, "on_timeout", "a timeout branch needs a timeout")
		}
		for j, next := range n.OnTimeout {
			c.edge(lv, pn, fmt.Sprintf("on_timeout[%d]", j), next, edge{onTimeout: true})
		}
	default:
		if pn.custom != nil {
			pn.args = c.value(lv, pn, "args", anyMap(n.Args))
			if pn.args != nil && pn.custom.args != nil {
				s := c.valueSchema(lv, pn.args)
				for _, f := range sortedKeys(s.Properties) {
					want := pn.custom.args.field(f)
					if want == nil {
						c.fault(name, "args."+f, "%s takes no argument %q", n.Kind, f)
					} else if !assignable(want, s.Properties[f]) {
						c.fault(name, "args."+f, "want %s, got %s", want.typ(), s.Properties[f].typ())
					}
				}
			}
		}
	}
	pn.sideEffects = pn.custom != nil || n.Kind == KindAgent || n.Kind == KindTool || n.Kind == KindHTTP
	c.compilePolicy(lv, pn)
	for i, dep := range n.DependsOn {
		c.edge(lv, pn, fmt.Sprintf("depends_on[%d]", i), dep, edge{})
	}
}

func anyMap(m map[string]any) any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// checkFields reports the fields set on the node that its kind does not
// use, and returns the fields set.
func (c *compiler) checkFields(pn *pnode, allowed []string) map[string]json.RawMessage {
	b, err := json.Marshal(pn.n)
	if err != nil {
		c.fault(pn.name, "", "%v", err)
		return nil
	}
	var set map[string]json.RawMessage
	if err := json.Unmarshal(b, &set); err != nil {
		c.fault(pn.name, "", "%v", err)
		return nil
	}
	for _, f := range sortedKeys(set) {
		if !slices.Contains(commonFields, f) && !slices.Contains(allowed, f) {
			c.fault(pn.name, f, "a %s node does not use %s; its fields: %s", pn.n.Kind, f, strings.Join(c.fieldsOf(pn.n.Kind), ", "))
		}
	}
	return set
}

// isSet reports whether a field's JSON is a value: not absent, null, or
// blank text.
func isSet(raw json.RawMessage) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s) != ""
	}
	return true
}

// outputSchema checks a node's output schema: an object whose properties
// do not hide the kind's own outputs.
func (c *compiler) outputSchema(pn *pnode, own ...string) {
	s := pn.n.OutputSchema
	if s == nil {
		return
	}
	if s.Type != TypeObject || len(s.Properties) == 0 {
		c.fault(pn.name, "output_schema", "want an object with properties")
		return
	}
	if err := s.check("output_schema"); err != nil {
		c.fault(pn.name, "output_schema", "%v", err)
	}
	for _, o := range own {
		if _, ok := s.Properties[o]; ok {
			c.fault(pn.name, "output_schema.properties."+o, "%q is already an output of a %s node", o, pn.n.Kind)
		}
	}
}

func (c *compiler) template(lv *level, pn *pnode, field, s string) *tmpl {
	t, err := parseTemplate(s)
	if err != nil {
		c.fault(pn.name, field, "%v", err)
		return nil
	}
	for _, r := range t.refs {
		c.checkRef(lv, pn, pn.idx, field, r)
	}
	return t
}

func (c *compiler) value(lv *level, pn *pnode, field string, v any) *value {
	pv, err := parseValue(v)
	if err != nil {
		c.fault(pn.name, field, "%v", err)
		return nil
	}
	from := pn.idx
	if pn.level != nil && lv == pn.level {
		from = -1
	}
	pv.eachRef(func(r *ref) { c.checkRef(lv, pn, from, field, r) })
	return pv
}

// checkRef resolves a reference read by node from of level lv (-1: by
// the iteration that owns lv, once its items are done), adds the edge it
// implies, and reports a fault for pn when it names nothing.
func (c *compiler) checkRef(lv *level, pn *pnode, from int, field string, r *ref) {
	r.idx = -1
	_, err := c.refSchema(lv, r)
	if err != nil {
		c.fault(pn.name, field, "%v", err)
	}
	if r.root != rootNode || r.idx < 0 {
		return // the edge of a reference to a node that exists is kept, to spare follow-on faults
	}
	// The node referenced must finish before the referencing node, or
	// before the iteration that holds it.
	at, to := lv, from
	for range r.up {
		to = at.owner
		at = at.parent
	}
	if to < 0 {
		return // the iteration's output reads its own nodes when they are done
	}
	if r.idx == to {
		if r.up == 0 {
			c.fault(pn.name, field, "%s: a node cannot read its own outputs", r.raw)
		} else {
			c.fault(pn.name, field, "%s: a node cannot read the iteration it is in", r.raw)
		}
		return
	}
	addEdge(at.p.nodes[r.idx], to, edge{data: true})
}

// refSchema resolves r as seen from level lv and returns the type of the
// value it names.
func (c *compiler) refSchema(lv *level, r *ref) (*Schema, error) {
	var s *Schema
	switch r.root {
	case rootIndex:
		if lv.parent == nil {
			return nil, fmt.Errorf("%s: index is only defined inside an iteration", r.raw)
		}
		return intSchema, nil
	case rootItem:
		if lv.parent == nil {
			return nil, fmt.Errorf("%s: item is only defined inside an iteration", r.raw)
		}
		s = lv.item
		if s == nil {
			s = anySchema
		}
	default:
		id := r.node
		at, up := lv, 0
		if id == "" { // inputs.…: the start node of the top level
			for at.parent != nil {
				at, up = at.parent, up+1
			}
			if at.p.start < 0 {
				return nil, fmt.Errorf("%s: the workflow has no start node", r.raw)
			}
			r.up, r.idx = up, at.p.start
			s = c.nodeSchema(at, at.p.start)
			if f := s.field(r.path[0]); f == nil {
				return nil, fmt.Errorf("%s: the workflow has no input %q", r.raw, r.path[0])
			}
			break
		}
		for {
			if i, ok := at.byID[id]; ok {
				r.up, r.idx = up, i
				break
			}
			if at.parent == nil {
				if where, ok := c.ids[id]; ok {
					return nil, fmt.Errorf("%s: node %s is inside an iteration; read the iteration's results instead", r.raw, where)
				}
				return nil, fmt.Errorf("%s: no node %q", r.raw, id)
			}
			at, up = at.parent, up+1
		}
		s = c.nodeSchema(at, r.idx)
	}
	for i, f := range r.path {
		next := s.field(f)
		if next == nil {
			if s.typ() != TypeObject {
				return nil, fmt.Errorf("%s: %s is a %s, it has no field %q", r.raw, strings.Join(r.path[:i], "."), s.Type, f)
			}
			return nil, fmt.Errorf("%s: no field %q (have %s)", r.raw, f, strings.Join(sortedKeys(s.Properties), ", "))
		}
		s = next
	}
	return s, nil
}

// nodeSchema returns the outputs of node i of level lv as an object
// schema, computing it on first use.
func (c *compiler) nodeSchema(lv *level, i int) *Schema {
	pn := lv.p.nodes[i]
	switch pn.schemaState {
	case 2:
		return pn.out
	case 1:
		return objectSchema // a cycle of references: reported by checkGraph
	}
	pn.schemaState = 1
	props := map[string]*Schema{}
	n := pn.n
	addOut := func() {
		if n.OutputSchema != nil {
			for k, v := range n.OutputSchema.Properties {
				if _, ok := props[k]; !ok {
					props[k] = v
				}
			}
		}
	}
	switch n.Kind {
	case KindStart:
		maps.Copy(props, n.Inputs)
	case KindLLM:
		props["text"] = stringSchema
		addOut()
	case KindAgent:
		props["answer"] = stringSchema
	case KindKnowledge:
		props["text"] = stringSchema
		props["fragments"] = &Schema{Type: TypeArray, Items: fragmentSchema}
	case KindTool:
		props["result"] = stringSchema
		addOut()
	case KindHTTP:
		props["status"] = intSchema
		props["body"] = stringSchema
		props["headers"] = objectSchema
		addOut()
	case KindCondition:
		props["branch"] = stringSchema
	case KindTemplate:
		props["text"] = stringSchema
	case KindHuman:
		props["timed_out"] = boolSchema
		addOut()
	case KindIteration:
		item := anySchema
		if n.Output != nil && pn.level != nil {
			if v, err := parseValue(n.Output); err == nil {
				item = c.valueSchema(pn.level, v)
			}
		}
		props["results"] = &Schema{Type: TypeArray, Items: item}
	case KindEnd:
		if v, err := parseValue(anyMap(n.Outputs)); err == nil {
			maps.Copy(props, c.valueSchema(lv, v).Properties)
		}
	default:
		if t, ok := c.kinds[n.Kind]; ok {
			if t.outputs.typ() == "" || len(t.outputs.Properties) == 0 {
				pn.out, pn.schemaState = anySchema, 2
				return pn.out
			}
			maps.Copy(props, t.outputs.Properties)
		}
	}
	if n.OnError != nil && n.OnError.Action == Branch {
		if _, ok := props["error"]; !ok {
			props["error"] = stringSchema
		}
	}
	pn.out = &Schema{Type: TypeObject, Properties: props}
	if len(props) == 0 {
		pn.out = objectSchema
	}
	pn.schemaState = 2
	return pn.out
}

var fragmentSchema = &Schema{Type: TypeObject, Properties: map[string]*Schema{
	"text":   stringSchema,
	"source": stringSchema,
	"score":  {Type: TypeNumber},
}}

// valueSchema returns the type of a value: a reference's type, text for a
// template, and the shape of literals, lists and objects.
func (c *compiler) valueSchema(lv *level, v *value) *Schema {
	switch v.kind {
	case valRef:
		s, err := c.refSchema(lv, v.ref)
		if err != nil {
			return anySchema
		}
		return s
	case valTmpl:
		return stringSchema
	case valList:
		return &Schema{Type: TypeArray}
	case valObj:
		props := map[string]*Schema{}
		for k, e := range v.obj {
			props[k] = c.valueSchema(lv, e)
		}
		return &Schema{Type: TypeObject, Properties: props}
	}
	return literalSchema(v.lit)
}

func literalSchema(v any) *Schema {
	switch x := v.(type) {
	case string:
		return stringSchema
	case bool:
		return boolSchema
	case float64:
		if x == float64(int64(x)) {
			return intSchema
		}
		return &Schema{Type: TypeNumber}
	case int, int64:
		return intSchema
	case []any:
		return &Schema{Type: TypeArray}
	case map[string]any:
		props := map[string]*Schema{}
		for k, e := range x {
			props[k] = literalSchema(e)
		}
		return &Schema{Type: TypeObject, Properties: props}
	}
	return anySchema
}

func (c *compiler) compileCases(lv *level, pn *pnode) {
	n := pn.n
	if len(n.Cases) == 0 {
		return // reported as missing
	}
	if len(n.Cases) > maxCases {
		c.fault(pn.name, "cases", "%d cases is over the limit of %d", len(n.Cases), maxCases)
		return
	}
	seen := map[string]bool{"else": true}
	for i, cs := range n.Cases {
		field := fmt.Sprintf("cases[%d]", i)
		id := cs.ID
		if id == "" {
			id = "case_" + strconv.Itoa(i+1)
		}
		if !isIdent(id) || seen[id] {
			c.fault(pn.name, field+".id", "want a unique name other than else, got %q", id)
		}
		seen[id] = true
		ec := c.compileExpr(lv, pn, field+".when", cs.When)
		ec.id = id
		pn.cases = append(pn.cases, ec)
		for j, next := range cs.Next {
			c.edge(lv, pn, fmt.Sprintf("%s.next[%d]", field, j), next, edge{routes: []string{id}})
		}
	}
	for j, next := range n.Else {
		c.edge(lv, pn, fmt.Sprintf("else[%d]", j), next, edge{routes: []string{"else"}})
	}
}

func (c *compiler) compilePolicy(lv *level, pn *pnode) {
	n := pn.n
	if n.Timeout < 0 {
		c.fault(pn.name, "timeout", "must not be negative")
	}
	if r := n.Retry; r != nil {
		if r.MaxAttempts < 0 || r.MaxAttempts > maxAttempts {
			c.fault(pn.name, "retry.max_attempts", "want 0 to %d, got %d", maxAttempts, r.MaxAttempts)
		}
		if r.Backoff < 0 || r.MaxBackoff < 0 {
			c.fault(pn.name, "retry", "backoff must not be negative")
		}
	}
	oe := n.OnError
	if oe == nil {
		return
	}
	switch oe.Action {
	case "", FailRun:
	case Continue:
		pn.def = c.value(lv, pn, "on_error.default", anyMap(oe.Default))
		out := c.nodeSchema(lv, pn.idx)
		if pn.def != nil && len(out.Properties) > 0 {
			s := c.valueSchema(lv, pn.def)
			for _, f := range sortedKeys(s.Properties) {
				want := out.field(f)
				if want == nil {
					c.fault(pn.name, "on_error.default."+f, "not an output of the node (have %s)", strings.Join(sortedKeys(out.Properties), ", "))
				} else if !assignable(want, s.Properties[f]) {
					c.fault(pn.name, "on_error.default."+f, "want %s, got %s", want.typ(), s.Properties[f].typ())
				}
			}
		}
	case Branch:
		if len(oe.Next) == 0 {
			c.fault(pn.name, "on_error.next", "a branch policy needs nodes to go to")
		}
		for j, next := range oe.Next {
			c.edge(lv, pn, fmt.Sprintf("on_error.next[%d]", j), next, edge{onError: true})
		}
	default:
		c.fault(pn.name, "on_error.action", "want fail, continue or branch, got %q", oe.Action)
	}
	if oe.Action != Continue && len(oe.Default) > 0 {
		c.fault(pn.name, "on_error.default", "only the continue action uses a default")
	}
	if oe.Action != Branch && len(oe.Next) > 0 {
		c.fault(pn.name, "on_error.next", "only the branch action uses next")
	}
}

// edge adds an edge from pn to the node named id in the same level (for
// depends_on: from id to pn).
func (c *compiler) edge(lv *level, pn *pnode, field, id string, e edge) {
	j, ok := lv.byID[id]
	if !ok {
		if where, ok := c.ids[id]; ok {
			c.fault(pn.name, field, "node %s is in another graph (an iteration's nodes and the nodes outside it do not link)", where)
		} else {
			c.fault(pn.name, field, "no node %q", id)
		}
		return
	}
	if j == pn.idx {
		c.fault(pn.name, field, "a node cannot follow itself")
		return
	}
	if e.routes == nil && !e.onError && !e.onTimeout { // depends_on: id → pn
		addEdge(lv.p.nodes[j], pn.idx, e)
		return
	}
	addEdge(pn, j, e)
}

// addEdge adds an edge from pn, merging it with one to the same node:
// an error route wins over branch routes, which win over a plain edge,
// and a control edge over a data edge.
func addEdge(pn *pnode, to int, e edge) {
	e.to = to
	for i := range pn.edges {
		old := &pn.edges[i]
		if old.to != to {
			continue
		}
		switch {
		case old.onError || old.onTimeout:
		case e.onError || e.onTimeout:
			*old = e
		case e.routes != nil:
			old.routes = append(old.routes, e.routes...)
			old.data = false
		case !e.data:
			old.data = false
		}
		return
	}
	pn.edges = append(pn.edges, e)
}

// checkGraph counts each node's incoming edges and reports cycles and
// nodes the start does not reach.
func (c *compiler) checkGraph(lv *level) {
	p := lv.p
	for _, pn := range p.nodes {
		for _, e := range pn.edges {
			p.nodes[e.to].preds++
			if !e.data {
				p.nodes[e.to].ctrlPreds++
			}
		}
	}
	if p.start >= 0 && p.nodes[p.start].preds > 0 {
		c.fault(p.nodes[p.start].name, "", "nothing may lead to the start node")
		return
	}
	// Kahn's algorithm: what is left unsorted lies on or after a cycle.
	left := make([]int, len(p.nodes))
	var queue []int
	for i, pn := range p.nodes {
		left[i] = pn.preds
		if pn.preds == 0 {
			queue = append(queue, i)
			p.roots = append(p.roots, i)
		}
	}
	sorted := 0
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		sorted++
		for _, e := range p.nodes[i].edges {
			if left[e.to]--; left[e.to] == 0 {
				queue = append(queue, e.to)
			}
		}
	}
	if sorted < len(p.nodes) {
		var on []string
		for i, pn := range p.nodes {
			if left[i] > 0 {
				on = append(on, pn.name)
			}
		}
		c.fault(on[0], "", "a cycle runs through %s (only an iteration repeats)", strings.Join(on, ", "))
		return
	}
	if lv.parent != nil {
		return
	}
	if p.start < 0 {
		c.fault("", "nodes", "no start node")
		return
	}
	if len(p.ends) == 0 {
		c.fault("", "nodes", "no end node")
	}
	reached := make([]bool, len(p.nodes))
	reached[p.start] = true
	stack := []int{p.start}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range p.nodes[i].edges {
			if !reached[e.to] {
				reached[e.to] = true
				stack = append(stack, e.to)
			}
		}
	}
	faulty := map[string]bool{}
	for _, e := range c.errs {
		faulty[e.Node] = true
	}
	for i, pn := range p.nodes {
		if reached[i] || faulty[pn.name] {
			continue
		}
		if pn.n.Kind == KindEnd {
			c.fault(pn.name, "", "end node is unreachable from the start node")
		} else {
			c.fault(pn.name, "", "unreachable from the start node: reference it or list what it follows in depends_on")
		}
	}
}

// plan is a compiled graph: the top level of a definition or an
// iteration's sub-graph.
type plan struct {
	nodes []*pnode
	start int
	ends  []int
	roots []int
}

// pnode is a compiled node.
type pnode struct {
	n     *Node
	idx   int
	name  string
	edges []edge
	preds int
	// ctrlPreds counts the control edges in: depends_on, branch routes
	// and error routes, as against the data edges of references.
	ctrlPreds int

	out         *Schema
	schemaState uint8

	custom *NodeType
	// prompt holds the main template: prompt (llm), query (agent,
	// knowledge), url (http), template (template); system the second:
	// system (llm), body (http).
	prompt, system *tmpl
	headers        map[string]*tmpl
	args           *value // args (tool, custom), outputs (end)
	items, output  *value
	def            *value
	cases          []ccase
	level          *level
	sub            *plan
	sideEffects    bool
}

// edge leads from a node to node to. A plain edge is live when its node
// succeeds (or continues after a failure); a route edge when the
// condition's branch is one of routes; an error edge when the node takes
// its error branch; a timeout edge when a human node takes its timeout
// branch (its other edges are then dead).
//
// A node with control edges in (depends_on, routes, error routes) runs
// when at least one of them is live: that is how branches join. A node
// with only data edges in (references) runs when all of them are live:
// it is skipped when a node it reads was.
type edge struct {
	to        int
	routes    []string
	onError   bool
	onTimeout bool
	data      bool
}

type ccase struct {
	id   string
	prog *vm.Program
	// refs name the nodes the expression reads, one each; reads are all
	// its references, by which the size of what it reads is measured,
	// with the whole inputs or item when it reads them otherwise than by
	// a constant path.
	refs               []*ref
	reads              []*ref
	allInputs, allItem bool
}
