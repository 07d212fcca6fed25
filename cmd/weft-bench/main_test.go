package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llmtest"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of four is the second", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p99 of a hundred is the 99th", ms(seq(100)...), 0.99, 99 * time.Millisecond},
		{"p100 is the max", ms(1, 2, 3), 1, 3 * time.Millisecond},
		{"tiny q is the min", ms(1, 2, 3), 0.0001, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := percentile(tt.sorted, tt.q); got != tt.want {
			t.Errorf("%s: percentile(%v, %v) = %v, want %v", tt.name, tt.sorted, tt.q, got, tt.want)
		}
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	const status = "Name:\tweft\nVmPeak:\t  900000 kB\nVmHWM:\t   81234 kB\nVmRSS:\t   40960 kB\nThreads:\t9\n"
	rss, peak, err := parseStatus(strings.NewReader(status))
	if err != nil || rss != 40960<<10 || peak != 81234<<10 {
		t.Fatalf("parseStatus = %d, %d, %v; want %d, %d, nil", rss, peak, err, 40960<<10, 81234<<10)
	}
	for _, bad := range []string{"Name:\tweft\n", "VmRSS:\t12 MB\n", "VmRSS:\tlots kB\n"} {
		if _, _, err := parseStatus(strings.NewReader(bad)); err == nil {
			t.Errorf("parseStatus(%q) succeeded, want an error", bad)
		}
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	o, err := parseFlags([]string{"--duration", "5s", "--rate", "500", "--only", "latency,rss", "--redis", "redis://x:6379/0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.duration != 5*time.Second || o.rate != 500 || !o.only["latency"] || o.only["stream"] || !o.only["rss"] || o.redisURL != "redis://x:6379/0" {
		t.Errorf("parseFlags = %+v", o)
	}
	for _, args := range [][]string{
		{"--rate", "0"},
		{"--duration", "1ms"},
		{"--only", "latency,speed"},
		{"--concurrency", "0"},
		{"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) succeeded, want an error", args)
		}
	}
}

func TestOpenLoopSendsEveryScheduledRequestOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[int]int{}
	r := openLoop(context.Background(), 2000, 50*time.Millisecond, time.Minute, 8, func(_ context.Context, i int) error {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		if i%10 == 0 {
			return errors.New("every tenth fails")
		}
		return nil
	})
	if r.Requests != 100 || len(seen) != 100 {
		t.Fatalf("sent %d requests (%d distinct), want 100", r.Requests, len(seen))
	}
	for i, n := range seen {
		if n != 1 || i < 0 || i >= 100 {
			t.Fatalf("request %d sent %d times", i, n)
		}
	}
	if r.Errors != 10 || len(r.Latency) != 90 || r.FirstError != "every tenth fails" {
		t.Errorf("errors %d, latencies %d, first error %q; want 10, 90, the failure", r.Errors, len(r.Latency), r.FirstError)
	}
	if r.sustained() {
		t.Error("a run with errors counts as sustained")
	}
}

func TestOpenLoopCutsOffAfterGrace(t *testing.T) {
	t.Parallel()
	r := openLoop(context.Background(), 100, 20*time.Millisecond, 10*time.Millisecond, 8, func(ctx context.Context, _ int) error {
		<-ctx.Done() // a target that never answers
		return ctx.Err()
	})
	if r.Errors != r.Requests || r.Requests != 2 || !strings.Contains(r.FirstError, "cut off") {
		t.Errorf("requests %d, errors %d, first error %q; want every request cut off", r.Requests, r.Errors, r.FirstError)
	}
}

func TestClosedLoopCountsEachWorker(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	workers := map[int]bool{}
	r := closedLoop(context.Background(), 3, 30*time.Millisecond, func(_ context.Context, w int) error {
		mu.Lock()
		workers[w] = true
		mu.Unlock()
		time.Sleep(time.Millisecond) // a request's work, not synchronisation
		return nil
	})
	if len(workers) != 3 || r.Workers != 3 || r.Errors != 0 || r.Completed == 0 || len(r.Latency) != r.Completed {
		t.Errorf("workers seen %v, result %+v", workers, r)
	}
}

func TestSearchRate(t *testing.T) {
	t.Parallel()
	// A target that completes up to 700/s: sustained up to 700/0.95.
	try := func(rate float64, _ time.Duration) openResult {
		r := openResult{Offered: rate, Achieved: rate}
		if rate > 700 {
			r.Achieved = 700
		}
		return r
	}
	got := searchRate(context.Background(), io.Discard, 2000, 650, time.Second, try)
	if got > 700/0.95 || got < 550 {
		t.Errorf("searchRate = %v, want in [550, 736]", got)
	}
	never := func(rate float64, _ time.Duration) openResult { return openResult{Offered: rate, Errors: 1} }
	if got := searchRate(context.Background(), io.Discard, 2000, 0, time.Second, never); got != 0 {
		t.Errorf("searchRate of a target that sustains nothing = %v, want 0", got)
	}
}

func TestRelayCopiesTheStream(t *testing.T) {
	t.Parallel()
	up := llmtest.NewServer()
	defer up.Close()
	url, stop, err := listen(relay(up.URL()))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	n, err := stream(context.Background(), newClient(), url+"/relay", openAIBody(longQuery(1), 2, true), nil, openaiEvents)
	if err != nil || n != 50 {
		t.Fatalf("relay stream: %d deltas, %v; want 50, nil", n, err)
	}
}

// TestWeftStack runs the whole harness path against a real in-process
// weft: the window holds exactly the history asked for, and turns of both
// kinds succeed.
func TestWeftStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	up := llmtest.NewServer()
	defer up.Close()
	st, err := startWeft(ctx, "weft, SQLite", up.URL(), t.TempDir(), nil, "", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	c := newClient()
	if err := checkWindow(ctx, c, up, st, 3); err != nil {
		t.Fatal(err)
	}
	sess, err := st.newSessions(ctx, st.streamAgent, 1, 3, longQuery)
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.chatStream(ctx, c, sess[0], longQuery(7))
	if err != nil || n != 50 {
		t.Fatalf("streamed turn: %d deltas, %v; want 50, nil", n, err)
	}
	if err := st.chat(ctx, c, "ses_missing", shortQuery(1)); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("turn in a missing session: %v, want a 404", err)
	}
}
