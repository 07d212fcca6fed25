package vector

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDotKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 200; n++ {
		a, b := make([]float32, n), make([]float32, n)
		var want float64
		for i := range a {
			a[i], b[i] = r.Float32()*2-1, r.Float32()*2-1
			want += float64(a[i]) * float64(b[i])
		}
		for name, got := range map[string]float32{"dot": dot(a, b), "dotGo": dotGo(a, b)} {
			if math.Abs(float64(got)-want) > 1e-4*math.Sqrt(float64(n)) {
				t.Fatalf("%s, n=%d: got %v, want %v", name, n, got, want)
			}
		}
		qa, qb := make([]int8, n), make([]int8, n)
		var wantI int32
		for i := range qa {
			qa[i], qb[i] = int8(r.IntN(255)-127), int8(r.IntN(255)-127)
			wantI += int32(qa[i]) * int32(qb[i])
		}
		if got, gotGo := dotInt8(qa, qb), dotInt8Go(qa, qb); got != wantI || gotGo != wantI {
			t.Fatalf("dotInt8, n=%d: got %d (Go %d), want %d", n, got, gotGo, wantI)
		}
	}
}

func BenchmarkDot384(b *testing.B) {
	x, y := make([]float32, 384), make([]float32, 384)
	for i := range x {
		x[i], y[i] = float32(i), float32(384-i)
	}
	b.Run("dispatch", func(b *testing.B) {
		for b.Loop() {
			dot(x, y)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			dotGo(x, y)
		}
	})
	qx, qy := make([]int8, 384), make([]int8, 384)
	b.Run("int8", func(b *testing.B) {
		for b.Loop() {
			dotInt8(qx, qy)
		}
	})
}
