package platform

import (
	"net/http/httptest"
	"testing"
)

// TestSSEWriterFrames checks the exact bytes of consecutive frames written
// through the writer's one reused encoder.
func TestSSEWriterFrames(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	sw := newSSEWriter(rec, 0)
	if err := sw.event("message.delta", map[string]any{"type": "message.delta", "text": "a <b> & \"c\"\n"}); err != nil {
		t.Fatal(err)
	}
	if err := sw.event("chat.completed", map[string]any{"type": "chat.completed"}); err != nil {
		t.Fatal(err)
	}
	if err := sw.data(map[string]any{"object": "chat.completion.chunk"}); err != nil {
		t.Fatal(err)
	}
	want := "event: message.delta\ndata: {\"text\":\"a <b> & \\\"c\\\"\\n\",\"type\":\"message.delta\"}\n\n" +
		"event: chat.completed\ndata: {\"type\":\"chat.completed\"}\n\n" +
		"data: {\"object\":\"chat.completion.chunk\"}\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("frames:\n got %q\nwant %q", got, want)
	}
}
