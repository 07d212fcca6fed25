package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// result is one measured run.
type result struct {
	Offered, Achieved float64
	Requests, Errors  int
	FirstError        string
	Latency           []time.Duration // successful requests, sorted
	ServerCPU         time.Duration   // the target process's CPU time over the run
}

func (r result) pct(p float64) time.Duration {
	if len(r.Latency) == 0 {
		return 0
	}
	i := int(p * float64(len(r.Latency)-1))
	return r.Latency[i]
}

// cpuPerTurn is the target's CPU time per completed request.
func (r result) cpuPerTurn() time.Duration {
	if len(r.Latency) == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(len(r.Latency))
}

// openLoop sends rate×d requests on a fixed schedule, each measured from
// its scheduled time (no coordinated omission); at most maxInFlight run at
// once. cpu, when not nil, reads the target process's CPU time.
func openLoop(ctx context.Context, rate float64, d time.Duration, cpu func() time.Duration, do func(ctx context.Context, i int) error) result {
	const maxInFlight = 1000
	n := max(1, int(rate*d.Seconds()))
	interval := time.Duration(float64(time.Second) / rate)
	lat := make([]time.Duration, n)
	ok := make([]bool, n)
	var errs atomic.Int64
	var firstErr atomic.Pointer[string]
	var last atomic.Int64
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	var cpu0 time.Duration
	if cpu != nil {
		cpu0 = cpu()
	}
	start := time.Now()
	ctx, cancel := context.WithDeadline(ctx, start.Add(d+max(2*time.Second, d/2)))
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
		wg.Add(1)
		go func(i int, sched time.Time) {
			defer wg.Done()
			defer func() { <-sem }()
			err := do(ctx, i)
			end := time.Now()
			if err != nil {
				if errs.Add(1) == 1 {
					s := err.Error()
					firstErr.Store(&s)
				}
			} else {
				lat[i], ok[i] = end.Sub(sched), true
			}
			for {
				p := last.Load()
				if int64(end.Sub(start)) <= p || last.CompareAndSwap(p, int64(end.Sub(start))) {
					break
				}
			}
		}(i, sched)
	}
	wg.Wait()
	r := result{Offered: rate, Requests: n, Errors: int(errs.Load())}
	if cpu != nil {
		r.ServerCPU = cpu() - cpu0
	}
	if p := firstErr.Load(); p != nil {
		r.FirstError = *p
	}
	for i := 0; i < n; i++ {
		if ok[i] {
			r.Latency = append(r.Latency, lat[i])
		}
	}
	slices.Sort(r.Latency)
	if el := time.Duration(last.Load()); el > 0 {
		r.Achieved = float64(len(r.Latency)) / el.Seconds()
	}
	return r
}

// closedLoop runs workers clients back to back for d.
func closedLoop(ctx context.Context, workers int, d time.Duration, cpu func() time.Duration, do func(ctx context.Context, w int) error) result {
	var mu sync.Mutex
	var r result
	var wg sync.WaitGroup
	var cpu0 time.Duration
	if cpu != nil {
		cpu0 = cpu()
	}
	start := time.Now()
	stop := start.Add(d)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for time.Now().Before(stop) && ctx.Err() == nil {
				t0 := time.Now()
				err := do(ctx, w)
				el := time.Since(t0)
				mu.Lock()
				r.Requests++
				if err != nil {
					r.Errors++
					if r.FirstError == "" {
						r.FirstError = err.Error()
					}
				} else {
					r.Latency = append(r.Latency, el)
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if cpu != nil {
		r.ServerCPU = cpu() - cpu0
	}
	slices.Sort(r.Latency)
	r.Achieved = float64(len(r.Latency)) / time.Since(start).Seconds()
	return r
}

// procCPU returns a reader of process pid's CPU time (user + system, from
// /proc/<pid>/stat, in clock ticks of 10 ms).
func procCPU(pid int) func() time.Duration {
	return func() time.Duration {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return 0
		}
		s := string(b)
		// Fields after the command name, which is in parentheses.
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		return time.Duration(ut+st) * 10 * time.Millisecond
	}
}

func fmtDur(d time.Duration) string {
	us := float64(d.Nanoseconds()) / 1e3
	switch {
	case us >= 10_000 || us <= -10_000:
		return fmt.Sprintf("%.1fms", us/1e3)
	default:
		return fmt.Sprintf("%.0fµs", us)
	}
}
