package llm

import "encoding/json"

// ToolSpec describes a tool a model may call.
type ToolSpec struct {
	// Name must match ^[a-zA-Z0-9_-]{1,64}$ to be accepted by every provider.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is a JSON Schema object describing the arguments.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// ToolChoiceMode says whether and how the model must call tools.
type ToolChoiceMode string

// The tool-choice modes. The zero value leaves the choice to the provider's default (auto).
const (
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required"
	// ToolChoiceTool forces the tool named in ToolChoice.Name.
	ToolChoiceTool ToolChoiceMode = "tool"
)

// ToolChoice constrains the model's use of tools.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	Name string         `json:"name,omitempty"`
}

// FormatType is the kind of output a request asks for.
type FormatType string

// The response formats.
const (
	FormatText       FormatType = "text"
	FormatJSON       FormatType = "json"
	FormatJSONSchema FormatType = "json_schema"
)

// ResponseFormat asks for plain text, any JSON object, or JSON matching a schema.
type ResponseFormat struct {
	Type FormatType `json:"type"`
	// Name names the schema (required by some providers; defaults to "response").
	Name string `json:"name,omitempty"`
	// Schema is the JSON Schema for FormatJSONSchema.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Strict asks the provider to enforce the schema exactly, where supported.
	Strict bool `json:"strict,omitempty"`
}

// Request is one call to a chat model. Pointer fields are optional: nil leaves
// the provider's default.
type Request struct {
	Messages       []Message       `json:"messages"`
	Tools          []ToolSpec      `json:"tools,omitempty"`
	ToolChoice     ToolChoice      `json:"tool_choice,omitzero"`
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	TopP           *float64        `json:"top_p,omitempty"`
	// MaxTokens caps the output tokens; zero means the provider's default.
	MaxTokens int      `json:"max_tokens,omitempty"`
	Stop      []string `json:"stop,omitempty"`
	Seed      *int64   `json:"seed,omitempty"`
	// Extra holds provider-specific body fields, merged into the wire request
	// as given (for example {"reasoning_effort": "low"} for OpenAI).
	Extra map[string]any `json:"extra,omitempty"`
}

// Ptr returns a pointer to v, for the optional fields of [Request].
func Ptr[T any](v T) *T { return &v }

// FinishReason is why the model stopped, normalised across providers.
type FinishReason string

// The normalised finish reasons.
const (
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishContentFilter FinishReason = "content_filter"
	FinishError         FinishReason = "error"
	FinishOther         FinishReason = "other"
)

// Usage counts the tokens of one or more model calls.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// CachedTokens is the part of PromptTokens served from the provider's prompt cache.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// ReasoningTokens is the part of CompletionTokens spent on reasoning.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
	}
}

// IsZero reports whether no tokens were counted.
func (u Usage) IsZero() bool { return u == Usage{} }

// Response is a model's complete answer to a [Request].
type Response struct {
	// ID is the provider's response id, when it sends one.
	ID string `json:"id,omitempty"`
	// Model is the model that answered, as the provider names it.
	Model        string       `json:"model,omitempty"`
	Message      Message      `json:"message"`
	Usage        Usage        `json:"usage"`
	FinishReason FinishReason `json:"finish_reason"`
}

// Text returns the text of the response message.
func (r *Response) Text() string { return r.Message.Text() }
