//go:build !linux

package emulator

import "net"

// hangups would notice parked connections whose clients hung up; only Linux builds watch for
// that (see hangup_linux.go). Elsewhere such a connection stays until its wait is answered.
type hangups struct{}

func (h *hangups) start() bool { return false }

func (h *hangups) watch(net.Conn, func()) (unwatch func()) { return func() {} }

func (h *hangups) stop() {}
