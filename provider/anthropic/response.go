package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/weftlabs/weft/internal/sse"
	"github.com/weftlabs/weft/llm"
)

// wireResponse is a Messages API answer, and the "message" of a
// message_start event.
type wireResponse struct {
	Type       string          `json:"type"`
	Error      *wireError      `json:"error"`
	ID         string          `json:"id"`
	Model      string          `json:"model"`
	Content    []responseBlock `json:"content"`
	StopReason string          `json:"stop_reason"`
	Usage      wireUsage       `json:"usage"`
}

// responseBlock is a content block of an answer.
type responseBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Thinking string          `json:"thinking"`
}

type wireUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

func (u wireUsage) usage() llm.Usage {
	prompt := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	return llm.Usage{
		PromptTokens:     prompt,
		CompletionTokens: u.OutputTokens,
		TotalTokens:      prompt + u.OutputTokens,
		CachedTokens:     u.CacheReadInputTokens,
	}
}

func finishReason(stop string) llm.FinishReason {
	switch stop {
	case "end_turn", "stop_sequence":
		return llm.FinishStop
	case "max_tokens", "model_context_window_exceeded":
		return llm.FinishLength
	case "tool_use":
		return llm.FinishToolCalls
	case "refusal":
		return llm.FinishContentFilter
	default:
		return llm.FinishOther
	}
}

// compactJSON returns raw as compact JSON text, "{}" when it is empty.
func compactJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// maxBody bounds a non-streamed answer.
const maxBody = 64 << 20

// Generate sends req and returns the complete answer.
func (m *Client) Generate(ctx context.Context, req *llm.Request) (_ *llm.Response, err error) {
	defer func() { err = m.api.Redact(err) }()
	body, err := m.buildRequest(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := m.post(ctx, body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		if ctx.Err() != nil {
			return nil, m.api.TransportError(ctx, err)
		}
		return nil, &llm.Error{Kind: llm.ErrUnavailable, Provider: providerName, Message: "reading the answer", Err: err}
	}
	var wr wireResponse
	if err := json.Unmarshal(raw, &wr); err != nil {
		snippet := strings.TrimSpace(string(raw[:min(len(raw), 200)]))
		return nil, &llm.Error{Kind: llm.ErrUnavailable, Provider: providerName, StatusCode: resp.StatusCode,
			Message: fmt.Sprintf("answer is not a Messages API response (content-type %q; is the base URL right?): %q",
				resp.Header.Get("Content-Type"), snippet),
			Err: err}
	}
	if wr.Type == "error" && wr.Error != nil {
		// Some gateways answer 200 with an error body.
		return nil, eventError(*wr.Error)
	}
	return wr.response(), nil
}

func (wr *wireResponse) response() *llm.Response {
	var acc llm.Accumulator
	acc.Add(llm.Chunk{Type: llm.ChunkMeta, ResponseID: wr.ID, Model: wr.Model})
	calls := 0
	for _, b := range wr.Content {
		switch b.Type {
		case "text":
			acc.Add(llm.TextChunk(b.Text))
		case "thinking":
			acc.Add(llm.ReasoningChunk(b.Thinking))
		case "tool_use":
			acc.Add(llm.ToolCallStartChunk(calls, b.ID, b.Name))
			acc.Add(llm.ToolCallDeltaChunk(calls, compactJSON(b.Input)))
			calls++
		}
	}
	acc.Add(llm.FinishChunk(finishReason(wr.StopReason)))
	acc.Add(llm.UsageChunk(wr.Usage.usage()))
	return acc.Response()
}

// Stream sends req with "stream": true and yields the answer as it arrives.
// Breaking out of the loop cancels the request and closes the connection.
func (m *Client) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		yield = m.api.RedactYield(yield)
		body, err := m.buildRequest(req, true)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resp, err := m.post(ctx, body, true)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		defer resp.Body.Close()
		stopped := false
		err = decodeStream(resp.Body, func(c llm.Chunk) bool {
			if !yield(c, nil) {
				stopped = true
				return false
			}
			return true
		})
		if err == nil || stopped {
			return
		}
		var le *llm.Error
		switch {
		case errors.As(err, &le):
		case ctx.Err() != nil:
			err = m.api.TransportError(ctx, err)
		default:
			err = &llm.Error{Kind: llm.ErrStreamBroken, Provider: providerName, Message: "reading the stream", Err: err}
		}
		yield(llm.Chunk{}, err)
	}
}

// streamEvent is the union of the Messages API's stream events' payloads.
type streamEvent struct {
	Type         string        `json:"type"`
	Message      *wireResponse `json:"message"`
	Index        int           `json:"index"`
	ContentBlock responseBlock `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *wireUsage `json:"usage"`
	Error *wireError `json:"error"`
}

// maxEvent bounds one event's data.
const maxEvent = 8 << 20

// streamState follows one streamed answer.
type streamState struct {
	usage    wireUsage
	calls    []toolBlock // open and closed tool_use blocks, in order
	finished bool
}

// toolBlock links a content block index to its tool call's position.
type toolBlock struct {
	block, call int
	hasArgs     bool
}

func (s *streamState) tool(block int) *toolBlock {
	for i := range s.calls {
		if s.calls[i].block == block {
			return &s.calls[i]
		}
	}
	return nil
}

func broken(msg string, err error) *llm.Error {
	return &llm.Error{Kind: llm.ErrStreamBroken, Provider: providerName, Message: msg, Err: err}
}

// decodeStream reads Messages API events from r and passes their chunks to
// emit until message_stop, the end of r, or emit returning false. A stream
// that ends before message_stop, or carries a malformed event, is an error
// of kind ErrStreamBroken; an error event becomes an [*llm.Error] of the
// kind its type names.
func decodeStream(r io.Reader, emit func(llm.Chunk) bool) error {
	rd := sse.NewReader(r, sse.WithMaxLineSize(maxEvent))
	var (
		st streamState
		se streamEvent
	)
	for {
		ev, err := rd.NextRaw()
		if err == io.EOF {
			return broken("the stream ended before message_stop", nil)
		}
		if errors.Is(err, sse.ErrLineTooLong) {
			return broken("an event is too large", err)
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(ev.Data)) == 0 {
			continue
		}
		se = streamEvent{}
		if err := json.Unmarshal(ev.Data, &se); err != nil {
			return broken("malformed "+nonEmpty(ev.Event, "stream")+" event", err)
		}
		if se.Type == "" {
			se.Type = ev.Event
		}
		done, err := st.handle(&se, emit)
		if err != nil || done {
			return err
		}
	}
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// handle applies one event. It reports done when the stream is complete or
// the consumer stopped.
func (st *streamState) handle(se *streamEvent, emit func(llm.Chunk) bool) (done bool, err error) {
	switch se.Type {
	case "message_start":
		if se.Message == nil {
			return false, broken("message_start without a message", nil)
		}
		st.usage = se.Message.Usage
		return !emit(llm.Chunk{Type: llm.ChunkMeta, ResponseID: se.Message.ID, Model: se.Message.Model}), nil
	case "content_block_start":
		b := &se.ContentBlock
		switch b.Type {
		case "text":
			if b.Text != "" {
				return !emit(llm.TextChunk(b.Text)), nil
			}
		case "thinking":
			if b.Thinking != "" {
				return !emit(llm.ReasoningChunk(b.Thinking)), nil
			}
		case "tool_use":
			if st.tool(se.Index) != nil {
				return false, broken("tool_use block started twice", nil)
			}
			tb := toolBlock{block: se.Index, call: len(st.calls)}
			// The start carries "input": {} and the arguments follow as
			// input_json_delta; a proxy that sends them whole is tolerated.
			args := compactJSON(b.Input)
			tb.hasArgs = args != "{}"
			st.calls = append(st.calls, tb)
			if !emit(llm.ToolCallStartChunk(tb.call, b.ID, b.Name)) {
				return true, nil
			}
			if tb.hasArgs {
				return !emit(llm.ToolCallDeltaChunk(tb.call, args)), nil
			}
		}
	case "content_block_delta":
		d := &se.Delta
		switch d.Type {
		case "text_delta":
			return d.Text != "" && !emit(llm.TextChunk(d.Text)), nil
		case "thinking_delta":
			return d.Thinking != "" && !emit(llm.ReasoningChunk(d.Thinking)), nil
		case "input_json_delta":
			tb := st.tool(se.Index)
			// Server tools (server_tool_use, mcp_tool_use) stream their
			// input too; they run at Anthropic and are not Weft's to call.
			if tb == nil || d.PartialJSON == "" {
				return false, nil
			}
			tb.hasArgs = true
			return !emit(llm.ToolCallDeltaChunk(tb.call, d.PartialJSON)), nil
		}
	case "content_block_stop":
		// A tool called without arguments streams no input_json_delta.
		if tb := st.tool(se.Index); tb != nil && !tb.hasArgs {
			tb.hasArgs = true
			return !emit(llm.ToolCallDeltaChunk(tb.call, "{}")), nil
		}
	case "message_delta":
		if se.Usage != nil {
			st.mergeUsage(*se.Usage)
		}
		if se.Delta.StopReason != "" {
			st.finished = true
			if !emit(llm.FinishChunk(finishReason(se.Delta.StopReason))) {
				return true, nil
			}
		}
		return !emit(llm.UsageChunk(st.usage.usage())), nil
	case "message_stop":
		if !st.finished {
			st.finished = true
			if !emit(llm.FinishChunk(llm.FinishOther)) {
				return true, nil
			}
			emit(llm.UsageChunk(st.usage.usage()))
		}
		return true, nil
	case "error":
		we := wireError{Type: "error"}
		if se.Error != nil {
			we = *se.Error
		}
		return false, eventError(we)
	}
	// ping, signature_delta, citations_delta and event types added after
	// this was written carry nothing Weft reports.
	return false, nil
}

// mergeUsage folds a message_delta's cumulative usage into the counts from
// message_start: output tokens always, input counts when the delta has them.
func (st *streamState) mergeUsage(u wireUsage) {
	st.usage.OutputTokens = u.OutputTokens
	if u.InputTokens > 0 {
		st.usage.InputTokens = u.InputTokens
	}
	if u.CacheCreationInputTokens > 0 {
		st.usage.CacheCreationInputTokens = u.CacheCreationInputTokens
	}
	if u.CacheReadInputTokens > 0 {
		st.usage.CacheReadInputTokens = u.CacheReadInputTokens
	}
}
