package ai

import (
	"context"
	"time"

	"github.com/weftlabs/weft/llm"
)

// call is step 8: one model call, streamed when someone consumes events.
// With buffered set, the text of a final answer is held back for the output
// guardrails; text before tool calls is released when the calls arrive.
func (s *turnState) call(ctx context.Context, req *llm.Request, buffered bool) (*llm.Response, error) {
	s.inv.notify(ctx, Notice{Kind: NoticeRequest, Request: req})
	ctx, span := s.e.startCall(ctx, req)
	start := time.Now()
	var resp *llm.Response
	var err error
	if s.stream {
		resp, err = s.streamCall(ctx, req, buffered)
	} else {
		resp, err = s.e.cfg.model.Generate(ctx, req)
		if err == nil && s.emit != nil {
			err = s.emitWhole(resp, buffered)
		}
	}
	endCall(span, resp, err)
	if err != nil {
		return nil, err
	}
	switch {
	case resp == nil:
		resp = &llm.Response{Message: llm.Message{Role: llm.RoleAssistant}}
	case resp.Message.Role == "":
		// Drivers may share their responses: normalise a copy.
		r := *resp
		r.Message.Role = llm.RoleAssistant
		resp = &r
	}
	if s.inv != nil {
		s.inv.notify(ctx, Notice{Kind: NoticeResponse, Request: req, Response: resp, Duration: time.Since(start)})
	}
	return resp, nil
}

// streamCall is a streamed model call. When it fails or the consumer stops
// reading, the text streamed so far is the turn's partial answer,
// Outcome.Text with Outcome.Partial set (unless output guardrails hold text
// back: what they have not passed is not kept).
func (s *turnState) streamCall(ctx context.Context, req *llm.Request, buffered bool) (*llm.Response, error) {
	var acc llm.Accumulator
	s.calls = s.calls[:0]
	cut := func(err error) (*llm.Response, error) {
		if t := acc.Text(); t != "" && !buffered {
			s.out.Text, s.out.Partial = t, true
		}
		return nil, err
	}
	for ch, err := range s.e.cfg.model.Stream(ctx, req) {
		if err != nil {
			return cut(err)
		}
		acc.Add(ch)
		switch ch.Type {
		case llm.ChunkText:
			if !buffered && !s.emit(Event{Kind: EventText, Text: ch.Text}) {
				return cut(errStopped)
			}
		case llm.ChunkReasoning:
			if !s.emit(Event{Kind: EventReasoning, Text: ch.Text}) {
				return cut(errStopped)
			}
		case llm.ChunkToolCallStart, llm.ChunkToolCallDelta:
			if !buffered && !s.callDelta(ch) {
				return cut(errStopped)
			}
		}
	}
	resp := acc.Response()
	if buffered && len(resp.Message.ToolCalls) > 0 {
		if t := resp.Text(); t != "" && !s.emit(Event{Kind: EventText, Text: t}) {
			return nil, errStopped
		}
	}
	return resp, nil
}

// emitWhole emits a non-streamed response's reasoning and text, the text
// held back like a stream's would be under buffered guardrails.
func (s *turnState) emitWhole(resp *llm.Response, buffered bool) error {
	if r := resp.Message.Reasoning; r != "" && !s.emit(Event{Kind: EventReasoning, Text: r}) {
		return errStopped
	}
	if buffered && len(resp.Message.ToolCalls) == 0 {
		return nil
	}
	if t := resp.Text(); t != "" && !s.emit(Event{Kind: EventText, Text: t}) {
		return errStopped
	}
	return nil
}

// streamedCall is a tool call of the response being streamed: its id and
// name as far as they are known, and the argument fragments held until
// both are.
type streamedCall struct {
	index    int
	id, name string
	held     []byte
	open     bool // its first EventToolCallDelta was emitted
}

// callDelta passes a tool call chunk on as an EventToolCallDelta once the
// call's id and name are known (the first non-empty ones win, as in
// llm.Accumulator); it returns false when the consumer stopped reading.
func (s *turnState) callDelta(ch llm.Chunk) bool {
	var c *streamedCall
	for i := range s.calls {
		if s.calls[i].index == ch.Index {
			c = &s.calls[i]
			break
		}
	}
	if c == nil {
		s.calls = append(s.calls, streamedCall{index: ch.Index})
		c = &s.calls[len(s.calls)-1]
	}
	if ch.Type == llm.ChunkToolCallStart {
		if c.id == "" {
			c.id = ch.ToolCallID
		}
		if c.name == "" {
			c.name = ch.ToolName
		}
	}
	call := llm.ToolCall{ID: c.id, Name: c.name}
	switch {
	case c.open && ch.Type == llm.ChunkToolCallDelta:
		return s.emit(Event{Kind: EventToolCallDelta, ToolCall: call, Text: ch.Text})
	case c.open:
		return true
	case ch.Type == llm.ChunkToolCallDelta:
		c.held = append(c.held, ch.Text...)
	}
	if c.id == "" || c.name == "" {
		return true
	}
	c.open = true
	held := string(c.held)
	c.held = nil
	return s.emit(Event{Kind: EventToolCallDelta, ToolCall: call, Text: held})
}
