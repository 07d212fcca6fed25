package eval

import (
	"strings"
)

// Rouge1 returns the ROUGE-1 F-measure of candidate against reference:
// the harmonic mean of unigram precision and recall. It tokenizes as
// Google's rouge-score package does with use_stemmer=True (the scorer ADK's
// response_match_score uses): lower-case, every run of characters other
// than a–z and 0–9 is a separator (so letters outside ASCII are dropped),
// and tokens longer than three characters are reduced by the Porter
// stemmer. Empty texts score 0.
func Rouge1(candidate, reference string) float64 {
	c, r := rougeTokens(candidate), rougeTokens(reference)
	if len(c) == 0 || len(r) == 0 {
		return 0
	}
	counts := map[string]int{}
	for _, t := range r {
		counts[t]++
	}
	overlap := 0
	for _, t := range c {
		if counts[t] > 0 {
			counts[t]--
			overlap++
		}
	}
	p := float64(overlap) / float64(len(c))
	rec := float64(overlap) / float64(len(r))
	if p+rec == 0 {
		return 0
	}
	return 2 * p * rec / (p + rec)
}

func rougeTokens(s string) []string {
	s = strings.ToLower(s)
	toks := strings.FieldsFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	for i, t := range toks {
		if len(t) > 3 {
			toks[i] = stem(t)
		}
	}
	return toks
}

// porterPool are the irregular forms NLTK's Porter stemmer maps first.
var porterPool = map[string]string{
	"skies": "sky", "sky": "sky", "dying": "die", "lying": "lie", "tying": "tie",
	"news": "news", "innings": "inning", "inning": "inning", "outings": "outing",
	"outing": "outing", "cannings": "canning", "canning": "canning",
	"howe": "howe", "proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}

// stem reduces a lower-case ASCII word by the Porter algorithm, with the
// departures of NLTK's default mode (its irregular forms; "ies" and "ied"
// of four letters keep "ie"; "y" becomes "i" only after a consonant that
// is not the first letter; "bli", "logi" and "fulli" in step 2).
func stem(w string) string {
	if len(w) <= 2 {
		return w
	}
	if s, ok := porterPool[w]; ok {
		return s
	}
	b := []byte(w)
	b = step1a(b)
	b = step1b(b)
	b = step1c(b)
	b = replaceFirst(b, step2Rules, 0)
	b = replaceFirst(b, step3Rules, 0)
	b = step4(b)
	b = step5(b)
	return string(b)
}

// consonant reports whether b[i] is a consonant.
func consonant(b []byte, i int) bool {
	switch b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !consonant(b, i-1)
	}
	return true
}

// measure is m in [C](VC)^m[V] of b.
func measure(b []byte) int {
	m, i, n := 0, 0, len(b)
	for i < n && consonant(b, i) {
		i++
	}
	for i < n {
		for i < n && !consonant(b, i) {
			i++
		}
		if i >= n {
			break
		}
		for i < n && consonant(b, i) {
			i++
		}
		m++
	}
	return m
}

func hasVowel(b []byte) bool {
	for i := range b {
		if !consonant(b, i) {
			return true
		}
	}
	return false
}

func doubleConsonant(b []byte) bool {
	n := len(b)
	return n >= 2 && b[n-1] == b[n-2] && consonant(b, n-1)
}

// cvc reports whether b ends consonant-vowel-consonant, the last not w,
// x or y (or, as NLTK extends it, is a vowel and a consonant).
func cvc(b []byte) bool {
	n := len(b)
	if n == 2 {
		return !consonant(b, 0) && consonant(b, 1)
	}
	if n < 3 || !consonant(b, n-1) || consonant(b, n-2) || !consonant(b, n-3) {
		return false
	}
	c := b[n-1]
	return c != 'w' && c != 'x' && c != 'y'
}

func hasSuffix(b []byte, s string) bool { return strings.HasSuffix(string(b), s) }

func step1a(b []byte) []byte {
	switch {
	case hasSuffix(b, "sses"):
		return b[:len(b)-2]
	case hasSuffix(b, "ies"):
		if len(b) == 4 {
			return b[:len(b)-1]
		}
		return b[:len(b)-2]
	case hasSuffix(b, "ss"):
		return b
	case hasSuffix(b, "s"):
		return b[:len(b)-1]
	}
	return b
}

func step1b(b []byte) []byte {
	if hasSuffix(b, "ied") {
		if len(b) == 4 {
			return b[:len(b)-1]
		}
		return b[:len(b)-2]
	}
	if hasSuffix(b, "eed") {
		if measure(b[:len(b)-3]) > 0 {
			return b[:len(b)-1]
		}
		return b
	}
	var stem []byte
	switch {
	case hasSuffix(b, "ed") && hasVowel(b[:len(b)-2]):
		stem = b[:len(b)-2]
	case hasSuffix(b, "ing") && hasVowel(b[:len(b)-3]):
		stem = b[:len(b)-3]
	default:
		return b
	}
	switch {
	case hasSuffix(stem, "at"), hasSuffix(stem, "bl"), hasSuffix(stem, "iz"):
		return append(stem, 'e')
	case doubleConsonant(stem):
		if c := stem[len(stem)-1]; c != 'l' && c != 's' && c != 'z' {
			return stem[:len(stem)-1]
		}
		return stem
	case measure(stem) == 1 && cvc(stem):
		return append(stem, 'e')
	}
	return stem
}

func step1c(b []byte) []byte {
	n := len(b)
	if n > 2 && b[n-1] == 'y' && consonant(b, n-2) {
		b[n-1] = 'i'
	}
	return b
}

type rule struct{ suffix, repl string }

var step2Rules = []rule{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"}, {"izer", "ize"},
	{"bli", "ble"}, {"alli", "al"}, {"fulli", "ful"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"},
	{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"},
	{"fulness", "ful"}, {"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
	{"logi", "log"},
}

var step3Rules = []rule{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"}, {"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

// replaceFirst applies the rule of the longest suffix b ends with, when
// the stem's measure exceeds minM; no shorter rule is tried after a match.
func replaceFirst(b []byte, rules []rule, minM int) []byte {
	best := -1
	for i, r := range rules {
		if hasSuffix(b, r.suffix) && (best < 0 || len(r.suffix) > len(rules[best].suffix)) {
			best = i
		}
	}
	if best < 0 {
		return b
	}
	r := rules[best]
	stem := b[:len(b)-len(r.suffix)]
	if measure(stem) > minM {
		return append(stem, r.repl...)
	}
	return b
}

var step4Suffixes = []string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
	"ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
}

func step4(b []byte) []byte {
	best := ""
	for _, s := range step4Suffixes {
		if hasSuffix(b, s) && len(s) > len(best) {
			best = s
		}
	}
	if best == "" {
		return b
	}
	stem := b[:len(b)-len(best)]
	if measure(stem) <= 1 {
		return b
	}
	if best == "ion" {
		if n := len(stem); n == 0 || (stem[n-1] != 's' && stem[n-1] != 't') {
			return b
		}
	}
	return stem
}

func step5(b []byte) []byte {
	if hasSuffix(b, "e") {
		stem := b[:len(b)-1]
		if m := measure(stem); m > 1 || (m == 1 && !cvc(stem)) {
			b = stem
		}
	}
	if measure(b) > 1 && doubleConsonant(b) && b[len(b)-1] == 'l' {
		b = b[:len(b)-1]
	}
	return b
}
