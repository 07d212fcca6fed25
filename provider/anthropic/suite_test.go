package anthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/provider/anthropic"
)

// TestSuite runs the provider conformance suite against fakeAPI, which
// serves the suite's turns on the Messages API wire.
func TestSuite(t *testing.T) {
	llmtest.Conformance(t, func(t *testing.T, turns ...llmtest.Turn) llm.ChatModel {
		srv := httptest.NewServer(&fakeAPI{turns: turns})
		t.Cleanup(srv.Close)
		m, err := anthropic.New(anthropic.WithAPIKey("sk-ant-test"), anthropic.WithBaseURL(srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		return m
	})
}

// fakeAPI answers POST /v1/messages with its turns in order, in
// Anthropic's wire: a message or an SSE stream of content blocks, and
// {"type":"error","error":{…}} bodies and events.
type fakeAPI struct {
	mu    sync.Mutex
	turns []llmtest.Turn
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if r.URL.Path != "/v1/messages" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	var turn llmtest.Turn
	if len(f.turns) > 0 {
		turn, f.turns = f.turns[0], f.turns[1:]
	}
	f.mu.Unlock()
	if !sleep(r, turn.Delay) {
		return
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		if ra := turn.Header.Get("Retry-After"); ra != "" {
			w.Header().Set("Retry-After", ra) // Anthropic sends whole seconds only
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(turn.Status)
		json.NewEncoder(w).Encode(errorBody(turn))
		return
	}
	stop := "end_turn"
	if len(turn.ToolCalls) > 0 {
		stop = "tool_use"
	}
	if !req.Stream {
		var content []any
		if turn.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": turn.Text})
		}
		for _, c := range turn.ToolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Arguments)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "usage": map[string]int{"input_tokens": 10, "output_tokens": 5}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sent := 0
	event := func(v map[string]any) bool {
		if !sleep(r, turn.ChunkDelay) {
			return false
		}
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
		w.(http.Flusher).Flush()
		return true
	}
	// content sends a delta, or the error event after FailAfter of them.
	content := func(v map[string]any) bool {
		if turn.Error != nil && sent == turn.FailAfter {
			event(errorBody(turn))
			return false
		}
		sent++
		return event(v)
	}
	if !event(map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant",
		"model": req.Model, "content": []any{}, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}}) {
		return
	}
	block := 0
	if turn.Text != "" || turn.Error != nil {
		event(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for p := range turn.TextPieces() {
			if !content(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": p}}) {
				return
			}
		}
		if turn.Error != nil {
			event(errorBody(turn)) // fewer pieces than FailAfter
			return
		}
		event(map[string]any{"type": "content_block_stop", "index": 0})
		block++
	}
	for _, c := range turn.ToolCalls {
		event(map[string]any{"type": "content_block_start", "index": block, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		for p := range turn.ArgPieces(c.Arguments) {
			if !content(map[string]any{"type": "content_block_delta", "index": block, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}}) {
				return
			}
		}
		event(map[string]any{"type": "content_block_stop", "index": block})
		block++
	}
	event(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]int{"output_tokens": 5}})
	event(map[string]any{"type": "message_stop"})
}

// errorBody words a turn's error as Anthropic does.
func errorBody(turn llmtest.Turn) map[string]any {
	typ, msg := "api_error", turn.Error.Message
	switch {
	case turn.Status == 0 || turn.Status == http.StatusOK:
		typ = "overloaded_error"
	case turn.Error.Code == "context_length_exceeded":
		typ, msg = "invalid_request_error", "prompt is too long: 9120 tokens > 8192 maximum"
	case turn.Status == http.StatusUnauthorized:
		typ, msg = "authentication_error", "invalid x-api-key"
	case turn.Status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case turn.Status == http.StatusBadRequest:
		typ = "invalid_request_error"
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

// sleep waits d unless the client goes away first, and reports whether it
// is still there.
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
