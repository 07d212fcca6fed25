package httptool

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/weftlabs/weft/tool/internal/toolargs"
)

// template is a URL with {param} placeholders in its path and query.
//
// It is hand-written because net/url has no templates and RFC 6570
// libraries accept far more syntax (and host placeholders) than a tool URL
// should.
type template struct {
	parts []part
}

type part struct {
	lit   string // literal text, when name is empty
	name  string // placeholder
	query bool   // placeholder sits in the query string
}

// fieldError is an argument at fault.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }

func parseTemplate(raw string) (*template, error) {
	if raw == "" {
		return nil, errors.New("url is empty")
	}
	if strings.ContainsAny(raw, " \t\r\n\x00") {
		return nil, fmt.Errorf("url %q holds whitespace or control characters", raw)
	}
	schemeEnd := strings.Index(raw, "://")
	if schemeEnd < 0 {
		return nil, fmt.Errorf("url %q: want an absolute http or https URL", raw)
	}
	authEnd := len(raw)
	if i := strings.IndexAny(raw[schemeEnd+3:], "/?#"); i >= 0 {
		authEnd = schemeEnd + 3 + i
	}
	if strings.ContainsAny(raw[:authEnd], "{}") {
		return nil, fmt.Errorf("url %q: placeholders may only appear in the path and query, not in the scheme or host", raw)
	}
	if strings.Contains(raw, "#") {
		return nil, fmt.Errorf("url %q: a fragment is not sent to the server; remove it", raw)
	}
	t := &template{}
	query := false
	rest := raw
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			t.lit(rest, &query)
			break
		}
		if rest[i] == '}' {
			return nil, fmt.Errorf("url %q: unmatched '}'", raw)
		}
		t.lit(rest[:i], &query)
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("url %q: unclosed '{'", raw)
		}
		name := rest[i+1 : i+j]
		if name == "" || strings.ContainsAny(name, "{/?&=") {
			return nil, fmt.Errorf("url %q: bad placeholder {%s}", raw, name)
		}
		t.parts = append(t.parts, part{name: name, query: query})
		rest = rest[i+j+1:]
	}
	// The template with every placeholder filled must be a valid URL.
	probe, _, err := t.fill(nil)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(probe)
	if err != nil {
		return nil, fmt.Errorf("url %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("url %q: scheme must be http or https", raw)
	}
	if u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("url %q: want a host and no user info", raw)
	}
	return t, nil
}

func (t *template) lit(s string, query *bool) {
	if s == "" {
		return
	}
	if strings.Contains(s, "?") {
		*query = true
	}
	t.parts = append(t.parts, part{lit: s})
}

// fill substitutes the arguments (nil: a probe value for each) and returns
// the URL and the arguments not used by a placeholder.
func (t *template) fill(args map[string]json.RawMessage) (string, map[string]json.RawMessage, error) {
	var b strings.Builder
	used := map[string]bool{}
	for _, p := range t.parts {
		if p.name == "" {
			b.WriteString(p.lit)
			continue
		}
		val := "x"
		if args != nil {
			raw, ok := args[p.name]
			if !ok {
				return "", nil, &fieldError{p.name, errors.New("required by the URL but missing")}
			}
			s, err := toolargs.Scalar(raw)
			if err != nil {
				return "", nil, &fieldError{p.name, err}
			}
			val = s
			used[p.name] = true
		}
		if p.query {
			b.WriteString(url.QueryEscape(val))
			continue
		}
		if val == "." || val == ".." {
			return "", nil, &fieldError{p.name, fmt.Errorf("%q is not allowed in a URL path", val)}
		}
		b.WriteString(url.PathEscape(val))
	}
	rest := make(map[string]json.RawMessage, len(args))
	for k, v := range args {
		if !used[k] {
			rest[k] = v
		}
	}
	return b.String(), rest, nil
}
