package workflow

import (
	"context"
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// Condition is a boolean expr-lang expression over one named value,
// compiled and run under the guard of a condition node's cases: the values
// it makes are bounded (repeat, replace, join, collections, regular
// expressions) and its evaluation ends with its context, within
// DefaultConditionTime. A server evaluates a tenant's expressions with it
// (the platform's tool_approvals).
type Condition struct {
	name string
	prog *vm.Program
}

// NewCondition compiles src, which reads the value as name.
func NewCondition(name, src string) (*Condition, error) {
	if len(src) > maxExprLength {
		return nil, fmt.Errorf("the expression exceeds %d bytes", maxExprLength)
	}
	// Checked without the context, so that src cannot name it.
	if _, err := expr.Compile(src, expr.Env(map[string]any{name: map[string]any{}}), expr.AsBool()); err != nil {
		return nil, fmt.Errorf("%s", exprError(err))
	}
	env := map[string]any{name: map[string]any{}, guardCtx: context.Background()}
	prog, err := expr.Compile(src, append(guardOptions(), expr.Env(env), expr.AsBool())...)
	if err != nil {
		return nil, fmt.Errorf("%s", exprError(err))
	}
	return &Condition{name: name, prog: prog}, nil
}

// Eval evaluates the condition over v.
func (c *Condition) Eval(ctx context.Context, v map[string]any) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultConditionTime)
	defer cancel()
	out, err := expr.Run(c.prog, map[string]any{c.name: v, guardCtx: ctx})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return false, cerr
		}
		return false, err
	}
	b, _ := out.(bool)
	return b, nil
}
