package eval

import (
	"errors"
	"fmt"
	"io/fs"
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
	name string // suite/case, empty between cases
	path string
	err  error // the current case's missing cassette or first mismatch
}

// NewCassettes returns cassettes under dir. In Record mode requests go on
// to next (nil means http.DefaultTransport).
func NewCassettes(dir string, mode llmtest.Mode, next http.RoundTripper) *Cassettes {
	return &Cassettes{dir: dir, mode: mode, next: next}
}

// Recording reports whether the cassettes record (rather than replay).
func (c *Cassettes) Recording() bool { return c.mode == llmtest.Record }

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

// Begin makes the cassette of a case (or of a setup step) current. The
// cassette is opened at the case's first model call: a case that makes
// none needs none.
func (c *Cassettes) Begin(suite, caseID string) {
	c.mu.Lock()
	c.cur, c.name, c.path, c.err = nil, suite+"/"+caseID, c.Path(suite, caseID), nil
	c.mu.Unlock()
}

// End closes the current cassette: in Record mode it is saved (when the
// case made model calls); in Replay mode a missing cassette, the first
// request that matched no recording, or exchanges left unused are an
// error naming the case.
func (c *Cassettes) End() error {
	c.mu.Lock()
	r, name, path, err := c.cur, c.name, c.path, c.err
	c.cur, c.name, c.path, c.err = nil, "", "", nil
	c.mu.Unlock()
	if name == "" {
		return nil
	}
	if c.mode == llmtest.Record {
		if r == nil {
			return err
		}
		return r.Save()
	}
	switch {
	case errors.Is(err, llmtest.ErrNoExchange):
		return fmt.Errorf("case %s: a model request matches no recording in its cassette (the prompt, tools or settings changed; re-record with --record): %w", name, err)
	case err != nil:
		return fmt.Errorf("case %s: %w", name, err)
	case r == nil:
		// No model call: a recorded cassette is left whole.
		r, err = llmtest.NewRecorder(path, c.mode, nil)
		if err != nil {
			return nil
		}
	}
	if n := r.Unused(); n > 0 {
		return fmt.Errorf("case %s: %d recorded model exchanges were not requested (the case makes fewer calls than when it was recorded; re-record with --record)", name, n)
	}
	return nil
}

// RoundTrip sends the request through the current case's cassette,
// opening it at the case's first call.
func (c *Cassettes) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.name == "" {
		c.mu.Unlock()
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("eval: a model call (%s %s) outside any case has no cassette", req.Method, req.URL.Path)
	}
	if c.cur == nil && c.err == nil {
		r, err := llmtest.NewRecorder(c.path, c.mode, c.next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			c.err = fmt.Errorf("no cassette at %s: record one with --record", c.path)
		case err != nil:
			c.err = fmt.Errorf("cassette %s: %w", c.path, err)
		}
		c.cur = r
	}
	r, name, failed := c.cur, c.name, c.err
	c.mu.Unlock()
	if r == nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, failed
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
