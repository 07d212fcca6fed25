package llm

import (
	"iter"
	"slices"
	"strings"
)

// Accumulator turns a stream of chunks into a [Response]. The zero value is
// ready to use.
//
// Text and reasoning fragments are appended; tool calls are keyed by index,
// where the first non-empty id and name win and argument fragments are
// concatenated; the last finish reason and the last usage win.
type Accumulator struct {
	id, model string
	text      strings.Builder
	reasoning strings.Builder
	calls     []accCall
	usage     Usage
	finish    FinishReason
	chunks    int
}

type accCall struct {
	index    int
	id, name string
	args     []byte
}

// Add folds one chunk into the response being built.
func (a *Accumulator) Add(c Chunk) {
	a.chunks++
	switch c.Type {
	case ChunkText:
		a.text.WriteString(c.Text)
	case ChunkReasoning:
		a.reasoning.WriteString(c.Text)
	case ChunkToolCallStart:
		tc := a.call(c.Index)
		if tc.id == "" {
			tc.id = c.ToolCallID
		}
		if tc.name == "" {
			tc.name = c.ToolName
		}
	case ChunkToolCallDelta:
		tc := a.call(c.Index)
		tc.args = append(tc.args, c.Text...)
	case ChunkUsage:
		a.usage = c.Usage
	case ChunkFinish:
		if c.FinishReason != "" {
			a.finish = c.FinishReason
		}
	case ChunkMeta:
		if a.id == "" {
			a.id = c.ResponseID
		}
		if a.model == "" {
			a.model = c.Model
		}
	}
}

func (a *Accumulator) call(index int) *accCall {
	for i := range a.calls {
		if a.calls[i].index == index {
			return &a.calls[i]
		}
	}
	a.calls = append(a.calls, accCall{index: index})
	return &a.calls[len(a.calls)-1]
}

// Chunks returns how many chunks were added.
func (a *Accumulator) Chunks() int { return a.chunks }

// Text returns the answer text accumulated so far.
func (a *Accumulator) Text() string { return a.text.String() }

// FinishReason returns the last finish reason seen, or "" if none arrived.
func (a *Accumulator) FinishReason() FinishReason { return a.finish }

// Response returns the response accumulated so far. Tool calls are ordered by
// index. When tool calls arrived but no finish reason did, the finish reason
// is left empty: callers decide whether a stream without one is broken.
func (a *Accumulator) Response() *Response {
	msg := Message{Role: RoleAssistant, Reasoning: a.reasoning.String()}
	if a.text.Len() > 0 {
		msg.Parts = []Part{TextPart(a.text.String())}
	}
	if len(a.calls) > 0 {
		calls := slices.Clone(a.calls)
		slices.SortStableFunc(calls, func(x, y accCall) int { return x.index - y.index })
		msg.ToolCalls = make([]ToolCall, len(calls))
		for i := range calls {
			msg.ToolCalls[i] = ToolCall{ID: calls[i].id, Name: calls[i].name, Arguments: string(calls[i].args)}
		}
	}
	return &Response{ID: a.id, Model: a.model, Message: msg, Usage: a.usage, FinishReason: a.finish}
}

// Collect drains a stream into a response. It returns the partial response
// along with the first error.
func Collect(stream iter.Seq2[Chunk, error]) (*Response, error) {
	var a Accumulator
	for c, err := range stream {
		if err != nil {
			return a.Response(), err
		}
		a.Add(c)
	}
	return a.Response(), nil
}
