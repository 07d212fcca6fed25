package ollama

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

// TestErrorsHideTheKey: a server (a proxy in front of Ollama) that quotes
// the request's bearer key back, in a 400 or in a streamed error line,
// does not put the key in the driver's error.
func TestErrorsHideTheKey(t *testing.T) {
	const key = "ollama-Secret0123456789"
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		body, _ := json.Marshal(map[string]any{"error": "invalid request: key " + token})
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			fmt.Fprintf(w, "%s\n", body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(body)
	}))
	m := newModel(t, srv, WithAPIKey(key))
	req := &llm.Request{Messages: []llm.Message{llm.UserMessage("x")}}
	_, gerr := m.Generate(context.Background(), req)
	var serr error
	for _, err := range m.Stream(context.Background(), req) {
		serr = err
	}
	_, eerr := m.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{"x"}})
	for name, err := range map[string]error{"generate": gerr, "stream": serr, "embed": eerr} {
		var e *llm.Error
		if !errors.As(err, &e) || !strings.Contains(e.Error(), "invalid request") {
			t.Fatalf("%s: err = %v (%T)", name, err, err)
		}
		if strings.Contains(err.Error(), "Secret0123456789") || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("%s: error shows the key: %v", name, err)
		}
	}
}
