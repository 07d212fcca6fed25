// Package a2a is the Agent2Agent (A2A) protocol as Weft speaks it: the data
// model (messages, parts, tasks, task states, the streamed events and the
// agent card), the JSON-RPC 2.0 binding's request parser and responses,
// and a client of remote A2A agents.
//
// Two versions of the protocol are in use and both are spoken. Version 1.0
// (the current specification, and what the official JavaScript SDK,
// @a2a-js/sdk 1.x, speaks natively) names its JSON-RPC methods SendMessage,
// SendStreamingMessage, GetTask and CancelTask and writes enums in
// ProtoJSON form (ROLE_USER, TASK_STATE_COMPLETED) and results as
// one-field objects ({"task": …}, {"statusUpdate": …}). Version 0.3 names
// them message/send, message/stream, tasks/get and tasks/cancel and tags
// every object with a "kind" ("task", "status-update", …). The method name
// of a request says which version it speaks, and the answer is written in
// the same one ([Dialect]).
//
// Why by hand rather than with the official Go SDK: the module proxy
// serves github.com/a2aproject/a2a-go only at v0.3.3, which implements
// protocol 0.3 alone (its 1.0 line is not served), and brings gRPC and
// protobuf with it. The JSON-RPC binding is small; this package keeps it to
// the four methods Weft serves, with read-time size limits and a fuzzed
// parser.
package a2a

import (
	"encoding/json"
	"strings"
)

// The protocol versions, as the A2A-Version header and agent cards name
// them.
const (
	Version       = "1.0"
	LegacyVersion = "0.3"
	// VersionHeader carries the protocol version a client speaks.
	VersionHeader = "A2A-Version"
	// CardPath is the agent card's path under an agent's base URL.
	CardPath = ".well-known/agent-card.json"
)

// Dialect is a version of the protocol's JSON form.
type Dialect uint8

// The dialects.
const (
	// V1 is protocol 1.0.
	V1 Dialect = iota
	// V03 is protocol 0.3.
	V03
)

// Role says who wrote a message: "user" or "agent".
type Role string

// The roles.
const (
	RoleUser  Role = "user"
	RoleAgent Role = "agent"
)

// State is a task's state, in protocol 0.3's spelling ("completed").
type State string

// The task states.
const (
	StateSubmitted     State = "submitted"
	StateWorking       State = "working"
	StateCompleted     State = "completed"
	StateFailed        State = "failed"
	StateCanceled      State = "canceled"
	StateRejected      State = "rejected"
	StateInputRequired State = "input-required"
	StateAuthRequired  State = "auth-required"
)

// Terminal reports whether a task in this state is over.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

// File is a protocol 0.3 file part's content.
type File struct {
	URI      string `json:"uri,omitempty"`
	Bytes    string `json:"bytes,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Part is a piece of a message or an artifact: text, structured data, or
// a file (by URL or inline bytes). Weft reads and writes text and data.
type Part struct {
	Kind string          `json:"kind,omitempty"`
	Text *string         `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	// URL and Raw are a 1.0 file part; File a 0.3 one.
	URL       string         `json:"url,omitempty"`
	Raw       string         `json:"raw,omitempty"`
	File      *File          `json:"file,omitempty"`
	MediaType string         `json:"mediaType,omitempty"`
	Filename  string         `json:"filename,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TextPart is a text part.
func TextPart(s string) Part { return Part{Text: &s} }

// IsFile reports whether the part is a file.
func (p Part) IsFile() bool { return p.URL != "" || p.Raw != "" || p.File != nil }

// Message is one message of a conversation.
type Message struct {
	Kind      string         `json:"kind,omitempty"`
	MessageID string         `json:"messageId"`
	ContextID string         `json:"contextId,omitempty"`
	TaskID    string         `json:"taskId,omitempty"`
	Role      Role           `json:"role"`
	Parts     []Part         `json:"parts"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// Text joins the message's text parts and its data parts (as JSON text),
// one per line.
func (m *Message) Text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		var s string
		switch {
		case p.Text != nil:
			s = *p.Text
		case len(p.Data) > 0:
			s = string(p.Data)
		default:
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	return b.String()
}

// Status is a task's state and the message that goes with it.
type Status struct {
	State     State    `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name,omitempty"`
	Parts      []Part `json:"parts"`
}

// Task is a unit of work: one turn of a Weft agent.
type Task struct {
	Kind      string     `json:"kind,omitempty"`
	ID        string     `json:"id"`
	ContextID string     `json:"contextId"`
	Status    Status     `json:"status"`
	Artifacts []Artifact `json:"artifacts,omitempty"`
	History   []Message  `json:"history,omitempty"`
}

// StatusUpdate is a streamed change of a task's status.
type StatusUpdate struct {
	Kind      string `json:"kind,omitempty"`
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId"`
	Status    Status `json:"status"`
	// Final is protocol 0.3's end-of-stream flag (1.0 ends the stream
	// with a terminal state instead).
	Final *bool `json:"final,omitempty"`
}

// ArtifactUpdate is a streamed artifact, or a chunk of one.
type ArtifactUpdate struct {
	Kind      string   `json:"kind,omitempty"`
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
}

// Event is one result of a stream (or of message/send: a Task or a
// Message); exactly one field is set.
type Event struct {
	Task           *Task
	Message        *Message
	StatusUpdate   *StatusUpdate
	ArtifactUpdate *ArtifactUpdate
}

// Encode returns the event's JSON-RPC result in dialect d.
func (e Event) Encode(d Dialect) any {
	switch {
	case e.Task != nil:
		t := e.Task.encode(d)
		if d == V03 {
			return t
		}
		return map[string]any{"task": t}
	case e.Message != nil:
		m := e.Message.encode(d)
		if d == V03 {
			return m
		}
		return map[string]any{"message": m}
	case e.StatusUpdate != nil:
		u := *e.StatusUpdate
		u.Status = u.Status.encode(d)
		if d == V03 {
			u.Kind = "status-update"
			final := u.Status.State.Terminal()
			u.Final = &final
			return u
		}
		u.Kind, u.Final = "", nil
		return map[string]any{"statusUpdate": u}
	case e.ArtifactUpdate != nil:
		u := *e.ArtifactUpdate
		u.Artifact = u.Artifact.encode(d)
		if d == V03 {
			u.Kind = "artifact-update"
			return u
		}
		u.Kind = ""
		return map[string]any{"artifactUpdate": u}
	}
	return nil
}

// EncodeTask returns a task as GetTask and CancelTask answer it.
func EncodeTask(t *Task, d Dialect) any { return t.encode(d) }

func (t *Task) encode(d Dialect) *Task {
	out := *t
	out.Kind = kind(d, "task")
	out.Status = t.Status.encode(d)
	out.Artifacts = make([]Artifact, len(t.Artifacts))
	for i, a := range t.Artifacts {
		out.Artifacts[i] = a.encode(d)
	}
	out.History = make([]Message, len(t.History))
	for i := range t.History {
		out.History[i] = *t.History[i].encode(d)
	}
	return &out
}

func (s Status) encode(d Dialect) Status {
	if d == V1 {
		s.State = State("TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(string(s.State), "-", "_")))
	}
	if s.Message != nil {
		s.Message = s.Message.encode(d)
	}
	return s
}

func (m *Message) encode(d Dialect) *Message {
	out := *m
	out.Kind = kind(d, "message")
	if d == V1 {
		out.Role = Role("ROLE_" + strings.ToUpper(string(m.Role)))
	}
	out.Parts = encodeParts(m.Parts, d)
	return &out
}

func (a Artifact) encode(d Dialect) Artifact {
	a.Parts = encodeParts(a.Parts, d)
	return a
}

func encodeParts(ps []Part, d Dialect) []Part {
	out := make([]Part, len(ps))
	for i, p := range ps {
		p.Kind = ""
		if d == V03 {
			switch {
			case p.Text != nil:
				p.Kind = "text"
			case len(p.Data) > 0:
				p.Kind = "data"
			}
		}
		out[i] = p
	}
	return out
}

func kind(d Dialect, k string) string {
	if d == V03 {
		return k
	}
	return ""
}

// normalize rewrites 1.0 enum spellings (ROLE_USER, TASK_STATE_WORKING) in
// the 0.3 ones this package keeps.
func normalizeRole(r Role) Role {
	if s, ok := strings.CutPrefix(string(r), "ROLE_"); ok {
		return Role(strings.ToLower(s))
	}
	return r
}

func (m *Message) normalize() {
	m.Role = normalizeRole(m.Role)
}
