package scripted_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/provider/scripted"
)

// TestSuite runs the provider conformance suite on a scripted model whose
// rules answer the suite's turns. The model is in-process, so the wire's
// share of a turn is played by slowModel (Delay) and by rules that fail
// as the HTTP answer would.
func TestSuite(t *testing.T) {
	llmtest.Conformance(t, func(t *testing.T, turns ...llmtest.Turn) llm.ChatModel {
		steps := make([]scripted.Rule, len(turns))
		for i, turn := range turns {
			steps[i] = rule(turn)
		}
		return slowModel{scripted.New(scripted.Sequence(steps...)), turns}
	})
}

// rule answers as turn says: an *llm.Error for an error turn (the error a
// driver makes of the HTTP answer), else the text and tool calls.
func rule(turn llmtest.Turn) scripted.Rule {
	if turn.Error != nil {
		status := turn.Status
		if status == 0 {
			status = 500 // an error after HTTP 200: the provider failed midway
		}
		kind := llm.KindForStatus(status)
		if turn.Error.Code == "context_length_exceeded" {
			kind = llm.ErrContextTooLong
		}
		return scripted.Fail(&llm.Error{
			Kind: kind, Provider: "scripted", StatusCode: status, Code: turn.Error.Code, Message: turn.Error.Message,
			RetryAfter: llm.ParseRetryAfter(turn.Header, time.Now()),
		})
	}
	return scripted.Rule{Respond: func(*llm.Request) (*llm.Response, error) {
		msg := llm.AssistantMessage(turn.Text)
		if turn.Text == "" {
			msg.Parts = nil
		}
		for _, c := range turn.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		return &llm.Response{Message: msg}, nil
	}}
}

// slowModel waits out the first turn's Delay, as a slow server would,
// before the scripted model answers.
type slowModel struct {
	*scripted.Model
	turns []llmtest.Turn
}

func (m slowModel) wait(ctx context.Context) {
	if len(m.turns) == 0 || m.turns[0].Delay == 0 {
		return
	}
	timer := time.NewTimer(m.turns[0].Delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

func (m slowModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.wait(ctx)
	return m.Model.Generate(ctx, req)
}

func (m slowModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	m.wait(ctx)
	return m.Model.Stream(ctx, req)
}
