package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Mode says whether a [Recorder] records or replays.
type Mode int

const (
	// Replay serves exchanges from the cassette and never touches the network.
	Replay Mode = iota
	// Record forwards requests and saves the exchanges.
	Record
)

// RecordEnv is the environment variable [Cassette] reads: set it to 1 to
// record instead of replay.
const RecordEnv = "LLMTEST_RECORD"

// Recorder is an http.RoundTripper that records exchanges to a cassette (a
// JSON file) or replays them from it. In Record mode it forwards each
// request and keeps the exchange; [Recorder.Save] writes the cassette. In
// Replay mode it answers each request with the first unused recorded
// exchange of the same method, path and body (JSON bodies compare by value,
// so key order does not matter), and fails with a clear error when there is
// none.
//
// Request headers are never saved (they hold API keys); of the response
// headers, only Content-Type, Retry-After, Retry-After-Ms, X-Request-Id and
// X-Ratelimit-* are. A recorded stream is replayed whole, at once. A
// Recorder is safe for concurrent use.
type Recorder struct {
	path string
	mode Mode
	next http.RoundTripper

	mu   sync.Mutex
	tape cassette
	used []bool
}

type cassette struct {
	Interactions []interaction `json:"interactions"`
}

type interaction struct {
	Request struct {
		Method string `json:"method"`
		Path   string `json:"path"`
		Body   string `json:"body"`
	} `json:"request"`
	Response struct {
		Status int         `json:"status"`
		Header http.Header `json:"header,omitempty"`
		Body   string      `json:"body"`
	} `json:"response"`
}

// NewRecorder returns a recorder over the cassette at path. In Record mode
// it forwards to next (nil means http.DefaultTransport) and starts an empty
// cassette; in Replay mode it loads the cassette and ignores next.
func NewRecorder(path string, mode Mode, next http.RoundTripper) (*Recorder, error) {
	r := &Recorder{path: path, mode: mode, next: next}
	if mode == Record {
		if r.next == nil {
			r.next = http.DefaultTransport
		}
		return r, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("llmtest: cassette: %w (record it by running the test with %s=1)", err, RecordEnv)
	}
	if err := json.Unmarshal(b, &r.tape); err != nil {
		return nil, fmt.Errorf("llmtest: cassette %s: %w", path, err)
	}
	r.used = make([]bool, len(r.tape.Interactions))
	return r, nil
}

// Cassette returns a recorder over testdata/cassettes/<name>.json, in
// Record mode when the environment sets LLMTEST_RECORD=1 and in Replay mode
// otherwise. In Record mode the cassette is saved when the test ends.
func Cassette(t testing.TB, name string, next http.RoundTripper) *Recorder {
	t.Helper()
	mode := Replay
	if os.Getenv(RecordEnv) == "1" {
		mode = Record
	}
	r, err := NewRecorder(filepath.Join("testdata", "cassettes", name+".json"), mode, next)
	if err != nil {
		t.Fatal(err)
	}
	if mode == Record {
		t.Cleanup(func() {
			if err := r.Save(); err != nil {
				t.Error(err)
			}
		})
	}
	return r
}

// Client returns an HTTP client that uses the recorder.
func (r *Recorder) Client() *http.Client { return &http.Client{Transport: r} }

// RoundTrip records or replays one exchange.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("llmtest: reading request body: %w", err)
		}
		body = b
	}
	if r.mode == Record {
		return r.record(req, body)
	}
	return r.replay(req, body)
}

func (r *Recorder) record(req *http.Request, body []byte) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	resp, err := r.next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("llmtest: recording response body: %w", err)
	}
	var it interaction
	it.Request.Method = req.Method
	it.Request.Path = req.URL.RequestURI()
	it.Request.Body = string(body)
	it.Response.Status = resp.StatusCode
	it.Response.Header = keptHeaders(resp.Header)
	it.Response.Body = string(respBody)
	r.mu.Lock()
	r.tape.Interactions = append(r.tape.Interactions, it)
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	return resp, nil
}

func keptHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		ck := http.CanonicalHeaderKey(k)
		switch {
		case ck == "Content-Type", ck == "Retry-After", ck == "Retry-After-Ms", ck == "X-Request-Id",
			strings.HasPrefix(ck, "X-Ratelimit-"):
			out[ck] = vs
		}
	}
	return out
}

func (r *Recorder) replay(req *http.Request, body []byte) (*http.Response, error) {
	path := req.URL.RequestURI()
	want := canonical(body)
	r.mu.Lock()
	defer r.mu.Unlock()
	recorded := 0
	for i := range r.tape.Interactions {
		it := &r.tape.Interactions[i]
		if it.Request.Method != req.Method || it.Request.Path != path {
			continue
		}
		recorded++
		if r.used[i] || canonical([]byte(it.Request.Body)) != want {
			continue
		}
		r.used[i] = true
		h := it.Response.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		return &http.Response{
			Status:        strconv.Itoa(it.Response.Status) + " " + http.StatusText(it.Response.Status),
			StatusCode:    it.Response.Status,
			Proto:         "HTTP/1.1",
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        h,
			Body:          io.NopCloser(strings.NewReader(it.Response.Body)),
			ContentLength: int64(len(it.Response.Body)),
			Request:       req,
		}, nil
	}
	shown := string(body)
	if len(shown) > 200 {
		shown = shown[:200] + "…"
	}
	return nil, fmt.Errorf("%w: %s %s with body %s in %s (%d exchanges recorded for that method and path, used or with other bodies); re-record with %s=1",
		ErrNoExchange, req.Method, path, shown, r.path, recorded, RecordEnv)
}

// ErrNoExchange is returned (wrapped) by a replaying [Recorder] when no
// unused recorded exchange matches a request.
var ErrNoExchange = errors.New("llmtest: no recorded exchange")

// canonical returns a JSON body re-encoded with sorted keys and no spaces,
// or the body unchanged when it is not JSON.
func canonical(body []byte) string {
	var v any
	if len(body) == 0 || json.Unmarshal(body, &v) != nil {
		return string(body)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(body)
	}
	return string(b)
}

// Save writes the recorded exchanges to the cassette, creating its
// directory. It does nothing in Replay mode.
func (r *Recorder) Save() error {
	if r.mode != Record {
		return nil
	}
	r.mu.Lock()
	b, err := json.MarshalIndent(r.tape, "", "  ")
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("llmtest: encoding cassette: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o755); err != nil {
		return fmt.Errorf("llmtest: saving cassette: %w", err)
	}
	if err := os.WriteFile(r.path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("llmtest: saving cassette: %w", err)
	}
	return nil
}

// Unused returns how many recorded exchanges a replay has not served, so a
// test can check that the code under test made every call it recorded.
func (r *Recorder) Unused() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, u := range r.used {
		if !u {
			n++
		}
	}
	return n
}
