package ai

import (
	"reflect"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
)

// MemoryID names a conversation. A function argument (or a field of a
// Func's input struct) of this type selects the memory of the call; it
// needs MemoryPerID.
type MemoryID string

// UserName is the name of the user a message comes from. An argument of
// this type sets the user message's Name.
type UserName string

// Params overrides model parameters. Given to Defaults it applies to every
// call; as an argument (or a field of a Func's input struct) to one call.
// Nil and zero fields leave the default.
type Params struct {
	Temperature *float64
	TopP        *float64
	MaxTokens   int
	Stop        []string
	Seed        *int64
	// Extra is merged into the request's provider-specific fields.
	Extra map[string]any
}

// apply writes the set fields of p onto req.
func (p *Params) apply(req *llm.Request) {
	if p.Temperature != nil {
		req.Temperature = p.Temperature
	}
	if p.TopP != nil {
		req.TopP = p.TopP
	}
	if p.MaxTokens > 0 {
		req.MaxTokens = p.MaxTokens
	}
	if p.Stop != nil {
		req.Stop = p.Stop
	}
	if p.Seed != nil {
		req.Seed = p.Seed
	}
	if len(p.Extra) > 0 {
		if req.Extra == nil {
			req.Extra = make(map[string]any, len(p.Extra))
		}
		for k, v := range p.Extra {
			req.Extra[k] = v
		}
	}
}

// Outcome is everything one turn produced, whatever the declared type.
type Outcome struct {
	// Text is the final answer's text, after output guardrails. For a turn
	// ended by immediate tool results it is the last immediate result.
	Text string
	// Message is the final assistant message.
	Message llm.Message
	// Usage sums the usage of every model call of the turn.
	Usage llm.Usage
	// Sources are what retrieval augmentation used.
	Sources []rag.Source
	// ToolExecutions are the tool calls run, in order.
	ToolExecutions []tool.Execution
	// FinishReason is the last model call's.
	FinishReason llm.FinishReason
	// Intermediate are the responses before the final one: those that asked
	// for tools, and answers rejected by output guardrails or parsing.
	Intermediate []llm.Response
	// Messages are the turn's new messages as memory keeps them: the user
	// message (or the caller's Turn.ToolResults), the tool rounds and the
	// final answer. A caller that keeps history itself (Turn.History)
	// appends these.
	Messages []llm.Message
	// Pending are the calls of Turn.ClientTools that ended the turn, for
	// the caller to run (FinishReason is llm.FinishToolCalls). Message is
	// the assistant message that made them.
	Pending []llm.ToolCall
	// Interrupt, when not nil, ended the turn: calls of the engine's tools
	// wait for a person's decision (see [Approval]); the round's other calls
	// ran. Message is the assistant message that made the calls
	// (FinishReason is llm.FinishToolCalls). Resume with a Turn whose
	// Decisions answer every waiting call.
	Interrupt *Interrupt
	// Summary is the conversation's running summary the request sent after
	// its system prompt (see memory.WithSummary): what slid out of the
	// window before this turn. Nil for none.
	Summary *memory.Summary
	// Partial reports a turn that failed while the model was answering:
	// Text is what the model had said (memory keeps it as an assistant
	// record marked Partial). Only the outcome of a failed turn is partial
	// (see [PartialError]).
	Partial bool
}

// Result is a typed call's value with the turn's [Outcome]: declare a
// function returning Result[T] to get usage, sources and tool executions
// beside the value.
type Result[T any] struct {
	Value T
	Outcome
}

func (r *Result[T]) valuePtr() any           { return &r.Value }
func (r *Result[T]) setOutcome(o *Outcome)   { r.Outcome = *o }
func (r *Result[T]) valueType() reflect.Type { return reflect.TypeFor[T]() }

// resultOut is implemented by *Result[T].
type resultOut interface {
	valuePtr() any
	setOutcome(o *Outcome)
	valueType() reflect.Type
}
