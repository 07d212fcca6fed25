package ollama

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/weftlabs/weft/internal/sse"
	"github.com/weftlabs/weft/llm"
)

// wire types of /api/chat.

type chatRequest struct {
	Model    string          `json:"model"`
	Messages []wireMessage   `json:"messages"`
	Tools    []wireTool      `json:"tools,omitempty"`
	Format   json.RawMessage `json:"format,omitempty"`
	Options  map[string]any  `json:"options,omitempty"`
	Stream   bool            `json:"stream"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Images     []string       `json:"images,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolName   string         `json:"tool_name,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id,omitempty"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Index     *int            `json:"index,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireToolSpec `json:"function"`
}

type wireToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// bodyKeys are the Extra keys set on the request body rather than in
// options: the top-level fields of Ollama's chat request.
var bodyKeys = map[string]bool{
	"keep_alive": true, "think": true, "truncate": true, "shift": true,
	"logprobs": true, "top_logprobs": true, "format": true, "tools": true,
	"messages": true, "model": true, "stream": true,
}

var emptyObject = json.RawMessage(`{}`)

func badRequest(format string, args ...any) error {
	return &llm.Error{Kind: llm.ErrBadRequest, Provider: providerName, Message: fmt.Sprintf(format, args...)}
}

// buildChat encodes req as an /api/chat body.
func (m *Client) buildChat(req *llm.Request, stream bool) ([]byte, error) {
	if req == nil {
		return nil, badRequest("nil request")
	}
	wr := chatRequest{Model: m.model, Stream: stream}
	msgs, err := encodeMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	wr.Messages = msgs
	wr.Tools, err = encodeTools(req.Tools, req.ToolChoice)
	if err != nil {
		return nil, err
	}
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case llm.FormatJSON:
			wr.Format = json.RawMessage(`"json"`)
		case llm.FormatJSONSchema:
			if !json.Valid(rf.Schema) || len(bytes.TrimSpace(rf.Schema)) == 0 {
				return nil, badRequest("response format %q: schema is not valid JSON", rf.Name)
			}
			wr.Format = rf.Schema
		case llm.FormatText, "":
		default:
			return nil, badRequest("unknown response format type %q", rf.Type)
		}
	}
	opts := map[string]any{}
	if req.Temperature != nil {
		opts["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		opts["top_p"] = *req.TopP
	}
	if req.MaxTokens > 0 {
		opts["num_predict"] = req.MaxTokens
	}
	if len(req.Stop) > 0 {
		opts["stop"] = req.Stop
	}
	if req.Seed != nil {
		opts["seed"] = *req.Seed
	}
	body := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(req.Extra)) {
		v := req.Extra[k]
		switch {
		case k == "options":
			o, ok := v.(map[string]any)
			if !ok {
				return nil, badRequest(`extra "options" must be a JSON object, got %T`, v)
			}
			maps.Copy(opts, o)
		case bodyKeys[k]:
			body[k] = v
		default:
			opts[k] = v
		}
	}
	if len(opts) > 0 {
		wr.Options = opts
	}
	out, err := json.Marshal(wr)
	if err != nil {
		return nil, badRequest("encoding request: %v", err)
	}
	if len(body) == 0 {
		return out, nil
	}
	// Extra body fields are rare; merging through a map keeps the common
	// path a plain struct encoding. RawMessage values keep numbers exact.
	var merged map[string]json.RawMessage
	if err := json.Unmarshal(out, &merged); err != nil {
		return nil, badRequest("encoding request: %v", err)
	}
	for k, v := range body {
		if merged[k], err = json.Marshal(v); err != nil {
			return nil, badRequest("encoding extra field %q: %v", k, err)
		}
	}
	out, err = json.Marshal(merged)
	if err != nil {
		return nil, badRequest("encoding extra fields: %v", err)
	}
	return out, nil
}

func encodeMessages(in []llm.Message) ([]wireMessage, error) {
	out := make([]wireMessage, 0, len(in))
	for i, msg := range in {
		wm := wireMessage{Role: string(msg.Role), Content: msg.Text()}
		switch msg.Role {
		case llm.RoleSystem:
		case llm.RoleUser:
			for _, p := range msg.Parts {
				if p.Kind != llm.PartImage || p.Image == nil {
					continue
				}
				img, err := encodeImage(p.Image)
				if err != nil {
					return nil, badRequest("message %d: %v", i, err)
				}
				wm.Images = append(wm.Images, img)
			}
		case llm.RoleAssistant:
			for _, tc := range msg.ToolCalls {
				args, err := toolArguments(tc)
				if err != nil {
					return nil, err
				}
				wm.ToolCalls = append(wm.ToolCalls, wireToolCall{ID: tc.ID, Function: wireFunction{Name: tc.Name, Arguments: args}})
			}
		case llm.RoleTool:
			wm.ToolName, wm.ToolCallID = msg.Name, msg.ToolCallID
		default:
			return nil, badRequest("message %d: unknown role %q", i, msg.Role)
		}
		out = append(out, wm)
	}
	return out, nil
}

// toolArguments returns a tool call's arguments as the JSON object Ollama
// wants. Invalid JSON is an error naming the call: sending {} instead would
// silently change what the model asked for.
func toolArguments(tc llm.ToolCall) (json.RawMessage, error) {
	s := strings.TrimSpace(tc.Arguments)
	if s == "" {
		return emptyObject, nil
	}
	if !json.Valid([]byte(s)) || s[0] != '{' {
		return nil, badRequest("tool call %q (%s): arguments are not a JSON object: %.200q", tc.ID, tc.Name, tc.Arguments)
	}
	return json.RawMessage(s), nil
}

// encodeImage returns the base64 image data Ollama accepts.
func encodeImage(img *llm.Image) (string, error) {
	if len(img.Data) > 0 {
		return base64.StdEncoding.EncodeToString(img.Data), nil
	}
	if rest, ok := strings.CutPrefix(img.URL, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return "", errors.New("image data: URL must be base64-encoded")
		}
		return data, nil
	}
	if img.URL == "" {
		return "", errors.New("image has neither data nor URL")
	}
	return "", fmt.Errorf("image URL %.100q: Ollama accepts only inline images; pass the bytes (llm.ImageDataPart) or a data: URL", img.URL)
}

func encodeTools(tools []llm.ToolSpec, choice llm.ToolChoice) ([]wireTool, error) {
	if len(tools) == 0 || choice.Mode == llm.ToolChoiceNone {
		return nil, nil
	}
	out := make([]wireTool, 0, len(tools))
	for _, t := range tools {
		if choice.Mode == llm.ToolChoiceTool && t.Name != choice.Name {
			continue
		}
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, wireTool{Type: "function", Function: wireToolSpec{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	if choice.Mode == llm.ToolChoiceTool && len(out) == 0 {
		return nil, badRequest("tool choice names %q, which is not among the request's tools", choice.Name)
	}
	return out, nil
}

// Generate sends req with "stream": false and returns the answer.
func (m *Client) Generate(ctx context.Context, req *llm.Request) (_ *llm.Response, err error) {
	defer func() { err = m.api.Redact(err) }()
	body, err := m.buildChat(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := m.post(ctx, "/api/chat", body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// The non-streaming answer is the stream's last object with the whole
	// message, so one decoder serves both paths.
	var acc llm.Accumulator
	err = decodeStream(resp.Body, func(c llm.Chunk) bool { acc.Add(c); return true })
	if err != nil {
		return nil, m.readError(ctx, err)
	}
	return acc.Response(), nil
}

// Stream sends req with "stream": true and yields the answer as Ollama
// produces it. Breaking out of the loop cancels the request and closes the
// connection.
func (m *Client) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		yield = m.api.RedactYield(yield)
		body, err := m.buildChat(req, true)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resp, err := m.post(ctx, "/api/chat", body)
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
		if err != nil && !stopped {
			yield(llm.Chunk{}, m.readError(ctx, err))
		}
	}
}

// readError types a failure met while reading an answer's body.
func (m *Client) readError(ctx context.Context, err error) error {
	var le *llm.Error
	if errors.As(err, &le) {
		return err
	}
	if ctx.Err() != nil {
		return m.api.TransportError(ctx, err)
	}
	return &llm.Error{Kind: llm.ErrStreamBroken, Provider: providerName, Message: "reading the answer", Err: err}
}

// maxLine bounds one NDJSON line. Ollama's lines are a few hundred bytes; a
// whole non-streamed answer is one line, so the bound is generous.
const maxLine = 16 << 20

// chatChunk is one line of an /api/chat answer.
type chatChunk struct {
	Model   string `json:"model"`
	Message struct {
		Content   string         `json:"content"`
		Thinking  string         `json:"thinking"`
		ToolCalls []wireToolCall `json:"tool_calls"`
	} `json:"message"`
	Done            bool            `json:"done"`
	DoneReason      string          `json:"done_reason"`
	PromptEvalCount int             `json:"prompt_eval_count"`
	EvalCount       int             `json:"eval_count"`
	Error           json.RawMessage `json:"error"`
}

// decodeStream reads NDJSON chat objects from r and passes their chunks to
// emit until the done object, the end of r, or emit returning false. It
// returns an error of kind ErrStreamBroken when r ends before done, when a
// line is malformed, or when the server sends an error object.
func decodeStream(r io.Reader, emit func(llm.Chunk) bool) error {
	lr := sse.NewLineReader(r, sse.WithMaxLineSize(maxLine))
	var (
		c        chatChunk
		calls    int
		sawMeta  bool
		sawCalls bool
	)
	for {
		line, err := lr.Next()
		if err == io.EOF {
			return &llm.Error{Kind: llm.ErrStreamBroken, Provider: providerName, Message: `the answer ended before its "done" object`}
		}
		if errors.Is(err, sse.ErrLineTooLong) {
			return &llm.Error{Kind: llm.ErrStreamBroken, Provider: providerName, Message: fmt.Sprintf("a line exceeds %d bytes", maxLine), Err: err}
		}
		if err != nil {
			return err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		c = chatChunk{}
		if err := json.Unmarshal(line, &c); err != nil {
			return &llm.Error{Kind: llm.ErrStreamBroken, Provider: providerName, Message: fmt.Sprintf("malformed line %.120q", line), Err: err}
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			msg := errorText(line)
			return &llm.Error{Kind: llm.ErrStreamBroken, Provider: providerName, Message: "server error during the answer: " + msg}
		}
		if !sawMeta && c.Model != "" {
			sawMeta = true
			if !emit(llm.Chunk{Type: llm.ChunkMeta, Model: c.Model}) {
				return nil
			}
		}
		if c.Message.Thinking != "" && !emit(llm.ReasoningChunk(c.Message.Thinking)) {
			return nil
		}
		if c.Message.Content != "" && !emit(llm.TextChunk(c.Message.Content)) {
			return nil
		}
		for _, tc := range c.Message.ToolCalls {
			sawCalls = true
			id := tc.ID
			if id == "" {
				id = "call_" + strconv.Itoa(calls)
			}
			args := compactArgs(tc.Function.Arguments)
			if !emit(llm.ToolCallStartChunk(calls, id, tc.Function.Name)) || !emit(llm.ToolCallDeltaChunk(calls, args)) {
				return nil
			}
			calls++
		}
		if c.Done {
			if !emit(llm.FinishChunk(finishReason(c.DoneReason, sawCalls))) {
				return nil
			}
			emit(llm.UsageChunk(llm.Usage{
				PromptTokens:     c.PromptEvalCount,
				CompletionTokens: c.EvalCount,
				TotalTokens:      c.PromptEvalCount + c.EvalCount,
			}))
			return nil
		}
	}
}

// compactArgs returns a tool call's argument object as compact JSON text.
// Ollama sends an object; a server that sends a JSON string is tolerated by
// passing the string's content on verbatim.
func compactArgs(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func finishReason(reason string, calledTools bool) llm.FinishReason {
	switch reason {
	case "stop", "":
		if calledTools {
			return llm.FinishToolCalls
		}
		return llm.FinishStop
	case "length":
		return llm.FinishLength
	default:
		return llm.FinishOther
	}
}
