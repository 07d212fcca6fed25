// Command gen converts OpenAI's tiktoken rank files into the compact tables
// that package tokens embeds.
//
// Input: the .tiktoken files (one "base64(token) rank" line per token) shipped
// by the Go module github.com/pkoukk/tiktoken-go-loader (MIT), which copies
// them unchanged from OpenAI's tiktoken (MIT). Each file is checked against
// the SHA-256 that tiktoken itself pins, so the tables are byte-for-byte
// OpenAI's.
//
// Output (one file per encoding, tokens/data/<name>.bpe.gz): gzip of
//
//	"WEFTBPE1" uvarint(n) { uvarint(len) bytes } × n
//
// with the tokens in rank order, rank 0 first. Ranks must be contiguous.
//
// Run it through go generate in package tokens; it locates the loader module
// with `go mod download`, so nothing is added to Weft's go.mod.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

const loader = "github.com/pkoukk/tiktoken-go-loader@v0.0.2"

// encodings lists each encoding with the SHA-256 that tiktoken
// (tiktoken_ext/openai_public.py) expects of its rank file.
var encodings = []struct{ name, sha256 string }{
	{"cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"},
	{"o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"},
}

func main() {
	src := flag.String("src", "", "directory holding the .tiktoken files (default: the loader module's assets, via go mod download)")
	out := flag.String("out", "data", "output directory")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("gen: ")

	dir := *src
	if dir == "" {
		var err error
		if dir, err = moduleAssets(); err != nil {
			log.Fatal(err)
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, e := range encodings {
		raw, err := os.ReadFile(filepath.Join(dir, e.name+".tiktoken"))
		if err != nil {
			log.Fatal(err)
		}
		if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != e.sha256 {
			log.Fatalf("%s.tiktoken: sha256 %x, want %s (not OpenAI's file)", e.name, sum, e.sha256)
		}
		tokens, err := parse(raw)
		if err != nil {
			log.Fatalf("%s.tiktoken: %v", e.name, err)
		}
		data, err := encode(tokens)
		if err != nil {
			log.Fatal(err)
		}
		path := filepath.Join(*out, e.name+".bpe.gz")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			log.Fatal(err)
		}
		log.Printf("%s: %d tokens, %d bytes", path, len(tokens), len(data))
	}
}

// moduleAssets returns the assets directory of the loader module, fetching
// it into the module cache if needed.
func moduleAssets() (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", loader)
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", loader, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(outb, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no module directory in %q", loader, outb)
	}
	return filepath.Join(m.Dir, "assets"), nil
}

// parse reads "base64 rank" lines and returns the tokens indexed by rank.
func parse(raw []byte) ([][]byte, error) {
	byRank := map[int][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for line := 1; sc.Scan(); line++ {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want 2 fields, got %d", line, len(f))
		}
		tok, err := base64.StdEncoding.DecodeString(string(f[0]))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		rank, err := strconv.Atoi(string(f[1]))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if len(tok) == 0 {
			return nil, fmt.Errorf("line %d: empty token", line)
		}
		if _, dup := byRank[rank]; dup {
			return nil, fmt.Errorf("line %d: duplicate rank %d", line, rank)
		}
		byRank[rank] = tok
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	tokens := make([][]byte, len(byRank))
	for r, tok := range byRank {
		if r < 0 || r >= len(tokens) {
			return nil, fmt.Errorf("ranks are not contiguous: rank %d of %d tokens", r, len(tokens))
		}
		tokens[r] = tok
	}
	return tokens, nil
}

func encode(tokens [][]byte) ([]byte, error) {
	var raw bytes.Buffer
	raw.WriteString("WEFTBPE1")
	raw.Write(binary.AppendUvarint(nil, uint64(len(tokens))))
	for _, t := range tokens {
		raw.Write(binary.AppendUvarint(nil, uint64(len(t))))
		raw.Write(t)
	}
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
