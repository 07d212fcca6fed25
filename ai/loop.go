package ai

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/guardrail"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// loop runs steps 8 to 11: model calls, tool rounds, output guardrails and
// parsing, until there is a final answer or a failure.
func (s *turnState) loop(ctx context.Context) error {
	c := s.e.cfg
	rounds, parseTries, guardTries := 0, 0, 0
	buffered := s.emit != nil && len(c.outGuards) > 0 && c.guardStream == GuardBuffer
	for calls := 0; ; calls++ {
		// Each call gets its own request (drivers may keep it); the first
		// ones live in the turn state.
		var req *llm.Request
		if calls < len(s.reqBuf) {
			req = &s.reqBuf[calls]
		} else {
			req = new(llm.Request)
		}
		*req = s.base
		req.Messages = s.msgs
		if c.transform != nil {
			if err := c.transform(ctx, req, s.t.MemoryID); err != nil {
				return fmt.Errorf("ai: request transformer: %w", err)
			}
		}
		resp, err := s.call(ctx, req, buffered)
		if err != nil {
			return err
		}
		s.out.Usage = s.out.Usage.Add(resp.Usage)
		s.out.FinishReason = resp.FinishReason
		if s.emit != nil && !resp.Usage.IsZero() && !s.emit(Event{Kind: EventUsage, Usage: resp.Usage}) {
			return errStopped
		}
		if s.mod != nil {
			if err := s.mod.verdict(false); err != nil {
				return err
			}
		}

		if len(resp.Message.ToolCalls) > 0 {
			wait, err := s.screen(ctx, resp.Message.ToolCalls)
			if err != nil {
				return err
			}
			if len(wait) > 0 || len(s.t.ClientTools) > 0 && s.clientCalls(resp.Message.ToolCalls) {
				return s.pauseRound(ctx, resp, wait)
			}

			if rounds >= c.maxRounds {
				s.out.Intermediate = append(s.out.Intermediate, *resp)
				return &ToolRoundsError{Rounds: rounds, Partial: s.out}
			}
			rounds++
			done, err := s.toolRound(ctx, resp)
			if err != nil || done {
				return err
			}
			continue
		}

		msg := resp.Message
		if len(c.outGuards) > 0 {
			checked, v := guardrail.CheckOutput(ctx, c.outGuards, guardrail.OutputRequest{Message: msg, Messages: s.msgs, Attempt: guardTries + 1})
			if v.Action != guardrail.Pass || checked.Text() != msg.Text() {
				if s.inv != nil {
					vv := v
					if v.Action == guardrail.Pass {
						vv.Action = guardrail.Rewrite
						vv.Text = checked.Text()
					}
					s.inv.notify(ctx, Notice{Kind: NoticeGuardrail, Verdict: &vv, Response: resp})
				}
			}
			switch v.Action {
			case guardrail.Fail:
				return &guardrail.Error{Output: true, Reason: v.Reason, Attempts: guardTries + 1}
			case guardrail.Reprompt:
				if guardTries >= c.outRetries || (s.emit != nil && c.guardStream == GuardAfter) {
					return &guardrail.Error{Output: true, Reason: v.Reason, Attempts: guardTries + 1}
				}
				guardTries++
				s.out.Intermediate = append(s.out.Intermediate, *resp)
				s.msgs = append(s.msgs, msg, llm.UserMessage(v.Text))
				continue
			}
			msg = checked
			if buffered {
				if t := msg.Text(); t != "" && !s.emit(Event{Kind: EventText, Text: t}) {
					return errStopped
				}
			}
		}

		text := msg.Text()
		if o := s.t.Output; o != nil && o.Parse != nil {
			if err := o.Parse(text); err != nil {
				if parseTries < c.parseRetries {
					parseTries++
					s.out.Intermediate = append(s.out.Intermediate, *resp)
					s.msgs = append(s.msgs, msg, llm.UserMessage(reprompt(err, o)))
					continue
				}
				return &ParseError{Type: o.Type, Raw: text, Err: err}
			}
		}
		s.out.Text, s.out.Message = text, msg
		s.out.Messages = append(s.out.Messages, msg)
		return nil
	}
}

// reprompt is the message that sends a parse failure back to the model.
func reprompt(err error, o *Output) string {
	msg := "Your answer could not be used: " + err.Error() + "."
	if o.Instructions != "" {
		return msg + " " + o.Instructions
	}
	return msg + " Answer again with only the requested JSON."
}

// toolRound runs step 9 for one response that asked for tools. done
// reports a turn ended by immediate results.
func (s *turnState) toolRound(ctx context.Context, resp *llm.Response) (done bool, err error) {
	calls := resp.Message.ToolCalls
	if s.emit != nil {
		for _, call := range calls {
			if !s.emit(Event{Kind: EventToolCall, ToolCall: call}) {
				return false, errStopped
			}
		}
	}
	first := len(s.out.ToolExecutions)
	err = s.runTools(ctx, calls)
	if err == errStopped {
		return false, err
	}
	execs, ok := s.reportTools(ctx, first)
	if !ok {
		return false, errStopped
	}
	s.out.Intermediate = append(s.out.Intermediate, *resp)
	if err != nil {
		return false, err
	}
	s.msgs = append(s.msgs, resp.Message)
	s.out.Messages = append(s.out.Messages, resp.Message)
	for i := range execs {
		m := execs[i].Message()
		s.msgs = append(s.msgs, m)
		s.out.Messages = append(s.out.Messages, m)
	}
	if !s.immediate(execs) {
		return false, nil
	}
	last := &execs[len(execs)-1]
	if o := s.t.Output; o != nil && o.Parse != nil {
		if err := o.Parse(last.Content); err != nil {
			return true, &ParseError{Type: o.Type, Raw: last.Content, Err: err}
		}
	}
	s.out.Text, s.out.Message = last.Content, resp.Message
	return true, nil
}

// clientCalls reports whether calls include a call of the caller's tools.
func (s *turnState) clientCalls(calls []llm.ToolCall) bool {
	for _, call := range calls {
		if s.isClientTool(call.Name) {
			return true
		}
	}
	return false
}

func (s *turnState) isClientTool(name string) bool {
	for _, t := range s.t.ClientTools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// pauseRound ends a turn whose response called the caller's tools or
// calls that wait for approval (wait): the round's other calls run, the
// caller's are pending, and the waiting ones are the turn's Interrupt.
func (s *turnState) pauseRound(ctx context.Context, resp *llm.Response, wait []llm.ToolCall) error {
	var own []llm.ToolCall
	for _, call := range resp.Message.ToolCalls {
		switch {
		case s.isClientTool(call.Name):
			s.out.Pending = append(s.out.Pending, call)
		case !hasCall(wait, call.ID):
			own = append(own, call)
		}
	}
	if s.emit != nil {
		for _, call := range resp.Message.ToolCalls {
			if !s.emit(Event{Kind: EventToolCall, ToolCall: call}) {
				return errStopped
			}
		}
	}
	first := len(s.out.ToolExecutions)
	if len(own) > 0 {
		if err := s.runTools(ctx, own); err != nil {
			return err
		}
	}
	execs, ok := s.reportTools(ctx, first)
	if !ok {
		return errStopped
	}
	s.out.Text, s.out.Message = resp.Message.Text(), resp.Message
	s.out.Messages = append(s.out.Messages, resp.Message)
	for i := range execs {
		s.out.Messages = append(s.out.Messages, execs[i].Message())
	}
	if len(wait) > 0 {
		s.out.Interrupt = &Interrupt{ID: s.newInterruptID(), Calls: wait}
	}
	return nil
}

func hasCall(calls []llm.ToolCall, id string) bool {
	for _, c := range calls {
		if c.ID == id {
			return true
		}
	}
	return false
}

// runTools runs calls of the engine's tools into Outcome.ToolExecutions,
// passing on the events the tools forward (see [Forward]) when the turn
// is streamed. It returns errStopped when the consumer stopped reading.
func (s *turnState) runTools(ctx context.Context, calls []llm.ToolCall) error {
	tctx := s.toolContext(ctx)
	var fw *forwarder
	if s.emit != nil {
		fw = &forwarder{emit: s.emit}
		tctx = context.WithValue(tctx, forwardKey{}, fw)
	}
	var err error
	s.out.ToolExecutions, err = s.e.exec.Run(tctx, calls, s.out.ToolExecutions)
	if fw != nil && fw.close() {
		return errStopped
	}
	if err != nil {
		return fmt.Errorf("ai: %w", err)
	}
	return nil
}

// immediate applies the ImmediateReturn mode to a round's executions.
// A failed call anywhere in the round never ends a turn: the model must see
// it.
func (s *turnState) immediate(execs []tool.Execution) bool {
	mode := s.e.cfg.immediate
	if mode == ImmediateNever {
		return false
	}
	for i := range execs {
		if execs[i].IsError {
			return false
		}
	}
	if mode == ImmediateLast {
		return execs[len(execs)-1].Immediate
	}
	for i := range execs {
		if !execs[i].Immediate {
			return false
		}
	}
	return true
}

// reportTools traces the tool executions from first on and announces each
// (notice, EventToolResult). It returns them, and false when the consumer
// stopped the stream.
func (s *turnState) reportTools(ctx context.Context, first int) ([]tool.Execution, bool) {
	execs := s.out.ToolExecutions[first:]
	s.traceTools(ctx, execs)
	for i := range execs {
		x := &execs[i]
		s.inv.notify(ctx, Notice{Kind: NoticeToolExecuted, Execution: x})
		if s.emit != nil && !s.emit(Event{Kind: EventToolResult, Execution: x}) {
			return execs, false
		}
	}
	return execs, true
}
