package mcptool

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exited reports whether p has exited, without reaping it (WNOWAIT): the
// session's closer still waits for it.
func exited(p *os.Process) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if errors.Is(err, unix.ECHILD) {
		return true // already reaped
	}
	// With WNOHANG and no state change the kernel leaves info zeroed.
	return err == nil && info.Signo == int32(unix.SIGCHLD)
}
