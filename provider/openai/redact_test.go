package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
)

// echoKey answers every request with an error that quotes its credentials
// back (some gateways do so for a 400): the token alone, raw and
// URL-encoded, and the whole Authorization header. A streamed request
// gets the error inside its 200 stream.
func echoKey(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	token := strings.TrimPrefix(auth, "Bearer ")
	msg := fmt.Sprintf("invalid request: key %s (%s), header Authorization: %s", token, url.QueryEscape(token), auth)
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": token}})
	b, _ := io.ReadAll(r.Body)
	if strings.Contains(string(b), `"stream":true`) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(body)
}

// TestErrorsHideTheKey: the API key never reaches the text of an error,
// whether the upstream quotes it in a 400 or inside a stream.
func TestErrorsHideTheKey(t *testing.T) {
	const key = "sk-proj-Se/cret+Key0123456789"
	srv := httptest.NewServer(http.HandlerFunc(echoKey))
	defer srv.Close()
	c := newTestClient(t, srv.URL, WithAPIKey(key), WithHTTPClient(srv.Client()))
	ctx := context.Background()
	_, gerr := c.Generate(ctx, hi)
	var serr error
	for _, err := range c.Stream(ctx, hi) {
		serr = err
	}
	_, eerr := c.Embed(ctx, &llm.EmbedRequest{Inputs: []string{"x"}})
	for name, err := range map[string]error{"generate": gerr, "stream": serr, "embed": eerr} {
		var e *llm.Error
		if !errors.As(err, &e) || !strings.Contains(e.Message, "invalid request") {
			t.Fatalf("%s: err = %v (%T)", name, err, err)
		}
		text := err.Error() + " " + e.Code
		if strings.Contains(text, "Se/cret") || strings.Contains(text, "Se%2Fcret") || !strings.Contains(text, "[redacted]") {
			t.Errorf("%s: error shows the key: %s", name, text)
		}
	}
}
