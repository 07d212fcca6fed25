package platform

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"
)

// sseWriter writes Server-Sent Events frames. Each frame gets a write
// deadline, so a client that stopped reading cannot hold the handler (and
// the model call) forever; comments (": ping") keep idle connections alive
// through proxies. It is safe for concurrent use: the ping goroutine and the
// turn write through one mutex.
type sseWriter struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	deadline time.Duration

	mu  sync.Mutex
	buf bytes.Buffer
	enc *json.Encoder // writes into buf, reused for every frame
	err error
}

var errClientGone = errors.New("client stopped reading")

func newSSEWriter(w http.ResponseWriter, frameDeadline time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), deadline: frameDeadline}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	s.flush()
	return s
}

// event writes one frame: "event: name" and "data: {json}". The JSON gets
// the name again in its "type" field, as docs/api.md specifies.
func (s *sseWriter) event(name string, data any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.buf.Reset()
	s.buf.WriteString("event: ")
	s.buf.WriteString(name)
	s.buf.WriteString("\ndata: ")
	if err := s.enc.Encode(data); err != nil {
		return err
	}
	// Encode ended the JSON with a newline; one more ends the frame.
	s.buf.WriteByte('\n')
	return s.writeLocked(s.buf.Bytes())
}

// data writes one unnamed frame, "data: {json}", as OpenAI streams do.
func (s *sseWriter) data(v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.buf.Reset()
	s.buf.WriteString("data: ")
	if err := s.enc.Encode(v); err != nil {
		return err
	}
	s.buf.WriteByte('\n')
	return s.writeLocked(s.buf.Bytes())
}

// raw writes pre-formatted SSE bytes (the OpenAI-compatible stream).
func (s *sseWriter) raw(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return s.writeLocked(b)
}

// ping writes a keep-alive comment.
func (s *sseWriter) ping() error { return s.raw([]byte(": ping\n\n")) }

func (s *sseWriter) writeLocked(b []byte) error {
	if s.deadline > 0 {
		s.rc.SetWriteDeadline(time.Now().Add(s.deadline))
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = errClientGone
		return s.err
	}
	if err := s.rc.Flush(); err != nil {
		s.err = errClientGone
		return s.err
	}
	return nil
}

func (s *sseWriter) flush() { s.rc.Flush() }

// keepAlive pings every interval until stop is closed.
func (s *sseWriter) keepAlive(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if s.ping() != nil {
				return
			}
		}
	}
}
