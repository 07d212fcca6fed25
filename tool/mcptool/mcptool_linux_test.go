package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/weftlabs/weft/tool/mcptool"
)

func TestStdioCloseReaps(t *testing.T) {
	t.Parallel()
	s := startStdio(t)
	pid, err := strconv.Atoi(callText(t, find(t, s, "local_pid"), ``))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The child has been waited for: it is neither running nor a zombie.
	var ws syscall.WaitStatus
	if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); !errors.Is(err, syscall.ECHILD) {
		t.Errorf("wait4(%d) = %d, %v: the process was not reaped", pid, got, err)
	}
	if _, err := find(t, s, "local_echo").Call(context.Background(), json.RawMessage(`{"text":"x"}`)); !errors.Is(err, mcptool.ErrClosed) {
		t.Errorf("call after Close: %v", err)
	}
}

func TestStdioProcessDiesBetweenCalls(t *testing.T) {
	t.Parallel()
	s := startStdio(t)
	echo := find(t, s, "local_echo")
	for i := range 3 {
		pid, err := strconv.Atoi(callText(t, find(t, s, "local_pid"), ``))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Wait until it has died (without reaping it: that is the
		// Server's job). Whether or not the Server has noticed yet, the
		// call is not lost: it goes to a new process.
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil && !errors.Is(err, unix.ECHILD) {
			t.Fatal(err)
		}
		want := "after kill " + strconv.Itoa(i)
		if got := callText(t, echo, `{"text":"`+want+`"}`); got != want {
			t.Errorf("echo = %q", got)
		}
	}
}

func TestStdioCrashReaped(t *testing.T) {
	t.Parallel()
	s := startStdio(t)
	pid, err := strconv.Atoi(callText(t, find(t, s, "local_pid"), ``))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := find(t, s, "local_crash").Call(context.Background(), nil); err == nil {
		t.Fatal("crash: no error")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); !errors.Is(err, syscall.ECHILD) {
		t.Errorf("wait4(%d) = %d, %v: the crashed process was not reaped", pid, got, err)
	}
}
