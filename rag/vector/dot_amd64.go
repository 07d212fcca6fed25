//go:build !purego

package vector

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernel. The HNSW build spends ~90% of its
// time in dot products, and AVX2 with FMA does eight multiply-adds per
// instruction where the unrolled Go loop does one, so this is the one place
// where assembly pays for itself. Build with -tags purego to disable it.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func dotAVX2(a, b *float32, n int) float32

// dot returns the inner product of a and b, which must have equal length.
func dot(a, b []float32) float32 {
	if useAVX2 && len(a) > 0 {
		return dotAVX2(&a[0], &b[:len(a)][0], len(a))
	}
	return dotGo(a, b)
}

//go:noescape
func dotInt8AVX2(a, b *int8, n int) int32

// dotInt8 returns the inner product of two int8 vectors of equal length.
func dotInt8(a, b []int8) int32 {
	if useAVX2 && len(a) > 0 {
		return dotInt8AVX2(&a[0], &b[:len(a)][0], len(a))
	}
	return dotInt8Go(a, b)
}

// prefetch starts loading the vector at p into the cache, so that a graph
// search computing one neighbour's distance already has the next one's
// vector on the way (the searches are bound by memory latency, not
// arithmetic).
//
//go:noescape
func prefetch(p *float32)
