package pgstore

import (
	"math"
	"testing"
)

func TestVectorLiteral(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    []float32
		want string
	}{
		{nil, "[]"},
		{[]float32{1}, "[1]"},
		{[]float32{0.1, -2.5, 1e-7, float32(math.Pi)}, "[0.1,-2.5,1e-07,3.1415927]"},
	}
	for _, tt := range tests {
		if got := vectorLiteral(tt.v); got != tt.want {
			t.Errorf("vectorLiteral(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestCleanText(t *testing.T) {
	t.Parallel()
	if got := cleanText("a\x00b\xffc"); got != "a\uFFFDb\uFFFDc" {
		t.Errorf("cleanText = %q", got)
	}
	if got := TSQuery("The X200 prices, 東京!"); got != `'x200' | 'price' | '東京'` {
		t.Errorf("TSQuery = %q", got)
	}
}
