package client_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/client"
)

// bodyTransport answers every request with status and body, without a
// network.
type bodyTransport struct {
	status int
	body   string
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: b.status, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(b.body)), Request: r}, nil
}

// FuzzChatStream feeds arbitrary stream bodies to ChatStream: it never
// panics, ends, and ends with an error unless the last event was
// chat.completed.
func FuzzChatStream(f *testing.F) {
	for _, seed := range []string{
		"event: chat.created\ndata: {\"type\":\"chat.created\",\"session_id\":\"s\"}\n\nevent: chat.completed\ndata: {\"type\":\"chat.completed\",\"answer\":\"hi\"}\n\n",
		"event: error\ndata: {\"type\":\"error\",\"code\":\"model_error\",\"message\":\"x\"}\n\n",
		": ping\n\ndata: {\"type\":\"message.delta\",\"text\":\"a\"}\r\n\r\n",
		"data: {\"type\":\"chat.completed\",\"answer\":5}\n\n",
		"data: [1,2]\n\n", "data: \n\n", "", "event: x\n", "{\"type\":\"message.delta\"}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		c := client.New("http://weft.invalid", "k", client.WithHTTPClient(&http.Client{Transport: bodyTransport{200, body}}))
		var last client.Event
		var err error
		n := 0
		for ev, e := range c.ChatStream(t.Context(), "a", client.ChatRequest{Query: "q"}) {
			last, err = ev, e
			if n++; n > len(body)+2 {
				t.Fatalf("%d events from %d bytes", n, len(body))
			}
		}
		if err == nil && (last.Type != client.EventCompleted || last.Answer == nil) {
			t.Fatalf("stream ended without error after %+v", last)
		}
		var ce *client.Error
		if errors.As(err, &ce) && last.Type != client.EventError {
			t.Fatalf("*Error without an error event: %v", err)
		}
	})
}

// FuzzErrorBody feeds arbitrary error answers to a call: the result is
// always an *Error with the status and a code.
func FuzzErrorBody(f *testing.F) {
	for _, seed := range []string{`{"error":{"code":"not_found","message":"x"}}`, `{"error":{"code":"x"}}`, `{"error":null}`, `{"error":{}}`, `<html>`, ``, `{"error":"x"}`} {
		f.Add(seed, 404)
	}
	f.Fuzz(func(t *testing.T, body string, status int) {
		if status < 400 || status > 599 {
			return
		}
		c := client.New("http://weft.invalid", "k", client.WithHTTPClient(&http.Client{Transport: bodyTransport{status, body}}))
		_, err := c.ListAgents(t.Context())
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != status || ce.Code == "" || ce.Message == "" {
			t.Fatalf("error %#v for %d %q", err, status, body)
		}
	})
}
