//go:build !linux

// Package hangup notices the clients of connections taken over from net/http (a parked
// wait=true generation) that hang up; only Linux builds watch for that.
package hangup

import "net"

// Watcher would notice parked connections whose clients hung up; only Linux builds watch for
// that (see hangup_linux.go). Elsewhere such a connection stays until its wait is answered.
type Watcher struct{}

// Start reports that hang-ups are not watched here.
func (h *Watcher) Start() bool { return false }

// Watch watches nothing: gone is never called.
func (h *Watcher) Watch(net.Conn, func()) (unwatch func()) { return func() {} }

// Stop does nothing.
func (h *Watcher) Stop() {}
