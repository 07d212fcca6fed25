package bomb

import (
	"runtime"
	"time"
)

// PeakHeap runs f and returns the highest heap in use seen above the
// starting point, sampled every 10 ms, and the bytes allocated meanwhile:
// what a bomb cost the code that read it. Other goroutines' allocations
// count too, so tests that use it do not run in parallel.
func PeakHeap(f func()) (peak, alloc uint64) {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	done := make(chan struct{})
	sampled := make(chan uint64)
	go func() {
		var m runtime.MemStats
		high := before.HeapInuse
		for {
			runtime.ReadMemStats(&m)
			high = max(high, m.HeapInuse)
			select {
			case <-done:
				sampled <- high - before.HeapInuse
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	peak = <-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return peak, after.TotalAlloc - before.TotalAlloc
}
