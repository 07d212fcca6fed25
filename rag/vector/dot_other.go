//go:build !amd64 || purego

package vector

// dot returns the inner product of a and b, which must have equal length.
func dot(a, b []float32) float32 { return dotGo(a, b) }

// dotInt8 returns the inner product of two int8 vectors of equal length.
func dotInt8(a, b []int8) int32 { return dotInt8Go(a, b) }

// prefetch is a no-op without assembly.
func prefetch(*float32) {}
