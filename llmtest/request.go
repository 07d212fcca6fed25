package llmtest

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Request is a request a [Server] received. The fields after Body are
// decoded from a chat-completions or embeddings body; use Decode for
// anything else.
type Request struct {
	Method string
	// Path is the URL path, e.g. "/v1/chat/completions".
	Path   string
	Header http.Header
	// Body is the raw request body.
	Body []byte

	// Model is the body's "model".
	Model string
	// Stream is the body's "stream".
	Stream bool
	// IncludeUsage is the body's "stream_options.include_usage".
	IncludeUsage bool
	// Messages are the chat messages.
	Messages []Message
	// Tools are the tools offered to the model.
	Tools []Tool
	// Input holds the texts of an embeddings request.
	Input []string
}

// Decode unmarshals the request body into v.
func (r *Request) Decode(v any) error { return json.Unmarshal(r.Body, v) }

// LastUserText returns the text of the last user message, or "".
func (r *Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text()
		}
	}
	return ""
}

// Message is one chat message of a request, as sent on the wire.
type Message struct {
	Role string `json:"role"`
	// Content is a JSON string, an array of content parts, or null.
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  []WireToolCall  `json:"tool_calls,omitempty"`
}

// WireToolCall is a tool call in an assistant message of a request.
type WireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is a tool offered in a request.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// Text returns the message's text: the content string, or its text parts
// joined.
func (m Message) Text() string {
	if len(m.Content) == 0 || m.Content[0] == 'n' {
		return ""
	}
	if m.Content[0] == '"' {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s
		}
		return ""
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// wireRequest is the union of the chat-completions and embeddings bodies,
// as far as the server reads them.
type wireRequest struct {
	Model         string    `json:"model"`
	Messages      []Message `json:"messages"`
	Stream        bool      `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools      []Tool          `json:"tools"`
	Input      json.RawMessage `json:"input"`
	Dimensions int             `json:"dimensions"`
}
