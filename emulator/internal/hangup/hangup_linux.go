//go:build linux

// Package hangup notices the clients of connections taken over from net/http (a parked
// wait=true generation) that hang up, without a goroutine per connection.
package hangup

import (
	"errors"
	"net"
	"sync"
	"syscall"
)

// Watcher notices parked connections whose clients hung up: all of them in one epoll set,
// waited on by one goroutine, so a parked generation still holds no goroutine of its own. A
// client that closes its end (or half-closes it) while it waits is answered at once with its
// job as it stands, and its socket goes, instead of lingering until --max-wait.
type Watcher struct {
	once sync.Once
	epfd int
	wake [2]int // a pipe whose read end is in the set, so stop can end the wait
	ok   bool
	done chan struct{} // closed when loop has returned, so stop leaves nothing running

	mu     sync.Mutex
	next   uint32            // the last token handed out; 0 stands for the pipe
	gone   map[uint32]func() // what to call when the token's connection hangs up
	closed bool
}

// Start makes the epoll set and its goroutine, once; it reports whether hang-ups are watched.
func (h *Watcher) Start() bool {
	h.once.Do(func() {
		epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return
		}
		if err := syscall.Pipe2(h.wake[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
			_ = syscall.Close(epfd)
			return
		}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, h.wake[0], &ev); err != nil {
			_ = syscall.Close(epfd)
			_ = syscall.Close(h.wake[0])
			_ = syscall.Close(h.wake[1])
			return
		}
		h.epfd, h.ok, h.gone, h.done = epfd, true, map[uint32]func(){}, make(chan struct{})
		go h.loop()
	})
	return h.ok
}

// Watch calls gone, in a goroutine of its own, once conn's client hangs up. The returned
// unwatch ends the watch; call it, then close conn, which takes it out of the set. A
// connection that is not a plain socket (TLS, say) is not watched.
func (h *Watcher) Watch(conn net.Conn, gone func()) (unwatch func()) {
	sc, ok := conn.(syscall.Conn)
	if !ok || !h.Start() {
		return func() {}
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return func() {}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return func() {}
	}
	h.next++
	if h.next == 0 {
		h.next++
	}
	token := h.next
	h.gone[token] = gone
	h.mu.Unlock()
	// Tokens, not descriptors, name connections in the set: a descriptor closed and reused
	// while its event is on its way cannot be mistaken for the new connection.
	var added error
	cerr := raw.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(token)}
		added = syscall.EpollCtl(h.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	forget := func() {
		h.mu.Lock()
		delete(h.gone, token)
		h.mu.Unlock()
	}
	if cerr != nil || added != nil {
		forget()
		return func() {}
	}
	// Closing the connection takes its descriptor out of the set (none is duplicated), so
	// unwatch only forgets the token: one system call fewer for each of ten thousand waiters
	// answered by one clock move.
	return forget
}

// loop waits for hang-ups and reports each, until stop.
func (h *Watcher) loop() {
	defer close(h.done)
	events := make([]syscall.EpollEvent, 128)
	for {
		n, err := syscall.EpollWait(h.epfd, events, -1)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			// The watch cannot go on: say so to watch and stop, and give the descriptors back.
			// Parked waits are still answered, at their job's end or --max-wait.
			h.mu.Lock()
			if !h.closed {
				_ = syscall.Close(h.wake[1])
				h.closed = true
			}
			h.mu.Unlock()
			_ = syscall.Close(h.epfd)
			_ = syscall.Close(h.wake[0])
			return
		}
		for _, ev := range events[:n] {
			token := uint32(ev.Fd)
			if token == 0 {
				_ = syscall.Close(h.epfd)
				_ = syscall.Close(h.wake[0])
				return
			}
			h.mu.Lock()
			gone := h.gone[token]
			delete(h.gone, token)
			h.mu.Unlock()
			if gone != nil {
				go gone()
			}
		}
	}
}

// Stop ends the watching for good, and returns once its goroutine has; connections still
// watched are answered as usual.
func (h *Watcher) Stop() {
	h.once.Do(func() {}) // never started: never starts now
	h.mu.Lock()
	wake := h.ok && !h.closed
	if wake {
		_, _ = syscall.Write(h.wake[1], []byte{0})
		_ = syscall.Close(h.wake[1])
	}
	h.closed = true
	h.mu.Unlock()
	if wake {
		<-h.done
	}
}
