package api

import (
	"bytes"
	"encoding/json"
	"errors"
)

// The OpenAI-compatible face (POST /v1/chat/completions, GET /v1/models):
// OpenAI's own wire shapes, as its clients send and read them.

// Model is an agent listed as a model by GET /v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is the answer of GET /v1/models.
type ModelList struct {
	Data   []Model `json:"data"`
	Object string  `json:"object"`
}

// ChatCompletionRequest is the body of POST /v1/chat/completions. The
// fields the platform does not honour are listed, with what happens to
// them, in UnsupportedCompletionFields.
type ChatCompletionRequest struct {
	Model    string        `json:"model"`
	Messages []ChatMessage `json:"messages"`
	Stream   bool          `json:"stream"`
	// StreamOptions.IncludeUsage adds a usage chunk before [DONE].
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	User          string         `json:"user,omitempty"`

	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Stop                Stop            `json:"stop,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	N                   *int            `json:"n,omitempty"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
	Tools               []ChatTool      `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`

	// Unsupported fields, decoded only to refuse or ignore them knowingly
	// (see UnsupportedCompletionFields).
	Logprobs         *bool           `json:"logprobs,omitempty"`
	TopLogprobs      *int            `json:"top_logprobs,omitempty"`
	LogitBias        json.RawMessage `json:"logit_bias,omitempty"`
	PresencePenalty  *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64        `json:"frequency_penalty,omitempty"`
	Functions        json.RawMessage `json:"functions,omitempty"`
	FunctionCall     json.RawMessage `json:"function_call,omitempty"`
	Audio            json.RawMessage `json:"audio,omitempty"`
	Modalities       []string        `json:"modalities,omitempty"`
	Prediction       json.RawMessage `json:"prediction,omitempty"`
}

// UnsupportedCompletionFields says, for each field of OpenAI's chat
// completion request the platform does not implement, what it does with
// it: "refused" fields are a 400 naming the field, "ignored" ones change
// nothing and are accepted so that clients that always send them work.
// Fields not listed here and not in ChatCompletionRequest (store,
// metadata, service_tier, reasoning_effort, web_search_options, …) are
// ignored too.
var UnsupportedCompletionFields = map[string]string{
	"logprobs":          "refused when true: the platform does not return log probabilities",
	"top_logprobs":      "refused: the platform does not return log probabilities",
	"logit_bias":        "refused: token biases are not passed to the agent's model",
	"functions":         "refused: use tools",
	"function_call":     "refused: use tool_choice",
	"audio":             "refused: text answers only",
	"modalities":        "refused unless [\"text\"]",
	"prediction":        "refused: predicted outputs are not supported",
	"presence_penalty":  "ignored: the agent's model settings apply",
	"frequency_penalty": "ignored: the agent's model settings apply",
	"tool_choice":       "\"auto\" and \"none\" are honoured; forcing a tool is refused",
	"parallel_tool_calls": "ignored: the agent's tools may run concurrently; client tools are " +
		"returned together",
}

// StreamOptions are the options of a streamed completion.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Stop is the stop field: one string or a list of them.
type Stop []string

// UnmarshalJSON accepts a string, a list of strings or null.
func (s *Stop) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = Stop{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("want a string or an array of strings")
	}
	*s = list
	return nil
}

// ResponseFormat is the response_format field.
type ResponseFormat struct {
	// Type is "text", "json_object" or "json_schema".
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is the schema of a json_schema response format.
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ChatTool is a tool the client declares; the client runs it.
type ChatTool struct {
	Type     string       `json:"type"`
	Function ChatFunction `json:"function"`
}

// ChatFunction describes a client tool.
type ChatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ChatMessage is a message of a completion request or answer.
type ChatMessage struct {
	Role string `json:"role"`
	// Content is a string, an array of content parts, or null (an assistant
	// message with tool calls).
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ChatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// ContentPart is one element of an array content.
type ContentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is an image content part's address (an https URL or a data
// URL).
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// ChatToolCall is a tool call in an assistant message. Index is set in
// stream chunks only.
type ChatToolCall struct {
	Index    *int             `json:"index,omitempty"`
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function ChatFunctionCall `json:"function"`
}

// ChatFunctionCall is the function of a tool call: its name and its
// arguments as a JSON text.
type ChatFunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// The answer types below list their fields in alphabetical order: the
// platform wrote these bodies from maps before, and the bytes stay the same.

// ChatCompletion is the blocking answer of POST /v1/chat/completions.
type ChatCompletion struct {
	Choices []ChatChoice `json:"choices"`
	Created int64        `json:"created"`
	ID      string       `json:"id"`
	Model   string       `json:"model"`
	Object  string       `json:"object"`
	Usage   Usage        `json:"usage"`
}

// ChatChoice is the one choice of an answer.
type ChatChoice struct {
	FinishReason string        `json:"finish_reason"`
	Index        int           `json:"index"`
	Message      AnswerMessage `json:"message"`
}

// AnswerMessage is the assistant message of an answer. Content is null
// when the answer is only tool calls.
type AnswerMessage struct {
	Content   *string        `json:"content"`
	Role      string         `json:"role"`
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
}

// ChatCompletionChunk is one frame of a streamed answer.
type ChatCompletionChunk struct {
	Choices []ChunkChoice `json:"choices"`
	Created int64         `json:"created"`
	ID      string        `json:"id"`
	Model   string        `json:"model"`
	Object  string        `json:"object"`
	Usage   *Usage        `json:"usage,omitempty"`
}

// ChunkChoice is the one choice of a chunk.
type ChunkChoice struct {
	Delta        ChunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
	Index        int        `json:"index"`
}

// ChunkDelta is what a chunk adds to the answer.
type ChunkDelta struct {
	Content   *string        `json:"content,omitempty"`
	Role      string         `json:"role,omitempty"`
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
}

// OpenAIError is OpenAI's error body.
type OpenAIError struct {
	Error OpenAIErrorDetail `json:"error"`
}

// OpenAIErrorDetail is what went wrong, in OpenAI's terms: a type
// ("invalid_request_error", "authentication_error", …), the platform's code,
// and the offending request field in Param (null when none).
type OpenAIErrorDetail struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Type    string  `json:"type"`
}
