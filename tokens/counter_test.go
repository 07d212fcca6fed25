package tokens

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

func TestEstimate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"hello world", 3},        // 11 bytes
		{"中文", 2},                 // one per ideograph
		{"ab中文cd", 4},             // runs of ASCII round up on each side
		{"こんにちは", 5},              // kana
		{"안녕", 2},                 // Hangul
		{"ＡＢＣ", 3},                // full-width forms
		{"é", 1},                  // two bytes of Latin
		{"😀😀", 2},                 // eight bytes of emoji
		{"hello, 世界!", 5},         // "hello, " is 7 bytes: 2; 世, 界: 1 each; "!": 1
		{"\xff\xfe\xfd\xfc", 1},   // invalid bytes count as bytes
		{"abcdefgh中abcdefghi", 6}, // 8 bytes: 2; 中: 1; 9 bytes: 3
	}
	for _, tt := range tests {
		if got := Estimate(tt.text); got != tt.want {
			t.Errorf("Estimate(%q) = %d, want %d", tt.text, got, tt.want)
		}
		if got := (Estimator{}).Count(tt.text); got != tt.want {
			t.Errorf("Estimator.Count(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

func TestEstimateDoesNotAllocate(t *testing.T) {
	text := "The quick brown fox 跳过了懒狗 and the ｆｕｌｌ-width ones, 😀 twice 😀."
	var c Counter = Estimator{}
	if n := testing.AllocsPerRun(100, func() { c.Count(text) }); n != 0 {
		t.Errorf("Estimator.Count allocates %v times per call, want 0", n)
	}
}

// TestEstimateCorpus checks the word-at-a-time ASCII skip against a plain
// rune-by-rune reading of Estimator's rule.
func TestEstimateCorpus(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/corpus/*.txt")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for i := 0; i < len(text); i += 97 {
			s := text[i:min(len(text), i+500)]
			if got, want := Estimate(s), estimateRunes(s); got != want {
				t.Fatalf("%s at %d: Estimate = %d, want %d", f, i, got, want)
			}
		}
	}
}

func estimateRunes(s string) int {
	n, run := 0, 0
	for len(s) > 0 {
		r, w := utf8.DecodeRuneInString(s)
		s = s[w:]
		if isWide(r) {
			n += (run+3)/4 + 1
			run = 0
		} else {
			run += w
		}
	}
	return n + (run+3)/4
}
