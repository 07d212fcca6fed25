package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/weftlabs/weft/llm"
)

// JudgePrompt is the judge model's system prompt. The user message that
// follows gives the rubric, the conversation, the answer and, when asked,
// the reference answer and the context; the judge answers with
// {"score": 0..1, "reason": "…"} (a JSON Schema response format).
const JudgePrompt = `You are a strict, fair evaluator of an AI assistant's answer.
Score how well the answer satisfies the rubric, from 0 (not at all) to 1 (fully); use fractions for partial satisfaction.
Judge only against the rubric, the reference answer and the context you are given; do not reward length.
Answer with JSON only: {"score": <number from 0 to 1>, "reason": "<one or two sentences>"}.`

var judgeSchema = json.RawMessage(`{"type":"object","properties":{"score":{"type":"number","minimum":0,"maximum":1},"reason":{"type":"string"}},"required":["score","reason"],"additionalProperties":false}`)

// judgement is the judge's verdict.
type judgement struct {
	Score  float64 `json:"score"`
	Reason string  `json:"reason"`
}

// judgeInput is what the judge sees of a turn.
type judgeInput struct {
	history []string // earlier user messages and answers, "User: …" / "Assistant: …"
	user    string
	answer  *Answer
}

// judge asks model to score a turn's answer against e's rubric.
func judge(ctx context.Context, model *llm.Model, e *JudgeExpect, in judgeInput) (judgement, error) {
	var b strings.Builder
	b.WriteString("Rubric:\n" + strings.TrimSpace(e.Rubric) + "\n\n")
	if len(in.history) > 0 {
		b.WriteString("Earlier in the conversation:\n" + strings.Join(in.history, "\n") + "\n\n")
	}
	b.WriteString("User:\n" + in.user + "\n\n")
	if len(in.answer.ToolCalls) > 0 {
		b.WriteString("Tool calls the assistant made:\n")
		for _, c := range in.answer.ToolCalls {
			b.WriteString("- " + c.Name + "(" + string(c.Arguments) + ")\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("Answer:\n" + in.answer.Text + "\n")
	if e.Reference != "" {
		b.WriteString("\nReference answer:\n" + e.Reference + "\n")
	}
	if e.Context {
		b.WriteString("\nContext the assistant had:\n")
		for i, c := range in.answer.Citations {
			fmt.Fprintf(&b, "[%d] %s\n%s\n", i+1, c.Document, strings.TrimSpace(c.Content))
		}
		for _, c := range in.answer.ToolCalls {
			out := c.Result
			if c.Error != "" {
				out = "error: " + c.Error
			}
			fmt.Fprintf(&b, "Tool %s returned: %s\n", c.Name, out)
		}
		if len(in.answer.Citations) == 0 && len(in.answer.ToolCalls) == 0 {
			b.WriteString("(none)\n")
		}
	}
	resp, err := model.Generate(ctx, &llm.Request{
		Messages:       []llm.Message{llm.SystemMessage(JudgePrompt), llm.UserMessage(b.String())},
		ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "judgement", Schema: judgeSchema, Strict: true},
		Temperature:    llm.Ptr(0.0),
	})
	if err != nil {
		return judgement{}, fmt.Errorf("judge %s: %w", model.Name(), err)
	}
	v, err := jsonValue(resp.Text())
	if err != nil {
		return judgement{}, fmt.Errorf("judge %s answered no JSON: %q", model.Name(), clip(resp.Text(), 200))
	}
	raw, _ := json.Marshal(v)
	var j judgement
	if err := json.Unmarshal(raw, &j); err != nil {
		return judgement{}, fmt.Errorf("judge %s: %w in %s", model.Name(), err, clip(string(raw), 200))
	}
	if math.IsNaN(j.Score) {
		j.Score = 0
	}
	j.Score = min(max(j.Score, 0), 1)
	return j, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
