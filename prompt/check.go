package prompt

import (
	"fmt"
	"reflect"
	"strings"
	"text/template/parse"
)

// checker walks a parse tree and resolves every field reference against
// the type the dot has at that point. Where the type cannot be known (maps,
// interfaces, results of functions) the check gives way to run time.
type checker struct {
	name string
	root reflect.Type
}

func (c *checker) list(l *parse.ListNode, dot reflect.Type) error {
	if l == nil {
		return nil
	}
	for _, n := range l.Nodes {
		if err := c.node(n, dot); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) node(n parse.Node, dot reflect.Type) error {
	switch n := n.(type) {
	case *parse.ActionNode:
		_, err := c.pipe(n.Pipe, dot)
		return err
	case *parse.IfNode:
		return c.branch(&n.BranchNode, dot, false)
	case *parse.WithNode:
		return c.branch(&n.BranchNode, dot, true)
	case *parse.RangeNode:
		t, err := c.pipe(n.Pipe, dot)
		if err != nil {
			return err
		}
		if err := c.list(n.List, elemType(t)); err != nil {
			return err
		}
		return c.list(n.ElseList, dot)
	case *parse.TemplateNode:
		_, err := c.pipe(n.Pipe, dot)
		return err
	case *parse.ListNode:
		return c.list(n, dot)
	}
	return nil
}

func (c *checker) branch(b *parse.BranchNode, dot reflect.Type, with bool) error {
	t, err := c.pipe(b.Pipe, dot)
	if err != nil {
		return err
	}
	inner := dot
	if with {
		inner = t
	}
	if err := c.list(b.List, inner); err != nil {
		return err
	}
	return c.list(b.ElseList, dot)
}

// pipe checks a pipeline and returns its result type, or nil when unknown.
func (c *checker) pipe(p *parse.PipeNode, dot reflect.Type) (reflect.Type, error) {
	if p == nil {
		return nil, nil
	}
	var last reflect.Type
	for _, cmd := range p.Cmds {
		last = nil
		for i, arg := range cmd.Args {
			t, err := c.arg(arg, dot)
			if err != nil {
				return nil, err
			}
			if i == 0 && len(cmd.Args) == 1 {
				last = t
			}
		}
	}
	if len(p.Decl) > 0 {
		return nil, nil
	}
	return last, nil
}

func (c *checker) arg(n parse.Node, dot reflect.Type) (reflect.Type, error) {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.FieldNode:
		return c.fields(dot, n.Ident, n)
	case *parse.VariableNode:
		if n.Ident[0] == "$" && len(n.Ident) > 1 {
			return c.fields(c.root, n.Ident[1:], n)
		}
		if n.Ident[0] == "$" {
			return c.root, nil
		}
	case *parse.PipeNode:
		return c.pipe(n, dot)
	case *parse.ChainNode:
		if p, ok := n.Node.(*parse.PipeNode); ok {
			t, err := c.pipe(p, dot)
			if err != nil || t == nil {
				return nil, err
			}
			return c.fields(t, n.Field, n)
		}
	}
	return nil, nil
}

// fields resolves a chain of field or method names from t. A nil t is
// unknown and resolves to unknown.
func (c *checker) fields(t reflect.Type, idents []string, n parse.Node) (reflect.Type, error) {
	for _, id := range idents {
		if t == nil {
			return nil, nil
		}
		if m, ok := t.MethodByName(id); ok {
			t = methodResult(m.Type)
			continue
		}
		if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
			if m, ok := reflect.PointerTo(t).MethodByName(id); ok {
				t = methodResult(m.Type)
				continue
			}
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := t.FieldByName(id)
			if !ok || !f.IsExported() {
				return nil, c.unknown(t, id, n)
			}
			t = f.Type
		case reflect.Map, reflect.Interface:
			return nil, nil
		default:
			return nil, c.unknown(t, id, n)
		}
	}
	return t, nil
}

func methodResult(mt reflect.Type) reflect.Type {
	if mt.NumOut() == 0 {
		return nil
	}
	return mt.Out(0)
}

func (c *checker) unknown(t reflect.Type, id string, n parse.Node) error {
	var names []string
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				names = append(names, f.Name)
			}
		}
	}
	what := fmt.Sprintf("prompt: template %q: {{%s}} names field %s, which %s does not have", c.name, n.String(), id, typeName(t))
	if t == noValueType {
		names = nil
	}
	if len(names) > 0 {
		what += " (its fields: " + strings.Join(names, ", ") + ")"
	} else if t.Kind() != reflect.Struct {
		what += " (the template's value is a " + t.Kind().String() + "; use {{.}} to insert it)"
	}
	return fmt.Errorf("%s: %w", what, ErrUnknownField)
}

func typeName(t reflect.Type) string {
	if t == noValueType {
		return "a template without a value"
	}
	return t.String()
}

// noValue stands for the value of a template that gets none, so that any
// field it names is reported.
type noValue struct{}

var noValueType = reflect.TypeFor[noValue]()

func elemType(t reflect.Type) reflect.Type {
	if t == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Chan:
		return t.Elem()
	}
	return nil
}
