// Package guardrail checks what goes into a model and what comes out of it.
//
// An [Input] guardrail sees the user message after retrieval augmentation
// and may let it pass, fail the call, or rewrite the message. An [Output]
// guardrail sees the model's final answer and may let it pass, fail the
// call, rewrite the answer, or ask the model again with a message saying
// what to fix (a re-prompt, bounded by the caller's retry count).
//
// Guardrails run in order; a rewrite is what the next guardrail sees. The
// pipeline in package ai runs them; [CheckInput] and [CheckOutput] are the
// same logic for other callers.
package guardrail

import (
	"context"
	"strconv"
	"strings"

	"github.com/weftlabs/weft/llm"
)

// Action is a guardrail's decision.
type Action uint8

// The actions. The zero value is Pass.
const (
	// Pass lets the message through unchanged.
	Pass Action = iota
	// Fail ends the call with an *Error.
	Fail
	// Rewrite replaces the message's text with Verdict.Text.
	Rewrite
	// Reprompt (output guardrails only) asks the model again, sending
	// Verdict.Text as a user message.
	Reprompt
)

var actionNames = [...]string{"pass", "fail", "rewrite", "reprompt"}

// String returns the action's name.
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "unknown"
}

// Verdict is a guardrail's answer.
type Verdict struct {
	Action Action
	// Reason says why a check failed or asked again.
	Reason string
	// Text is the rewritten text (Rewrite) or the message sent to the model
	// (Reprompt).
	Text string
}

// Success lets the message pass.
func Success() Verdict { return Verdict{} }

// Failure fails the call, saying why.
func Failure(reason string) Verdict { return Verdict{Action: Fail, Reason: reason} }

// Rewritten replaces the message text with text.
func Rewritten(text string) Verdict { return Verdict{Action: Rewrite, Text: text} }

// Retry asks the model again with message, saying why (output guardrails).
func Retry(reason, message string) Verdict {
	return Verdict{Action: Reprompt, Reason: reason, Text: message}
}

// InputRequest is what an input guardrail sees.
type InputRequest struct {
	// Message is the user message, augmented by retrieval when there was some.
	Message llm.Message
	// History is the conversation before it (from memory).
	History []llm.Message
}

// OutputRequest is what an output guardrail sees.
type OutputRequest struct {
	// Message is the model's final assistant message.
	Message llm.Message
	// Messages are the messages the model was given.
	Messages []llm.Message
	// Attempt counts the answers checked so far in this call, from 1.
	Attempt int
}

// Input checks a user message before the model sees it.
type Input interface {
	CheckInput(ctx context.Context, r InputRequest) Verdict
}

// Output checks a model's answer before the caller sees it.
type Output interface {
	CheckOutput(ctx context.Context, r OutputRequest) Verdict
}

// InputFunc adapts a function to the Input interface.
type InputFunc func(ctx context.Context, r InputRequest) Verdict

// CheckInput calls f(ctx, r).
func (f InputFunc) CheckInput(ctx context.Context, r InputRequest) Verdict { return f(ctx, r) }

// OutputFunc adapts a function to the Output interface.
type OutputFunc func(ctx context.Context, r OutputRequest) Verdict

// CheckOutput calls f(ctx, r).
func (f OutputFunc) CheckOutput(ctx context.Context, r OutputRequest) Verdict { return f(ctx, r) }

// Error is a call stopped by a guardrail.
type Error struct {
	// Output reports an output guardrail (false: input).
	Output bool
	// Reason is the guardrail's reason.
	Reason string
	// Attempts counts the answers checked, for output guardrails whose
	// re-prompts ran out.
	Attempts int
}

// Error says which side failed and why.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Output {
		b.WriteString("guardrail: output rejected")
	} else {
		b.WriteString("guardrail: input rejected")
	}
	if e.Attempts > 1 {
		b.WriteString(" after ")
		b.WriteString(strconv.Itoa(e.Attempts))
		b.WriteString(" attempts")
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	return b.String()
}

// CheckInput runs input guardrails in order. It returns the message as the
// last rewrite left it, and an *Error when one fails. A Reprompt verdict is
// meaningless for input and counts as a failure.
func CheckInput(ctx context.Context, gs []Input, r InputRequest) (llm.Message, error) {
	for _, g := range gs {
		v := g.CheckInput(ctx, r)
		switch v.Action {
		case Pass:
		case Rewrite:
			r.Message = withText(r.Message, v.Text)
		default:
			return r.Message, &Error{Reason: v.Reason}
		}
	}
	return r.Message, nil
}

// CheckOutput runs output guardrails in order until one does not pass or
// rewrite. It returns the message as the last rewrite left it and the first
// verdict that was neither (Fail or Reprompt), or a Pass verdict.
func CheckOutput(ctx context.Context, gs []Output, r OutputRequest) (llm.Message, Verdict) {
	for _, g := range gs {
		v := g.CheckOutput(ctx, r)
		switch v.Action {
		case Pass:
		case Rewrite:
			r.Message = withText(r.Message, v.Text)
		default:
			return r.Message, v
		}
	}
	return r.Message, Verdict{}
}

// withText replaces a message's text parts with text, keeping its images
// (which come after the text).
func withText(m llm.Message, text string) llm.Message {
	parts := make([]llm.Part, 0, len(m.Parts)+1)
	parts = append(parts, llm.TextPart(text))
	for _, p := range m.Parts {
		if p.Kind != llm.PartText {
			parts = append(parts, p)
		}
	}
	m.Parts = parts
	return m
}
