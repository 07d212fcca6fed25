// Package prompt renders system and user messages from templates over a Go
// value.
//
// Templates use text/template syntax ({{.Field}}, {{if}}, {{range}}, …) and
// are parsed and checked against the argument type once, at construction: a
// template that names a field the type does not have is an error from [New],
// not from the first call. Values are inserted as data and never evaluated as
// templates, so text a user typed cannot inject template actions. An action
// that would print a nil value (a nil pointer or interface, a map entry that
// is nil) is a render error naming it ([ErrNilValue]), not "<nil>" in the
// prompt.
//
// Templates made only of text and plain fields (strings, integers, booleans
// of types without methods) render without text/template; a differential
// fuzz test holds every such path to text/template's output.
//
// Besides the argument's fields, every template can call these functions:
//
//	currentDate      today's date, 2006-01-02
//	currentTime      the time of day, 15:04:05
//	currentDateTime  the date and time, RFC 3339
//	now              the current time.Time
//
// in the clock's time zone (the local zone by default; see [WithClock]).
package prompt

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
)

// Template is a parsed, checked template. It is safe for concurrent use.
type Template struct {
	name string
	typ  reflect.Type
	tmpl *template.Template
	// fast is the template as literal text and field paths when it uses
	// nothing else, rendered without text/template's machinery.
	fast []segment
	// literal reports a template without actions.
	literal bool
	clock   func() time.Time
}

type segment struct {
	text  string
	index []int // field path; nil for literal text
	self  bool  // {{.}}
}

// Option configures a [Template].
type Option func(*Template)

// WithClock sets the clock of the date and time functions (default
// time.Now).
func WithClock(now func() time.Time) Option { return func(t *Template) { t.clock = now } }

// New parses text as a template named name over values of type typ (nil
// when the template gets no value). It fails when the text does not parse
// or names a field or method that typ does not have.
func New(name, text string, typ reflect.Type, opts ...Option) (*Template, error) {
	t := &Template{name: name, typ: typ, clock: time.Now}
	for _, o := range opts {
		o(t)
	}
	clock := t.clock
	funcs := template.FuncMap{
		"now":             clock,
		"currentDate":     func() string { return clock().Format(time.DateOnly) },
		"currentTime":     func() string { return clock().Format(time.TimeOnly) },
		"currentDateTime": func() string { return clock().Format(time.RFC3339) },
		guardFunc:         notNil,
	}
	tmpl, err := template.New(name).Option("missingkey=error").Funcs(funcs).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("prompt: %w", err)
	}
	t.tmpl = tmpl
	root := typ
	if root == nil {
		root = noValueType
	}
	c := checker{name: name, root: root}
	if tmpl.Tree != nil {
		if err := c.list(tmpl.Tree.Root, root); err != nil {
			return nil, err
		}
		t.fast, t.literal = fastPath(tmpl.Tree.Root, typ)
		if t.fast == nil {
			for _, sub := range tmpl.Templates() {
				if sub.Tree != nil {
					guard(sub.Tree, sub.Tree.Root)
				}
			}
		}
	} else {
		t.literal = true
	}
	return t, nil
}

// For is New with the value type T.
func For[T any](name, text string, opts ...Option) (*Template, error) {
	return New(name, text, reflect.TypeFor[T](), opts...)
}

// Name returns the template's name.
func (t *Template) Name() string { return t.name }

// Render renders the template over data, which must be of the template's
// type (or nil for a template without one).
func (t *Template) Render(data any) (string, error) {
	return t.RenderValue(reflect.ValueOf(data))
}

// RenderValue is Render over a reflect.Value, for callers that hold one: a
// template made only of text and plain fields renders without boxing the
// value or running text/template, and a template that is a single string
// field returns it without allocating.
func (t *Template) RenderValue(v reflect.Value) (string, error) {
	if t.literal {
		if len(t.fast) == 1 {
			return t.fast[0].text, nil
		}
		return "", nil
	}
	if t.fast != nil {
		return t.renderFast(v)
	}
	var data any
	if v.IsValid() {
		data = v.Interface()
	}
	var b strings.Builder
	if err := t.tmpl.Execute(&b, data); err != nil {
		if ne, ok := errors.AsType[*nilError](err); ok {
			return "", fmt.Errorf("prompt: render %s: %w", t.name, ne)
		}
		return "", fmt.Errorf("prompt: render %s: %w", t.name, err)
	}
	return b.String(), nil
}

func (t *Template) renderFast(v reflect.Value) (string, error) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "", fmt.Errorf("prompt: render %s: nil value", t.name)
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return "", fmt.Errorf("prompt: render %s: no value", t.name)
	}
	if len(t.fast) == 1 {
		if f, err := t.field(v, t.fast[0]); err != nil || f.Kind() == reflect.String {
			return f.String(), err
		}
	}
	var b strings.Builder
	for _, s := range t.fast {
		if s.index == nil && !s.self {
			b.WriteString(s.text)
			continue
		}
		f, err := t.field(v, s)
		if err != nil {
			return "", err
		}
		writeValue(&b, f)
	}
	return b.String(), nil
}

func (t *Template) field(v reflect.Value, s segment) (reflect.Value, error) {
	if s.self {
		return v, nil
	}
	f, err := v.FieldByIndexErr(s.index)
	if err != nil {
		return reflect.Value{}, fmt.Errorf("prompt: render %s: %w", t.name, err)
	}
	return f, nil
}

// writeValue prints v as text/template would for the kinds fastPath admits.
func writeValue(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		b.WriteString(v.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	}
}

// fastPath reduces a template made only of text and {{.A.B}} actions over
// string, integer and boolean fields to segments. It returns nil when the
// template needs text/template, and literal=true when it has no actions.
func fastPath(root *parse.ListNode, typ reflect.Type) (segs []segment, literal bool) {
	literal = true
	for _, n := range root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			segs = append(segs, segment{text: string(n.Text)})
		case *parse.ActionNode:
			literal = false
			if len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 || len(n.Pipe.Cmds[0].Args) != 1 {
				return nil, false
			}
			switch a := n.Pipe.Cmds[0].Args[0].(type) {
			case *parse.DotNode:
				if typ == nil || !plainKind(typ.Kind()) || hasMethods(typ) {
					return nil, false
				}
				segs = append(segs, segment{self: true})
			case *parse.FieldNode:
				idx, ok := fieldPath(typ, a.Ident)
				if !ok {
					return nil, false
				}
				segs = append(segs, segment{index: idx})
			default:
				return nil, false
			}
		default:
			return nil, false
		}
	}
	if literal {
		var b strings.Builder
		for _, s := range segs {
			b.WriteString(s.text)
		}
		return []segment{{text: b.String()}}, true
	}
	return segs, false
}

func plainKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// fieldPath resolves a chain of plain struct fields (no pointers on the
// way, no methods) to an index path.
func fieldPath(t reflect.Type, idents []string) ([]int, bool) {
	if t == nil {
		return nil, false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var idx []int
	for i, id := range idents {
		if t.Kind() != reflect.Struct {
			return nil, false
		}
		if _, isMethod := reflect.PointerTo(t).MethodByName(id); isMethod {
			return nil, false
		}
		f, ok := t.FieldByName(id)
		if !ok || !f.IsExported() {
			return nil, false
		}
		idx = append(idx, f.Index...)
		t = f.Type
		if i < len(idents)-1 && t.Kind() == reflect.Pointer {
			return nil, false
		}
	}
	if !plainKind(t.Kind()) || hasMethods(t) {
		return nil, false
	}
	return idx, true
}

// hasMethods reports whether t or *t has methods: text/template prints a
// value through its String, Error or Format method, which the fast path
// does not call.
func hasMethods(t reflect.Type) bool {
	return t.NumMethod() > 0 || reflect.PointerTo(t).NumMethod() > 0
}

// ErrUnknownField is matched by the error New returns for a template that
// names a field its type does not have.
var ErrUnknownField = errors.New("unknown field")

// ErrNilValue is matched by the error Render returns when an action would
// print a nil value (a nil pointer or interface, a nil map entry).
var ErrNilValue = errors.New("nil value")

// guardFunc is the function guard appends to every printing action. It is
// a valid identifier (text/template requires one), reserved by its name.
const guardFunc = "_weftNotNil"

// guard makes every action under n that prints its value fail on a nil
// value (text/template would print "<nil>" or "<no value>"): the action's
// pipeline gets a last command, guardFunc, that passes the value through
// or fails naming the action.
func guard(tree *parse.Tree, n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			guard(tree, c)
		}
	case *parse.IfNode:
		guard(tree, n.List)
		guard(tree, n.ElseList)
	case *parse.RangeNode:
		guard(tree, n.List)
		guard(tree, n.ElseList)
	case *parse.WithNode:
		guard(tree, n.List)
		guard(tree, n.ElseList)
	case *parse.ActionNode:
		if len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) == 0 {
			return
		}
		loc, _ := tree.ErrorContext(n)
		desc := "{{" + n.Pipe.String() + "}} is nil (" + loc + ")"
		fn := parse.NewIdentifier(guardFunc).SetTree(tree).SetPos(n.Pos)
		arg := &parse.StringNode{NodeType: parse.NodeString, Pos: n.Pos, Quoted: strconv.Quote(desc), Text: desc}
		n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{fn, arg}})
	}
}

// notNil is guardFunc: it returns v unless v is nil, and then fails with
// msg.
func notNil(msg string, v reflect.Value) (reflect.Value, error) {
	if !v.IsValid() || (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		return v, &nilError{msg: msg}
	}
	return v, nil
}

// nilError reports an action that would print a nil value.
type nilError struct{ msg string }

func (e *nilError) Error() string { return e.msg }

func (e *nilError) Unwrap() error { return ErrNilValue }
