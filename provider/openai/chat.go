package openai

import (
	"context"
	"strconv"

	"github.com/weftlabs/weft/llm"
)

// Generate sends req to /chat/completions and returns the whole answer.
func (c *Client) Generate(ctx context.Context, req *llm.Request) (_ *llm.Response, err error) {
	defer func() { err = c.api.Redact(err) }()
	body, err := c.chatBody(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := c.post(ctx, c.chatURL, body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := c.readBody(ctx, resp)
	if err != nil {
		return nil, err
	}
	var w chatResponse
	if err := c.decodeJSON(resp, b, &w); err != nil {
		return nil, err
	}
	if err := c.payloadError(&w, llm.ErrUnavailable, resp.StatusCode); err != nil {
		return nil, err
	}
	return c.toResponse(&w, resp.StatusCode)
}

// payloadError returns the error a 2xx body or chunk carries, or nil.
// fallback is the kind used when the payload names none Weft recognises.
func (c *Client) payloadError(w *chatResponse, fallback error, status int) error {
	msg, typ, code, ok := w.errorPayload()
	if !ok {
		return nil
	}
	if msg == "" {
		msg = "the server sent an error with no message"
	}
	return &llm.Error{
		Kind:       streamErrorKind(msg, typ, code, fallback),
		Provider:   c.provider,
		StatusCode: status,
		Code:       firstNonEmpty(code, typ),
		Message:    msg,
	}
}

// toResponse converts a non-streamed completion.
func (c *Client) toResponse(w *chatResponse, status int) (*llm.Response, error) {
	ch := firstChoice(w.Choices)
	if ch == nil {
		return nil, &llm.Error{Kind: llm.ErrUnavailable, Provider: c.provider, StatusCode: status,
			Message: "the response has no choices"}
	}
	m := &ch.Message
	msg := llm.Message{Role: llm.RoleAssistant, Reasoning: firstNonEmpty(m.ReasoningContent, m.Reasoning)}
	text := string(m.Content)
	if text == "" && m.Refusal != "" {
		text = m.Refusal
	}
	if text != "" {
		msg.Parts = []llm.Part{llm.TextPart(text)}
	}
	for i, tc := range m.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: orCallID(tc.ID, i), Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if m.FunctionCall != nil && len(msg.ToolCalls) == 0 {
		msg.ToolCalls = []llm.ToolCall{{ID: orCallID("", 0), Name: m.FunctionCall.Name, Arguments: m.FunctionCall.Arguments}}
	}
	return &llm.Response{
		ID:           string(w.ID),
		Model:        string(w.Model),
		Message:      msg,
		Usage:        toUsage(w.usage()),
		FinishReason: normalizeFinish(ch.FinishReason, len(msg.ToolCalls) > 0, m.Refusal != "" && m.Content == ""),
	}, nil
}

// firstChoice returns the choice with index 0, or the first one.
func firstChoice(cs []choice) *choice {
	for i := range cs {
		if cs[i].Index == 0 {
			return &cs[i]
		}
	}
	if len(cs) > 0 {
		return &cs[0]
	}
	return nil
}

// orCallID returns id, or a stable id for a tool call the server sent
// without one (some local servers do), so that the tool result can name it.
func orCallID(id string, index int) string {
	if id != "" {
		return id
	}
	return "call_" + strconv.Itoa(index)
}

// normalizeFinish maps a wire finish reason to Weft's. A server that says
// "stop" while calling tools (older vLLM, some local servers) means
// tool_calls; a refusal is a content filter; a missing reason is inferred.
func normalizeFinish(reason string, hasCalls, refused bool) llm.FinishReason {
	switch reason {
	case "stop", "eos", "end_turn", "stop_sequence", "":
		switch {
		case hasCalls:
			return llm.FinishToolCalls
		case refused:
			return llm.FinishContentFilter
		}
		return llm.FinishStop
	case "length", "max_tokens", "model_length":
		return llm.FinishLength
	case "tool_calls", "function_call", "tool_use":
		return llm.FinishToolCalls
	case "content_filter", "safety", "refusal":
		return llm.FinishContentFilter
	case "error":
		return llm.FinishError
	}
	return llm.FinishOther
}

// toUsage converts wire usage; nil gives zero usage.
func toUsage(u *wireUsage) llm.Usage {
	if u == nil {
		return llm.Usage{}
	}
	out := llm.Usage{
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      u.TotalTokens,
		CachedTokens:     u.PromptCacheHit,
	}
	if out.PromptTokens == 0 && out.CompletionTokens == 0 {
		out.PromptTokens, out.CompletionTokens = u.InputTokens, u.OutputTokens
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	if d := u.PromptTokensDetails; d != nil && d.CachedTokens > 0 {
		out.CachedTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}
