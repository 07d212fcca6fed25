package workflow

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// exprEnv is what a condition's expression sees when it runs. Checking is
// done at compile time against a type built from the schemas of the nodes
// the expression reads (see compileExpr); at run time the values are the
// nodes' outputs as they are.
type exprEnv struct {
	Nodes  map[string]any `expr:"nodes"`
	Inputs map[string]any `expr:"inputs"`
	Item   any            `expr:"item"`
	Index  int            `expr:"index"`
}

// chains collects the member chains of an expression (nodes.a.outputs.x)
// and the uses of the identifier "nodes".
type chains struct {
	members []*ast.MemberNode
	inner   map[ast.Node]bool
	idents  []*ast.IdentifierNode
}

func (v *chains) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.MemberNode:
		v.members = append(v.members, x)
		if _, ok := x.Property.(*ast.StringNode); ok {
			// x extends the chain below it (a computed index, as in
			// results[0], starts a new one).
			inner := x.Node
			if ch, ok := inner.(*ast.ChainNode); ok {
				inner = ch.Node
			}
			v.inner[inner] = true
		}
	case *ast.IdentifierNode:
		if x.Value == "nodes" {
			v.idents = append(v.idents, x)
		}
	}
}

// chain returns the identifier and the constant fields of a member access,
// or false when a field is computed.
func chain(n ast.Node) (*ast.IdentifierNode, []string, bool) {
	var path []string
	for {
		switch x := n.(type) {
		case *ast.ChainNode:
			n = x.Node
		case *ast.MemberNode:
			s, ok := x.Property.(*ast.StringNode)
			if !ok {
				return nil, nil, false
			}
			path = append(path, s.Value)
			n = x.Node
		case *ast.IdentifierNode:
			for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
				path[i], path[j] = path[j], path[i]
			}
			return x, path, true
		default:
			return nil, nil, false
		}
	}
}

// compileExpr compiles a condition: its references are resolved and
// checked like a template's, then the expression is type-checked against
// the types of what it reads and must be boolean.
func (c *compiler) compileExpr(lv *level, pn *pnode, field, src string) (*vm.Program, []*ref) {
	if strings.TrimSpace(src) == "" {
		c.fault(pn.name, field, "missing expression")
		return nil, nil
	}
	if len(src) > maxExprLength {
		c.fault(pn.name, field, "expression of %d bytes is over the limit of %d", len(src), maxExprLength)
		return nil, nil
	}
	tree, err := parser.Parse(src)
	if err != nil {
		c.fault(pn.name, field, "%v", err)
		return nil, nil
	}
	v := &chains{inner: map[ast.Node]bool{}}
	ast.Walk(&tree.Node, v)
	consumed := map[*ast.IdentifierNode]bool{}
	var refs []*ref
	seen := map[string]bool{}
	ok := true
	for _, m := range v.members {
		if v.inner[m] {
			continue
		}
		id, path, isChain := chain(m)
		if !isChain || (id.Value != "nodes" && id.Value != "inputs" && id.Value != "item") {
			continue
		}
		text := id.Value + "." + strings.Join(path, ".")
		r, err := parseRef(text)
		if err != nil {
			c.fault(pn.name, field, "%v", err)
			ok = false
			continue
		}
		consumed[id] = true
		before := len(c.errs)
		c.checkRef(lv, pn, pn.idx, field, r)
		if len(c.errs) > before {
			ok = false
			continue
		}
		if key := r.node; r.root == rootNode && !seen[key] {
			seen[key] = true
			refs = append(refs, r)
		}
	}
	for _, id := range v.idents {
		if !consumed[id] {
			c.fault(pn.name, field, "read a node's outputs as nodes.ID.outputs.FIELD")
			ok = false
		}
	}
	if !ok {
		return nil, nil
	}
	env := c.exprType(lv, refs)
	if _, err := expr.Compile(src, expr.Env(reflect.New(env).Elem().Interface()), expr.AsBool()); err != nil {
		c.fault(pn.name, field, "%v", exprError(err))
		return nil, nil
	}
	prog, err := expr.Compile(src, expr.Env(exprEnv{}), expr.AsBool())
	if err != nil {
		c.fault(pn.name, field, "%v", exprError(err))
		return nil, nil
	}
	return prog, refs
}

// exprError keeps the first line of expr's message: the rest repeats the
// source with a caret, which a one-line API error does not need.
func exprError(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// exprType builds the Go type an expression is checked against: nodes with
// the outputs of the nodes it reads, the run's inputs, and item and index
// inside an iteration.
func (c *compiler) exprType(lv *level, refs []*ref) reflect.Type {
	var nodes []reflect.StructField
	for i, r := range refs {
		if r.node == "" {
			continue
		}
		at := lv
		for range r.up {
			at = at.parent
		}
		outs := goType(c.nodeSchema(at, r.idx))
		nodes = append(nodes, field(i, r.node, reflect.StructOf([]reflect.StructField{field(0, "outputs", outs)})))
	}
	top := lv
	for top.parent != nil {
		top = top.parent
	}
	inputs := reflect.TypeFor[map[string]any]()
	if top.p.start >= 0 {
		inputs = goType(c.nodeSchema(top, top.p.start))
	}
	fields := []reflect.StructField{
		field(0, "nodes", reflect.StructOf(nodes)),
		field(1, "inputs", inputs),
	}
	if lv.parent != nil {
		item := lv.item
		if item == nil {
			item = anySchema
		}
		fields = append(fields, field(2, "item", goType(item)), field(3, "index", reflect.TypeFor[int]()))
	}
	return reflect.StructOf(fields)
}

func field(i int, name string, t reflect.Type) reflect.StructField {
	return reflect.StructField{
		Name: "F" + strconv.Itoa(i),
		Type: t,
		Tag:  reflect.StructTag("expr:" + strconv.Quote(name)),
	}
}

// goType is the Go type expr checks a value of type s as.
func goType(s *Schema) reflect.Type {
	switch s.typ() {
	case TypeString:
		return reflect.TypeFor[string]()
	case TypeInteger:
		return reflect.TypeFor[int]()
	case TypeNumber:
		return reflect.TypeFor[float64]()
	case TypeBoolean:
		return reflect.TypeFor[bool]()
	case TypeArray:
		if s.Items == nil {
			return reflect.TypeFor[[]any]()
		}
		return reflect.SliceOf(goType(s.Items))
	case TypeObject:
		if len(s.Properties) == 0 {
			return reflect.TypeFor[map[string]any]()
		}
		var fs []reflect.StructField
		for i, name := range sortedKeys(s.Properties) {
			fs = append(fs, field(i, name, goType(s.Properties[name])))
		}
		return reflect.StructOf(fs)
	}
	return reflect.TypeFor[any]()
}

// eval runs a condition's program against the current values.
func (cs *ccase) eval(sc *scope) (bool, error) {
	env := exprEnv{Item: sc.item, Index: sc.index}
	top := sc
	for top.parent != nil {
		top = top.parent
	}
	if len(cs.refs) > 0 {
		env.Nodes = make(map[string]any, len(cs.refs))
		for _, r := range cs.refs {
			s := sc
			for range r.up {
				s = s.parent
			}
			env.Nodes[r.node] = map[string]any{"outputs": s.outs[r.idx]}
		}
	}
	if start := top.start; start >= 0 {
		env.Inputs = top.outs[start]
	}
	out, err := expr.Run(cs.prog, env)
	if err != nil {
		return false, fmt.Errorf("case %s: %w", cs.id, err)
	}
	b, _ := out.(bool)
	return b, nil
}
