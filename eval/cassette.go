package eval

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"

	"github.com/weftlabs/weft/llmtest"
)

// Cassettes routes model calls (the judge's, and an in-process target's
// providers') to one cassette per case, under Dir/<suite>/<case>.json:
// in Record mode each exchange with the real provider is kept and saved
// when the case ends; in Replay mode each request is answered from the
// case's cassette ([llmtest.Recorder]) and never reaches a provider. In
// replay, a missing cassette, a request the cassette does not hold, and a
// recorded exchange left unused are errors naming the case.
//
// Cases run one at a time; a call made outside a case fails.
type Cassettes struct {
	dir  string
	mode llmtest.Mode
	next http.RoundTripper

	mu   sync.Mutex
	cur  *llmtest.Recorder
	name string
	err  error // the first replay mismatch of the current case
}

// NewCassettes returns cassettes under dir. In Record mode requests go on
// to next (nil means http.DefaultTransport).
func NewCassettes(dir string, mode llmtest.Mode, next http.RoundTripper) *Cassettes {
	return &Cassettes{dir: dir, mode: mode, next: next}
}

// Client returns an HTTP client whose requests go through the cassettes;
// give it to the providers.
func (c *Cassettes) Client() *http.Client { return &http.Client{Transport: c} }

// Path returns the cassette file of a case.
func (c *Cassettes) Path(suite, caseID string) string {
	return filepath.Join(c.dir, fileName(suite), fileName(caseID)+".json")
}

// fileName makes a name safe as a file name.
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// Begin makes the cassette of a case (or of a setup step) current. In
// Replay mode a missing cassette is an error naming the case.
func (c *Cassettes) Begin(suite, caseID string) error {
	path := c.Path(suite, caseID)
	r, err := llmtest.NewRecorder(path, c.mode, c.next)
	if err != nil {
		return fmt.Errorf("case %q of suite %q: no cassette at %s: record one with --record (%w)", caseID, suite, path, err)
	}
	c.mu.Lock()
	c.cur, c.name, c.err = r, suite+"/"+caseID, nil
	c.mu.Unlock()
	return nil
}

// End closes the current cassette: in Record mode it is saved; in Replay
// mode the first request that matched no recording, or exchanges left
// unused, are an error naming the case.
func (c *Cassettes) End() error {
	c.mu.Lock()
	r, name, mismatch := c.cur, c.name, c.err
	c.cur, c.name, c.err = nil, "", nil
	c.mu.Unlock()
	if r == nil {
		return nil
	}
	if c.mode == llmtest.Record {
		return r.Save()
	}
	if mismatch != nil {
		return fmt.Errorf("case %s: a model request matches no recording in its cassette (the prompt, tools or settings changed; re-record with --record): %w", name, mismatch)
	}
	if n := r.Unused(); n > 0 {
		return fmt.Errorf("case %s: %d recorded model exchanges were not requested (the case makes fewer calls than when it was recorded; re-record with --record)", name, n)
	}
	return nil
}

// RoundTrip sends the request through the current case's cassette.
func (c *Cassettes) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	r, name := c.cur, c.name
	c.mu.Unlock()
	if r == nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("eval: a model call (%s %s) outside any case has no cassette", req.Method, req.URL.Path)
	}
	resp, err := r.RoundTrip(req)
	if err != nil && errors.Is(err, llmtest.ErrNoExchange) {
		c.mu.Lock()
		if c.name == name && c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return resp, err
}
