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
