package tool

import (
	"context"
	"reflect"

	"github.com/weftlabs/weft/jsonschema"
	"github.com/weftlabs/weft/llm"
)

// Approver decides which tool calls wait for a person's approval before
// they run (package ai pauses a turn for them, see ai.Approval). It is
// asked once per call, before the call runs, on the turn's goroutine. An
// error fails the turn: a call is never run because its approver failed.
type Approver interface {
	NeedsApproval(ctx context.Context, call llm.ToolCall) (bool, error)
}

// ApproverFunc adapts a function to an [Approver].
type ApproverFunc func(ctx context.Context, call llm.ToolCall) (bool, error)

// NeedsApproval calls f.
func (f ApproverFunc) NeedsApproval(ctx context.Context, call llm.ToolCall) (bool, error) {
	return f(ctx, call)
}

// Fixed is an [Approver] whose answer does not depend on the call:
// [Always] or [Never].
type Fixed bool

// The fixed approvers.
const (
	// Always makes every call wait for approval.
	Always Fixed = true
	// Never runs every call at once.
	Never Fixed = false
)

// NeedsApproval answers f.
func (f Fixed) NeedsApproval(context.Context, llm.ToolCall) (bool, error) { return bool(f), nil }

// Approvals is the approval policy of each tool, by name: a call waits
// when its tool's Approver says so. A tool not named never waits.
type Approvals map[string]Approver

// NeedsApproval asks the Approver of the call's tool.
func (a Approvals) NeedsApproval(ctx context.Context, call llm.ToolCall) (bool, error) {
	if p, ok := a[call.Name]; ok && p != nil {
		return p.NeedsApproval(ctx, call)
	}
	return false, nil
}

// When returns an [Approver] that asks cond about a call's arguments,
// decoded into In as a [Func] tool decodes them (parameters the model left
// out get their `default`): a transfer above a limit, a command outside a
// list. Arguments that do not decode into In need approval — a person
// sees what the model sent.
func When[In any](cond func(in In) bool) Approver {
	schema, _ := jsonschema.For[In]()
	d, err := newArgDecoder("", schema, reflect.TypeFor[In]())
	return ApproverFunc(func(ctx context.Context, call llm.ToolCall) (bool, error) {
		var in In
		if err != nil || d.decode([]byte(call.Arguments), &in) != nil {
			return true, nil
		}
		return cond(in), nil
	})
}
