package tool

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/weftlabs/weft/llm"
)

// Policy says what happens when a tool call goes wrong.
type Policy uint8

// The policies. The zero value, ToModel, is the default everywhere.
const (
	// ToModel answers the failure to the model as an error result, so that
	// it can correct itself; the turn goes on.
	ToModel Policy = iota
	// Abort ends the turn with the error.
	Abort
)

// DefaultMaxResultBytes caps the content of one tool result (64 KiB).
const DefaultMaxResultBytes = 64 << 10

// Execution is one tool call and what came of it.
type Execution struct {
	// Call is the model's request.
	Call llm.ToolCall `json:"call"`
	// Content is what the model sees: the result, or the error text.
	Content string `json:"content"`
	// IsError reports a failed call (tool error, panic, unknown tool, bad
	// arguments).
	IsError bool `json:"is_error,omitempty"`
	// Err is the failure, for the caller's eyes; nil on success.
	Err error `json:"-"`
	// Immediate reports that the tool asked for its result to be returned
	// to the caller directly.
	Immediate bool `json:"immediate,omitempty"`
	// Truncated reports that Content was cut to the size cap.
	Truncated bool `json:"truncated,omitempty"`
	// Duration is how long the call ran.
	Duration time.Duration `json:"duration"`
}

// Message returns the tool result message that answers the call.
func (x *Execution) Message() llm.Message {
	return llm.ToolResultMessage(x.Call.ID, x.Call.Name, x.Content, x.IsError)
}

// ErrUnknownTool is matched by the error of a call to a tool not in the set.
var ErrUnknownTool = errors.New("unknown tool")

// PanicError is a panic in a tool, recovered.
type PanicError struct {
	Value any
	Stack []byte
}

// Error describes the panic without its stack.
func (e *PanicError) Error() string { return fmt.Sprintf("tool panicked: %v", e.Value) }

// AbortError ends a turn because a tool call failed under the Abort policy.
type AbortError struct {
	Call llm.ToolCall
	Err  error
}

// Error names the tool and the failure.
func (e *AbortError) Error() string { return "tool " + e.Call.Name + " failed: " + errorText(e.Err) }

// Unwrap returns the failure.
func (e *AbortError) Unwrap() error { return e.Err }

// Executor runs tool calls. The zero value of each policy field is ToModel.
type Executor struct {
	// Tools are the callable tools.
	Tools *Set
	// OnError applies to tool errors and panics.
	OnError Policy
	// OnUnknown applies to calls naming a tool not in Tools. The error
	// result lists the available tools, or is what UnknownAnswer says.
	OnUnknown Policy
	// UnknownAnswer, when set, writes the error result of a call naming a
	// tool not in Tools (LangChain4j's hallucinatedToolNameStrategy): name
	// is the tool the model asked for and tools the ones it has. It is
	// called from the round's goroutines, so it must be safe for
	// concurrent use.
	UnknownAnswer func(name string, tools *Set) string
	// OnBadArguments applies to arguments that do not decode into the
	// tool's parameters (an *ArgumentError).
	OnBadArguments Policy
	// MaxResultBytes caps each result's content: 0 means
	// DefaultMaxResultBytes, a negative value no cap.
	MaxResultBytes int
}

// Run executes calls — concurrently when there are several — and returns
// one Execution per call, in call order, appended to dst. It returns an
// *AbortError when a failure falls under the Abort policy (the executions
// are still returned), and ctx's error when ctx ends before the calls do.
func (e *Executor) Run(ctx context.Context, calls []llm.ToolCall, dst []Execution) ([]Execution, error) {
	base := len(dst)
	dst = append(dst, make([]Execution, len(calls))...)
	out := dst[base:]
	if len(calls) == 1 {
		e.runOne(ctx, calls[0], &out[0])
	} else {
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() { e.runOne(ctx, calls[i], &out[i]) })
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	for i := range out {
		if x := &out[i]; x.Err != nil && e.policy(x.Err) == Abort {
			return dst, &AbortError{Call: x.Call, Err: x.Err}
		}
	}
	return dst, nil
}

func (e *Executor) policy(err error) Policy {
	var ae *ArgumentError
	switch {
	case errors.Is(err, ErrUnknownTool):
		return e.OnUnknown
	case errors.As(err, &ae):
		return e.OnBadArguments
	}
	return e.OnError
}

func (e *Executor) runOne(ctx context.Context, call llm.ToolCall, x *Execution) {
	x.Call = call
	start := time.Now()
	t, ok := e.Tools.Lookup(call.Name)
	if !ok {
		x.Err = fmt.Errorf("%w %q", ErrUnknownTool, call.Name)
		x.IsError = true
		if e.UnknownAnswer != nil {
			x.Content = e.UnknownAnswer(call.Name, e.Tools)
		} else {
			x.Content = "Error: there is no tool named " + strconv.Quote(call.Name) + ". Available tools: " + e.Tools.Names() + "."
		}
		return
	}
	res, err := safeCall(ctx, t, call)
	x.Duration = time.Since(start)
	if err != nil {
		x.Err = err
		x.IsError = true
		x.Content = "Error: " + errorText(err)
		return
	}
	x.Content, x.Immediate = res.Content, res.Immediate
	limit := e.MaxResultBytes
	if limit == 0 {
		limit = DefaultMaxResultBytes
	}
	if limit > 0 && len(x.Content) > limit {
		x.Content = truncate(x.Content, limit)
		x.Truncated = true
	}
}

// errorText is err's message for the model. An empty message would tell the
// model nothing, so the error's type is named instead: the innermost one
// of a chain of empty wrappers, the most specific.
func errorText(err error) string {
	if msg := err.Error(); msg != "" {
		return msg
	}
	for {
		next := errors.Unwrap(err)
		if next == nil || next.Error() != "" {
			break
		}
		err = next
	}
	return fmt.Sprintf("%T (no message)", err)
}

// truncate cuts s to at most limit bytes on a UTF-8 boundary and says so.
func truncate(s string, limit int) string {
	cut := limit
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "\n[truncated: " + strconv.Itoa(len(s)-cut) + " more bytes]"
}

func safeCall(ctx context.Context, t Tool, call llm.ToolCall) (res Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return t.Call(ctx, []byte(call.Arguments))
}
