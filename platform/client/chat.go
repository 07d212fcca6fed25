package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"

	"github.com/weftlabs/weft/internal/sse"
	"github.com/weftlabs/weft/platform/api"
)

// ChatRequest is one chat turn.
type ChatRequest struct {
	// Query is the user's message.
	Query string `json:"query"`
	// SessionID continues a session of the agent; empty starts a new one,
	// whose id the answer carries.
	SessionID string `json:"session_id,omitempty"`
	// User names the end user, for the model and the logs.
	User string `json:"user,omitempty"`
	// IdempotencyKey, when set, makes retries of the request safe: the
	// server runs the turn once and answers repeats with its result.
	IdempotencyKey string `json:"-"`
}

// The wire types of a turn, from package api (one definition for the
// server, this client and the CLI).
type (
	// ChatAnswer is the answer of a turn.
	ChatAnswer = api.ChatAnswer
	// RagFragment is a chunk recalled from a knowledge base for a turn.
	RagFragment = api.RagFragment
	// ToolCallDone is a tool call a turn made, with its outcome.
	ToolCallDone = api.ToolCallOutcome
	// Usage counts the tokens of a turn.
	Usage = api.Usage
	// Event is one event of a chat stream. Type says which fields are set.
	Event = api.Event
)

// The event types of a chat stream (see docs/api.md, "Chat").
const (
	EventCreated       = api.EventCreated
	EventRetrieval     = api.EventRetrieval
	EventMessageDelta  = api.EventMessageDelta
	EventToolCall      = api.EventToolCall
	EventToolResult    = api.EventToolResult
	EventDelegateStart = api.EventDelegateStart
	EventDelegateDelta = api.EventDelegateDelta
	EventDelegateEnd   = api.EventDelegateEnd
	EventCompleted     = api.EventCompleted
	EventError         = api.EventError
)

// Chat runs a turn and returns the whole answer
// (POST /v1/agents/{id}/chat with stream false).
func (c *Client) Chat(ctx context.Context, agentID string, r ChatRequest) (*ChatAnswer, error) {
	req, err := c.chatRequest(ctx, agentID, r, false)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out ChatAnswer
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("client: decode chat answer: %w", err)
	}
	return &out, nil
}

func (c *Client) chatRequest(ctx context.Context, agentID string, r ChatRequest, stream bool) (*http.Request, error) {
	if agentID == "" {
		return nil, errors.New("client: empty agent id")
	}
	body := api.ChatRequest{Query: r.Query, SessionID: r.SessionID, User: r.User, Stream: stream}
	req, err := c.newRequest(ctx, http.MethodPost, "/v1/agents/"+pathEscape(agentID)+"/chat", body)
	if err != nil {
		return nil, err
	}
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	if r.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", r.IdempotencyKey)
	}
	return req, nil
}

// ErrStreamEnded reports a chat stream that ended without its terminal
// event (chat.completed or error): the connection broke or the server died.
// What the server persisted before that stays; read it with
// [Client.Messages].
var ErrStreamEnded = errors.New("client: chat stream ended before its last event")

// maxEventBytes bounds one event of a chat stream (chat.completed repeats
// the whole answer and its fragments).
const maxEventBytes = 8 << 20

// ChatStream runs a turn and yields its events as they arrive
// (POST /v1/agents/{id}/chat with stream true). The last event is
// chat.completed, with Answer set; a failed turn ends with an error event,
// yielded together with an *Error (Status 0) that carries its code. A
// stream that breaks off yields [ErrStreamEnded]. Stopping the iteration,
// or cancelling ctx, closes the connection, which stops the turn on the
// server.
func (c *Client) ChatStream(ctx context.Context, agentID string, r ChatRequest) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		req, err := c.chatRequest(ctx, agentID, r, true)
		if err != nil {
			yield(Event{}, err)
			return
		}
		resp, err := c.send(req)
		if err != nil {
			yield(Event{}, err)
			return
		}
		defer resp.Body.Close()
		rd := sse.NewReader(resp.Body, sse.WithMaxLineSize(maxEventBytes))
		for {
			raw, err := rd.NextRaw()
			if err != nil {
				if err == io.EOF {
					err = ErrStreamEnded
				} else if ctx.Err() != nil {
					err = ctx.Err()
				} else {
					err = fmt.Errorf("%w: %w", ErrStreamEnded, err)
				}
				yield(Event{}, err)
				return
			}
			ev, err := decodeEvent(raw)
			if err != nil {
				yield(Event{}, err)
				return
			}
			switch ev.Type {
			case EventError:
				yield(ev, &Error{Code: ev.Code, Message: ev.Message, RequestID: resp.Header.Get("X-Request-Id")})
				return
			case EventCompleted:
				yield(ev, nil)
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// decodeEvent parses one SSE frame of a chat stream.
func decodeEvent(raw sse.RawEvent) (Event, error) {
	var ev Event
	if err := json.Unmarshal(raw.Data, &ev); err != nil {
		return Event{}, fmt.Errorf("client: malformed %q event: %w", raw.Event, err)
	}
	if ev.Type == "" {
		ev.Type = raw.Event
	}
	ev.Data = append(json.RawMessage(nil), raw.Data...)
	if ev.Type == EventCompleted {
		var ans ChatAnswer
		if err := json.Unmarshal(raw.Data, &ans); err != nil {
			return Event{}, fmt.Errorf("client: malformed chat.completed event: %w", err)
		}
		ev.Answer = &ans
	}
	return ev, nil
}

// Cancel stops the running turn of session sessionID, on whichever replica
// runs it (POST /v1/chat/cancel). What the turn persisted stays.
func (c *Client) Cancel(ctx context.Context, sessionID string) error {
	if sessionID == "" {
		return errors.New("client: empty session id")
	}
	return c.do(ctx, http.MethodPost, "/v1/chat/cancel", api.CancelRequest{SessionID: sessionID}, nil)
}

// CancelMessage stops the turn whose answer will have id messageID (the
// message_id of its chat.created event).
func (c *Client) CancelMessage(ctx context.Context, messageID string) error {
	if messageID == "" {
		return errors.New("client: empty message id")
	}
	return c.do(ctx, http.MethodPost, "/v1/chat/cancel", api.CancelRequest{MessageID: messageID}, nil)
}
