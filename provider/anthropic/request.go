package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"slices"
	"strings"

	"github.com/weftlabs/weft/llm"
)

// wire types of POST /v1/messages.

type messagesRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	System        string          `json:"system,omitempty"`
	Messages      []wireMessage   `json:"messages"`
	Tools         []wireTool      `json:"tools,omitempty"`
	ToolChoice    *wireToolChoice `json:"tool_choice,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	OutputConfig  *outputConfig   `json:"output_config,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// wireBlock is a content block of a request message.
type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *imageSource    `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type outputConfig struct {
	Format outputFormat `json:"format"`
}

type outputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

var emptyObject = json.RawMessage(`{}`)

func badRequest(format string, args ...any) *llm.Error {
	return &llm.Error{Kind: llm.ErrBadRequest, Provider: providerName, Message: fmt.Sprintf(format, args...)}
}

// buildRequest encodes req as a Messages API body.
func (m *Client) buildRequest(req *llm.Request, stream bool) ([]byte, error) {
	if req == nil {
		return nil, badRequest("nil request")
	}
	wr := messagesRequest{
		Model:         m.model,
		MaxTokens:     req.MaxTokens,
		Temperature:   req.Temperature,
		TopP:          req.TopP,
		StopSequences: req.Stop,
		Stream:        stream,
	}
	if wr.MaxTokens <= 0 {
		wr.MaxTokens = DefaultMaxTokens
	}
	var err error
	wr.System, wr.Messages, err = encodeMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	if len(req.Tools) > 0 {
		wr.Tools = make([]wireTool, len(req.Tools))
		for i, t := range req.Tools {
			schema := t.Parameters
			if len(bytes.TrimSpace(schema)) == 0 {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			wr.Tools[i] = wireTool{Name: t.Name, Description: t.Description, InputSchema: schema}
		}
		switch req.ToolChoice.Mode {
		case "":
		case llm.ToolChoiceAuto:
			wr.ToolChoice = &wireToolChoice{Type: "auto"}
		case llm.ToolChoiceRequired:
			wr.ToolChoice = &wireToolChoice{Type: "any"}
		case llm.ToolChoiceNone:
			wr.ToolChoice = &wireToolChoice{Type: "none"}
		case llm.ToolChoiceTool:
			if !slices.ContainsFunc(req.Tools, func(t llm.ToolSpec) bool { return t.Name == req.ToolChoice.Name }) {
				return nil, badRequest("tool choice names %q, which is not among the request's tools", req.ToolChoice.Name)
			}
			wr.ToolChoice = &wireToolChoice{Type: "tool", Name: req.ToolChoice.Name}
		default:
			return nil, badRequest("unknown tool choice mode %q", req.ToolChoice.Mode)
		}
	}
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case llm.FormatText, "":
		case llm.FormatJSONSchema:
			if len(bytes.TrimSpace(rf.Schema)) == 0 || !json.Valid(rf.Schema) {
				return nil, badRequest("response format %q: schema is not valid JSON", rf.Name)
			}
			wr.OutputConfig = &outputConfig{Format: outputFormat{Type: "json_schema", Schema: rf.Schema}}
		case llm.FormatJSON:
			e := badRequest("response format json: the Messages API has no schemaless JSON mode; use FormatJSONSchema with a schema, or ask for JSON in the prompt")
			e.Err = llm.ErrUnsupported
			return nil, e
		default:
			return nil, badRequest("unknown response format type %q", rf.Type)
		}
	}
	out, err := json.Marshal(wr)
	if err != nil {
		return nil, badRequest("encoding request: %v", err)
	}
	if len(req.Extra) == 0 {
		return out, nil
	}
	// Extra fields are rare; merging through a map of raw values keeps the
	// common path a plain struct encoding and numbers exact.
	var merged map[string]json.RawMessage
	if err := json.Unmarshal(out, &merged); err != nil {
		return nil, badRequest("encoding request: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(req.Extra)) {
		if merged[k], err = json.Marshal(req.Extra[k]); err != nil {
			return nil, badRequest("encoding extra field %q: %v", k, err)
		}
	}
	out, err = json.Marshal(merged)
	if err != nil {
		return nil, badRequest("encoding request: %v", err)
	}
	return out, nil
}

// encodeMessages splits the system text off and turns the conversation into
// alternating user and assistant messages.
func encodeMessages(in []llm.Message) (string, []wireMessage, error) {
	var system []string
	var out []wireMessage
	add := func(role string, blocks []wireBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, wireMessage{Role: role, Content: blocks})
	}
	for i, msg := range in {
		switch msg.Role {
		case llm.RoleSystem:
			if t := msg.Text(); t != "" {
				system = append(system, t)
			}
		case llm.RoleUser:
			blocks, err := userBlocks(msg)
			if err != nil {
				return "", nil, badRequest("message %d: %v", i, err)
			}
			add("user", blocks)
		case llm.RoleAssistant:
			var blocks []wireBlock
			if t := msg.Text(); t != "" {
				blocks = append(blocks, wireBlock{Type: "text", Text: t})
			}
			for _, tc := range msg.ToolCalls {
				if tc.ID == "" {
					return "", nil, badRequest("message %d: tool call %q has no id; the API links results to calls by id", i, tc.Name)
				}
				input, err := toolInput(tc)
				if err != nil {
					return "", nil, err
				}
				blocks = append(blocks, wireBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
			}
			add("assistant", blocks)
		case llm.RoleTool:
			if msg.ToolCallID == "" {
				return "", nil, badRequest("message %d: tool result without a tool call id", i)
			}
			add("user", []wireBlock{{Type: "tool_result", ToolUseID: msg.ToolCallID, Content: msg.Text(), IsError: msg.IsError}})
		default:
			return "", nil, badRequest("message %d: unknown role %q", i, msg.Role)
		}
	}
	// The API wants a user message's tool results before its other blocks.
	for i := range out {
		if out[i].Role == "user" {
			slices.SortStableFunc(out[i].Content, func(a, b wireBlock) int {
				return boolInt(b.Type == "tool_result") - boolInt(a.Type == "tool_result")
			})
		}
	}
	return strings.Join(system, "\n\n"), out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func userBlocks(msg llm.Message) ([]wireBlock, error) {
	blocks := make([]wireBlock, 0, len(msg.Parts))
	for _, p := range msg.Parts {
		switch p.Kind {
		case llm.PartText:
			if p.Text != "" {
				blocks = append(blocks, wireBlock{Type: "text", Text: p.Text})
			}
		case llm.PartImage:
			if p.Image == nil {
				return nil, fmt.Errorf("image part without an image")
			}
			src, err := encodeImage(p.Image)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, wireBlock{Type: "image", Source: src})
		default:
			return nil, fmt.Errorf("unknown part kind %q", p.Kind)
		}
	}
	return blocks, nil
}

func encodeImage(img *llm.Image) (*imageSource, error) {
	if len(img.Data) > 0 {
		mt := img.MIMEType
		if mt == "" {
			return nil, fmt.Errorf("inline image without a MIME type (image/png, image/jpeg, image/gif or image/webp)")
		}
		return &imageSource{Type: "base64", MediaType: mt, Data: base64.StdEncoding.EncodeToString(img.Data)}, nil
	}
	if rest, ok := strings.CutPrefix(img.URL, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mt, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 {
			return nil, fmt.Errorf("image data: URL must be base64-encoded")
		}
		if mt, _, err := mime.ParseMediaType(mt); err == nil {
			return &imageSource{Type: "base64", MediaType: mt, Data: data}, nil
		}
		return nil, fmt.Errorf("image data: URL has no valid media type")
	}
	if strings.HasPrefix(img.URL, "https://") || strings.HasPrefix(img.URL, "http://") {
		return &imageSource{Type: "url", URL: img.URL}, nil
	}
	if img.URL == "" {
		return nil, fmt.Errorf("image has neither data nor URL")
	}
	return nil, fmt.Errorf("image URL %.100q: want an http(s) or data URL", img.URL)
}

// toolInput returns a tool call's arguments as the JSON object the API
// wants. Invalid JSON is an error naming the call: sending {} instead would
// silently change what the model asked for.
func toolInput(tc llm.ToolCall) (json.RawMessage, error) {
	s := strings.TrimSpace(tc.Arguments)
	if s == "" {
		return emptyObject, nil
	}
	if s[0] != '{' || !json.Valid([]byte(s)) {
		return nil, badRequest("tool call %q (%s): arguments are not a JSON object: %.200q", tc.ID, tc.Name, tc.Arguments)
	}
	return json.RawMessage(s), nil
}
