package sim

import (
	"sync"
	"sync/atomic"
)

// signal wakes everyone waiting for the next change of something: a watcher takes next, then
// reads the state it cares about, and waits on the channel only if that state is not yet what
// it wants; a change calls fire after it is made. Since next comes before the read, no change
// is missed. While nobody watches, fire costs one atomic load.
type signal struct {
	armed atomic.Bool
	mu    sync.Mutex
	ch    chan struct{}
}

// next returns a channel closed at the next fire.
func (s *signal) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	s.armed.Store(true)
	return s.ch
}

// fire wakes everyone waiting on next.
func (s *signal) fire() {
	if !s.armed.Load() {
		return
	}
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.armed.Store(false)
	s.mu.Unlock()
}
