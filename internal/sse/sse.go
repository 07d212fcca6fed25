// Package sse reads Server-Sent Events streams and newline-delimited JSON
// bodies with bounded memory and near-zero allocation.
//
// It is written by hand rather than taken from a library because model
// providers bend the format: some send one JSON payload per line with no
// "data:" prefix, some interleave keep-alive comments, some end lines with a
// bare "\r". The common Go SSE packages are built around an HTTP client or
// a server, allocate per line, and do not bound line length; this is a plain
// decoder over an io.Reader that reuses its buffers and bounds every line.
//
// [Reader] follows the WHATWG event-stream parsing rules: lines that start
// with ":" are comments and are skipped (and counted); "data" fields of one
// event are joined with "\n"; an event is dispatched at a blank line and at
// the end of the input; lines end with "\n", "\r\n" or "\r"; a leading UTF-8
// byte order mark is ignored. As a tolerance for JSON-lines bodies, a line
// that begins with "{" is a complete event whose data is the whole line.
// [Reader.NextRaw] hands out the data without copying it, for decoders that
// parse it at once.
//
// [LineReader] reads NDJSON bodies (one JSON value per line, as Ollama's
// native API sends) with the same bounds.
package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineSize is the longest line, and the largest event data, a
// reader accepts unless [WithMaxLineSize] says otherwise.
const DefaultMaxLineSize = 8 << 20

// ErrLineTooLong reports a line, or an event's joined data, longer than the
// reader's limit. The reader stops at the first such line rather than
// buffering without bound.
var ErrLineTooLong = errors.New("sse: line too long")

// Event is one dispatched server-sent event.
type Event struct {
	// Event is the event type from the "event" field, or "" when the event
	// had none (the spec's default "message").
	Event string
	// Data is the event's data: its "data" fields joined with "\n".
	Data string
	// ID is the last event ID seen on the stream so far ("id" field). As the
	// spec says, it persists across events until another "id" field sets it.
	ID string
}

// Option configures a [Reader] or a [LineReader].
type Option func(*config)

type config struct {
	maxLine int
}

// WithMaxLineSize sets the longest line, and the largest joined event data,
// the reader accepts; a longer one makes Next return [ErrLineTooLong].
// Values below 1 leave the default of [DefaultMaxLineSize].
func WithMaxLineSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxLine = n
		}
	}
}

func newConfig(opts []Option) config {
	c := config{maxLine: DefaultMaxLineSize}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Reader decodes events from an event stream. It is not safe for concurrent
// use. Its memory is bounded by the maximum line size (about twice that at
// worst: one line buffer and one event data buffer).
type Reader struct {
	s       lineScanner
	data    []byte
	hasData bool
	// dispatched: data was handed out by the last call and is reset by the next.
	dispatched bool
	event      string // event type of the event being built
	lastType   string // reused so that repeated event types do not allocate
	id         string
	comments   int
	first      bool
	err        error
}

// NewReader returns a Reader that decodes events from r.
func NewReader(r io.Reader, opts ...Option) *Reader {
	c := newConfig(opts)
	return &Reader{s: newLineScanner(r, c.maxLine), first: true}
}

// Comments returns the number of comment lines (lines starting with ":")
// skipped so far. Servers send them as keep-alives.
func (r *Reader) Comments() int { return r.comments }

// Next returns the next event. It returns io.EOF after the last event of a
// stream that ended cleanly, [ErrLineTooLong] (wrapped) for an oversized line
// or event, and the underlying reader's error otherwise. Errors are sticky:
// once Next has failed it keeps returning the same error.
func (r *Reader) Next() (Event, error) {
	ev, err := r.NextRaw()
	if err != nil {
		return Event{}, err
	}
	return Event{Event: ev.Event, Data: string(ev.Data), ID: ev.ID}, nil
}

// RawEvent is an event whose data is a slice of the reader's buffer.
type RawEvent struct {
	Event string
	// Data is valid only until the next call to Next or NextRaw.
	Data []byte
	ID   string
}

// NextRaw is like Next but does not copy the data: it allocates nothing
// once the reader's buffers have grown to the stream's line size, which
// suits decoders that parse the data at once (json.Unmarshal).
func (r *Reader) NextRaw() (RawEvent, error) {
	if r.err != nil {
		return RawEvent{}, r.err
	}
	if r.dispatched {
		r.dispatched = false
		r.data = r.data[:0]
	}
	for {
		line, err := r.s.next()
		if err != nil {
			if err == io.EOF && r.hasData {
				// The spec discards an unterminated final event; providers
				// that close the connection right after the last payload
				// mean it, so it is dispatched.
				return r.dispatch(), nil
			}
			r.err = err
			return RawEvent{}, err
		}
		if r.first {
			r.first = false
			line = bytes.TrimPrefix(line, bom)
		}
		if len(line) == 0 {
			if r.hasData {
				return r.dispatch(), nil
			}
			r.event = ""
			continue
		}
		switch line[0] {
		case ':':
			r.comments++
			continue
		case '{':
			// JSON-lines tolerance: the whole line is one event's data.
			if err := r.appendData(line); err != nil {
				return RawEvent{}, err
			}
			return r.dispatch(), nil
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if err := r.appendData(value); err != nil {
				return RawEvent{}, err
			}
		case "event":
			if string(value) != r.lastType {
				r.lastType = string(value)
			}
			r.event = r.lastType
		case "id":
			if bytes.IndexByte(value, 0) < 0 && string(value) != r.id {
				r.id = string(value)
			}
		}
		// Other fields ("retry" and unknown names) are ignored, as the spec says.
	}
}

var bom = []byte("\xEF\xBB\xBF")

func (r *Reader) appendData(v []byte) error {
	n := len(r.data) + len(v)
	if r.hasData {
		n++
	}
	if n > r.s.max {
		r.err = fmt.Errorf("%w: event data exceeds %d bytes", ErrLineTooLong, r.s.max)
		return r.err
	}
	if r.hasData {
		r.data = append(r.data, '\n')
	}
	r.data = append(r.data, v...)
	r.hasData = true
	return nil
}

// dispatch returns the event being built. Its data buffer is handed out
// and emptied at the start of the next call.
func (r *Reader) dispatch() RawEvent {
	ev := RawEvent{Event: r.event, Data: r.data, ID: r.id}
	r.dispatched = true
	r.hasData = false
	r.event = ""
	return ev
}

// LineReader reads newline-delimited records, such as NDJSON bodies. Blank
// lines are skipped. It is not safe for concurrent use.
type LineReader struct {
	s   lineScanner
	err error
}

// NewLineReader returns a LineReader over r.
func NewLineReader(r io.Reader, opts ...Option) *LineReader {
	c := newConfig(opts)
	return &LineReader{s: newLineScanner(r, c.maxLine)}
}

// Next returns the next non-blank line without its line ending. The slice is
// valid only until the next call to Next. It returns io.EOF at the end of the
// input, [ErrLineTooLong] (wrapped) for an oversized line, and the underlying
// reader's error otherwise; errors are sticky.
func (l *LineReader) Next() ([]byte, error) {
	if l.err != nil {
		return nil, l.err
	}
	for {
		line, err := l.s.next()
		if err != nil {
			l.err = err
			return nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

// lineScanner splits its input into lines ending in "\n", "\r\n" or "\r",
// returning slices of its own buffer. bufio.Scanner is not used because it
// cannot treat a lone "\r" as a line end without blocking for the next byte,
// and it reports overlong lines only after the fact.
type lineScanner struct {
	r      io.Reader
	buf    []byte
	start  int
	end    int
	max    int
	skipLF bool // the previous line ended in '\r'; a following '\n' belongs to it
	err    error
}

const initialBufSize = 16 << 10

func newLineScanner(r io.Reader, max int) lineScanner {
	return lineScanner{r: r, max: max}
}

func (s *lineScanner) next() ([]byte, error) {
	for {
		if s.skipLF && s.start < s.end {
			if s.buf[s.start] == '\n' {
				s.start++
			}
			s.skipLF = false
		}
		if rest := s.buf[s.start:s.end]; len(rest) > 0 {
			n := bytes.IndexByte(rest, '\n')
			head := rest
			if n >= 0 {
				head = rest[:n]
			}
			if cr := bytes.IndexByte(head, '\r'); cr >= 0 {
				n = cr
				s.skipLF = true
			}
			if n >= 0 {
				if n > s.max {
					return nil, s.fail(n)
				}
				s.start += n + 1
				return rest[:n], nil
			}
			if len(rest) > s.max {
				return nil, s.fail(len(rest))
			}
		}
		if s.err != nil {
			if s.start < s.end {
				// Final line without a terminator.
				line := s.buf[s.start:s.end]
				s.start = s.end
				return line, nil
			}
			return nil, s.err
		}
		s.fill()
	}
}

func (s *lineScanner) fail(n int) error {
	s.err = fmt.Errorf("%w: a line of at least %d bytes exceeds the limit of %d", ErrLineTooLong, n, s.max)
	s.start, s.end = 0, 0
	s.buf = nil
	return s.err
}

// fill reads more input, compacting or growing the buffer as needed. The
// buffer never grows past max+1 bytes, enough to prove a line too long.
func (s *lineScanner) fill() {
	if s.start > 0 {
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.start = 0
	}
	if s.end == len(s.buf) {
		size := max(2*len(s.buf), initialBufSize)
		// next has already failed any partial line longer than max, so a
		// full buffer is at most max bytes here and still has room to grow.
		size = min(size, s.max+1)
		nb := make([]byte, size)
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for range 100 {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	s.err = io.ErrNoProgress
}
