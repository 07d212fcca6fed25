package sse

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t testing.TB, r *Reader) ([]Event, error) {
	t.Helper()
	var evs []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
		if len(evs) > 1e6 {
			t.Fatal("too many events")
		}
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       string
		want     []Event
		comments int
	}{
		{name: "empty", in: ""},
		{name: "single", in: "data: hello\n\n", want: []Event{{Data: "hello"}}},
		{name: "no space after colon", in: "data:hello\n\n", want: []Event{{Data: "hello"}}},
		{name: "only one leading space removed", in: "data:  two\n\n", want: []Event{{Data: " two"}}},
		{name: "multi-line data joined", in: "data: a\ndata: b\ndata:\n\n", want: []Event{{Data: "a\nb\n"}}},
		{name: "crlf", in: "event: x\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", want: []Event{{Event: "x", Data: "1"}, {Data: "2"}}},
		{name: "bare cr", in: "data: 1\r\rdata: 2\r\r", want: []Event{{Data: "1"}, {Data: "2"}}},
		{name: "dispatch at eof", in: "data: last", want: []Event{{Data: "last"}}},
		{name: "dispatch at eof after newline", in: "data: last\n", want: []Event{{Data: "last"}}},
		{name: "comments skipped and counted", in: ": ping\n\n: OPENROUTER PROCESSING\ndata: x\n\n:\n", want: []Event{{Data: "x"}}, comments: 3},
		{name: "event type resets per event", in: "event: a\ndata: 1\n\ndata: 2\n\n", want: []Event{{Event: "a", Data: "1"}, {Data: "2"}}},
		{name: "event without data not dispatched", in: "event: a\n\ndata: 2\n\n", want: []Event{{Data: "2"}}},
		{name: "id persists", in: "id: 7\ndata: 1\n\ndata: 2\n\nid\ndata: 3\n\n", want: []Event{{ID: "7", Data: "1"}, {ID: "7", Data: "2"}, {Data: "3"}}},
		{name: "id with NUL ignored", in: "id: 1\ndata: a\n\nid: 2\x00\ndata: b\n\n", want: []Event{{ID: "1", Data: "a"}, {ID: "1", Data: "b"}}},
		{name: "unknown fields and retry ignored", in: "retry: 10\nfoo: bar\nbaz\ndata: x\n\n", want: []Event{{Data: "x"}}},
		{name: "empty data field dispatches empty event", in: "data\n\n", want: []Event{{Data: ""}}},
		{name: "bom stripped", in: "\xEF\xBB\xBFdata: x\n\n", want: []Event{{Data: "x"}}},
		{name: "json lines", in: "{\"a\":1}\n{\"a\":2}\n", want: []Event{{Data: `{"a":1}`}, {Data: `{"a":2}`}}},
		{name: "json lines crlf no trailing newline", in: "{\"a\":1}\r\n{\"a\":2}", want: []Event{{Data: `{"a":1}`}, {Data: `{"a":2}`}}},
		{name: "json lines between blank lines", in: "\n\n{\"a\":1}\n\n", want: []Event{{Data: `{"a":1}`}}},
		{name: "done sentinel", in: "data: {\"x\":1}\n\ndata: [DONE]\n\n", want: []Event{{Data: `{"x":1}`}, {Data: "[DONE]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Whole input, and one byte at a time (splits every line ending,
			// including "\r" | "\n").
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				rd := NewReader(r)
				got, err := readAll(t, rd)
				if err != io.EOF {
					t.Fatalf("err = %v, want io.EOF", err)
				}
				if !equalEvents(got, tt.want) {
					t.Fatalf("events = %q, want %q", got, tt.want)
				}
				if rd.Comments() != tt.comments {
					t.Errorf("Comments() = %d, want %d", rd.Comments(), tt.comments)
				}
				if _, err := rd.Next(); err != io.EOF {
					t.Errorf("Next after EOF = %v, want io.EOF", err)
				}
			}
			// NextRaw yields the same events.
			rd := NewReader(strings.NewReader(tt.in))
			var raw []Event
			for {
				ev, err := rd.NextRaw()
				if err != nil {
					break
				}
				raw = append(raw, Event{Event: ev.Event, Data: string(ev.Data), ID: ev.ID})
			}
			if !equalEvents(raw, tt.want) {
				t.Fatalf("NextRaw events = %q, want %q", raw, tt.want)
			}
		})
	}
}

func equalEvents(a, b []Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReaderLineTooLong(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		ok   int // events before the error
	}{
		{name: "terminated", in: "data: ok\n\ndata: " + strings.Repeat("x", 100) + "\n\n", ok: 1},
		{name: "unterminated", in: "data: ok\n\ndata: " + strings.Repeat("x", 100), ok: 1},
		{name: "joined data", in: strings.Repeat("data: 0123456789\n", 10) + "\n", ok: 0},
		{name: "json line", in: "{" + strings.Repeat(" ", 100) + "}\n", ok: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rd := NewReader(strings.NewReader(tt.in), WithMaxLineSize(64))
			got, err := readAll(t, rd)
			if !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("err = %v, want ErrLineTooLong", err)
			}
			if len(got) != tt.ok {
				t.Errorf("got %d events before the error, want %d", len(got), tt.ok)
			}
			if _, err2 := rd.Next(); !errors.Is(err2, ErrLineTooLong) {
				t.Errorf("error not sticky: %v", err2)
			}
		})
	}
}

// endless is an io.Reader that never ends and never sends a newline.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n += len(p)
	return len(p), nil
}

func TestReaderBoundedOnEndlessLine(t *testing.T) {
	t.Parallel()
	src := &endless{}
	_, err := NewReader(src, WithMaxLineSize(1<<20)).Next()
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
	if src.n > 2<<20 {
		t.Errorf("read %d bytes before giving up on a 1 MiB limit", src.n)
	}
}

func TestReaderPropagatesReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: 1\n\ndata: partial"), iotest.ErrReader(boom))
	rd := NewReader(r)
	got, err := readAll(t, rd)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	// The partial event is not dispatched when the stream failed.
	if len(got) != 1 || got[0].Data != "1" {
		t.Errorf("events = %q", got)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderNoProgress(t *testing.T) {
	t.Parallel()
	if _, err := NewReader(zeroReader{}).Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v, want io.ErrNoProgress", err)
	}
}

func TestReaderFixtures(t *testing.T) {
	t.Parallel()
	dir := fixtureDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.sse"))
	txt, _ := filepath.Glob(filepath.Join(dir, "*.chunks.txt"))
	files = append(files, txt...)
	if len(files) == 0 {
		t.Skip("no fixtures")
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rd := NewReader(bytes.NewReader(body))
		evs, err := readAll(t, rd)
		if err != io.EOF {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		for i, ev := range evs {
			if ev.Data != "[DONE]" && !strings.HasPrefix(ev.Data, "{") {
				t.Errorf("%s: event %d is not JSON: %.60q", filepath.Base(f), i, ev.Data)
			}
		}
	}
}

func fixtureDir(t testing.TB) string {
	if d := os.Getenv("WEFT_SSE_FIXTURES"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "fixtures", "sse")
}

func TestReaderAllocs(t *testing.T) {
	in := strings.Repeat("event: delta\nid: 1\ndata: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n: ping\n\n", 1100)
	rd := NewReader(strings.NewReader(in))
	allocs := testing.AllocsPerRun(500, func() {
		if _, err := rd.Next(); err != nil {
			t.Fatal(err)
		}
	})
	// The Data string is the only allocation; the buffers, the event type
	// and the id are reused.
	if allocs > 1 {
		t.Errorf("%.2f allocations per event, want at most 1", allocs)
	}
	allocs = testing.AllocsPerRun(500, func() {
		if _, err := rd.NextRaw(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("NextRaw: %.2f allocations per event, want 0", allocs)
	}
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	in := "{\"a\":1}\n\n  \r\n{\"a\":2}\r\n{\"a\":3}"
	for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in))} {
		lr := NewLineReader(r)
		var got []string
		for {
			line, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(line))
		}
		want := []string{`{"a":1}`, `{"a":2}`, `{"a":3}`}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("lines = %q, want %q", got, want)
		}
	}
	lr := NewLineReader(strings.NewReader(strings.Repeat("x", 100)+"\n"), WithMaxLineSize(10))
	if _, err := lr.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
	if _, err := lr.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("error not sticky: %v", err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: a\ndata: b\n\n"), 64)
	f.Add([]byte("event: x\r\nid: 1\r\ndata: {}\r\n\r\n: c\r\r{\"a\":1}"), 8)
	f.Add([]byte("\xEF\xBB\xBF{\n\r\r\n:"), 1)
	if dir := fixtureDir(f); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "*.chunks.txt"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b, 1024)
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		max = max%4096 + 1
		if max < 1 {
			max += 4096
		}
		rd := NewReader(bytes.NewReader(in), WithMaxLineSize(max))
		total := 0
		for n := 0; ; n++ {
			ev, err := rd.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrLineTooLong) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(ev.Data) > max {
				t.Fatalf("event data of %d bytes exceeds limit %d", len(ev.Data), max)
			}
			total += len(ev.Data)
			if n > len(in) {
				t.Fatalf("%d events from %d bytes", n, len(in))
			}
		}
		if total > len(in) {
			t.Fatalf("%d bytes of data from %d bytes of input", total, len(in))
		}
		lr := NewLineReader(bytes.NewReader(in), WithMaxLineSize(max))
		for n := 0; ; n++ {
			line, err := lr.Next()
			if err != nil {
				break
			}
			if len(line) > max || n > len(in) {
				t.Fatalf("line of %d bytes (limit %d), or too many lines", len(line), max)
			}
		}
	})
}
