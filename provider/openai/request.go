package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/weftlabs/weft/llm"
)

// chatBody encodes req as a Chat Completions request body.
func (c *Client) chatBody(req *llm.Request, stream bool) ([]byte, error) {
	if req == nil {
		return nil, c.badRequest("nil request")
	}
	w := chatRequest{
		Model:       c.model,
		Temperature: req.Temperature,
		TopP:        req.TopP,
		Stop:        req.Stop,
		Seed:        req.Seed,
		Stream:      stream,
	}
	if stream && c.includeUsage {
		w.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if req.MaxTokens > 0 {
		if usesMaxCompletionTokens(c.model) {
			w.MaxCompletionTokens = req.MaxTokens
		} else {
			w.MaxTokens = req.MaxTokens
		}
	}
	w.Messages = make([]wireMessage, 0, len(req.Messages))
	for i, m := range req.Messages {
		wm, err := toWireMessage(m)
		if err != nil {
			return nil, c.badRequest(fmt.Sprintf("message %d: %v", i, err))
		}
		w.Messages = append(w.Messages, wm)
	}
	if len(req.Tools) > 0 {
		w.Tools = make([]wireTool, len(req.Tools))
		for i, t := range req.Tools {
			params := t.Parameters
			if len(params) == 0 {
				// Some servers require a schema; this one means "no arguments".
				params = emptyParameters
			}
			w.Tools[i] = wireTool{Type: "function", Function: toolFunction{Name: t.Name, Description: t.Description, Parameters: params}}
		}
	}
	switch req.ToolChoice.Mode {
	case "":
	case llm.ToolChoiceAuto, llm.ToolChoiceNone, llm.ToolChoiceRequired:
		w.ToolChoice = string(req.ToolChoice.Mode)
	case llm.ToolChoiceTool:
		if req.ToolChoice.Name == "" {
			return nil, c.badRequest("tool choice \"tool\" names no tool")
		}
		var nc namedToolChoice
		nc.Type = "function"
		nc.Function.Name = req.ToolChoice.Name
		w.ToolChoice = nc
	default:
		return nil, c.badRequest(fmt.Sprintf("unknown tool choice mode %q", req.ToolChoice.Mode))
	}
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case llm.FormatText, "":
			w.ResponseFormat = &responseFormat{Type: "text"}
		case llm.FormatJSON:
			w.ResponseFormat = &responseFormat{Type: "json_object"}
		case llm.FormatJSONSchema:
			if len(rf.Schema) == 0 {
				return nil, c.badRequest("response format json_schema without a schema")
			}
			name := rf.Name
			if name == "" {
				name = "response"
			}
			w.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{Name: name, Schema: rf.Schema, Strict: rf.Strict}}
		default:
			return nil, c.badRequest(fmt.Sprintf("unknown response format %q", rf.Type))
		}
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: c.provider, Message: "encoding the request", Err: err}
	}
	if len(req.Extra) == 0 {
		return body, nil
	}
	return c.mergeExtra(body, req.Extra)
}

var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// mergeExtraValue encodes v and merges extra into it, as mergeExtra does.
func (c *Client) mergeExtraValue(v any, extra map[string]any) (json.RawMessage, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: c.provider, Message: "encoding the request", Err: err}
	}
	return c.mergeExtra(body, extra)
}

// mergeExtra adds extra to the encoded body; extra's fields win. The
// result's keys are sorted, so bodies stay deterministic.
func (c *Client) mergeExtra(body []byte, extra map[string]any) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: c.provider, Message: "merging Extra", Err: err}
	}
	for k, v := range extra {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, c.badRequest(fmt.Sprintf("Extra field %q: %v", k, err))
		}
		m[k] = b
	}
	return json.Marshal(m)
}

func (c *Client) badRequest(msg string) error {
	return &llm.Error{Kind: llm.ErrBadRequest, Provider: c.provider, Message: msg}
}

func toWireMessage(m llm.Message) (wireMessage, error) {
	switch m.Role {
	case llm.RoleSystem:
		return wireMessage{Role: "system", Content: wireContent{text: m.Text()}}, nil
	case llm.RoleUser:
		wm := wireMessage{Role: "user", Name: m.Name}
		if !m.HasImages() && len(m.Parts) <= 1 {
			wm.Content.text = m.Text()
			return wm, nil
		}
		wm.Content.parts = make([]wirePart, 0, len(m.Parts))
		for _, p := range m.Parts {
			switch p.Kind {
			case llm.PartText:
				wm.Content.parts = append(wm.Content.parts, wirePart{Type: "text", Text: p.Text})
			case llm.PartImage:
				u, err := imagePartURL(p.Image)
				if err != nil {
					return wireMessage{}, err
				}
				wm.Content.parts = append(wm.Content.parts, wirePart{Type: "image_url", ImageURL: &imageURL{URL: u, Detail: p.Image.Detail}})
			default:
				return wireMessage{}, fmt.Errorf("unsupported part kind %q", p.Kind)
			}
		}
		return wm, nil
	case llm.RoleAssistant:
		wm := wireMessage{Role: "assistant", Content: wireContent{text: m.Text()}}
		if len(m.ToolCalls) > 0 {
			wm.Content.null = wm.Content.text == ""
			wm.ToolCalls = make([]wireToolCall, len(m.ToolCalls))
			for i, tc := range m.ToolCalls {
				args := tc.Arguments
				if strings.TrimSpace(args) == "" {
					// Servers reject an empty arguments string; a call with
					// no arguments is an empty object.
					args = "{}"
				}
				wm.ToolCalls[i] = wireToolCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: args}}
			}
		}
		return wm, nil
	case llm.RoleTool:
		if m.ToolCallID == "" {
			return wireMessage{}, fmt.Errorf("tool message without ToolCallID")
		}
		return wireMessage{Role: "tool", Content: wireContent{text: m.Text()}, ToolCallID: m.ToolCallID}, nil
	}
	return wireMessage{}, fmt.Errorf("unknown role %q", m.Role)
}

// imagePartURL returns an image's URL, encoding inline bytes as a data: URL.
func imagePartURL(img *llm.Image) (string, error) {
	switch {
	case img == nil:
		return "", fmt.Errorf("image part without an image")
	case img.URL != "":
		return img.URL, nil
	case len(img.Data) > 0:
		mime := img.MIMEType
		if mime == "" {
			mime = http.DetectContentType(img.Data)
		}
		var b strings.Builder
		b.Grow(len("data:;base64,") + len(mime) + base64.StdEncoding.EncodedLen(len(img.Data)))
		b.WriteString("data:")
		b.WriteString(mime)
		b.WriteString(";base64,")
		enc := base64.NewEncoder(base64.StdEncoding, &b)
		enc.Write(img.Data)
		enc.Close()
		return b.String(), nil
	}
	return "", fmt.Errorf("image part with neither URL nor data")
}
