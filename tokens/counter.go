// Package tokens counts tokens: exact byte-pair encoding for OpenAI's
// cl100k_base and o200k_base (tables embedded, no network), a fast CJK-aware
// estimate for models without a known encoding, and the mapping from model
// names to counters.
package tokens

import (
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
)

// Counter counts the tokens of a text. Implementations are safe for
// concurrent use.
type Counter interface {
	Count(text string) int
}

// CounterFunc adapts a function to the Counter interface.
type CounterFunc func(text string) int

// Count calls f(text).
func (f CounterFunc) Count(text string) int { return f(text) }

// Estimator is a fast counter for models whose encoding is unknown: CJK
// ideographs, kana, Hangul syllables and full-width forms count one token
// each, other text one token per four bytes (rounded up per run). It never
// allocates. The zero value is ready to use.
type Estimator struct{}

// Count estimates the tokens of text.
func (Estimator) Count(text string) int { return Estimate(text) }

// Estimate returns the Estimator's count for text.
func Estimate(text string) int {
	n, run := 0, 0
	for i := 0; i < len(text); {
		// Skip ASCII eight bytes at a time.
		for i+8 <= len(text) && le64(text[i:])&0x8080808080808080 == 0 {
			run += 8
			i += 8
		}
		if i == len(text) {
			break
		}
		c := text[i]
		if c < utf8.RuneSelf {
			run++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if isWide(r) {
			n += (run + 3) / 4
			run = 0
			n++
			continue
		}
		run += size
	}
	return n + (run+3)/4
}

// isWide reports whether r is a CJK ideograph, kana, Hangul syllable or a
// full-width form: scripts whose characters are roughly a token each.
func isWide(r rune) bool {
	switch {
	case r >= 0x4E00 && r <= 0x9FFF, // CJK Unified Ideographs
		r >= 0x3400 && r <= 0x4DBF,   // Extension A
		r >= 0x20000 && r <= 0x2FA1F, // Extensions B–F, compatibility supplement
		r >= 0xF900 && r <= 0xFAFF,   // compatibility ideographs
		r >= 0x3040 && r <= 0x30FF,   // Hiragana, Katakana
		r >= 0x31F0 && r <= 0x31FF,   // Katakana phonetic extensions
		r >= 0xAC00 && r <= 0xD7AF,   // Hangul syllables
		r >= 0x3000 && r <= 0x303F,   // CJK symbols and punctuation
		r >= 0xFF00 && r <= 0xFFEF:   // half-width and full-width forms
		return true
	}
	return false
}

// Per-message overheads of the chat format, as OpenAI documents them for its
// models and as a fair estimate for others.
const (
	// MessageOverhead is added for every message (role and separators).
	MessageOverhead = 3
	// ReplyOverhead is added once per request for the assistant's reply priming.
	ReplyOverhead = 3
	// ImageTokens is charged for each image part (a low-detail image).
	ImageTokens = 85
)

// MessageTokens counts a message as it will be sent: its text parts, tool
// calls (name and arguments), tool name, and the per-message overhead.
func MessageTokens(c Counter, m llm.Message) int {
	n := MessageOverhead
	for _, p := range m.Parts {
		switch p.Kind {
		case llm.PartText:
			n += c.Count(p.Text)
		case llm.PartImage:
			n += ImageTokens
		}
	}
	if m.Name != "" {
		n += 1 + c.Count(m.Name)
	}
	for _, tc := range m.ToolCalls {
		n += MessageOverhead + c.Count(tc.Name) + c.Count(tc.Arguments)
	}
	return n
}

// ToolTokens estimates what a tool's specification costs in a request.
func ToolTokens(c Counter, t llm.ToolSpec) int {
	return 8 + c.Count(t.Name) + c.Count(t.Description) + c.Count(string(t.Parameters))
}
