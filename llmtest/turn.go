package llmtest

import (
	"iter"
	"net/http"
	"strconv"
	"time"

	"github.com/weftlabs/weft/llm"
)

// Turn scripts one HTTP exchange with a [Server]: the answer, and how it
// travels on the wire. The zero Turn answers an empty text with finish
// reason "stop".
type Turn struct {
	// Text is the answer text.
	Text string
	// Reasoning is sent as reasoning_content before the text.
	Reasoning string
	// ToolCalls are sent after the text.
	ToolCalls []ToolCall
	// Usage is reported in the answer; zero means an estimate from the
	// lengths of the request's messages and the answer (about 4 characters
	// a token).
	Usage llm.Usage
	// FinishReason is the wire finish reason; empty means "tool_calls" when
	// there are tool calls and "stop" otherwise.
	FinishReason string
	// Model is the model named in the answer; empty means the request's.
	Model string

	// Chunks splits the text (and the reasoning) of a stream into this many
	// pieces of about equal length; 0 sends one piece per word.
	Chunks int
	// ArgChunks splits each tool call's arguments into this many fragments
	// after the fragment that carries the id and name; 0 means 3.
	ArgChunks int
	// KeepAlive sends a ": keep-alive" comment before every event.
	KeepAlive bool
	// UsageInFinish puts the usage on the finish chunk (as Z.ai and
	// DeepSeek do) instead of a separate chunk with "choices":[] that is
	// sent only when the request asks for stream_options.include_usage.
	UsageInFinish bool
	// DuplicateFinish sends the finish chunk twice (as OpenRouter does).
	DuplicateFinish bool
	// NoFinish ends a stream at EOF with no finish reason and no [DONE]; a
	// non-streamed answer is cut off in the middle of its body.
	NoFinish bool

	// Status, when not 0 or 200, answers with this HTTP status and an
	// OpenAI-style error body made from Error.
	Status int
	// Error is the error body of a Status answer. With Status 0 or 200 it
	// is sent after HTTP 200, as data: {"error":{...}} after FailAfter
	// content chunks of a stream (then the connection closes, with no
	// [DONE]), or as the whole body of a non-streamed answer.
	Error *APIError
	// FailAfter is the number of content chunks (text, reasoning and tool
	// call fragments) sent before Error.
	FailAfter int
	// Header holds extra response headers (Retry-After, x-request-id, …).
	Header http.Header
	// Delay waits before sending the response headers: a slow first byte,
	// for timeout tests. The wait ends early when the client goes away or
	// the server closes.
	Delay time.Duration
	// ChunkDelay waits between the events of a stream, with the same early
	// end as Delay.
	ChunkDelay time.Duration
	// StallAfter, when above 0, hangs a stream after that many content
	// chunks: the connection stays open and nothing more is sent until the
	// client goes away or the server closes (a model stuck mid-answer).
	StallAfter int

	// Raw, when set, is sent verbatim as the response body (for example a
	// recorded SSE stream from testdata), with status 200 and content type
	// RawContentType (default "text/event-stream").
	Raw            string
	RawContentType string
}

// ToolCall is a tool call made by a [Turn].
type ToolCall struct {
	// ID is the call id; empty means "call_<n>".
	ID string
	// Name is the tool's name.
	Name string
	// Arguments is the JSON text of the arguments.
	Arguments string
}

// APIError is the OpenAI-style error object: {"error":{"message", "type",
// "param", "code"}}.
type APIError struct {
	Message string `json:"message"`
	Type    string `json:"type,omitempty"`
	Param   string `json:"param,omitempty"`
	Code    string `json:"code,omitempty"`
}

// Reply returns a turn that answers text.
func Reply(text string) Turn { return Turn{Text: text} }

// CallTools returns a turn that answers with tool calls.
func CallTools(calls ...ToolCall) Turn { return Turn{ToolCalls: calls} }

// HTTPError returns a turn that answers status with an OpenAI-style error
// body of the given type and message.
func HTTPError(status int, errType, message string) Turn {
	return Turn{Status: status, Error: &APIError{Message: message, Type: errType}}
}

// RateLimited returns a 429 turn that asks the client to wait d, in both
// Retry-After-Ms (milliseconds) and Retry-After (whole seconds, rounded
// up), as OpenAI does.
func RateLimited(d time.Duration) Turn {
	h := http.Header{}
	h.Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
	h.Set("Retry-After", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	return Turn{
		Status: http.StatusTooManyRequests,
		Header: h,
		Error: &APIError{
			Message: "Rate limit reached for requests. Please try again in " + d.String() + ".",
			Type:    "requests",
			Code:    "rate_limit_exceeded",
		},
	}
}

// Unauthorized returns a 401 turn with OpenAI's invalid-key error body.
func Unauthorized() Turn {
	return Turn{
		Status: http.StatusUnauthorized,
		Error: &APIError{
			Message: "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.",
			Type:    "invalid_request_error",
			Code:    "invalid_api_key",
		},
	}
}

// ServerError returns a 500 turn.
func ServerError() Turn {
	return Turn{
		Status: http.StatusInternalServerError,
		Error:  &APIError{Message: "The server had an error while processing your request.", Type: "server_error"},
	}
}

// StreamError returns a turn that, after HTTP 200, streams text in word
// chunks, and after the first failAfter of them sends an error event and
// closes the stream without [DONE], as OpenAI does when a generation fails
// midway.
func StreamError(text string, failAfter int, message string) Turn {
	return Turn{
		Text:      text,
		FailAfter: failAfter,
		Error:     &APIError{Message: message, Type: "server_error"},
	}
}

// ContextTooLong returns a 400 turn with OpenAI's error for a request that
// does not fit the model's context window.
func ContextTooLong() Turn {
	return Turn{
		Status: http.StatusBadRequest,
		Error: &APIError{
			Message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. Please reduce the length of the messages.",
			Type:    "invalid_request_error",
			Code:    "context_length_exceeded",
		},
	}
}

// TextPieces returns the pieces the turn's text is streamed in (Chunks
// pieces, or one a word): what a fake of another wire sends as its
// deltas.
func (t Turn) TextPieces() iter.Seq[string] {
	return func(yield func(string) bool) { split(t.Text, t.Chunks, yield) }
}

// ArgPieces returns the fragments a tool call's arguments are streamed in
// (ArgChunks fragments, 3 when 0), after the one with its id and name.
func (t Turn) ArgPieces(args string) iter.Seq[string] {
	n := t.ArgChunks
	if n <= 0 {
		n = 3
	}
	return func(yield func(string) bool) { splitN(args, n, yield) }
}
