package memorytest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

// The environment of a helper process.
const (
	envHelper  = "WEFT_MEMORYTEST_HELPER" // set in helper processes
	envKey     = "WEFT_MEMORYTEST_KEY"    // tenant/agent/session
	envWriter  = "WEFT_MEMORYTEST_WRITER"
	envCount   = "WEFT_MEMORYTEST_COUNT"    // 0: append until killed
	envLockTTL = "WEFT_MEMORYTEST_LOCK_TTL" // set: hold the key's lock instead
	envBegin   = "WEFT_MEMORYTEST_BEGIN"    // set: hold it with Chat.Begin
	helperTest = "TestHelperProcess"
)

// HelperProcess is the body of a backend's TestHelperProcess test, the
// child that [CrossProcess] and [KillMidAppend] start by re-running the test
// binary. In a normal test run it skips. In a child it opens the store with
// open (which reads whatever environment the parent passed), appends one
// record at a time with ids "w<writer>-<i>", prints "ack <seq> <id>" to
// stdout after each Append returns, and exits.
func HelperProcess(t *testing.T, open func() (memory.Store, error)) {
	if os.Getenv(envHelper) == "" {
		t.Skip("the child of the cross-process tests")
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	parts := strings.SplitN(os.Getenv(envKey), "/", 3)
	if len(parts) != 3 {
		fail(fmt.Errorf("bad %s %q", envKey, os.Getenv(envKey)))
	}
	key := memory.Key{Tenant: parts[0], Agent: parts[1], Session: parts[2]}
	if v := os.Getenv(envLockTTL); v != "" {
		holdLock(open, key, v, fail)
	}
	writer, err1 := strconv.Atoi(os.Getenv(envWriter))
	count, err2 := strconv.Atoi(os.Getenv(envCount))
	if err1 != nil || err2 != nil {
		fail(fmt.Errorf("bad %s or %s", envWriter, envCount))
	}
	s, err := open()
	if err != nil {
		fail(err)
	}
	for i := 0; count == 0 || i < count; i++ {
		id := fmt.Sprintf("w%d-%d", writer, i)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := s.Append(ctx, key, memory.Record{ID: id, Message: llm.UserMessage(id), Tokens: 1})
		cancel()
		if err != nil {
			fail(err)
		}
		// Unbuffered: the parent sees the ack as soon as Append returned.
		fmt.Fprintf(os.Stdout, "ack %d %s\n", out[0].Seq, out[0].ID)
	}
	os.Exit(0)
}

// holdLock is the helper that takes key's lock (with Lock, or with
// Chat.Begin when envBegin is set), says "locked", and holds it until
// killed.
func holdLock(open func() (memory.Store, error), key memory.Key, ttl string, fail func(error)) {
	d, err := time.ParseDuration(ttl)
	if err != nil {
		fail(err)
	}
	s, err := open()
	if err != nil {
		fail(err)
	}
	lk, ok := s.(memory.Locker)
	if !ok {
		fail(fmt.Errorf("%T is not a Locker", s))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := memory.Lease{Owner: "memorytest-helper", TTL: d}
	if os.Getenv(envBegin) != "" {
		_, _, err = memory.NewChat(s, key, memory.Window{}, memory.WithLease(l)).Begin(ctx,
			memory.Record{ID: "held-q", Message: llm.UserMessage("held"), Tokens: 1})
	} else {
		_, err = lk.Lock(ctx, key, l)
	}
	if err != nil {
		fail(err)
	}
	fmt.Fprintln(os.Stdout, "locked")
	select {} // until killed
}

// KillHolder starts a child process (see [HelperProcess]) that takes a
// conversation's lock with a lease of ttl and holds it, checks that the
// lock stays held past its ttl while the child lives (the child's
// heartbeat renews it), kills the child with SIGKILL, and checks that the
// lock is then taken within a few ttls: a dead holder blocks no one for
// long.
func KillHolder(t *testing.T, s memory.Store, env []string, ttl time.Duration) {
	t.Helper()
	killHolder(t, s, append(env, envLockTTL+"="+ttl.String()), ttl)
}

// KillTurnHolder is [KillHolder] with a child that holds the conversation
// with Chat.Begin (and so, on a [memory.TurnStore], with the store's
// Begin): a turn whose process died blocks no one for long either.
func KillTurnHolder(t *testing.T, s memory.Store, env []string, ttl time.Duration) {
	t.Helper()
	killHolder(t, s, append(env, envLockTTL+"="+ttl.String(), envBegin+"=1"), ttl)
}

func killHolder(t *testing.T, s memory.Store, env []string, ttl time.Duration) {
	t.Helper()
	lk, ok := s.(memory.Locker)
	if !ok {
		t.Fatalf("%T is not a Locker", s)
	}
	key := newKey("killed-holder")
	cmd := helper(t, env, key, 0, 0)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "locked" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper did not lock: %q %v", sc.Text(), sc.Err())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*ttl)
	_, err = lk.Lock(ctx, key, memory.Lease{})
	cancel()
	if !errors.Is(err, memory.ErrLockTimeout) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("Lock while the holder lives, after 3 TTLs: err = %v, want ErrLockTimeout", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: the error is expected
	// Bounded generously (CPU is shared): the point is that it ends.
	ctx, cancel = context.WithTimeout(t.Context(), 10*ttl+10*time.Second)
	release, err := lk.Lock(ctx, key, memory.Lease{})
	cancel()
	if err != nil {
		t.Fatalf("Lock after its holder was killed: %v", err)
	}
	release()
}

func helper(t *testing.T, env []string, key memory.Key, writer, count int) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+helperTest+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, envHelper+"=1", envKey+"="+key.Tenant+"/"+key.Agent+"/"+key.Session,
		envWriter+"="+strconv.Itoa(writer), envCount+"="+strconv.Itoa(count))
	cmd.Stderr = os.Stderr
	return cmd
}

// CrossProcess starts two child processes (see [HelperProcess]) that append
// each records to one conversation concurrently, and checks with s that the
// log holds all of them in one strict order with no gap. env is added to the
// children's environment, for the child's open function.
func CrossProcess(t *testing.T, s memory.Store, env []string, each int) {
	t.Helper()
	key := newKey("processes")
	const writers = 2
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		cmd := helper(t, env, key, w, each)
		wg.Go(func() {
			out, err := cmd.Output()
			if err == nil && strings.Count(string(out), "ack ") != each {
				err = fmt.Errorf("%d acks, want %d", strings.Count(string(out), "ack "), each)
			}
			errs[w] = err
		})
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("helper process %d: %v", w, err)
		}
	}
	CheckLog(t, mustLoad(t, s, key, memory.Window{}), writers, each)
}

// KillMidAppend starts a child process (see [HelperProcess]) that appends
// until it is killed, kills it with SIGKILL after acks acknowledged appends,
// and checks with s that every acknowledged record is stored with the Seq it
// was acknowledged with, and that the log is gap-free (the append in flight
// when the child died may or may not be there, but never half).
func KillMidAppend(t *testing.T, s memory.Store, env []string, acks int) {
	t.Helper()
	key := newKey("kill")
	cmd := helper(t, env, key, 0, 0)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]int64{}
	sc := bufio.NewScanner(stdout)
	for len(acked) < acks && sc.Scan() {
		var seq int64
		var id string
		if _, err := fmt.Sscanf(sc.Text(), "ack %d %s", &seq, &id); err != nil {
			t.Fatalf("helper wrote %q", sc.Text())
		}
		acked[id] = seq
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: the error is expected
	if len(acked) < acks {
		t.Fatalf("helper died after %d acks, want %d: %v", len(acked), acks, sc.Err())
	}
	log := mustLoad(t, s, key, memory.Window{})
	if len(log) < len(acked) {
		t.Fatalf("%d records stored, %d acknowledged", len(log), len(acked))
	}
	for i, r := range log {
		if r.Seq != int64(i+1) || r.ID != fmt.Sprintf("w0-%d", i) || r.Message.Text() != r.ID {
			t.Fatalf("record %d is %q seq %d: want w0-%d seq %d", i, r.ID, r.Seq, i, i+1)
		}
		delete(acked, r.ID)
	}
	if len(acked) > 0 {
		t.Fatalf("acknowledged records lost: %v", acked)
	}
}
