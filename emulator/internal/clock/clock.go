// Package clock is the emulator's one source of time. It runs in real mode (wall time plus an
// offset that tests may advance) or manual mode (time stands still until advanced), and fires
// scheduled callbacks in due order on either, so quotes, jobs and outputs share one timeline.
package clock

import (
	"container/heap"
	"errors"
	"sync"
	"time"
)

// ErrBackwards is returned when a change would move time backwards.
var ErrBackwards = errors.New("the clock cannot move backwards")

// ErrTooFar is returned when a change would move time past Latest.
var ErrTooFar = errors.New("the clock cannot move past " + Latest.Format(time.RFC3339))

// Latest is as far as the clock goes: far enough for any test, and well inside the range where
// time arithmetic in nanoseconds (until 2262) cannot overflow.
var Latest = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

// Clock tells the emulator's time and runs callbacks when their time comes.
type Clock struct {
	manual bool
	wall   func() time.Time

	// fire serializes firing, so callbacks run one at a time and in due order.
	fire sync.Mutex

	mu      sync.Mutex
	now     time.Time     // manual mode: the current time
	offset  time.Duration // real mode: added to wall time
	timers  timerHeap
	seq     uint64
	wake    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// NewReal returns a clock that follows wall time.
func NewReal() *Clock {
	c := &Clock{wall: time.Now, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go c.loop()
	return c
}

// NewManual returns a clock stopped at start until Advance or Set moves it.
func NewManual(start time.Time) *Clock {
	return &Clock{manual: true, now: start.UTC(), wake: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// Manual reports whether time moves only when told to.
func (c *Clock) Manual() bool { return c.manual }

// Now returns the emulator's current time, in UTC.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *Clock) nowLocked() time.Time {
	if c.manual {
		return c.now
	}
	return c.wall().Add(c.offset).UTC()
}

// Advance moves time forward by d, then returns once every callback that fell due has run.
func (c *Clock) Advance(d time.Duration) error {
	if d < 0 {
		return ErrBackwards
	}
	c.fire.Lock()
	defer c.fire.Unlock()
	c.mu.Lock()
	target := c.nowLocked().Add(d)
	c.mu.Unlock()
	if target.After(Latest) {
		return ErrTooFar
	}
	c.runUntil(target, d)
	return nil
}

// Set moves time forward to t, then returns once every callback that fell due has run.
func (c *Clock) Set(t time.Time) error {
	if t.After(Latest) {
		return ErrTooFar
	}
	c.fire.Lock()
	defer c.fire.Unlock()
	c.mu.Lock()
	d := t.Sub(c.nowLocked())
	c.mu.Unlock()
	if d < 0 {
		return ErrBackwards
	}
	c.runUntil(t.UTC(), d)
	return nil
}

// runUntil fires every timer due by target in order; in manual mode time steps to each timer's
// due time as it fires, so what a callback records carries its own moment. Callers hold c.fire.
func (c *Clock) runUntil(target time.Time, d time.Duration) {
	if !c.manual {
		c.mu.Lock()
		c.offset += d
		c.mu.Unlock()
	}
	for {
		c.mu.Lock()
		if len(c.timers) == 0 || c.timers[0].at.After(target) {
			if c.manual {
				c.now = target
			}
			c.mu.Unlock()
			break
		}
		t := heap.Pop(&c.timers).(*Timer)
		t.index = -1
		if c.manual && t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
	}
	c.poke()
}

// AfterFunc runs f at emulator time at (at once, on the next firing, when at has passed).
// Callbacks run one at a time; one may schedule others.
func (c *Clock) AfterFunc(at time.Time, f func()) *Timer {
	c.mu.Lock()
	c.seq++
	t := &Timer{c: c, at: at.UTC(), seq: c.seq, f: f}
	heap.Push(&c.timers, t)
	first := c.timers[0] == t
	c.mu.Unlock()
	if first {
		c.poke()
	}
	return t
}

// Close stops the real-mode loop, so wall time no longer fires timers; only Advance and Set
// still do.
func (c *Clock) Close() {
	c.once.Do(func() { close(c.stopped) })
}

func (c *Clock) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// loop fires timers as wall time reaches them (real mode only).
func (c *Clock) loop() {
	sleep := time.NewTimer(time.Hour)
	defer sleep.Stop()
	for {
		c.mu.Lock()
		wait := time.Hour
		if len(c.timers) > 0 {
			wait = c.timers[0].at.Sub(c.nowLocked())
		}
		c.mu.Unlock()
		if wait <= 0 {
			c.fire.Lock()
			c.runUntil(c.Now(), 0)
			c.fire.Unlock()
			continue
		}
		sleep.Reset(wait)
		select {
		case <-sleep.C:
		case <-c.wake:
			if !sleep.Stop() {
				select {
				case <-sleep.C:
				default:
				}
			}
		case <-c.stopped:
			return
		}
	}
}

// Timer is a scheduled callback.
type Timer struct {
	c     *Clock
	at    time.Time
	seq   uint64
	f     func()
	index int
}

// Stop cancels the timer; it reports false when the callback already ran or is running.
func (t *Timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.c.timers, t.index)
	t.index = -1
	return true
}

// Pending counts the timers not yet fired; tests use it to see that nothing leaks.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type timerHeap []*Timer

// Len, Less, Swap, Push and Pop make timerHeap a container/heap ordered by due time, then
// by scheduling order.
func (h timerHeap) Len() int { return len(h) }

// Less orders timers by due time, then by the order they were scheduled in.
func (h timerHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}

// Swap exchanges two timers and keeps their indexes current, for Stop.
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

// Push adds a timer at the end; container/heap restores the order.
func (h *timerHeap) Push(x any) {
	t := x.(*Timer)
	t.index = len(*h)
	*h = append(*h, t)
}

// Pop removes the last timer; container/heap has moved the earliest there.
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}
