package ollama_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/provider/ollama"
)

// TestSuite runs the provider conformance suite against ollamaWire, which
// serves the suite's turns on Ollama's /api/chat wire.
func TestSuite(t *testing.T) {
	llmtest.Conformance(t, func(t *testing.T, turns ...llmtest.Turn) llm.ChatModel {
		srv := httptest.NewServer(&ollamaWire{turns: turns})
		t.Cleanup(srv.Close)
		m, err := ollama.New(ollama.WithHost(srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		return m
	})
}

// ollamaWire answers POST /api/chat with its turns in order, in Ollama's
// wire: NDJSON objects, the last with "done": true, and {"error": "…"}
// bodies and lines. Ollama sends each tool call whole, in one line.
type ollamaWire struct {
	mu    sync.Mutex
	turns []llmtest.Turn
}

func (f *ollamaWire) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Stream *bool  `json:"stream"`
	}
	if r.URL.Path != "/api/chat" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	stream := req.Stream == nil || *req.Stream // Ollama streams by default
	f.mu.Lock()
	var turn llmtest.Turn
	if len(f.turns) > 0 {
		turn, f.turns = f.turns[0], f.turns[1:]
	}
	f.mu.Unlock()
	if !sleep(r, turn.Delay) {
		return
	}
	enc := json.NewEncoder(w)
	if turn.Status != 0 && turn.Status != http.StatusOK {
		for k, v := range turn.Header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(turn.Status)
		enc.Encode(map[string]string{"error": errorText(turn)})
		return
	}
	var calls []map[string]any
	for _, c := range turn.ToolCalls {
		calls = append(calls, map[string]any{"id": c.ID, "function": map[string]any{"name": c.Name, "arguments": json.RawMessage(c.Arguments)}})
	}
	line := func(content string, calls []map[string]any, done bool) map[string]any {
		msg := map[string]any{"role": "assistant", "content": content}
		if calls != nil {
			msg["tool_calls"] = calls
		}
		v := map[string]any{"model": req.Model, "created_at": "2026-12-02T10:00:00Z", "message": msg, "done": done}
		if done {
			v["done_reason"], v["prompt_eval_count"], v["eval_count"] = "stop", 10, 5
		}
		return v
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	if !stream {
		enc.Encode(line(turn.Text, calls, true))
		return
	}
	send := func(v any) bool {
		if !sleep(r, turn.ChunkDelay) {
			return false
		}
		enc.Encode(v)
		w.(http.Flusher).Flush()
		return true
	}
	sent := 0
	for p := range turn.TextPieces() {
		if turn.Error != nil && sent == turn.FailAfter {
			break
		}
		if !send(line(p, nil, false)) {
			return
		}
		sent++
	}
	if turn.Error != nil {
		send(map[string]string{"error": errorText(turn)})
		return
	}
	if calls != nil && !send(line("", calls, false)) {
		return
	}
	send(line("", nil, true))
}

// errorText words a turn's error as Ollama does.
func errorText(turn llmtest.Turn) string {
	switch {
	case turn.Error.Code == "context_length_exceeded":
		return "the input length exceeds the context length"
	case turn.Status == http.StatusUnauthorized:
		return "unauthorized"
	}
	return turn.Error.Message
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
