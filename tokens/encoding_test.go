package tokens

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// TestGolden compares every line of every corpus file, and each whole file,
// with the ids that tiktoken gives (testdata/golden, written by
// bench/tokens/golden and checked against OpenAI's tiktoken).
func TestGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/corpus/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, enc := range []*Encoding{CL100K(), O200K()} {
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".txt")
			t.Run(enc.Name()+"/"+name, func(t *testing.T) {
				t.Parallel()
				text := readFile(t, f)
				golden := strings.Split(readFile(t, filepath.Join("testdata/golden", enc.Name(), name+".golden")), "\n")
				var inputs []string
				for _, line := range strings.SplitAfter(text, "\n") {
					if line != "" {
						inputs = append(inputs, line)
					}
				}
				inputs = append(inputs, text)
				if len(golden) < len(inputs) {
					t.Fatalf("golden has %d lines, corpus needs %d: regenerate it", len(golden), len(inputs))
				}
				failed := 0
				for i, in := range inputs {
					want := parseIDs(t, golden[i])
					got := enc.Encode(in)
					if !slices.Equal(got, want) {
						if failed++; failed <= 5 {
							t.Errorf("line %d %q:\n got  %v\n want %v", i+1, in, got, want)
						}
						continue
					}
					if n := enc.Count(in); n != len(want) {
						t.Errorf("line %d %q: Count = %d, want %d", i+1, in, n, len(want))
					}
					if s := enc.Decode(got); s != in {
						t.Errorf("line %d: Decode(Encode(s)) = %q, want %q", i+1, s, in)
					}
				}
			})
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func parseIDs(t *testing.T, line string) []int {
	t.Helper()
	ids := []int{}
	for _, f := range strings.Fields(line) {
		id, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("golden: %v", err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestEncodeKnown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		enc  *Encoding
		text string
		want []int
	}{
		{CL100K(), "", []int{}},
		{CL100K(), "hello world", []int{15339, 1917}},
		{O200K(), "hello world", []int{24912, 2375}},
		// Special tokens are ordinary text.
		{CL100K(), "<|endoftext|>", []int{27, 91, 8862, 728, 428, 91, 29}},
		// The look-ahead \s+(?!\S) leaves the last space to the next word.
		{CL100K(), "a  b", []int{64, 220, 293}},
	}
	for _, tt := range tests {
		if got := tt.enc.Encode(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("%s.Encode(%q) = %v, want %v", tt.enc.Name(), tt.text, got, tt.want)
		}
		if got := tt.enc.Count(tt.text); got != len(tt.want) {
			t.Errorf("%s.Count(%q) = %d, want %d", tt.enc.Name(), tt.text, got, len(tt.want))
		}
	}
}

func TestDecodeSpecialAndUnknown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		enc  *Encoding
		ids  []int
		want string
	}{
		{CL100K(), []int{15339, 100257}, "hello<|endoftext|>"},
		{O200K(), []int{199999, 24912}, "<|endoftext|>hello"},
		{CL100K(), []int{-1, 15339, 1 << 40}, "\uFFFDhello\uFFFD"},
		{CL100K(), nil, ""},
	}
	for _, tt := range tests {
		if got := tt.enc.Decode(tt.ids); got != tt.want {
			t.Errorf("%s.Decode(%v) = %q, want %q", tt.enc.Name(), tt.ids, got, tt.want)
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	for _, enc := range []*Encoding{CL100K(), O200K()} {
		for _, s := range []string{"\xff", "a\xffb", "\xe4\xb8", "hi \xc0\xaf there", "\xed\xa0\x80"} {
			want := string([]rune(s)) // each invalid byte becomes U+FFFD
			if got := enc.Encode(s); !slices.Equal(got, enc.Encode(want)) {
				t.Errorf("%s.Encode(%q) = %v, want the ids of %q", enc.Name(), s, got, want)
			}
			if got := enc.Decode(enc.Encode(s)); got != want {
				t.Errorf("%s: Decode(Encode(%q)) = %q, want %q", enc.Name(), s, got, want)
			}
		}
	}
}

func TestCountDoesNotAllocate(t *testing.T) {
	text := strings.Repeat(readFile(t, "testdata/corpus/english.txt")+readFile(t, "testdata/corpus/chinese.txt")+
		readFile(t, "testdata/corpus/mixed.txt"), 4)
	for _, enc := range []*Encoding{CL100K(), O200K()} {
		enc.Count(text) // warm up: load the table, fill the scratch pool
		n := testing.AllocsPerRun(20, func() { enc.Count(text) })
		// Under -race the pool drops scratch buffers at random, and a call
		// may have to grow a fresh one: still O(1) per call.
		limit := 0.0
		if raceEnabled {
			limit = 8
		}
		if n > limit {
			t.Errorf("%s.Count of %d bytes allocates %v times per call, want 0", enc.Name(), len(text), n)
		}
	}
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "hello world", "I'm   here\n\n\tnow", "中文 日本語 한국어", "e\u0301\u0301A\u0301",
		"ǅungla 'S's", "1234567 ١٢٣", "\r\n \r\n", "a/\n//", "\xff\xfe", "😀👨‍👩‍👧"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, enc := range []*Encoding{CL100K(), O200K()} {
			ids := enc.Encode(s)
			if n := enc.Count(s); n != len(ids) {
				t.Fatalf("%s: Count(%q) = %d, len(Encode) = %d", enc.Name(), s, n, len(ids))
			}
			want := s
			if !utf8.ValidString(s) {
				want = string([]rune(s))
			}
			if got := enc.Decode(ids); got != want {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", enc.Name(), s, got)
			}
		}
	})
}

// TestConcurrent encodes the same lines from several goroutines at once, in
// different orders, so that they share the piece cache and scratch pool.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	text := readFile(t, "testdata/corpus/go.txt")[:8000] + readFile(t, "testdata/corpus/mixed.txt")
	lines := strings.SplitAfter(text, "\n")
	for _, enc := range []*Encoding{CL100K(), O200K()} {
		want := make([][]int, len(lines))
		for i, l := range lines {
			want[i] = enc.Encode(l)
		}
		var wg sync.WaitGroup
		errs := make(chan string, 4)
		for g := range 4 {
			wg.Go(func() {
				for k := range lines {
					i := (k*(2*g+1) + g) % len(lines)
					if got := enc.Encode(lines[i]); !slices.Equal(got, want[i]) {
						errs <- fmt.Sprintf("%s: goroutine %d, line %q: %v, want %v", enc.Name(), g, lines[i], got, want[i])
						return
					}
					if n := enc.Count(lines[i]); n != len(want[i]) {
						errs <- fmt.Sprintf("%s: goroutine %d, line %q: Count %d, want %d", enc.Name(), g, lines[i], n, len(want[i]))
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}
}

// TestPieceCache checks the cache on its own: it returns what was put, for
// pieces of every cacheable length, and misses on a different piece that
// maps to the same entry.
func TestPieceCache(t *testing.T) {
	t.Parallel()
	c := newPieceCache()
	var out [cacheMaxTokens]uint32
	for n := 1; n <= cacheMaxBytes; n++ {
		p := strings.Repeat("x", n-1) + "y"
		toks := []uint32{}
		for i := range min(n, cacheMaxTokens) {
			toks = append(toks, uint32(1000*n+i))
		}
		c.put(p, toks)
		got, ok := c.get(p, &out)
		if !ok || !slices.Equal(out[:got], toks) {
			t.Errorf("get(%q) = %v, %v; want %v", p, out[:got], ok, toks)
		}
		if _, ok := c.get(p[:n-1]+"z", &out); ok {
			t.Errorf("get of an uncached piece hit")
		}
	}
	c.put(strings.Repeat("x", cacheMaxBytes+1), []uint32{1})
	if _, ok := c.get(strings.Repeat("x", cacheMaxBytes+1), &out); ok {
		t.Errorf("a piece longer than %d bytes was cached", cacheMaxBytes)
	}
}
