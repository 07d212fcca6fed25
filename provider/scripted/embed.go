package scripted

import (
	"iter"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Vector returns the embedding of text in dims dimensions (256 when dims is
// not positive): a bag of words, each word lower-cased, stop words dropped,
// a plural "s" trimmed, hashed (FNV-1a) to a dimension with a hashed sign,
// then L2-normalised. Texts that share words have a high cosine similarity;
// the same text always has the same vector. A text with no words has the
// zero vector.
func Vector(text string, dims int) []float32 {
	if dims <= 0 {
		dims = DefaultDimensions
	}
	v := make([]float32, dims)
	for w := range terms(text) {
		x := fnv1a(w)
		sign := float32(1)
		if x>>63 == 1 {
			sign = -1
		}
		v[x%uint64(dims)] += sign
	}
	var sum float64
	for _, f := range v {
		sum += float64(f) * float64(f)
	}
	if sum == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// fnv1a is the 64-bit FNV-1a hash of s, inline so hashing a word does not
// allocate.
func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// terms yields the words of s that carry meaning, lower-cased and with a
// plural "s" trimmed.
func terms(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			start := strings.IndexFunc(s, isWordRune)
			if start < 0 {
				return
			}
			s = s[start:]
			end := strings.IndexFunc(s, func(r rune) bool { return !isWordRune(r) })
			if end < 0 {
				end = len(s)
			}
			w := s[:end]
			s = s[end:]
			if hasUpper(w) {
				w = strings.ToLower(w)
			}
			if stopWords[w] {
				continue
			}
			if len(w) > 3 && w[len(w)-1] == 's' && w[len(w)-2] != 's' {
				w = w[:len(w)-1]
			}
			if !yield(w) {
				return
			}
		}
	}
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func hasUpper(w string) bool {
	for _, r := range w {
		if r < utf8.RuneSelf {
			if 'A' <= r && r <= 'Z' {
				return true
			}
		} else if unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

// stopWords are common English words that say little about a text's topic.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"do": true, "does": true, "for": true, "from": true, "has": true, "have": true, "how": true,
	"i": true, "in": true, "is": true, "it": true, "its": true, "me": true, "my": true, "of": true,
	"on": true, "or": true, "that": true, "the": true, "this": true, "to": true, "was": true,
	"we": true, "what": true, "when": true, "where": true, "which": true, "who": true, "why": true,
	"will": true, "with": true, "you": true, "your": true,
}
