package rag

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The boundary functions below return cut offsets: absolute byte offsets in
// text, strictly inside (start, end), at which a new segment begins. The
// separator (blank line, newline, the space after a sentence) stays at the
// end of the segment before the cut, so the segments concatenate back to
// text[start:end] exactly.

// boundaryFunc is one level of the recursive splitter.
type boundaryFunc func(text string, start, end int) []int

// paragraphCuts cuts after every run of blank lines.
func paragraphCuts(text string, start, end int) []int {
	var cuts []int
	for i := start; i < end; i++ {
		if text[i] != '\n' {
			continue
		}
		// Scan the whitespace run that starts at this newline and count its
		// newlines; two or more make a paragraph break.
		j, nl := i, 0
		for j < end && (text[j] == '\n' || text[j] == ' ' || text[j] == '\t' || text[j] == '\r') {
			if text[j] == '\n' {
				nl++
			}
			j++
		}
		if nl >= 2 {
			// Cut after the run's last newline, so the next paragraph keeps
			// its indentation.
			cut := lastNewlineBefore(text, i, j) + 1
			if cut > start && cut < end {
				cuts = append(cuts, cut)
			}
		}
		i = j - 1
	}
	return cuts
}

// lastNewlineBefore returns the offset of the last '\n' in text[from:to].
func lastNewlineBefore(text string, from, to int) int {
	return from + strings.LastIndexByte(text[from:to], '\n')
}

// lineCuts cuts after every newline.
func lineCuts(text string, start, end int) []int {
	var cuts []int
	for i := start; i < end-1; i++ {
		if text[i] == '\n' {
			cuts = append(cuts, i+1)
		}
	}
	return cuts
}

// sentenceCuts cuts at sentence boundaries: after CJK sentence punctuation
// (。！？；… and their full-width forms, which need no following space), and
// after Latin '.', '!' or '?' followed by whitespace — but not after common
// abbreviations ("e.g.", "Dr.") or single-letter initials. Decimals ("3.14")
// never cut because no space follows the point.
func sentenceCuts(text string, start, end int) []int {
	var cuts []int
	for i := start; i < end; {
		r, size := utf8.DecodeRuneInString(text[i:end])
		next := i + size
		switch {
		case isCJKTerminator(r):
			// Keep runs of terminators and closing quotes together: "……」".
			j := skipClosers(text, next, end, true)
			j = skipSpaces(text, j, end)
			if j < end {
				cuts = append(cuts, j)
			}
			i = max(j, next)
			continue
		case r == '.' || r == '!' || r == '?':
			j := skipClosers(text, next, end, false)
			if j < end && isSpaceByte(text[j]) && (r != '.' || !isAbbreviation(text, start, i)) {
				j = skipSpaces(text, j, end)
				if j < end {
					cuts = append(cuts, j)
				}
				i = j
				continue
			}
			i = max(j, next)
			continue
		}
		i = next
	}
	return cuts
}

// isCJKTerminator reports whether r ends a sentence in Chinese or Japanese.
func isCJKTerminator(r rune) bool {
	switch r {
	case '。', '！', '？', '；', '…', '｡', '．':
		return true
	}
	return false
}

// skipClosers skips closing quotes and brackets (and, after CJK punctuation,
// more terminators) that belong to the sentence just ended.
func skipClosers(text string, i, end int, cjk bool) int {
	for i < end {
		r, size := utf8.DecodeRuneInString(text[i:end])
		switch r {
		case '"', '\'', ')', ']', '}', '’', '”', '」', '』', '）', '】', '》', '〉', '〕':
		case '.', '!', '?':
			// "?!" and "..." stay with their sentence.
		default:
			if !(cjk && isCJKTerminator(r)) {
				return i
			}
		}
		i += size
	}
	return i
}

func skipSpaces(text string, i, end int) int {
	for i < end && isSpaceByte(text[i]) {
		i++
	}
	return i
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'
}

// abbreviations end with a period that does not end a sentence. Lower case;
// inner periods included ("e.g").
var abbreviations = map[string]bool{
	"cf": true, "vs": true, "mr": true, "mrs": true,
	"ms": true, "dr": true, "prof": true, "sr": true, "jr": true, "st": true, "fig": true,
	"no": true, "vol": true, "approx": true, "inc": true, "ltd": true, "co": true, "al": true,
	"p": true, "pp": true, "ch": true, "sec": true, "eq": true, "resp": true, "viz": true,
}

// isAbbreviation reports whether the period at dot ends an abbreviation or
// an initial rather than a sentence.
func isAbbreviation(text string, start, dot int) bool {
	w := dot
	for w > start {
		r, size := utf8.DecodeLastRuneInString(text[start:w])
		if !(unicode.IsLetter(r) || r == '.') {
			break
		}
		w -= size
	}
	word := text[w:dot]
	if word == "" {
		return false
	}
	if r, size := utf8.DecodeRuneInString(word); size == len(word) && unicode.IsUpper(r) {
		return true // an initial: "J. R. R. Tolkien"
	}
	if strings.Contains(word, ".") && singleLetters(word) {
		return true // "U.S.", "a.m.", "e.g."
	}
	return abbreviations[strings.ToLower(word)]
}

// singleLetters reports whether every dot-separated part of word is one
// letter.
func singleLetters(word string) bool {
	for part := range strings.SplitSeq(word, ".") {
		if utf8.RuneCountInString(part) != 1 {
			return false
		}
	}
	return true
}

// wordCuts cuts before every word: after whitespace runs and around each
// wide (CJK) character, which is a word of its own.
func wordCuts(text string, start, end int) []int {
	return appendWordCuts(nil, text, start, end)
}

// appendWordCuts appends the cuts of wordCuts to cuts.
func appendWordCuts(cuts []int, text string, start, end int) []int {
	prevSpace, prevWide := false, false
	for i := start; i < end; {
		var space, wide bool
		size := 1
		if c := text[i]; c < utf8.RuneSelf {
			space = isSpaceByte(c)
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(text[i:end])
			space, wide = unicode.IsSpace(r), isWide(r)
		}
		if i > start && !space && (prevSpace || wide || prevWide) {
			cuts = append(cuts, i)
		}
		prevSpace, prevWide = space, wide
		i += size
	}
	return cuts
}

// isWide reports whether r belongs to a script written without spaces
// between words (Chinese, Japanese), whose characters are cut points of
// their own.
func isWide(r rune) bool {
	if r < 0x2E80 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}
