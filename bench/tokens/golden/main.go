// Command golden writes the golden token ids that package tokens is tested
// against, computed by the peer library github.com/pkoukk/tiktoken-go (with
// its offline loader) and cross-checked with github.com/tiktoken-go/tokenizer;
// disagreements are reported. It lives in the bench module so that Weft itself
// never imports a peer.
//
// pkoukk/tiktoken-go is the reference because it runs tiktoken's patterns
// through regexp2's interpreter; tiktoken-go/tokenizer v0.10.0 compiles them
// with regexp2cg, which splits some runs of white space differently from
// tiktoken ("\n   \n \t \n" before a word). check.mjs verifies the golden
// files against OpenAI's own tiktoken (its WebAssembly build on npm).
//
//	cd bench && go run ./tokens/golden
//
// It first (re)writes corpus/random.txt, random Unicode from a fixed seed,
// then, for each corpus/<name>.txt and each encoding, golden/<enc>/<name>.golden:
// one line of space-separated ids per corpus line (each line with its
// trailing newline), then a line with the ids of the whole file.
package main

import (
	"flag"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/tiktoken-go/tokenizer"
)

func main() {
	dir := flag.String("dir", "../tokens/testdata", "package tokens' testdata directory")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("golden: ")

	if err := os.WriteFile(filepath.Join(*dir, "corpus", "random.txt"), []byte(randomText()), 0o644); err != nil {
		log.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(*dir, "corpus", "*.txt"))
	if err != nil || len(files) == 0 {
		log.Fatalf("no corpus in %s: %v", *dir, err)
	}
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	for _, enc := range []struct {
		name string
		tok  tokenizer.Encoding
	}{{"cl100k_base", tokenizer.Cl100kBase}, {"o200k_base", tokenizer.O200kBase}} {
		codec, err := tokenizer.Get(enc.tok)
		if err != nil {
			log.Fatal(err)
		}
		ref, err := tiktoken.GetEncoding(enc.name)
		if err != nil {
			log.Fatal(err)
		}
		encode := func(s string) []int {
			out := ref.EncodeOrdinary(s)
			ids, _, err := codec.Encode(s)
			if err != nil {
				log.Fatal(err)
			}
			o := make([]int, len(ids))
			for i, id := range ids {
				o[i] = int(id)
			}
			if !slices.Equal(o, out) {
				log.Printf("%s: peers disagree on %q:\n  pkoukk/tiktoken-go    %v\n  tiktoken-go/tokenizer %v", enc.name, s, out, o)
			}
			return out
		}
		outDir := filepath.Join(*dir, "golden", enc.name)
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			log.Fatal(err)
		}
		for _, f := range files {
			text, err := os.ReadFile(f)
			if err != nil {
				log.Fatal(err)
			}
			var b strings.Builder
			for _, line := range strings.SplitAfter(string(text), "\n") {
				if line != "" {
					writeIDs(&b, encode(line))
				}
			}
			writeIDs(&b, encode(string(text)))
			name := strings.TrimSuffix(filepath.Base(f), ".txt") + ".golden"
			if err := os.WriteFile(filepath.Join(outDir, name), []byte(b.String()), 0o644); err != nil {
				log.Fatal(err)
			}
		}
	}
}

func writeIDs(b *strings.Builder, ids []int) {
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(id))
	}
	b.WriteByte('\n')
}

// randomText returns lines of random code points drawn from ranges that
// exercise the splitters: ASCII, Latin letters of every case, combining
// marks, modifier and other letters, digits of many scripts, Unicode spaces
// and line breaks, CJK, symbols and supplementary planes.
func randomText() string {
	r := rand.New(rand.NewPCG(2026, 12))
	ranges := [][2]rune{
		{0x20, 0x7E}, {0x20, 0x7E}, {0x20, 0x7E}, {'a', 'z'}, {'A', 'Z'}, {'0', '9'},
		{0x09, 0x0D}, {0x00A0, 0x024F}, {0x01C4, 0x01CC}, {0x02B0, 0x036F},
		{0x0370, 0x03FF}, {0x0400, 0x04FF}, {0x0590, 0x06FF}, {0x0900, 0x097F},
		{0x0E00, 0x0E7F}, {0x1E00, 0x1FFF}, {0x2000, 0x206F}, {0x20A0, 0x214F},
		{0x2160, 0x2188}, {0x2460, 0x24FF}, {0x3000, 0x30FF}, {0x4E00, 0x9FFF},
		{0xAC00, 0xD7A3}, {0xFF00, 0xFFEF}, {0x1D400, 0x1D7FF}, {0x1F300, 0x1FAFF},
		{0xE0000, 0xE007F}, {0x10000, 0x10FFFF},
	}
	var b strings.Builder
	for range 300 {
		n := 1 + r.IntN(40)
		for range n {
			g := ranges[r.IntN(len(ranges))]
			c := g[0] + r.Int32N(g[1]-g[0]+1)
			if !utf8.ValidRune(c) || unicode.Is(unicode.Cs, c) {
				c = ' '
			}
			b.WriteRune(c)
			if r.IntN(6) == 0 { // words: repeat the same range a few times
				for range r.IntN(5) {
					b.WriteRune(g[0] + r.Int32N(g[1]-g[0]+1))
				}
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
