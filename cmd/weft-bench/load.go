package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// openResult is what an open-loop run measured.
type openResult struct {
	// Offered is the scheduled rate, per second.
	Offered float64
	// Achieved is completions per second, from the first scheduled send to
	// the last completion.
	Achieved float64
	// Requests and Errors count the sends and the failed ones.
	Requests, Errors int
	// FirstError is the first failure, for the report.
	FirstError string
	// Latency holds the successful requests' latencies, each measured from
	// the time the request was scheduled (not sent), sorted.
	Latency []time.Duration
	// CPUPerRequest is the process's CPU time (user and system, all
	// threads: generator, target and upstream) per completed request.
	CPUPerRequest time.Duration
	// DispatchLagP99 is the 99th percentile of how late the generator
	// itself sent requests: a large value means the load generator, not
	// the target, fell behind.
	DispatchLagP99 time.Duration
}

// sustained reports whether the target kept up with the offered rate: at
// least 95% of it completed in the window, with no errors.
func (r openResult) sustained() bool {
	return r.Errors == 0 && r.Achieved >= 0.95*r.Offered
}

// openLoop sends rate×d requests, the i-th scheduled at start + i/rate,
// each on its own goroutine, and measures each from its scheduled time, so
// that a slow target cannot slow the generator down and hide its own
// slowness (coordinated omission): when the target falls behind, the
// queueing shows in the latencies. At most maxInFlight requests run at
// once; beyond that the generator waits, and the wait counts in the
// latencies too. Requests still running grace after the last scheduled
// send are cancelled and count as errors: a target that collapses ends the
// run instead of holding it for minutes.
func openLoop(ctx context.Context, rate float64, d, grace time.Duration, maxInFlight int, do func(ctx context.Context, i int) error) openResult {
	n := int(rate * d.Seconds())
	if n < 1 {
		n = 1
	}
	interval := time.Duration(float64(time.Second) / rate)
	lat := make([]time.Duration, n)
	lag := make([]time.Duration, n)
	ok := make([]bool, n)
	var errs atomic.Int64
	var firstErr atomic.Pointer[string]
	var lastDone atomic.Int64
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	start := time.Now()
	ctx, cancel := context.WithDeadline(ctx, start.Add(d+grace))
	defer cancel()
	for i := 0; i < n; i++ {
		sched := start.Add(time.Duration(i) * interval)
		if w := time.Until(sched); w > 0 {
			time.Sleep(w)
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			n = i
			break
		}
		lag[i] = time.Since(sched)
		wg.Add(1)
		go func(i int, sched time.Time) {
			defer wg.Done()
			defer func() { <-sem }()
			err := do(ctx, i)
			end := time.Now()
			if err != nil && ctx.Err() != nil {
				err = fmt.Errorf("cut off %s after the last scheduled send: %w", grace, err)
			}
			if err != nil {
				if errs.Add(1) == 1 {
					s := err.Error()
					firstErr.Store(&s)
				}
			} else {
				lat[i] = end.Sub(sched)
				ok[i] = true
			}
			for {
				prev := lastDone.Load()
				if int64(end.Sub(start)) <= prev || lastDone.CompareAndSwap(prev, int64(end.Sub(start))) {
					break
				}
			}
		}(i, sched)
	}
	wg.Wait()
	cpu := cpuTime() - cpu0
	r := openResult{Offered: rate, Requests: n, Errors: int(errs.Load())}
	if p := firstErr.Load(); p != nil {
		r.FirstError = *p
	}
	for i := 0; i < n; i++ {
		if ok[i] {
			r.Latency = append(r.Latency, lat[i])
		}
	}
	slices.Sort(r.Latency)
	if len(r.Latency) > 0 {
		r.CPUPerRequest = cpu / time.Duration(len(r.Latency))
	}
	// The window is the scheduled span (n intervals) or, when the last
	// completion came later, up to it.
	window := max(time.Duration(n)*interval, time.Duration(lastDone.Load()))
	r.Achieved = float64(n-r.Errors) / window.Seconds()
	lags := lag[:n]
	slices.Sort(lags)
	r.DispatchLagP99 = percentile(lags, 0.99)
	return r
}

// closedResult is what a closed-loop run measured.
type closedResult struct {
	// Workers is the number of concurrent clients.
	Workers int
	// Completed and Errors count finished and failed requests.
	Completed, Errors int
	FirstError        string
	// PerSecond is completions per second of the run.
	PerSecond float64
	// Latency holds the successful requests' latencies, sorted.
	Latency []time.Duration
	// CPUPerRequest is the process's CPU time per completed request.
	CPUPerRequest time.Duration
}

// closedLoop runs workers clients, each sending its next request when the
// previous one ended, for d.
func closedLoop(ctx context.Context, workers int, d time.Duration, do func(ctx context.Context, worker int) error) closedResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	r := closedResult{Workers: workers}
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var lat []time.Duration
			errs, first := 0, ""
			for ctx.Err() == nil {
				t := time.Now()
				err := do(ctx, w)
				if ctx.Err() != nil {
					break // cut off by the end of the run: neither a success nor a failure
				}
				if err != nil {
					if errs == 0 {
						first = err.Error()
					}
					errs++
					continue
				}
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			r.Latency = append(r.Latency, lat...)
			r.Errors += errs
			if r.FirstError == "" {
				r.FirstError = first
			}
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	r.Completed = len(r.Latency)
	if r.Completed > 0 {
		r.CPUPerRequest = cpu / time.Duration(r.Completed)
	}
	r.PerSecond = float64(r.Completed) / elapsed.Seconds()
	slices.Sort(r.Latency)
	return r
}

// percentile returns the nearest-rank q-quantile (0 < q ≤ 1) of sorted
// durations, or 0 when there are none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// cpuTime returns the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
