// Package secretref expands the references that tool configurations hold
// in place of secret values, and redacts the values from what comes back.
//
// Two forms are recognised in a configuration string (an HTTP header value,
// an MCP server's environment value, a remote agent's key):
//
//	${secret:NAME}   a secret of the caller's secret store (the platform's
//	                 tenant secrets)
//	${NAME}          a variable of the process environment
//
// NAME is a letter or underscore followed by up to 127 letters, digits,
// underscores or hyphens (hyphens only in secret names). Anything else,
// "$" included, is literal text. The configuration keeps the reference; the
// value is looked up through a [Lookup] on every use and is never stored.
//
// Which references a caller may use is the Lookup's decision: the default,
// [Env], reads the environment and refuses secret references; the platform
// resolves ${secret:NAME} in the tenant's own store and allows ${NAME} only
// for admin-registered objects and variables the operator lists.
package secretref

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Ref is one reference.
type Ref struct {
	// Name is the secret's or the variable's name.
	Name string
	// Env is true for ${NAME} (the process environment), false for
	// ${secret:NAME}.
	Env bool
}

// String gives the reference as written.
func (r Ref) String() string {
	if r.Env {
		return "${" + r.Name + "}"
	}
	return "${secret:" + r.Name + "}"
}

var refRE = regexp.MustCompile(`\$\{(secret:[A-Za-z_][A-Za-z0-9_-]{0,127}|[A-Za-z_][A-Za-z0-9_]{0,127})\}`)

// NameRE is the grammar of secret names.
var NameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,127}$`)

func parse(m string) Ref {
	inner := m[2 : len(m)-1]
	if name, ok := strings.CutPrefix(inner, "secret:"); ok {
		return Ref{Name: name}
	}
	return Ref{Name: inner, Env: true}
}

// Parse returns the references in s, in order, repeats included.
func Parse(s string) []Ref {
	ms := refRE.FindAllString(s, -1)
	out := make([]Ref, len(ms))
	for i, m := range ms {
		out[i] = parse(m)
	}
	return out
}

// Lookup returns the value a reference stands for. Its errors are shown to
// users (and models): they must name the reference, never hold a value.
type Lookup func(ctx context.Context, ref Ref) (string, error)

// ErrNoStore is returned by [Env] for ${secret:NAME} references.
var ErrNoStore = errors.New("no secret store is configured")

// Env is the default Lookup: ${NAME} from the process environment (an unset
// variable is an error naming it), ${secret:NAME} refused with ErrNoStore.
func Env(_ context.Context, ref Ref) (string, error) {
	if !ref.Env {
		return "", fmt.Errorf("%s: %w", ref, ErrNoStore)
	}
	v, ok := os.LookupEnv(ref.Name)
	if !ok {
		return "", fmt.Errorf("environment variable %s is not set; set it on the server running the tool", ref.Name)
	}
	return v, nil
}

// Expand replaces every reference in s by its value, looked up once per
// distinct reference. It returns the expanded text and adds the values it
// used to red (nil allowed), so that they can be removed from anything that
// comes back. The first failed lookup is the error.
func Expand(ctx context.Context, s string, lookup Lookup, red *Redactor) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	if lookup == nil {
		lookup = Env
	}
	var firstErr error
	seen := map[string]string{}
	out := refRE.ReplaceAllStringFunc(s, func(m string) string {
		if firstErr != nil {
			return ""
		}
		if v, ok := seen[m]; ok {
			return v
		}
		v, err := lookup(ctx, parse(m))
		if err != nil {
			firstErr = err
			return ""
		}
		seen[m] = v
		red.Add(v)
		return v
	})
	if firstErr != nil {
		return "", firstErr
	}
	return out, nil
}

// Placeholder replaces a secret value in redacted text.
const Placeholder = "[redacted]"

// MinRedactLen is the shortest value a Redactor removes: shorter ones would
// cut ordinary text apart, and are too short to be secrets.
const MinRedactLen = 4

// Redactor removes secret values from text. The zero value is ready; a nil
// *Redactor redacts nothing. It is not safe for concurrent use.
type Redactor struct {
	values []string
}

// maxValues bounds a Redactor that lives across calls (an MCP server's):
// the oldest values go first.
const maxValues = 256

// Add records a value to remove (and its JSON-escaped form, as an echoing
// server would return it inside JSON). Values shorter than [MinRedactLen]
// are ignored, and so are values already recorded.
func (r *Redactor) Add(v string) {
	if r == nil || len(v) < MinRedactLen {
		return
	}
	r.add(v)
	if b, err := json.Marshal(v); err == nil {
		if esc := string(b[1 : len(b)-1]); esc != v {
			r.add(esc)
		}
	}
}

func (r *Redactor) add(v string) {
	for _, have := range r.values {
		if have == v {
			return
		}
	}
	if len(r.values) >= maxValues {
		r.values = r.values[1:]
	}
	r.values = append(r.values, v)
}

// Merge records every value of o.
func (r *Redactor) Merge(o *Redactor) {
	if r == nil || o == nil {
		return
	}
	for _, v := range o.values {
		r.add(v)
	}
}

// Empty reports whether there is nothing to redact.
func (r *Redactor) Empty() bool { return r == nil || len(r.values) == 0 }

// Redact returns s with every recorded value replaced by [Placeholder],
// longest values first so that a value containing another goes whole.
func (r *Redactor) Redact(s string) string {
	if r.Empty() || s == "" {
		return s
	}
	vals := append([]string(nil), r.values...)
	// Longest first: a secret that contains another is replaced whole.
	for i := 1; i < len(vals); i++ {
		for j := i; j > 0 && len(vals[j]) > len(vals[j-1]); j-- {
			vals[j], vals[j-1] = vals[j-1], vals[j]
		}
	}
	for _, v := range vals {
		s = strings.ReplaceAll(s, v, Placeholder)
	}
	return s
}

// RedactError returns err with its message redacted, or err itself when
// nothing in it needs redacting. The returned error keeps err in its chain
// for errors.Is and errors.As; only its Error text changes.
func (r *Redactor) RedactError(err error) error {
	if err == nil || r.Empty() {
		return err
	}
	msg := err.Error()
	if red := r.Redact(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
