package openai

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Wire types of the Chat Completions, Embeddings, Moderations and Images
// endpoints. Only the fields Weft reads are declared: encoding/json skips
// the rest without allocating.

type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools,omitempty"`
	ToolChoice          any             `json:"tool_choice,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    wireContent    `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// wireContent is a message's content: a string, an array of parts, or null
// (an assistant message that only calls tools).
type wireContent struct {
	text  string
	parts []wirePart
	null  bool
}

func (c wireContent) MarshalJSON() ([]byte, error) {
	switch {
	case c.parts != nil:
		return json.Marshal(c.parts)
	case c.null:
		return []byte("null"), nil
	}
	return json.Marshal(c.text)
}

type wirePart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type namedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

// chatResponse is a non-streamed completion, or an error sent with a 2xx
// status: {"error": {…}} from most servers, {"object": "error", …} from vLLM.
type chatResponse struct {
	ID      reuseString    `json:"id"`
	Object  reuseString    `json:"object"`
	Model   reuseString    `json:"model"`
	Choices []choice       `json:"choices"`
	Usage   *wireUsage     `json:"usage"`
	Error   wireErrorField `json:"error"`
	// vLLM's error form: {"object": "error", "message", "type", "code"}.
	Message string     `json:"message"`
	Type    string     `json:"type"`
	Code    flexString `json:"code"`
	// Groq once sent usage only here.
	XGroq struct {
		Usage *wireUsage `json:"usage"`
	} `json:"x_groq"`
}

// reset empties w for the next stream chunk while keeping its slices'
// memory. encoding/json decodes into existing slice elements without
// zeroing them, so they are cleared here. ID, Object and Model are kept:
// their decoder reuses the string when the next chunk repeats it.
func (w *chatResponse) reset() {
	choices := w.Choices[:cap(w.Choices)]
	for i := range choices {
		calls := choices[i].Delta.ToolCalls[:cap(choices[i].Delta.ToolCalls)]
		clear(calls)
		choices[i] = choice{}
		choices[i].Delta.ToolCalls = calls[:0]
	}
	*w = chatResponse{ID: w.ID, Object: w.Object, Model: w.Model, Choices: choices[:0]}
}

// errorPayload reports the error a 2xx body or stream chunk carries, if any.
func (w *chatResponse) errorPayload() (msg, typ, code string, ok bool) {
	switch {
	case w.Error.present:
		return w.Error.Message, w.Error.Type, string(w.Error.Code), true
	case w.Object == "error":
		return w.Message, w.Type, string(w.Code), true
	}
	return "", "", "", false
}

// usage returns the response's usage, or nil.
func (w *chatResponse) usage() *wireUsage {
	if w.Usage != nil {
		return w.Usage
	}
	return w.XGroq.Usage
}

type choice struct {
	Index        int         `json:"index"`
	Message      respMessage `json:"message"`
	Delta        respMessage `json:"delta"`
	FinishReason string      `json:"finish_reason"`
}

// respMessage is a response message or a stream delta.
type respMessage struct {
	Content          flexText       `json:"content"`
	Refusal          string         `json:"refusal"`
	ReasoningContent string         `json:"reasoning_content"`
	Reasoning        string         `json:"reasoning"`
	ToolCalls        []respToolCall `json:"tool_calls"`
	FunctionCall     *wireFunction  `json:"function_call"`
}

type respToolCall struct {
	// Index keys the call across fragments; a missing index means 0, as
	// some servers omit it when there is one call.
	Index    int          `json:"index"`
	ID       string       `json:"id"`
	Function wireFunction `json:"function"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	InputTokens         int `json:"input_tokens"`            // images API
	OutputTokens        int `json:"output_tokens"`           // images API
	PromptCacheHit      int `json:"prompt_cache_hit_tokens"` // DeepSeek
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type wireError struct {
	Message string     `json:"message"`
	Type    string     `json:"type"`
	Code    flexString `json:"code"`
}

// errorBody is the body of a non-2xx answer.
type errorBody struct {
	Error wireErrorField `json:"error"`
	// vLLM and some proxies put the fields at the top level.
	Message string     `json:"message"`
	Type    string     `json:"type"`
	Code    flexString `json:"code"`
	Detail  string     `json:"detail"`
}

// wireErrorField is an "error" member: an object, a bare string, or null
// (absent).
type wireErrorField struct {
	present bool
	wireError
}

func (e *wireErrorField) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) == 0 || b[0] == 'n':
		return nil
	case b[0] == '{':
		if err := json.Unmarshal(b, &e.wireError); err != nil {
			return err
		}
	case b[0] == '"':
		if err := json.Unmarshal(b, &e.Message); err != nil {
			return err
		}
	default:
		e.Message = string(b)
	}
	e.present = true
	return nil
}

// reuseString decodes a JSON string, keeping the current value when the
// new one is equal, so that the id and model repeated in every stream
// chunk are allocated once.
type reuseString string

func (s *reuseString) UnmarshalJSON(b []byte) error {
	if len(b) >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		if v := b[1 : len(b)-1]; string(v) != string(*s) {
			*s = reuseString(v)
		}
		return nil
	}
	if b[0] == 'n' {
		*s = ""
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = reuseString(v)
	return nil
}

// flexString accepts a JSON string or number (error codes are either,
// depending on the server) and keeps it as text.
type flexString string

func (s *flexString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = flexString(v)
		return nil
	}
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if _, err := strconv.ParseFloat(string(b), 64); err != nil {
		return nil // an object or array: not a code Weft can use
	}
	*s = flexString(b)
	return nil
}

// flexText is message content: a string, null, or (from some servers) an
// array of {"type":"text","text":…} parts.
type flexText string

func (t *flexText) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		// Fast path for the common case: no escapes means the bytes are
		// the string.
		if len(b) >= 2 && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
			*t = flexText(b[1 : len(b)-1])
			return nil
		}
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*t = flexText(v)
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var s []byte
		for _, p := range parts {
			if p.Type == "text" || p.Type == "output_text" {
				s = append(s, p.Text...)
			}
		}
		*t = flexText(s)
	}
	return nil
}

type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions,omitempty"`
	EncodingFormat string   `json:"encoding_format"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Model string         `json:"model"`
	Usage *wireUsage     `json:"usage"`
	Error wireErrorField `json:"error"`
}

type moderationRequest struct {
	Model string   `json:"model,omitempty"`
	Input []string `json:"input"`
}

type moderationResponse struct {
	Results []struct {
		Flagged        bool               `json:"flagged"`
		Categories     map[string]bool    `json:"categories"`
		CategoryScores map[string]float64 `json:"category_scores"`
	} `json:"results"`
	Error wireErrorField `json:"error"`
}

type imageRequest struct {
	Model          string `json:"model,omitempty"`
	Prompt         string `json:"prompt"`
	N              int    `json:"n,omitempty"`
	Size           string `json:"size,omitempty"`
	Quality        string `json:"quality,omitempty"`
	Style          string `json:"style,omitempty"`
	ResponseFormat string `json:"response_format,omitempty"`
}

type imageResponse struct {
	Data []struct {
		URL           string `json:"url"`
		B64JSON       string `json:"b64_json"`
		RevisedPrompt string `json:"revised_prompt"`
	} `json:"data"`
	OutputFormat string         `json:"output_format"`
	Usage        *wireUsage     `json:"usage"`
	Error        wireErrorField `json:"error"`
}
