package rag

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the CPU time (user + system) this process has used. On a
// shared machine wall-clock latency includes time spent waiting for a core;
// CPU time per query is what the same query costs on an idle machine
// (for single-threaded searches it equals the idle wall time).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter reports CPU time per iteration alongside the wall-clock figures.
type cpuMeter struct{ start time.Duration }

func startCPU() cpuMeter { return cpuMeter{cpuTime()} }

func (m cpuMeter) report(b *testing.B, scale float64, unit string) {
	b.ReportMetric((cpuTime()-m.start).Seconds()/float64(b.N)*scale, unit)
}
