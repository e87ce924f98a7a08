//go:build unix

package emulator

import (
	"syscall"
	"time"
)

// cpuTime is the processor time the process has used, in user and system mode.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
