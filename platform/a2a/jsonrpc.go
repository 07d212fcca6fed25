package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxRequestBytes bounds a JSON-RPC request body (1 MiB).
const MaxRequestBytes = 1 << 20

// The JSON-RPC methods, in both versions.
const (
	MethodSendMessage   = "SendMessage"
	MethodStreamMessage = "SendStreamingMessage"
	MethodGetTask       = "GetTask"
	MethodCancelTask    = "CancelTask"
	MethodListTasks     = "ListTasks"
	MethodSubscribeTask = "SubscribeToTask"
	MethodExtendedCard  = "GetExtendedAgentCard"

	LegacySendMessage   = "message/send"
	LegacyStreamMessage = "message/stream"
	LegacyGetTask       = "tasks/get"
	LegacyCancelTask    = "tasks/cancel"
	LegacySubscribeTask = "tasks/resubscribe"
	LegacyExtendedCard  = "agent/getAuthenticatedExtendedCard"
)

// The JSON-RPC error codes: the standard ones and A2A's.
const (
	CodeParseError              = -32700
	CodeInvalidRequest          = -32600
	CodeMethodNotFound          = -32601
	CodeInvalidParams           = -32602
	CodeInternalError           = -32603
	CodeTaskNotFound            = -32001
	CodeTaskNotCancelable       = -32002
	CodeUnsupportedOperation    = -32004
	CodeContentTypeNotSupported = -32005
	// CodeExtendedCardNotConfigured is 1.0's
	// ExtendedAgentCardNotConfiguredError, 0.3's
	// AuthenticatedExtendedCardNotConfiguredError.
	CodeExtendedCardNotConfigured = -32007
	CodeVersionNotSupported       = -32009
)

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("a2a: %s (JSON-RPC error %d)", e.Message, e.Code) }

// Errorf is an Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Request is a parsed JSON-RPC request.
type Request struct {
	// ID is the request's id as sent: a JSON string or number.
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	// Dialect is the protocol version the method belongs to; Op the
	// method in version-neutral terms (one of the Method* names).
	Dialect Dialect
	Op      string
}

// Streams reports whether the request asks for a stream.
func (r *Request) Streams() bool { return r.Op == MethodStreamMessage || r.Op == MethodSubscribeTask }

// methods maps each method name to its operation and version. ListTasks
// is 1.0's alone: protocol 0.3 has no JSON-RPC method to list tasks.
var methods = map[string]struct {
	op string
	d  Dialect
}{
	MethodSendMessage: {MethodSendMessage, V1}, MethodStreamMessage: {MethodStreamMessage, V1},
	MethodGetTask: {MethodGetTask, V1}, MethodCancelTask: {MethodCancelTask, V1},
	MethodListTasks: {MethodListTasks, V1}, MethodSubscribeTask: {MethodSubscribeTask, V1}, MethodExtendedCard: {MethodExtendedCard, V1},
	LegacySendMessage: {MethodSendMessage, V03}, LegacyStreamMessage: {MethodStreamMessage, V03},
	LegacyGetTask: {MethodGetTask, V03}, LegacyCancelTask: {MethodCancelTask, V03},
	LegacySubscribeTask: {MethodSubscribeTask, V03}, LegacyExtendedCard: {MethodExtendedCard, V03},
}

// ParseRequest parses a JSON-RPC 2.0 request body. The returned Request
// carries the id whenever one could be read, for the error response. A
// batch (an array) is refused: A2A does not use them. A request without an
// id (a notification) is refused too, since every A2A method answers.
func ParseRequest(body []byte) (*Request, *Error) {
	if len(body) > MaxRequestBytes {
		return &Request{}, Errorf(CodeInvalidRequest, "request exceeds %d bytes", MaxRequestBytes)
	}
	if !utf8.Valid(body) {
		return &Request{}, Errorf(CodeParseError, "request is not UTF-8")
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if !json.Valid(trimmed) {
			return &Request{}, Errorf(CodeParseError, "request is not valid JSON")
		}
		return &Request{}, Errorf(CodeInvalidRequest, "batch requests are not supported")
	}
	var raw struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		if _, ok := err.(*json.UnmarshalTypeError); ok {
			return &Request{}, Errorf(CodeInvalidRequest, "request must be a JSON object with jsonrpc, id, method and params")
		}
		return &Request{}, Errorf(CodeParseError, "request is not valid JSON: %v", err)
	}
	if dec.More() {
		return &Request{}, Errorf(CodeParseError, "request must be a single JSON object")
	}
	req := &Request{}
	switch {
	case len(raw.ID) == 0 || string(raw.ID) == "null":
		return req, Errorf(CodeInvalidRequest, "field \"id\" is required (a string or a number)")
	case raw.ID[0] == '"' || raw.ID[0] == '-' || (raw.ID[0] >= '0' && raw.ID[0] <= '9'):
		req.ID = raw.ID
	default:
		return req, Errorf(CodeInvalidRequest, "field \"id\" must be a string or a number")
	}
	if raw.JSONRPC == nil || *raw.JSONRPC != "2.0" {
		return req, Errorf(CodeInvalidRequest, "field \"jsonrpc\" must be \"2.0\"")
	}
	if raw.Method == nil || *raw.Method == "" {
		return req, Errorf(CodeInvalidRequest, "field \"method\" is required")
	}
	req.Method = *raw.Method
	m, ok := methods[req.Method]
	if !ok {
		return req, Errorf(CodeMethodNotFound, "method %q is not supported (supported: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, GetExtendedAgentCard and their 0.3 names; 0.3 has no tasks/list)", truncate(req.Method, 64))
	}
	req.Op, req.Dialect = m.op, m.d
	if req.Op == MethodExtendedCard && (len(raw.Params) == 0 || string(raw.Params) == "null") {
		// The extended card's request has no required field: its params
		// may be left out.
		req.Params = json.RawMessage("{}")
		return req, nil
	}
	if len(raw.Params) == 0 || raw.Params[0] != '{' {
		return req, Errorf(CodeInvalidParams, "field \"params\" must be an object")
	}
	req.Params = raw.Params
	return req, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// SendParams are the params of SendMessage and SendStreamingMessage.
type SendParams struct {
	Message Message
	// HistoryLength, when set, bounds the history of the task answered.
	HistoryLength *int
	// Blocking is false when the client asked for the task right away
	// (1.0 returnImmediately, 0.3 blocking:false).
	Blocking bool
}

// DecodeSendParams reads the params of a send request. The message must
// have an id, the user role and at least one part.
func DecodeSendParams(params json.RawMessage) (*SendParams, *Error) {
	var raw struct {
		Message       *Message `json:"message"`
		Configuration *struct {
			HistoryLength     *int  `json:"historyLength"`
			Blocking          *bool `json:"blocking"`
			ReturnImmediately bool  `json:"returnImmediately"`
		} `json:"configuration"`
	}
	if err := json.Unmarshal(params, &raw); err != nil {
		return nil, Errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	if raw.Message == nil {
		return nil, Errorf(CodeInvalidParams, "field \"message\" is required")
	}
	m := raw.Message
	m.normalize()
	switch {
	case m.MessageID == "":
		return nil, Errorf(CodeInvalidParams, "field \"message.messageId\" is required")
	case m.Role != RoleUser:
		return nil, Errorf(CodeInvalidParams, "field \"message.role\" must be the user's")
	case len(m.Parts) == 0:
		return nil, Errorf(CodeInvalidParams, "field \"message.parts\" must not be empty")
	}
	p := &SendParams{Message: *m, Blocking: true}
	if c := raw.Configuration; c != nil {
		p.HistoryLength = c.HistoryLength
		if c.ReturnImmediately || (c.Blocking != nil && !*c.Blocking) {
			p.Blocking = false
		}
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return nil, Errorf(CodeInvalidParams, "field \"configuration.historyLength\" must not be negative")
	}
	return p, nil
}

// TaskParams are the params of GetTask and CancelTask.
type TaskParams struct {
	ID            string
	HistoryLength *int
}

// DecodeTaskParams reads the params of a task request.
func DecodeTaskParams(params json.RawMessage) (*TaskParams, *Error) {
	var raw struct {
		ID            string `json:"id"`
		HistoryLength *int   `json:"historyLength"`
	}
	if err := json.Unmarshal(params, &raw); err != nil {
		return nil, Errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	if raw.ID == "" {
		return nil, Errorf(CodeInvalidParams, "field \"id\" is required")
	}
	if raw.HistoryLength != nil && *raw.HistoryLength < 0 {
		return nil, Errorf(CodeInvalidParams, "field \"historyLength\" must not be negative")
	}
	return &TaskParams{ID: raw.ID, HistoryLength: raw.HistoryLength}, nil
}

// Response is a JSON-RPC response: a result or an error.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Result is the response to id carrying result.
func Result(id json.RawMessage, result any) Response {
	return Response{JSONRPC: "2.0", ID: nullID(id), Result: result}
}

// ErrorResponse is the response to id carrying err.
func ErrorResponse(id json.RawMessage, err *Error) Response {
	return Response{JSONRPC: "2.0", ID: nullID(id), Error: err}
}

func nullID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

// ParseVersion reads the A2A-Version a client sent: its Major.Minor (a
// patch number is ignored, as the specification says), an empty value
// meaning 0.3. It reports false for a version this package does not speak
// (the answer is then VersionNotSupportedError, -32009).
func ParseVersion(v string) (Dialect, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return V03, true
	}
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 || (len(parts) == 3 && !digits(parts[2])) {
		return 0, false
	}
	switch parts[0] + "." + parts[1] {
	case Version:
		return V1, true
	case LegacyVersion:
		return V03, true
	}
	return 0, false
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// Bounds of ListTasks' pages, and of the page token a client sends back.
const (
	defaultPageSize = 50
	maxPageSize     = 100
	maxPageToken    = 1024
)

// ListParams are the params of ListTasks.
type ListParams struct {
	// ContextID, when set, keeps the tasks of one context.
	ContextID string
	// State, when set, keeps the tasks in this state.
	State State
	// PageSize is the most tasks a page holds: 1 to 100, 50 when the
	// client names none.
	PageSize int
	// PageToken is the nextPageToken of the previous page; empty for the
	// first.
	PageToken string
	// HistoryLength, when set, bounds each task's history.
	HistoryLength *int
	// StatusAfter, when set, keeps the tasks whose status changed at or
	// after it.
	StatusAfter time.Time
	// IncludeArtifacts asks for the tasks' artifacts (left out by
	// default).
	IncludeArtifacts bool
}

// v1States are the task states by their 1.0 enum number, as ProtoJSON
// also writes them.
var v1States = []State{"", StateSubmitted, StateWorking, StateCompleted, StateFailed, StateCanceled, StateInputRequired, StateRejected, StateAuthRequired}

// DecodeListParams reads the params of ListTasks.
func DecodeListParams(params json.RawMessage) (*ListParams, *Error) {
	var raw struct {
		ContextID            string          `json:"contextId"`
		Status               json.RawMessage `json:"status"`
		PageSize             *int            `json:"pageSize"`
		PageToken            string          `json:"pageToken"`
		HistoryLength        *int            `json:"historyLength"`
		StatusTimestampAfter *string         `json:"statusTimestampAfter"`
		IncludeArtifacts     *bool           `json:"includeArtifacts"`
	}
	if err := json.Unmarshal(params, &raw); err != nil {
		return nil, Errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	p := &ListParams{ContextID: raw.ContextID, PageSize: defaultPageSize, PageToken: raw.PageToken, HistoryLength: raw.HistoryLength,
		IncludeArtifacts: raw.IncludeArtifacts != nil && *raw.IncludeArtifacts}
	if raw.PageSize != nil {
		p.PageSize = *raw.PageSize
	}
	if p.PageSize < 1 || p.PageSize > maxPageSize {
		return nil, Errorf(CodeInvalidParams, "field \"pageSize\" must be from 1 to %d", maxPageSize)
	}
	if len(p.PageToken) > maxPageToken {
		return nil, Errorf(CodeInvalidParams, "field \"pageToken\" is not a token this server gave")
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return nil, Errorf(CodeInvalidParams, "field \"historyLength\" must not be negative")
	}
	if raw.StatusTimestampAfter != nil {
		t, err := time.Parse(time.RFC3339Nano, *raw.StatusTimestampAfter)
		if err != nil {
			return nil, Errorf(CodeInvalidParams, "field \"statusTimestampAfter\" must be an ISO 8601 time such as 2026-01-02T15:04:05Z")
		}
		p.StatusAfter = t
	}
	if len(raw.Status) > 0 && string(raw.Status) != "null" {
		var ok bool
		if p.State, ok = parseState(raw.Status); !ok {
			return nil, Errorf(CodeInvalidParams, "field \"status\" must be a task state: TASK_STATE_SUBMITTED, TASK_STATE_WORKING, TASK_STATE_COMPLETED, TASK_STATE_FAILED, TASK_STATE_CANCELED, TASK_STATE_REJECTED, TASK_STATE_INPUT_REQUIRED or TASK_STATE_AUTH_REQUIRED")
		}
	}
	return p, nil
}

// parseState reads a 1.0 task state, by name (TASK_STATE_WORKING) or by
// number; TASK_STATE_UNSPECIFIED (0) is no state.
func parseState(raw json.RawMessage) (State, bool) {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		if name == "" || name == "TASK_STATE_UNSPECIFIED" {
			return "", true
		}
		s, ok := strings.CutPrefix(name, "TASK_STATE_")
		st := State(strings.ToLower(strings.ReplaceAll(s, "_", "-")))
		return st, ok && slices.Contains(v1States[1:], st)
	}
	var num int
	if json.Unmarshal(raw, &num) == nil && num >= 0 && num < len(v1States) {
		return v1States[num], true
	}
	return "", false
}

// TaskList is a page of ListTasks' answer.
type TaskList struct {
	Tasks []*Task
	// NextPageToken asks for the next page; empty on the last.
	NextPageToken string
	// PageSize is the page size used; TotalSize how many tasks match in
	// all pages.
	PageSize, TotalSize int
}

// Encode returns the list as ListTasks answers it (a 1.0 method).
func (l TaskList) Encode() any {
	tasks := make([]*Task, len(l.Tasks))
	for i, t := range l.Tasks {
		tasks[i] = t.encode(V1)
	}
	return struct {
		Tasks         []*Task `json:"tasks"`
		NextPageToken string  `json:"nextPageToken"`
		PageSize      int     `json:"pageSize"`
		TotalSize     int     `json:"totalSize"`
	}{tasks, l.NextPageToken, l.PageSize, l.TotalSize}
}
