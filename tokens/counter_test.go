package tokens

import "testing"

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
		{"hello world", 3},      // 11 bytes
		{"中文", 2},               // one per ideograph
		{"ab中文cd", 4},           // runs of ASCII round up on each side
		{"こんにちは", 5},            // kana
		{"안녕", 2},               // Hangul
		{"ＡＢＣ", 3},              // full-width forms
		{"é", 1},                // two bytes of Latin
		{"😀😀", 2},               // eight bytes of emoji
		{"hello, 世界!", 5},       // "hello, " is 7 bytes: 2; 世, 界: 1 each; "!": 1
		{"\xff\xfe\xfd\xfc", 1}, // invalid bytes count as bytes
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
