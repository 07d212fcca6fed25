//go:build !linux

package mcptool

import "os"

// exited reports whether p has exited. Off Linux there is no wait that
// leaves the process to its reaper, so a death is noticed by the
// connection only (a call sent meanwhile fails and the next one restarts).
func exited(*os.Process) bool { return false }
