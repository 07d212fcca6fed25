package workflow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

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
	// Ctx is the evaluation's context, which the guard's functions read
	// (see guard); expressions cannot name it (the checked compile does
	// not know it).
	Ctx context.Context `expr:"__weft_ctx"`
}

// chains collects the member chains of an expression (nodes.a.outputs.x)
// and the uses of the identifiers nodes, inputs, item and $env.
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
		switch x.Value {
		case "nodes", "inputs", "item", "$env":
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

// compileExpr compiles a condition's case: its references are resolved
// and checked like a template's, then the expression is type-checked
// against the types of what it reads and must be boolean. The program
// kept runs under the guard (see guardOptions).
func (c *compiler) compileExpr(lv *level, pn *pnode, field, src string) (cs ccase) {
	if strings.TrimSpace(src) == "" {
		c.fault(pn.name, field, "missing expression")
		return cs
	}
	if len(src) > maxExprLength {
		c.fault(pn.name, field, "expression of %d bytes is over the limit of %d", len(src), maxExprLength)
		return cs
	}
	tree, err := parser.Parse(src)
	if err != nil {
		c.fault(pn.name, field, "%v", err)
		return cs
	}
	v := &chains{inner: map[ast.Node]bool{}}
	ast.Walk(&tree.Node, v)
	consumed := map[*ast.IdentifierNode]bool{}
	seen := map[string]bool{}
	read := map[string]bool{}
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
			cs.refs = append(cs.refs, r)
		}
		if !read[r.raw] {
			read[r.raw] = true
			cs.reads = append(cs.reads, r)
		}
	}
	for _, id := range v.idents {
		switch {
		case consumed[id]:
		case id.Value == "nodes":
			c.fault(pn.name, field, "read a node's outputs as nodes.ID.outputs.FIELD")
			ok = false
		case id.Value == "inputs":
			cs.allInputs = true // read whole or by a computed key
		case id.Value == "item":
			cs.allItem = true
		default: // $env: any of them
			cs.allInputs, cs.allItem = true, true
		}
	}
	if !ok {
		return ccase{}
	}
	env := c.exprType(lv, cs.refs)
	if _, err := expr.Compile(src, expr.Env(reflect.New(env).Elem().Interface()), expr.AsBool()); err != nil {
		c.fault(pn.name, field, "%v", exprError(err))
		return ccase{}
	}
	if cs.prog, err = expr.Compile(src, append(guardOptions(), expr.Env(exprEnv{}), expr.AsBool())...); err != nil {
		c.fault(pn.name, field, "%v", exprError(err))
		return ccase{}
	}
	return cs
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

// eval runs a condition's case against the current values, under ctx
// (see guard), when what it reads is at most maxIn bytes.
func (cs *ccase) eval(ctx context.Context, sc *scope, maxIn int) (bool, error) {
	env := exprEnv{Item: sc.item, Index: sc.index, Ctx: ctx}
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
	left := maxIn
	if cs.allInputs {
		left = valueSize(env.Inputs, left)
	}
	if cs.allItem {
		left = valueSize(env.Item, left)
	}
	for _, r := range cs.reads {
		if left < 0 {
			break
		}
		left = valueSize(sc.resolve(r), left)
	}
	if left < 0 {
		return false, fmt.Errorf("case %s: %w: the values it reads are over %d bytes", cs.id, ErrLimit, maxIn)
	}
	out, err := runGuarded(cs.prog, env)
	if err != nil {
		return false, fmt.Errorf("case %s: %w", cs.id, err)
	}
	b, _ := out.(bool)
	return b, nil
}

// A condition's program runs under a guard, since expr-lang's VM has no
// context and bounds only some of its allocations (its memory budget):
// the compile keeps the checked expression's meaning but rewrites it so
// that
//
//   - the result of every operator and call passes through _guard, which
//     ends the evaluation as soon as the context is done (the engine gives
//     it a deadline, Limits.ConditionTime, and the run's cancel) and
//     refuses a string over MaxValueSize bytes or a collection of more
//     than maxGuardItems items, so repeated doubling stops early;
//   - `matches` is _matches: patterns are compiled once (a bounded cache)
//     and the text is read through the context, so even a pattern whose
//     matching is slow (the cost is the text's length times the
//     pattern's) stops when the context ends;
//   - repeat, replace and join, whose result can be far larger than their
//     arguments, are _repeat, _replace and _join, which compute the size
//     of their result and refuse one over MaxValueSize bytes before they
//     make it.
//
// So between two checks of the context an evaluation does one operation
// on values of bounded size (what a condition reads is bounded too:
// Limits.ConditionBytes).
func guardOptions() []expr.Option {
	return []expr.Option{
		expr.Patch(guard{}),
		expr.Function("_guard", guardValue),
		expr.Function("_matches", guardMatches),
		expr.Function("_repeat", guardRepeat),
		expr.Function("_replace", guardReplace),
		expr.Function("_join", guardJoin),
	}
}

const (
	// guardCtx names the evaluation's context in the program.
	guardCtx = "__weft_ctx"
	// maxGuardItems bounds a collection made while a condition runs.
	maxGuardItems = 1 << 20
	// maxPattern bounds a regular expression given to matches.
	maxPattern = maxExprLength
)

// guard rewrites a condition's tree (see guardOptions). ast.Walk visits
// the children of a node before it, so every node is rewritten once.
type guard struct{}

func (guard) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.BinaryNode:
		if x.Operator == "matches" {
			ast.Patch(n, guardCall("_matches", x.Left, x.Right))
			return
		}
	case *ast.BuiltinNode:
		switch x.Name {
		case "repeat", "replace", "join":
			ast.Patch(n, guardCall("_"+x.Name, x.Arguments...))
			return
		}
	case *ast.CallNode:
	default:
		return
	}
	ast.Patch(n, guardCall("_guard", *n))
}

// guardCall calls one of the guard's functions with the evaluation's
// context and args.
func guardCall(name string, args ...ast.Node) ast.Node {
	return &ast.CallNode{Callee: &ast.IdentifierNode{Value: name}, Arguments: append([]ast.Node{&ast.IdentifierNode{Value: guardCtx}}, args...)}
}

// guardContext returns the context a guard function was given.
func guardContext(args []any) (context.Context, error) {
	ctx, ok := args[0].(context.Context)
	if !ok {
		return nil, errors.New("the evaluation's context is missing")
	}
	return ctx, ctx.Err()
}

func guardValue(args ...any) (any, error) {
	if _, err := guardContext(args); err != nil {
		return nil, err
	}
	switch v := args[1].(type) {
	case string:
		if len(v) > MaxValueSize {
			return nil, fmt.Errorf("%w: a text of %d bytes, over %d", ErrLimit, len(v), MaxValueSize)
		}
	case []any:
		if len(v) > maxGuardItems {
			return nil, fmt.Errorf("%w: a list of %d items, over %d", ErrLimit, len(v), maxGuardItems)
		}
	case nil, bool, int, float64:
	default:
		if rv := reflect.ValueOf(v); (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map) && rv.Len() > maxGuardItems {
			return nil, fmt.Errorf("%w: a collection of %d items, over %d", ErrLimit, rv.Len(), maxGuardItems)
		}
	}
	return args[1], nil
}

// guardMatches is a matches b, read through the context.
func guardMatches(args ...any) (any, error) {
	ctx, err := guardContext(args)
	if err != nil {
		return nil, err
	}
	text, pattern := args[1], args[2]
	if text == nil || pattern == nil {
		return false, nil // as expr's matches
	}
	s, ok1 := text.(string)
	p, ok2 := pattern.(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("invalid operation: %s matches %s", typeName(text), typeName(pattern))
	}
	re, err := regexps.get(p)
	if err != nil {
		return nil, err
	}
	if len(s) <= maxMatchSteps/re.insts {
		return re.MatchString(s), nil // fast enough not to need the context
	}
	ok := re.MatchReader(&ctxReader{ctx: ctx, s: s})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return ok, nil
}

// maxMatchSteps bounds the cost of a match made without reading the
// context: the text's length times the pattern's instructions, the work
// of the slowest way regexp matches (about 20 ns each).
const maxMatchSteps = 10_000_000

// ctxReader reads a string rune by rune until its context is done, when
// it reads as ended.
type ctxReader struct {
	ctx context.Context
	s   string
	i   int
	n   int
}

func (r *ctxReader) ReadRune() (rune, int, error) {
	if r.n++; r.n&1023 == 0 && r.ctx.Err() != nil {
		return 0, 0, io.EOF
	}
	if r.i >= len(r.s) {
		return 0, 0, io.EOF
	}
	c, size := utf8.DecodeRuneInString(r.s[r.i:])
	r.i += size
	return c, size, nil
}

// pattern is a compiled pattern and the size of its program.
type pattern struct {
	*regexp.Regexp
	insts int
}

// regexpCache keeps the compiled patterns of conditions, at most
// maxRegexps, emptied when full.
type regexpCache struct {
	mu sync.Mutex
	m  map[string]pattern
}

const maxRegexps = 256

var regexps = &regexpCache{m: map[string]pattern{}}

func (c *regexpCache) get(p string) (pattern, error) {
	if len(p) > maxPattern {
		return pattern{}, fmt.Errorf("%w: a pattern of %d bytes, over %d", ErrLimit, len(p), maxPattern)
	}
	c.mu.Lock()
	re, ok := c.m[p]
	c.mu.Unlock()
	if ok {
		return re, nil
	}
	var err error
	if re.Regexp, err = regexp.Compile(p); err != nil {
		return pattern{}, err
	}
	tree, _ := syntax.Parse(p, syntax.Perl) // as regexp.Compile did
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return pattern{}, err
	}
	re.insts = max(1, len(prog.Inst))
	c.mu.Lock()
	if len(c.m) >= maxRegexps {
		clear(c.m)
	}
	c.m[p] = re
	c.mu.Unlock()
	return re, nil
}

// sized refuses a result of n bytes over MaxValueSize.
func sized(name string, n int) error {
	if n > MaxValueSize || n < 0 {
		return fmt.Errorf("%w: %s would make a text over %d bytes", ErrLimit, name, MaxValueSize)
	}
	return nil
}

// guardStrings returns args[1:] as strings.
func guardStrings(name string, args []any) ([]string, error) {
	out := make([]string, len(args))
	for i, a := range args {
		s, ok := a.(string)
		if !ok {
			return nil, fmt.Errorf("invalid argument for %s (type %s)", name, typeName(a))
		}
		out[i] = s
	}
	return out, nil
}

// guardRepeat is repeat(s, n).
func guardRepeat(args ...any) (any, error) {
	if _, err := guardContext(args); err != nil {
		return nil, err
	}
	if len(args) != 3 {
		return nil, fmt.Errorf("invalid number of arguments for repeat (expected 2, got %d)", len(args)-1)
	}
	s, err := guardStrings("repeat", args[1:2])
	if err != nil {
		return nil, err
	}
	n, ok := args[2].(int)
	if !ok || n < 0 {
		return nil, fmt.Errorf("invalid argument for repeat (expected positive integer, got %v)", args[2])
	}
	if n > 0 && len(s[0]) > MaxValueSize/n {
		return nil, sized("repeat", -1)
	}
	return strings.Repeat(s[0], n), nil
}

// guardReplace is replace(s, old, new) and replace(s, old, new, n).
func guardReplace(args ...any) (any, error) {
	if _, err := guardContext(args); err != nil {
		return nil, err
	}
	if len(args) != 4 && len(args) != 5 {
		return nil, fmt.Errorf("invalid number of arguments for replace (expected 3 or 4, got %d)", len(args)-1)
	}
	ss, err := guardStrings("replace", args[1:4])
	if err != nil {
		return nil, err
	}
	s, old, repl := ss[0], ss[1], ss[2]
	n := -1
	if len(args) == 5 {
		if n, err = guardInt(args[4]); err != nil {
			return nil, err
		}
	}
	count := strings.Count(s, old)
	if n >= 0 && n < count {
		count = n
	}
	if grow := len(repl) - len(old); grow > 0 && count > 0 {
		if grow > (MaxValueSize-len(s))/count {
			return nil, sized("replace", -1)
		}
	}
	return strings.Replace(s, old, repl, n), nil
}

// guardJoin is join(list) and join(list, glue).
func guardJoin(args ...any) (any, error) {
	if _, err := guardContext(args); err != nil {
		return nil, err
	}
	if len(args) != 2 && len(args) != 3 {
		return nil, fmt.Errorf("invalid number of arguments for join (expected 1 or 2, got %d)", len(args)-1)
	}
	var list []string
	switch x := args[1].(type) {
	case []string:
		list = x
	case []any:
		var err error
		if list, err = guardStrings("join", x); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("invalid argument for join (type %s)", typeName(args[1]))
	}
	glue := ""
	if len(args) == 3 {
		g, err := guardStrings("join", args[2:])
		if err != nil {
			return nil, err
		}
		glue = g[0]
	}
	n := 0
	if len(list) > 1 && len(glue) > 0 {
		if len(glue) > MaxValueSize/(len(list)-1) {
			return nil, sized("join", -1)
		}
		n = len(glue) * (len(list) - 1)
	}
	for _, e := range list {
		if n += len(e); n > MaxValueSize {
			return nil, sized("join", n)
		}
	}
	return strings.Join(list, glue), nil
}

func guardInt(v any) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case float64:
		return int(x), nil
	}
	return 0, fmt.Errorf("want an integer, got %s", typeName(v))
}

// runGuarded runs a guarded program: when the evaluation's context ended
// it, the error is the context's.
func runGuarded(prog *vm.Program, env exprEnv) (any, error) {
	out, err := expr.Run(prog, env)
	if err != nil {
		if cerr := env.Ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	return out, nil
}
