package tokens

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// tiktoken splits text into pieces with a regular expression before
// byte-pair encoding each piece on its own. Its patterns use a look-ahead
// (\s+(?!\S)) and backtracking that Go's regexp cannot express, and a
// backtracking engine would be the slowest part of counting, so the two
// patterns are reproduced here by hand as scanners that return the same
// pieces. Each scanner is commented with the alternative it implements; the
// alternatives are tried in the pattern's order, as the regex engine does.

// class is the character class a scanner needs of a rune: the Unicode
// general categories that the patterns distinguish, plus white space.
type class uint8

const (
	cOther   class = iota // neither letter, mark, number nor space: [^\s\p{L}\p{N}] less \p{M}
	cMark                 // \p{M}
	cUpper                // \p{Lu} \p{Lt}
	cLower                // \p{Ll}
	cLetter               // \p{Lm} \p{Lo}
	cNumber               // \p{N}
	cSpace                // \s other than \r and \n
	cNewline              // \r \n
)

// Sets of classes, as bit masks over 1<<class.
const (
	mL      = 1<<cUpper | 1<<cLower | 1<<cLetter // \p{L}
	mU      = 1<<cUpper | 1<<cLetter | 1<<cMark  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	mW      = 1<<cLower | 1<<cLetter | 1<<cMark  // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	mPrefix = 1<<cOther | 1<<cMark | 1<<cSpace   // [^\r\n\p{L}\p{N}]
	mPunct  = 1<<cOther | 1<<cMark               // [^\s\p{L}\p{N}]
	mSpace  = 1<<cSpace | 1<<cNewline            // \s
)

func (c class) in(m uint8) bool { return m&(1<<c) != 0 }

var (
	asciiClass [utf8.RuneSelf]class
	bmpOnce    sync.Once
	bmpClass   *[1 << 16]class
)

func init() {
	for r := range rune(utf8.RuneSelf) {
		asciiClass[r] = slowClass(r)
	}
}

// loadBMP fills the class table of the Basic Multilingual Plane from the
// unicode package's range tables (the same tables the peers' regex engine
// uses, so both agree on every code point).
func loadBMP() {
	t := new([1 << 16]class)
	set := func(tab *unicode.RangeTable, c class) {
		for _, r := range tab.R16 {
			for x := uint32(r.Lo); x <= uint32(r.Hi); x += uint32(r.Stride) {
				t[x] = c
			}
		}
	}
	set(unicode.Mark, cMark)
	set(unicode.Lu, cUpper)
	set(unicode.Lt, cUpper)
	set(unicode.Ll, cLower)
	set(unicode.Lm, cLetter)
	set(unicode.Lo, cLetter)
	set(unicode.Number, cNumber)
	set(unicode.White_Space, cSpace)
	t['\r'], t['\n'] = cNewline, cNewline
	bmpClass = t
}

func slowClass(r rune) class {
	switch {
	case r == '\r' || r == '\n':
		return cNewline
	case unicode.IsSpace(r):
		return cSpace
	case unicode.In(r, unicode.Lu, unicode.Lt):
		return cUpper
	case unicode.Is(unicode.Ll, r):
		return cLower
	case unicode.In(r, unicode.Lm, unicode.Lo):
		return cLetter
	case unicode.Is(unicode.Mark, r):
		return cMark
	case unicode.Is(unicode.Number, r):
		return cNumber
	}
	return cOther
}

// classAt returns the class and width of the rune at s[i]. An invalid byte
// is one rune of class cOther, like the U+FFFD that replaces it.
func classAt(s string, i int) (class, int) {
	b := s[i]
	if b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r < 1<<16 {
		return bmpClass[r], w
	}
	return slowClass(r), w
}

// runOf returns the end of the run of runes in m that starts at i.
func runOf(s string, i int, m uint8) int {
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if !asciiClass[b].in(m) {
				break
			}
			i++
			continue
		}
		c, w := classAt(s, i)
		if !c.in(m) {
			break
		}
		i += w
	}
	return i
}

// contraction returns the length of (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[i:],
// or 0. Case folding makes 's match the long s, U+017F, as it does in both
// tiktoken's and the peers' engines.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return 0
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return 3
		}
	}
	if s[i+1] == 0xC5 && i+2 < len(s) && s[i+2] == 0xBF { // ſ
		return 3
	}
	return 0
}

// spaceEnd implements the shared tail of both patterns for a run of white
// space at s[i:]:
//
//	\s*[\r\n]+ | \s+(?!\S) | \s+
func spaceEnd(s string, i int) int {
	e, nl, last := i, -1, 0
	for e < len(s) {
		c, w := classAt(s, e)
		if !c.in(mSpace) {
			break
		}
		e += w
		if c == cNewline {
			nl = e
		}
		last = w
	}
	switch {
	case nl >= 0: // \s*[\r\n]+ backtracks to the last line break of the run
		return nl
	case e == len(s) || e-last == i: // \s+(?!\S) at the end of text, or \s+ for one rune
		return e
	}
	return e - last // \s+(?!\S) leaves the last space to precede the next word
}

// digits implements \p{N}{1,3}.
func digits(s string, i int) int {
	for k := 0; k < 3 && i < len(s); k++ {
		c, w := classAt(s, i)
		if c != cNumber {
			break
		}
		i += w
	}
	return i
}

// nextCL100K returns the end of the piece starting at s[i], as the cl100k_base
// pattern splits it:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func nextCL100K(s string, i int) int {
	b := s[i]
	if b < utf8.RuneSelf {
		// ASCII fast paths for the common pieces: a word, with or without a
		// leading space, and a number.
		switch c := asciiClass[b]; {
		case c.in(mL):
			return runOf(s, i+1, mL)
		case c == cNumber:
			return digits(s, i)
		case b == ' ' && i+1 < len(s) && s[i+1] < utf8.RuneSelf && asciiClass[s[i+1]].in(mL):
			return runOf(s, i+2, mL)
		case b == '\'':
			if n := contraction(s, i); n > 0 {
				return i + n
			}
		}
	}
	c, w := classAt(s, i)
	switch {
	case c.in(mL):
		return runOf(s, i+w, mL)
	case c == cNumber:
		return digits(s, i)
	}
	if c.in(mPrefix) && i+w < len(s) {
		if c1, w1 := classAt(s, i+w); c1.in(mL) {
			return runOf(s, i+w+w1, mL)
		}
	}
	if j := i + optSpace(b); j < len(s) && class1(s, j).in(mPunct) {
		j = runOf(s, j, mPunct)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	return spaceEnd(s, i)
}

// optSpace implements the optional space of " ?[^\s\p{L}\p{N}]+": a space is
// taken if one is there; without it the run cannot start at a space.
func optSpace(b byte) int {
	if b == ' ' {
		return 1
	}
	return 0
}

// class1 returns the class of the rune at s[i].
func class1(s string, i int) class {
	c, _ := classAt(s, i)
	return c
}

// nextO200K returns the end of the piece starting at s[i], as the o200k_base
// pattern splits it:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Below, U is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and W is [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func nextO200K(s string, i int) int {
	if b := s[i]; b < utf8.RuneSelf {
		// ASCII fast path for a word of ASCII letters, with or without a
		// prefix such as a space: [A-Z]*[a-z]* is U*W+ or U+W*, unless a
		// non-ASCII rune continues it.
		j := i
		if !asciiClass[b].in(mL|1<<cNumber|1<<cNewline) && i+1 < len(s) && isASCIILetter(s[i+1]) {
			j++
		}
		if isASCIILetter(s[j]) {
			for j < len(s) && 'A' <= s[j] && s[j] <= 'Z' {
				j++
			}
			for j < len(s) && 'a' <= s[j] && s[j] <= 'z' {
				j++
			}
			if j == len(s) || s[j] < utf8.RuneSelf {
				return j + contraction(s, j)
			}
		} else if asciiClass[b] == cNumber {
			return digits(s, i)
		}
	}
	c, w := classAt(s, i)
	if c == cNumber {
		return digits(s, i)
	}
	if c.in(mPrefix) && i+w < len(s) {
		if e := wordLower(s, i+w); e > 0 {
			return e + contraction(s, e)
		}
	}
	if e := wordLower(s, i); e > 0 {
		return e + contraction(s, e)
	}
	if c.in(mPrefix) && i+w < len(s) {
		if e := wordUpper(s, i+w); e > 0 {
			return e + contraction(s, e)
		}
	}
	if e := wordUpper(s, i); e > 0 {
		return e + contraction(s, e)
	}
	if j := i + optSpace(s[i]); j < len(s) && class1(s, j).in(mPunct) {
		j = runOf(s, j, mPunct)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n' || s[j] == '/') {
			j++
		}
		return j
	}
	return spaceEnd(s, i)
}

func isASCIILetter(b byte) bool { return ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') }

// wordLower implements U*W+ at s[i:] and returns the end of the match, or 0
// if there is none. The regex engine takes the longest U run, then backs off
// until a W can follow: if the rune after the run is W, W+ extends from it;
// otherwise the match ends after the last rune of the run that is itself W
// (Lm, Lo and M are both U and W).
func wordLower(s string, i int) int {
	lastW := 0
	for i < len(s) {
		c, w := classAt(s, i)
		if !c.in(mU) {
			if c.in(mW) {
				return runOf(s, i+w, mW)
			}
			break
		}
		i += w
		if c.in(mW) {
			lastW = i
		}
	}
	return lastW
}

// wordUpper implements U+W* at s[i:] and returns the end of the match, or 0
// if there is none.
func wordUpper(s string, i int) int {
	e := runOf(s, i, mU)
	if e == i {
		return 0
	}
	return runOf(s, e, mW)
}
