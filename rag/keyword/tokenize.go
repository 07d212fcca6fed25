package keyword

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxTokenBytes drops tokens longer than this: long runs of letters are
// hashes, base64 or URLs squashed together, never useful query terms.
const maxTokenBytes = 64

// stopWords is Lucene's English stop set (EnglishAnalyzer), the de-facto
// default for BM25 over English text.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "but": true,
	"by": true, "for": true, "if": true, "in": true, "into": true, "is": true, "it": true, "no": true,
	"not": true, "of": true, "on": true, "or": true, "such": true, "that": true, "the": true,
	"their": true, "then": true, "there": true, "these": true, "they": true, "this": true, "to": true,
	"was": true, "will": true, "with": true,
}

// Tokenize splits text into the index terms BM25 scores, so that stores
// outside this package (such as a PostgreSQL full-text store) can index and
// query exactly the same terms.
//
//   - Words are maximal runs of letters, digits and combining marks;
//     apostrophes inside a word are dropped ("don't" → "dont").
//   - Words are lower-cased rune by rune (Unicode simple case mapping, with
//     final sigma folded to σ), English stop words are removed, and
//     alphabetic words of four or more bytes go through the S-stemmer
//     (Harman, 1991): "-ies" → "-y", "-es" → "-e", "-s" → "" with its
//     usual exceptions. It only conflates plurals, which is predictable and
//     never mangles names the way aggressive stemmers do.
//   - Numbers are kept as they are ("2024", "v2" → "v2").
//   - Han, Hiragana, Katakana and Hangul, which are written without spaces,
//     become overlapping character bigrams ("東京都" → "東京", "京都"); a
//     run of one such character is kept as a unigram.
//   - Tokens longer than 64 bytes are dropped.
//
// Every token is valid UTF-8; invalid input bytes act as separators.
func Tokenize(text string) []string {
	var t tokenizer
	t.run(text)
	return t.out
}

type tokenizer struct {
	out      []string
	word     strings.Builder
	alpha    bool // word has letters only
	cjk      []rune
	apostrop bool // an apostrophe followed the current word
}

func isCJK(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r == 0x3005 || r == 0x30FC: // 々 iteration mark, ー prolonged sound mark
		return true
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

func (t *tokenizer) run(text string) {
	for _, r := range text {
		switch {
		case r == utf8.RuneError:
			t.flushWord()
			t.flushCJK()
		case isCJK(r):
			t.flushWord()
			t.cjk = append(t.cjk, r)
		case isWordRune(r):
			t.flushCJK()
			if t.word.Len() == 0 {
				t.alpha = true
			}
			t.apostrop = false
			if !unicode.IsLetter(r) {
				t.alpha = false
			}
			t.word.WriteRune(fold(r))
		case (r == '\'' || r == '’') && t.word.Len() > 0 && !t.apostrop:
			t.apostrop = true
		default:
			t.flushWord()
			t.flushCJK()
		}
	}
	t.flushWord()
	t.flushCJK()
}

func fold(r rune) rune {
	if r == 'ς' {
		return 'σ'
	}
	return unicode.ToLower(r)
}

func (t *tokenizer) flushWord() {
	t.apostrop = false
	if t.word.Len() == 0 {
		return
	}
	w := t.word.String()
	t.word.Reset()
	if stopWords[w] {
		return
	}
	if t.alpha {
		w = sStem(w)
	}
	if len(w) <= maxTokenBytes {
		t.out = append(t.out, w)
	}
}

func (t *tokenizer) flushCJK() {
	switch len(t.cjk) {
	case 0:
		return
	case 1:
		t.out = append(t.out, string(t.cjk))
	default:
		for i := 0; i+1 < len(t.cjk); i++ {
			t.out = append(t.out, string(t.cjk[i:i+2]))
		}
	}
	t.cjk = t.cjk[:0]
}

// sStem is Harman's S-stemmer, applied to words of at least four bytes.
func sStem(w string) string {
	if len(w) < 4 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && !strings.HasSuffix(w, "eies") && !strings.HasSuffix(w, "aies"):
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "es") && !strings.HasSuffix(w, "aes") && !strings.HasSuffix(w, "ees") && !strings.HasSuffix(w, "oes"):
		return w[:len(w)-1]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}
