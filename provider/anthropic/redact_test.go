package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
)

// TestErrorsHideTheKey: an upstream that quotes the request's x-api-key
// back, in a 400 or in a stream's error event, does not put the key in
// the driver's error.
func TestErrorsHideTheKey(t *testing.T) {
	const key = "sk-ant-api03-Secret0123456789"
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("X-Api-Key")
		body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error",
			"message": fmt.Sprintf("invalid request: key %s, header x-api-key: %s", got, got)}})
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(body)
	}))
	m := newModel(t, srv, WithAPIKey(key))
	_, gerr := m.Generate(context.Background(), userReq("x"))
	var serr error
	for _, err := range m.Stream(context.Background(), userReq("x")) {
		serr = err
	}
	for name, err := range map[string]error{"generate": gerr, "stream": serr} {
		var e *llm.Error
		if !errors.As(err, &e) || !strings.Contains(e.Message, "invalid request") {
			t.Fatalf("%s: err = %v (%T)", name, err, err)
		}
		if strings.Contains(err.Error(), "Secret0123456789") || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("%s: error shows the key: %v", name, err)
		}
	}
}
