package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Limits of what a remote agent may send.
const (
	// MaxCardBytes bounds an agent card.
	MaxCardBytes = 1 << 20
	// MaxResponseBytes bounds a blocking JSON-RPC response and one event
	// of a stream.
	MaxResponseBytes = 8 << 20
)

// Client talks to one remote A2A agent through its card: it reads the
// card once, then speaks the version and uses the endpoint the card names,
// streaming when the card says the agent can.
type Client struct {
	cardURL string
	token   string
	hc      *http.Client
	nextID  atomic.Int64

	mu   sync.Mutex
	card *Card
}

// NewClient returns a client of the agent whose card is at url (a card's
// URL, ending in .json, or the agent's base URL, under which the card is
// at .well-known/agent-card.json). token, when set, is sent as a bearer
// token; hc makes every request.
func NewClient(url, token string, hc *http.Client) *Client {
	if !strings.HasSuffix(url, ".json") {
		url = strings.TrimSuffix(url, "/") + "/" + CardPath
	}
	return &Client{cardURL: url, token: token, hc: hc}
}

// Card fetches (once) and returns the agent's card.
func (c *Client) Card(ctx context.Context) (Card, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.card != nil {
		return *c.card, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cardURL, nil)
	if err != nil {
		return Card{}, fmt.Errorf("a2a: agent card: %w", err)
	}
	req.Header.Set(VersionHeader, Version)
	c.auth(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return Card{}, fmt.Errorf("a2a: agent card: %w", err)
	}
	defer resp.Body.Close()
	body, err := readLimited(resp.Body, MaxCardBytes)
	if err != nil {
		return Card{}, fmt.Errorf("a2a: agent card: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return Card{}, fmt.Errorf("a2a: agent card at %s: HTTP %d: %s", c.cardURL, resp.StatusCode, truncate(string(body), 200))
	}
	card, err := ParseCard(body)
	if err != nil {
		return Card{}, err
	}
	c.card = &card
	return card, nil
}

func (c *Client) auth(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// Send sends a user message and yields what the agent answers: the events
// of a stream when the agent streams, else the one result of a blocking
// send (a Task or a Message).
func (c *Client) Send(ctx context.Context, msg Message) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		card, err := c.Card(ctx)
		if err != nil {
			yield(Event{}, err)
			return
		}
		method := map[bool]string{false: MethodSendMessage, true: MethodStreamMessage}[card.Streaming]
		if card.Dialect == V03 {
			method = map[bool]string{false: LegacySendMessage, true: LegacyStreamMessage}[card.Streaming]
		}
		id := c.nextID.Add(1)
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method,
			"params": map[string]any{"message": msg.encode(card.Dialect)}})
		if err != nil {
			yield(Event{}, fmt.Errorf("a2a: %w", err))
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, card.URL, bytes.NewReader(body))
		if err != nil {
			yield(Event{}, fmt.Errorf("a2a: %w", err))
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(VersionHeader, map[Dialect]string{V1: Version, V03: LegacyVersion}[card.Dialect])
		if card.Streaming {
			req.Header.Set("Accept", "text/event-stream")
		}
		c.auth(req)
		resp, err := c.hc.Do(req)
		if err != nil {
			yield(Event{}, fmt.Errorf("a2a: %s: %w", method, err))
			return
		}
		defer resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			// A blocking answer, or an error before a stream began.
			raw, err := readLimited(resp.Body, MaxResponseBytes)
			if err == nil {
				var ev Event
				ev, err = decodeResponse(raw, card.Dialect, resp.StatusCode)
				if err == nil {
					yield(ev, nil)
					return
				}
			}
			yield(Event{}, fmt.Errorf("a2a: %s: %w", method, err))
			return
		}
		for data, err := range sseData(resp.Body, MaxResponseBytes) {
			if err != nil {
				yield(Event{}, fmt.Errorf("a2a: %s stream: %w", method, err))
				return
			}
			ev, err := decodeResponse(data, card.Dialect, resp.StatusCode)
			if err != nil {
				yield(Event{}, fmt.Errorf("a2a: %s stream: %w", method, err))
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("answer exceeds %d bytes", limit)
	}
	return b, nil
}

// sseData yields the data of each event of an SSE stream; an event larger
// than limit ends it with an error.
func sseData(r io.Reader, limit int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), limit+16)
		var data []byte
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case len(line) == 0:
				if len(data) > 0 {
					if !yield(data, nil) {
						return
					}
					data = nil
				}
			case bytes.HasPrefix(line, []byte("data:")):
				v := bytes.TrimPrefix(line[5:], []byte(" "))
				if len(data) > 0 {
					data = append(data, '\n')
				}
				if len(data)+len(v) > limit {
					yield(nil, fmt.Errorf("event exceeds %d bytes", limit))
					return
				}
				data = append(data, v...)
			}
		}
		if err := sc.Err(); err != nil {
			yield(nil, err)
			return
		}
		if len(data) > 0 {
			yield(data, nil)
		}
	}
}

// decodeResponse reads one JSON-RPC response into its event.
func decodeResponse(raw []byte, d Dialect, status int) (Event, error) {
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   *Error          `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return Event{}, fmt.Errorf("HTTP %d, not a JSON-RPC response: %s", status, truncate(string(raw), 200))
	}
	if resp.Error != nil {
		return Event{}, resp.Error
	}
	if len(resp.Result) == 0 {
		return Event{}, errors.New("JSON-RPC response without result or error")
	}
	return DecodeEvent(resp.Result, d)
}

// DecodeEvent reads a result of SendMessage or of a stream, in dialect d.
func DecodeEvent(raw json.RawMessage, d Dialect) (Event, error) {
	var ev Event
	if d == V03 {
		var k struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &k); err != nil {
			return ev, fmt.Errorf("a2a: result: %w", err)
		}
		var err error
		switch k.Kind {
		case "task":
			err = json.Unmarshal(raw, &ev.Task)
		case "message":
			err = json.Unmarshal(raw, &ev.Message)
		case "status-update":
			err = json.Unmarshal(raw, &ev.StatusUpdate)
		case "artifact-update":
			err = json.Unmarshal(raw, &ev.ArtifactUpdate)
		default:
			return ev, fmt.Errorf("a2a: result of unknown kind %q", truncate(k.Kind, 32))
		}
		if err != nil {
			return Event{}, fmt.Errorf("a2a: result: %w", err)
		}
	} else {
		var one struct {
			Task           *Task           `json:"task"`
			Message        *Message        `json:"message"`
			StatusUpdate   *StatusUpdate   `json:"statusUpdate"`
			ArtifactUpdate *ArtifactUpdate `json:"artifactUpdate"`
		}
		if err := json.Unmarshal(raw, &one); err != nil {
			return ev, fmt.Errorf("a2a: result: %w", err)
		}
		ev = Event{Task: one.Task, Message: one.Message, StatusUpdate: one.StatusUpdate, ArtifactUpdate: one.ArtifactUpdate}
	}
	switch {
	case ev.Task != nil:
		ev.Task.Status.normalize()
		for i := range ev.Task.History {
			ev.Task.History[i].normalize()
		}
	case ev.Message != nil:
		ev.Message.normalize()
	case ev.StatusUpdate != nil:
		ev.StatusUpdate.Status.normalize()
	case ev.ArtifactUpdate != nil:
	default:
		return ev, errors.New("a2a: result is neither a task, a message nor an update")
	}
	return ev, nil
}

func normalizeState(s State) State {
	if v, ok := strings.CutPrefix(string(s), "TASK_STATE_"); ok {
		return State(strings.ToLower(strings.ReplaceAll(v, "_", "-")))
	}
	return s
}

func (s *Status) normalize() {
	s.State = normalizeState(s.State)
	if s.Message != nil {
		s.Message.normalize()
	}
}

// Cancel asks the agent to cancel a task.
func (c *Client) Cancel(ctx context.Context, taskID string) error {
	card, err := c.Card(ctx)
	if err != nil {
		return err
	}
	method := MethodCancelTask
	if card.Dialect == V03 {
		method = LegacyCancelTask
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID.Add(1), "method": method, "params": map[string]any{"id": taskID}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, card.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("a2a: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(VersionHeader, map[Dialect]string{V1: Version, V03: LegacyVersion}[card.Dialect])
	c.auth(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("a2a: %s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := readLimited(resp.Body, MaxResponseBytes)
	if err != nil {
		return fmt.Errorf("a2a: %s: %w", method, err)
	}
	var out struct {
		Error *Error `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("a2a: %s: HTTP %d: %s", method, resp.StatusCode, truncate(string(raw), 200))
	}
	if out.Error != nil {
		return out.Error
	}
	return nil
}
