// Package clock is the emulator's one source of time. It runs in real mode (wall time plus an
// offset that tests may advance), manual mode (time stands still until advanced) or skip mode
// (still like manual; its owner moves it when a request waits on it), and fires scheduled
// callbacks in due order in each, so quotes, jobs and outputs share one timeline. The mode may
// change while the clock runs: time goes on from where it stood.
package clock

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/due"
)

// ErrBackwards is returned when a change would move time backwards.
var ErrBackwards = errors.New("the clock cannot move backwards")

// ErrTooFar is returned when a change would move time past Latest.
var ErrTooFar = errors.New("the clock cannot move past " + Latest.Format(time.RFC3339))

// Latest is as far as the clock goes: far enough for any test, and well inside the range where
// time arithmetic in nanoseconds (until 2262) cannot overflow.
var Latest = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

// MoveBudget is how long in real time one Advance or Set lets its callbacks wait, all together,
// for work outside the emulator (a webhook receiver's answer) by default: a receiver that never
// answers cannot hold a move, and the clock, for longer. What they did not finish goes on after
// the move returns.
const MoveBudget = 2 * time.Second

// batchSize bounds how many due timers one pass takes off the heap under a single lock.
const batchSize = 256

// Mode is how a clock's time moves.
type Mode int32

// The clock's modes.
const (
	Real   Mode = iota // follows wall time
	Manual             // stands still until Advance or Set moves it
	Skip               // stands still like Manual; the emulator moves it to what a request waits on
)

// modeNames are the modes as flags, the control API and snapshots spell them.
var modeNames = [...]string{Real: "real", Manual: "manual", Skip: "skip"}

// String is the mode's name: real, manual or skip.
func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return "unknown"
	}
	return modeNames[m]
}

// ParseMode reads a mode's name; ok is false for any other text.
func ParseMode(name string) (m Mode, ok bool) {
	for i, n := range modeNames {
		if n == name {
			return Mode(i), true
		}
	}
	return Real, false
}

// Clock tells the emulator's time and runs callbacks when their time comes.
type Clock struct {
	// mode changes only under fire, so a firing sees one mode throughout.
	mode atomic.Int32
	// base is when the clock was made, with its monotonic reading, so real time never jumps
	// with the wall clock; real time is base + elapsed + offset.
	base time.Time

	// now (manual and skip modes: nanoseconds since 1970) and offset (real mode) change only
	// under fire but are read without a lock, so Now never waits for a firing.
	now    atomic.Int64
	offset atomic.Int64

	// fire serializes firing, so callbacks run one at a time and in due order.
	fire  sync.Mutex
	batch []*Timer // reused by every pass; guarded by fire
	// waits ends when the move under way stops waiting for what its callbacks started; it is
	// done outside a move. Guarded by fire, which every callback runs under.
	waits  context.Context
	budget atomic.Int64 // MoveBudget unless SetMoveBudget changed it

	mu      sync.Mutex
	timers  due.Queue[*Timer]
	seq     uint64
	looping bool // the real-mode loop has been started; guarded by mu
	closed  bool // Close has been called; guarded by mu
	wake    chan struct{}
	stopped chan struct{}
	exited  chan struct{} // closed once loop has returned, or at Close when it never ran
	once    sync.Once
}

func newClock(m Mode) *Clock {
	c := &Clock{base: time.Now(), wake: make(chan struct{}, 1), stopped: make(chan struct{}), exited: make(chan struct{})}
	c.mode.Store(int32(m))
	c.waits = doneCtx
	c.budget.Store(int64(MoveBudget))
	return c
}

// doneCtx is a context that has ended: a move made with it waits for nothing.
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// NoWait is a context for AdvanceContext or SetContext whose move does not wait for what its
// callbacks start: they go on after it returns.
func NoWait() context.Context { return doneCtx }

// SetMoveBudget changes how long one move waits for its callbacks' work (MoveBudget by default);
// zero or less waits for none.
func (c *Clock) SetMoveBudget(d time.Duration) { c.budget.Store(int64(d)) }

// Waits is closed once the move under way stops waiting for what its callbacks started: its
// budget is spent or its caller's context ended. Only a callback of the clock may call it; on
// the real-mode loop it is closed already.
func (c *Clock) Waits() <-chan struct{} { return c.waits.Done() }

// NewReal returns a clock that follows wall time.
func NewReal() *Clock {
	c := newClock(Real)
	c.startLoop()
	return c
}

// NewManual returns a clock stopped at start until Advance or Set moves it.
func NewManual(start time.Time) *Clock { return NewAt(Manual, start) }

// NewAt returns a clock in mode m that stands at start: a real one goes on from there.
func NewAt(m Mode, start time.Time) *Clock {
	c := newClock(m)
	if m == Real {
		c.offset.Store(Nanos(start) - Nanos(c.base))
		c.startLoop()
	} else {
		c.now.Store(Nanos(start))
	}
	return c
}

// Manual reports whether time stands still until moved (manual and skip modes).
func (c *Clock) Manual() bool { return c.Mode() != Real }

// Mode is how the clock's time moves now.
func (c *Clock) Mode() Mode { return Mode(c.mode.Load()) }

// SetMode changes how time moves from now on; time goes on from where it stands. A real clock
// made still keeps what it had not fired for the next Advance or Set, as a manual clock does.
func (c *Clock) SetMode(m Mode) {
	c.fire.Lock()
	defer c.fire.Unlock()
	was := c.Mode()
	switch {
	case was == m:
		return
	case was == Real:
		c.now.Store(c.nowNanos())
	case m == Real:
		c.offset.Store(c.now.Load() - Nanos(c.base) - int64(time.Since(c.base)))
	}
	c.mode.Store(int32(m))
	if m == Real {
		c.mu.Lock()
		c.startLoop()
		c.mu.Unlock()
	}
	c.poke()
}

// startLoop starts the real-mode loop unless it runs or the clock is closed. Callers hold c.mu,
// or own the clock alone.
func (c *Clock) startLoop() {
	if c.looping || c.closed {
		return
	}
	c.looping = true
	go c.loop()
}

// Now returns the emulator's current time, in UTC.
func (c *Clock) Now() time.Time { return fromNanos(c.nowNanos()) }

func (c *Clock) nowNanos() int64 {
	if c.Mode() != Real {
		return c.now.Load()
	}
	return Nanos(c.base) + int64(time.Since(c.base)) + c.offset.Load()
}

// Nanos is t in nanoseconds since 1970, clamped to what an int64 holds: a number to compare
// times by on a hot path.
func Nanos(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// Advance moves time forward by d, then returns once every callback that fell due has run.
func (c *Clock) Advance(d time.Duration) error { return c.AdvanceContext(context.Background(), d) }

// AdvanceContext is Advance, whose callbacks stop waiting for their work once ctx ends or the
// move's budget is spent; the move itself always completes.
func (c *Clock) AdvanceContext(ctx context.Context, d time.Duration) error {
	if d < 0 {
		return ErrBackwards
	}
	c.fire.Lock()
	defer c.fire.Unlock()
	target := c.Now().Add(d)
	if target.After(Latest) {
		return ErrTooFar
	}
	c.move(ctx, Nanos(target), d)
	return nil
}

// Set moves time forward to t, then returns once every callback that fell due has run.
func (c *Clock) Set(t time.Time) error { return c.SetContext(context.Background(), t) }

// SetContext is Set, whose callbacks stop waiting like AdvanceContext's.
func (c *Clock) SetContext(ctx context.Context, t time.Time) error {
	if t.After(Latest) {
		return ErrTooFar
	}
	c.fire.Lock()
	defer c.fire.Unlock()
	d := t.Sub(c.Now())
	if d < 0 {
		return ErrBackwards
	}
	c.move(ctx, Nanos(t), d)
	return nil
}

// move runs a move to target with its waiting bounded by ctx and the budget. Callers hold
// c.fire.
func (c *Clock) move(ctx context.Context, target int64, d time.Duration) {
	waits, cancel := context.WithTimeout(ctx, time.Duration(c.budget.Load()))
	defer cancel()
	c.waits = waits
	defer func() { c.waits = doneCtx }()
	c.runUntil(target, d)
}

// runUntil fires every timer due by target in order; while time stands still it steps to each timer's
// due time as it fires, so what a callback records carries its own moment. Each pass takes
// every timer due at the earliest instant off the heap under one lock, then runs them; one a
// callback schedules at that same instant or earlier runs in the next pass. Callers hold c.fire.
func (c *Clock) runUntil(target int64, d time.Duration) {
	still := c.Mode() != Real
	if !still {
		c.offset.Add(int64(d))
	}
	for {
		c.mu.Lock()
		top := c.timers.Peek()
		if top == nil || top.At > target {
			if still {
				c.now.Store(target)
			}
			c.mu.Unlock()
			break
		}
		at := top.At
		batch := c.batch[:0]
		for e := top; e != nil && e.At == at && len(batch) < batchSize; e = c.timers.Peek() {
			t := c.timers.Pop().Value
			t.state.Store(popped)
			batch = append(batch, t)
		}
		if still && at > c.now.Load() {
			c.now.Store(at)
		}
		c.mu.Unlock()
		for i, t := range batch {
			batch[i] = nil
			// A callback earlier in the batch may have stopped this one.
			if t.state.CompareAndSwap(popped, done) {
				t.f()
			}
		}
		c.batch = batch[:0]
	}
	c.poke()
}

// AfterFunc runs f at emulator time at (at once, on the next firing, when at has passed).
// Callbacks run one at a time; one may schedule others.
func (c *Clock) AfterFunc(at time.Time, f func()) *Timer {
	t := &Timer{c: c, f: f}
	t.e.At, t.e.Value = Nanos(at), t
	c.mu.Lock()
	c.seq++
	t.e.Seq = c.seq
	c.timers.Push(&t.e)
	first := c.timers.Peek() == &t.e
	c.mu.Unlock()
	if first {
		c.poke()
	}
	return t
}

// Close stops the real-mode loop, so wall time no longer fires timers; only Advance and Set
// still do.
func (c *Clock) Close() {
	c.once.Do(func() {
		close(c.stopped)
		c.mu.Lock()
		c.closed = true
		if !c.looping {
			close(c.exited)
		}
		c.mu.Unlock()
	})
}

// Exited is closed once the real-mode loop has returned after Close (at Close for a clock that
// never ran in real mode), so an owner that shuts down can leave no goroutine behind. Never wait
// for it from one of the clock's own timers.
func (c *Clock) Exited() <-chan struct{} { return c.exited }

func (c *Clock) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// loop fires timers as wall time reaches them: it sleeps until the earliest due time, then
// fires everything due in one pass. While the clock stands still it only waits to be poked.
func (c *Clock) loop() {
	defer close(c.exited)
	sleep := time.NewTimer(time.Hour)
	defer sleep.Stop()
	for {
		c.mu.Lock()
		wait := time.Hour
		if top := c.timers.Peek(); top != nil && c.Mode() == Real {
			wait = time.Duration(top.At - c.nowNanos())
		}
		c.mu.Unlock()
		if wait <= 0 {
			c.fire.Lock()
			if c.Mode() == Real {
				c.runUntil(c.nowNanos(), 0)
			}
			c.fire.Unlock()
			continue
		}
		sleep.Reset(wait) // since Go 1.23 Reset discards a stale expiry
		select {
		case <-sleep.C:
		case <-c.wake:
		case <-c.stopped:
			return
		}
	}
}

// A timer's state: in the heap, taken off it to run, or run or stopped.
const (
	pending int32 = iota
	popped
	done
)

// Timer is a scheduled callback.
type Timer struct {
	c     *Clock
	e     due.Entry[*Timer] // in c.timers while state is pending
	f     func()
	state atomic.Int32
}

// Stop cancels the timer; it reports false when the callback already ran or is running.
func (t *Timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	switch t.state.Load() {
	case pending:
		t.c.timers.Remove(&t.e)
		t.state.Store(done)
		return true
	case popped:
		// Taken off the heap in a batch that has not reached it yet.
		return t.state.CompareAndSwap(popped, done)
	}
	return false
}

// Pending counts the timers not yet fired; tests use it to see that nothing leaks.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timers.Len()
}

// Hold stops callbacks from running until the returned release is called, so a reader sees
// everything the clock drives stand still (a snapshot is taken under it).
func (c *Clock) Hold() (release func()) {
	c.fire.Lock()
	return c.fire.Unlock
}
