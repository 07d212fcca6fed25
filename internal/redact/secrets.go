package redact

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Placeholder stands in for a removed secret value or credential.
const Placeholder = "[redacted]"

// MinSecretLen is the length below which a value is not taken as a secret:
// shorter values would cut ordinary words apart, and no key is that short.
const MinSecretLen = 8

// Secrets is a set of secret values (API keys, tokens, encryption keys) to
// remove from text that leaves the process: error messages, answers'
// error frames, log lines. Text also masks what looks like a credential
// whatever its value (bearer tokens, Authorization and API-key header
// values) and the passwords of URLs (see [URLs]).
//
// The zero value holds no values and is ready to use. A Secrets is safe
// for concurrent use; values are only ever added.
type Secrets struct {
	mu   sync.Mutex // serialises Add
	have map[string]bool
	m    atomic.Pointer[matcher] // read by Text without locking
}

// matcher finds the forms of the values in a text: forms indexed by their
// first four bytes, each list longest first, so that a text is scanned once
// whatever the number of values.
type matcher struct {
	byPrefix map[string][]string
}

// Add records values to remove from now on. Each value is matched as it
// is, JSON-escaped (as an error body that quotes it would hold it) and
// URL-encoded. Values shorter than [MinSecretLen] (after trimming spaces)
// are ignored.
func (s *Secrets) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var added bool
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < MinSecretLen || s.have[v] {
			continue
		}
		if s.have == nil {
			s.have = map[string]bool{}
		}
		s.have[v] = true
		added = true
	}
	if !added {
		return
	}
	m := &matcher{byPrefix: map[string][]string{}}
	seen := map[string]bool{}
	for v := range s.have {
		for _, f := range forms(v) {
			if len(f) < MinSecretLen || seen[f] {
				continue
			}
			seen[f] = true
			m.byPrefix[f[:4]] = append(m.byPrefix[f[:4]], f)
		}
	}
	for _, list := range m.byPrefix {
		slices.SortFunc(list, func(a, b string) int { return len(b) - len(a) })
	}
	s.m.Store(m)
}

// forms returns the ways v may be written in a text: as is, JSON-escaped
// with and without HTML escaping, and URL-encoded as a query value and as
// a path segment.
func forms(v string) []string {
	out := []string{v}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		b := strings.TrimSuffix(buf.String(), "\n")
		out = append(out, b[1:len(b)-1])
	}
	return append(out, url.QueryEscape(v), url.PathEscape(v))
}

// Text returns s with every recorded value replaced by [Placeholder], the
// token of every bearer credential and the value of every Authorization
// or API-key header replaced by [Placeholder], and the password of every
// URL masked. A nil *Secrets masks credentials and URL passwords only.
func (s *Secrets) Text(text string) string {
	// Credentials first: "Authorization: Bearer <key>" becomes
	// "Authorization: [redacted]" whether or not the key is recorded.
	text = credentials(text)
	if s != nil {
		if m := s.m.Load(); m != nil {
			text = m.replace(text)
		}
	}
	return URLs(text)
}

func (m *matcher) replace(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i+4 <= len(s); {
		list := m.byPrefix[s[i:i+4]]
		n := 0
		for _, f := range list {
			if strings.HasPrefix(s[i:], f) {
				n = len(f)
				break
			}
		}
		if n == 0 {
			i++
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		b.WriteString(Placeholder)
		i += n
		last = i
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// headerRE matches the value of a credential header as a text may show it
// ("Authorization: Bearer …", `"x-api-key":"…"`, api_key=…), the scheme of
// an Authorization value included; bearerRE a bearer token anywhere.
// Neither asks for a word boundary before its name: a secret removed just
// before it would make one, and a second pass would then differ.
var (
	headerRE = regexp.MustCompile(`(?i)((?:proxy-)?authorization|x-api-key|api[-_]key)(\\?["']?\s*[:=]\s*\\?["']?)(?:(?:bearer|basic)\s+)?[A-Za-z0-9._~+/=:-]{4,}`)
	bearerRE = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}`)
)

// credentials masks bearer tokens and credential header values.
func credentials(s string) string {
	if !hasCredentialWord(s) {
		return s
	}
	s = headerRE.ReplaceAllString(s, "${1}${2}"+Placeholder)
	return bearerRE.ReplaceAllString(s, "${1}"+Placeholder)
}

// hasCredentialWord reports, without allocating, whether s holds "bearer",
// "authorization" or "api-key"/"api_key" in any case: only then can the
// expressions match.
func hasCredentialWord(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] | 0x20 {
		case 'b':
			if hasFold(s[i:], "bearer") {
				return true
			}
		case 'a':
			if hasFold(s[i:], "authorization") || hasFold(s[i:], "api-key") || hasFold(s[i:], "api_key") {
				return true
			}
		}
	}
	return false
}

func hasFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// Error returns err with its message passed through [Secrets.Text];
// errors.Is and errors.As still see the original. It returns err itself
// when nothing in its message needs removing, and nil for nil.
func (s *Secrets) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := s.Text(msg); red != msg {
		return &masked{msg: red, err: err}
	}
	return err
}

type masked struct {
	msg string
	err error
}

func (e *masked) Error() string { return e.msg }
func (e *masked) Unwrap() error { return e.err }

// Handler returns a slog.Handler that passes every record to h with its
// message and attribute values through [Secrets.Text]: strings, errors,
// and any other value whose printed form holds a secret (it is then logged
// as its redacted text). A handler s already wraps is returned as it is.
func (s *Secrets) Handler(h slog.Handler) slog.Handler {
	if rh, ok := h.(*handler); ok && rh.s == s {
		return h
	}
	return &handler{next: h, s: s}
}

type handler struct {
	next slog.Handler
	s    *Secrets
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.s.Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.s.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.s.attr(a)
	}
	return &handler{next: h.next.WithAttrs(red), s: h.s}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), s: h.s}
}

// attr returns a with its value redacted.
func (s *Secrets) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if t := s.Text(v.String()); t != v.String() {
			return slog.String(a.Key, t)
		}
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, ga := range g {
			red[i] = s.attr(ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindAny:
		var text string
		if err, ok := v.Any().(error); ok {
			text = err.Error()
		} else {
			text = fmt.Sprint(v.Any())
		}
		if t := s.Text(text); t != text {
			return slog.String(a.Key, t)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
