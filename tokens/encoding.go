package tokens

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// Provenance of the embedded tables: data/*.bpe.gz are OpenAI's tiktoken rank
// files for cl100k_base and o200k_base (MIT licence, © OpenAI), converted by
// internal/gen from the copies in the Go module
// github.com/pkoukk/tiktoken-go-loader v0.0.2 (MIT) after checking them
// against the SHA-256 sums that tiktoken pins. Regenerate with go generate.

//go:embed data/cl100k_base.bpe.gz
var cl100kData []byte

//go:embed data/o200k_base.bpe.gz
var o200kData []byte

// Encoding is one of OpenAI's byte-pair encodings, exact to tiktoken: Encode
// returns the token ids tiktoken's encode_ordinary returns, and Count their
// number. The rank table is embedded and decoded on first use (tens of
// milliseconds; about 5 MB of memory for cl100k_base, 11 MB for
// o200k_base). An Encoding is safe for concurrent use and implements
// Counter.
//
// Special tokens such as <|endoftext|> are not recognised in the input: they
// are encoded as the ordinary text they are written with, as tiktoken's
// encode_ordinary does, so that user text cannot forge them. Text that is
// not valid UTF-8 is encoded as if each invalid byte were U+FFFD, the
// replacement character, as both Go ports of tiktoken do (Python's tiktoken
// likewise replaces lone surrogates, its closest analogue). Character
// classes come from Go's unicode package (Unicode 15.0 in Go 1.26);
// tiktoken's regex engine may classify code points assigned by later Unicode
// versions differently.
type Encoding struct {
	name    string
	split   func(s string, i int) int
	gz      []byte
	special map[int]string

	once    sync.Once
	v       *vocab
	scratch sync.Pool
}

var _ Counter = (*Encoding)(nil)

var (
	cl100k = &Encoding{
		name:  "cl100k_base",
		split: nextCL100K,
		gz:    cl100kData,
		special: map[int]string{
			100257: "<|endoftext|>",
			100258: "<|fim_prefix|>",
			100259: "<|fim_middle|>",
			100260: "<|fim_suffix|>",
			100276: "<|endofprompt|>",
		},
	}
	o200k = &Encoding{
		name:  "o200k_base",
		split: nextO200K,
		gz:    o200kData,
		special: map[int]string{
			199999: "<|endoftext|>",
			200018: "<|endofprompt|>",
		},
	}
)

// CL100K returns the cl100k_base encoding of GPT-4, GPT-3.5 and OpenAI's
// text-embedding-3 and ada-002 embedding models.
func CL100K() *Encoding { return cl100k }

// O200K returns the o200k_base encoding of GPT-4o, GPT-4.1, GPT-5 and the o
// series of reasoning models.
func O200K() *Encoding { return o200k }

// Name returns the encoding's tiktoken name, such as "o200k_base".
func (e *Encoding) Name() string { return e.name }

func (e *Encoding) vocab() *vocab {
	e.once.Do(func() {
		v, err := loadVocab(e.gz)
		if err != nil {
			// The tables are generated and checked at build time; a failure
			// here means a corrupt build, not bad input.
			panic(fmt.Sprintf("tokens: embedded %s table: %v", e.name, err))
		}
		bmpOnce.Do(loadBMP)
		e.v = v
	})
	return e.v
}

// Count returns the number of tokens of text, len(e.Encode(text)), without
// building the list: it does not allocate once warm.
func (e *Encoding) Count(text string) int {
	v := e.vocab()
	text = validUTF8(text)
	var sc *scratch
	n := 0
	for i := 0; i < len(text); {
		j := e.split(text, i)
		if p := text[i:j]; j-i == 1 || v.rank(p) != noRank {
			n++
		} else {
			if sc == nil {
				sc = e.getScratch()
			}
			n += len(v.tokens(p, sc))
		}
		i = j
	}
	if sc != nil {
		e.scratch.Put(sc)
	}
	return n
}

// Encode returns the token ids of text.
func (e *Encoding) Encode(text string) []int {
	v := e.vocab()
	text = validUTF8(text)
	var sc *scratch
	ids := make([]int, 0, len(text)/4+1)
	for i := 0; i < len(text); {
		j := e.split(text, i)
		p := text[i:j]
		r := v.byteRank[p[0]]
		if len(p) > 1 {
			r = v.rank(p)
		}
		if r != noRank {
			ids = append(ids, int(r))
		} else {
			if sc == nil {
				sc = e.getScratch()
			}
			for _, t := range v.tokens(p, sc) {
				ids = append(ids, int(t))
			}
		}
		i = j
	}
	if sc != nil {
		e.scratch.Put(sc)
	}
	return ids
}

// Decode returns the text of ids. Special tokens decode to their names, such
// as "<|endoftext|>"; an id that is no token of the encoding decodes to
// U+FFFD. Decode(Encode(s)) == s for every valid UTF-8 string s.
func (e *Encoding) Decode(ids []int) string {
	v := e.vocab()
	var b strings.Builder
	for _, id := range ids {
		switch {
		case id >= 0 && id < v.size():
			b.WriteString(v.token(uint32(id)))
		case e.special[id] != "":
			b.WriteString(e.special[id])
		default:
			b.WriteRune(utf8.RuneError)
		}
	}
	return b.String()
}

func (e *Encoding) getScratch() *scratch {
	if sc, ok := e.scratch.Get().(*scratch); ok {
		return sc
	}
	return new(scratch)
}

// validUTF8 returns s with each byte of an invalid sequence replaced by
// U+FFFD, as converting it to runes does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}
