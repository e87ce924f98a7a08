//go:build unix

package explore

import (
	"os/exec"
	"syscall"
)

// inGroup runs the command in a process group of its own and has the timeout kill the whole
// group: a client's shell wrapper must not leave the client running.
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// exitStatus is the command's exit status, 128+N for one killed by signal N as a shell says.
func exitStatus(ee *exec.ExitError) int {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// reap kills what the command left running in its group once it has ended, so no run's
// processes outlive it and strike the next run's tenant.
func reap(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
