package llm

import "strings"

// Role is the author of a message.
type Role string

// The roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// PartKind says what a [Part] holds.
type PartKind string

// The kinds of message part.
const (
	PartText  PartKind = "text"
	PartImage PartKind = "image"
)

// Part is one piece of a message's content: text or an image.
type Part struct {
	Kind  PartKind `json:"kind"`
	Text  string   `json:"text,omitempty"`
	Image *Image   `json:"image,omitempty"`
}

// Image is an image given to a model, either by URL or inline bytes.
type Image struct {
	// URL is an http(s) or data: URL. Either URL or Data is set.
	URL string `json:"url,omitempty"`
	// Data holds the raw image bytes; MIMEType names their format.
	Data     []byte `json:"data,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	// Detail is a provider hint ("low", "high", "auto"); empty means default.
	Detail string `json:"detail,omitempty"`
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Kind: PartText, Text: s} }

// ImageURLPart returns an image part that refers to an http(s) or data: URL.
func ImageURLPart(url string) Part { return Part{Kind: PartImage, Image: &Image{URL: url}} }

// ImageDataPart returns an image part holding inline bytes of the given MIME type.
func ImageDataPart(mimeType string, data []byte) Part {
	return Part{Kind: PartImage, Image: &Image{Data: data, MIMEType: mimeType}}
}

// ToolCall is an assistant's request to run a tool.
type ToolCall struct {
	// ID identifies the call; the tool result message carries it back.
	ID string `json:"id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Arguments is the JSON text the model produced for the tool's
	// parameters. It is kept verbatim: models sometimes produce invalid JSON,
	// and the tool layer answers that to the model.
	Arguments string `json:"arguments"`
}

// Message is one message of a conversation.
//
// A user message carries Parts (text and images); a system or assistant
// message carries text parts; an assistant message may carry ToolCalls; a tool
// message carries the result of the call named by ToolCallID.
type Message struct {
	Role  Role   `json:"role"`
	Parts []Part `json:"parts,omitempty"`
	// Reasoning is the model's reasoning text ("thinking"), when the provider
	// returns it. It is informational and is not sent back to providers.
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are the tools an assistant message asks to run.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool name of a tool message, or an optional participant
	// name of a user message.
	Name string `json:"name,omitempty"`
	// IsError marks a tool message whose content reports a failure.
	IsError bool `json:"is_error,omitempty"`
}

// SystemMessage returns a system message with the given text.
func SystemMessage(text string) Message {
	return Message{Role: RoleSystem, Parts: []Part{TextPart(text)}}
}

// UserMessage returns a user message with the given text.
func UserMessage(text string) Message {
	return Message{Role: RoleUser, Parts: []Part{TextPart(text)}}
}

// UserParts returns a user message made of the given parts (text and images).
func UserParts(parts ...Part) Message { return Message{Role: RoleUser, Parts: parts} }

// AssistantMessage returns an assistant message with the given text.
func AssistantMessage(text string) Message {
	return Message{Role: RoleAssistant, Parts: []Part{TextPart(text)}}
}

// ToolResultMessage returns the tool message that answers call id of tool name.
func ToolResultMessage(id, name, content string, isError bool) Message {
	return Message{Role: RoleTool, ToolCallID: id, Name: name, Parts: []Part{TextPart(content)}, IsError: isError}
}

// Text returns the concatenation of the message's text parts.
func (m Message) Text() string {
	switch len(m.Parts) {
	case 0:
		return ""
	case 1:
		if m.Parts[0].Kind == PartText {
			return m.Parts[0].Text
		}
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Kind == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// HasImages reports whether the message has an image part.
func (m Message) HasImages() bool {
	for _, p := range m.Parts {
		if p.Kind == PartImage {
			return true
		}
	}
	return false
}
