// Package redact masks the passwords of URLs and DSNs in text that is about
// to be printed — an error message, a log attribute, a status answer — so
// that a connection string given on the command line or in the environment
// never reaches a log or a terminal in clear. It works on free text rather
// than on a parsed URL because the texts that leak are most often the
// errors of a URL that does not parse.
package redact

import (
	"strings"
)

// Mask stands in for a removed password, as url.URL.Redacted writes it.
const Mask = "xxxxx"

// URLs returns s with the password of every URL (scheme://user:password@host)
// and every password=… setting (libpq key/value DSNs and URL query strings)
// replaced by [Mask]. It errs on the side of masking too much.
func URLs(s string) string {
	if !strings.Contains(s, "://") && !containsFold(s, "password=") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "://"):
			b.WriteString("://")
			i += 3
			end := i
			for end < len(s) && !isEnd(s[end]) {
				end++
			}
			auth := s[i:end]
			at := strings.LastIndexByte(auth, '@')
			if at < 0 {
				continue
			}
			user, pass, hasPass := strings.Cut(auth[:at], ":")
			if !hasPass || pass == "" {
				continue
			}
			b.WriteString(user + ":" + Mask)
			i += at
		case len(s)-i >= 9 && strings.EqualFold(s[i:i+9], "password="):
			b.WriteString(s[i : i+9])
			i += 9
			if i < len(s) && s[i] == '\'' {
				// A quoted libpq value: up to the closing quote, \' escaped.
				j := i + 1
				for j < len(s) && s[j] != '\'' {
					if s[j] == '\\' {
						j++
					}
					j++
				}
				b.WriteString("'" + Mask + "'")
				i = min(j+1, len(s))
				continue
			}
			j := i
			for j < len(s) && !isEnd(s[j]) && s[j] != '&' {
				j++
			}
			if j > i {
				b.WriteString(Mask)
			}
			i = j
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// Error returns err with its message passed through [URLs]; errors.Is and
// errors.As still see the original. It returns nil for nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	return &redacted{err}
}

type redacted struct{ err error }

func (r *redacted) Error() string { return URLs(r.err.Error()) }
func (r *redacted) Unwrap() error { return r.err }

// isEnd reports whether c ends a URL or a setting's value in free text.
func isEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>':
		return true
	}
	return false
}

// containsFold reports whether s contains sub in any case, without
// allocating (it runs on every log attribute).
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i]|0x20 == sub[0] && hasFold(s[i:], sub) {
			return true
		}
	}
	return false
}
