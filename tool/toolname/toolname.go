// Package toolname makes arbitrary strings into tool names every model
// provider accepts (^[a-zA-Z0-9_-]{1,64}$) and keeps a request's tool names
// unique.
//
// Tool names come from outside: MCP servers name their tools freely, users
// name HTTP and SQL tools in the platform's API. [Sanitize] maps any string
// to a valid name deterministically — the same input always gives the same
// name — and [Unique] resolves the collisions sanitising may create.
package toolname

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// MaxLen is the longest name providers accept.
const MaxLen = 64

// hashLen is the number of hex digits of the suffix that keeps truncated
// (or otherwise rewritten) names distinct.
const hashLen = 8

// Sanitize returns a valid tool name for s: every rune outside
// [a-zA-Z0-9_-] becomes '_', an empty name becomes "tool", and a name
// longer than [MaxLen] is cut and given a short hash of s ("_" + 8 hex
// digits), so that distinct long names stay distinct.
//
// A name that is already valid is returned as it is.
func Sanitize(s string) string {
	if s == "" {
		return "tool"
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if valid(r) {
			b = append(b, byte(r))
		} else {
			b = append(b, '_')
		}
	}
	if len(b) <= MaxLen {
		return string(b)
	}
	return string(b[:MaxLen-hashLen-1]) + "_" + digest(s)
}

// Join returns the sanitised name prefix_name, as MCP tools are named after
// their server. When the result would be too long, the name part is kept as
// far as possible and a hash of both parts is appended.
func Join(prefix, name string) string {
	if prefix == "" {
		return Sanitize(name)
	}
	return Sanitize(prefix + "_" + name)
}

// Unique returns names with duplicates renamed: the first occurrence keeps
// its name, later ones get "_2", "_3", … (shortening the name to stay
// within [MaxLen]), skipping any name already taken. Every returned name is
// sanitised first. The result has the same length and order as names.
func Unique(names []string) []string {
	out := make([]string, len(names))
	taken := make(map[string]bool, len(names))
	for i, n := range names {
		out[i] = Sanitize(n)
	}
	// First pass: the original names are reserved, so that a later "a" is
	// renamed rather than an earlier, legitimately named "a_2".
	first := make(map[string]int, len(names))
	for i, n := range out {
		if _, ok := first[n]; !ok {
			first[n] = i
			taken[n] = true
		}
	}
	for i, n := range out {
		if first[n] == i {
			continue
		}
		for k := 2; ; k++ {
			suffix := "_" + strconv.Itoa(k)
			base := n
			if len(base)+len(suffix) > MaxLen {
				base = base[:MaxLen-len(suffix)]
			}
			if c := base + suffix; !taken[c] {
				out[i] = c
				taken[c] = true
				break
			}
		}
	}
	return out
}

func valid(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:hashLen]
}
