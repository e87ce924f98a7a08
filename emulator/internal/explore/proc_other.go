//go:build !unix

package explore

import "os/exec"

// inGroup leaves the command as exec starts it: without process groups the timeout kills the
// command alone.
func inGroup(*exec.Cmd) {}

// exitStatus is the command's exit status.
func exitStatus(ee *exec.ExitError) int { return ee.ExitCode() }

// reap does nothing: without process groups there is no group to end.
func reap(*exec.Cmd) {}
