package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// refRoot is what a reference starts from.
type refRoot uint8

const (
	rootNode  refRoot = iota // nodes.ID.outputs… or inputs… (the start node)
	rootItem                 // item…
	rootIndex                // index
)

// ref is a reference to a value, resolved when the definition is checked:
// node refs name a node by its level (up, 0 being the reference's own graph)
// and its index there.
type ref struct {
	raw  string
	root refRoot
	node string   // the node's ID (root node)
	path []string // the fields after outputs (or after item)
	up   int
	idx  int
}

// parseRef reads a reference's text.
func parseRef(s string) (*ref, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty reference")
	}
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if !isIdent(p) {
			return nil, fmt.Errorf("reference %q: %q is not a name", s, p)
		}
	}
	r := &ref{raw: s}
	switch parts[0] {
	case "inputs":
		if len(parts) < 2 {
			return nil, fmt.Errorf("reference %q: name an input (inputs.NAME)", s)
		}
		r.root, r.path = rootNode, parts[1:]
	case "nodes":
		if len(parts) < 4 || parts[2] != "outputs" {
			return nil, fmt.Errorf("reference %q: want nodes.ID.outputs.FIELD", s)
		}
		r.root, r.node, r.path = rootNode, parts[1], parts[3:]
	case "item":
		r.root, r.path = rootItem, parts[1:]
	case "index":
		if len(parts) > 1 {
			return nil, fmt.Errorf("reference %q: index has no fields", s)
		}
		r.root = rootIndex
	default:
		return nil, fmt.Errorf("reference %q: want inputs.…, nodes.ID.outputs.…, item or index", s)
	}
	return r, nil
}

func isIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// tmpl is a parsed template: literal text and references, alternating.
type tmpl struct {
	lits []string // len(refs)+1 pieces of literal text
	refs []*ref
}

// parseTemplate reads text with {{ reference }} placeholders.
func parseTemplate(s string) (*tmpl, error) {
	t := &tmpl{}
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			if j := strings.Index(s, "}}"); j >= 0 {
				return nil, fmt.Errorf("unmatched }} at %q", clip(s[j:]))
			}
			t.lits = append(t.lits, s)
			return t, nil
		}
		j := strings.Index(s[i+2:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("unclosed {{ at %q", clip(s[i:]))
		}
		r, err := parseRef(s[i+2 : i+2+j])
		if err != nil {
			return nil, err
		}
		t.lits = append(t.lits, s[:i])
		t.refs = append(t.refs, r)
		s = s[i+2+j+2:]
	}
}

func clip(s string) string {
	if len(s) > 24 {
		return s[:24] + "…"
	}
	return s
}

// MaxValueSize bounds, in bytes, a rendered template and the JSON of a
// node's outputs, so that a definition cannot multiply a large value into
// an enormous one ("{{x}}{{x}}{{x}}…").
const MaxValueSize = 8 << 20

// render writes the template with every reference replaced by its value.
func (t *tmpl) render(sc *scope) (string, error) {
	if len(t.refs) == 0 {
		return t.lits[0], nil
	}
	var b strings.Builder
	for i, r := range t.refs {
		b.WriteString(t.lits[i])
		writeText(&b, sc.resolve(r))
		if b.Len() > MaxValueSize {
			return "", fmt.Errorf("text over %d bytes", MaxValueSize)
		}
	}
	b.WriteString(t.lits[len(t.lits)-1])
	return b.String(), nil
}

// valueSize returns budget less about the size of v's JSON, stopping once
// it is below zero (so that a value that shares one large part many times
// costs no more than the budget to measure).
func valueSize(v any, budget int) int {
	switch x := v.(type) {
	case string:
		return budget - len(x) - 2
	case []any:
		budget -= 2
		for _, e := range x {
			if budget = valueSize(e, budget-1); budget < 0 {
				return budget
			}
		}
		return budget
	case map[string]any:
		budget -= 2
		for k, e := range x {
			if budget = valueSize(e, budget-len(k)-4); budget < 0 {
				return budget
			}
		}
		return budget
	}
	return budget - 8
}

// writeText writes v as text: a string as is, nil as nothing, anything
// else as JSON.
func writeText(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
	case string:
		b.WriteString(x)
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	default:
		j, err := json.Marshal(x)
		if err != nil {
			fmt.Fprint(b, x)
			return
		}
		b.Write(j)
	}
}

// value is a parsed value: a literal, a single reference, a template, or a
// list or object of values.
type value struct {
	lit  any // when the value holds no reference
	ref  *ref
	tmpl *tmpl
	list []*value
	obj  map[string]*value
	kind uint8
}

const (
	valLit uint8 = iota
	valRef
	valTmpl
	valList
	valObj
)

// parseValue reads a value decoded from JSON.
func parseValue(v any) (*value, error) {
	switch x := v.(type) {
	case string:
		t, err := parseTemplate(x)
		if err != nil {
			return nil, err
		}
		switch {
		case len(t.refs) == 0:
			return &value{lit: x}, nil
		case len(t.refs) == 1 && t.lits[0] == "" && t.lits[1] == "":
			return &value{kind: valRef, ref: t.refs[0]}, nil
		}
		return &value{kind: valTmpl, tmpl: t}, nil
	case []any:
		out := &value{kind: valList, list: make([]*value, len(x))}
		refs := false
		for i, e := range x {
			pv, err := parseValue(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out.list[i] = pv
			refs = refs || pv.kind != valLit
		}
		if !refs {
			return &value{lit: x}, nil
		}
		return out, nil
	case map[string]any:
		out := &value{kind: valObj, obj: make(map[string]*value, len(x))}
		refs := false
		for _, k := range sortedKeys(x) {
			pv, err := parseValue(x[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out.obj[k] = pv
			refs = refs || pv.kind != valLit
		}
		if !refs {
			return &value{lit: x}, nil
		}
		return out, nil
	}
	return &value{lit: v}, nil
}

// eachRef calls f with every reference in v.
func (v *value) eachRef(f func(*ref)) {
	switch v.kind {
	case valRef:
		f(v.ref)
	case valTmpl:
		for _, r := range v.tmpl.refs {
			f(r)
		}
	case valList:
		for _, e := range v.list {
			e.eachRef(f)
		}
	case valObj:
		for _, k := range sortedKeys(v.obj) {
			v.obj[k].eachRef(f)
		}
	}
}

// resolve returns the value with its references replaced. Literals are
// copied, so a node may keep or change what it is given.
func (v *value) resolve(sc *scope) (any, error) {
	switch v.kind {
	case valRef:
		return sc.resolve(v.ref), nil
	case valTmpl:
		return v.tmpl.render(sc)
	case valList:
		out := make([]any, len(v.list))
		for i, e := range v.list {
			r, err := e.resolve(sc)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = r
		}
		return out, nil
	case valObj:
		out := make(map[string]any, len(v.obj))
		for k, e := range v.obj {
			r, err := e.resolve(sc)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		}
		return out, nil
	}
	return copyJSON(v.lit), nil
}

// resolveMap resolves an object value.
func (v *value) resolveMap(sc *scope) (map[string]any, error) {
	r, err := v.resolve(sc)
	m, _ := r.(map[string]any)
	return m, err
}

func copyJSON(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyJSON(e)
		}
		return out
	}
	return v
}

// scope holds the values references read while a graph runs: the outputs
// of its nodes (written by the graph's scheduler before any node that
// reads them starts) and, inside an iteration, the item and its index.
type scope struct {
	outs   []map[string]any
	start  int // the start node's index at the top level, else -1
	parent *scope
	item   any
	index  int
}

func (sc *scope) resolve(r *ref) any {
	var v any
	switch r.root {
	case rootIndex:
		return int64(sc.index)
	case rootItem:
		v = sc.item
	default:
		s := sc
		for range r.up {
			s = s.parent
		}
		v = s.outs[r.idx]
	}
	for _, f := range r.path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[f]
	}
	return v
}
