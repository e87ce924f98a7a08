package clock

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// firing records each callback's name and the time Now() told inside it.
type firing struct {
	name string
	at   time.Time
}

type firings struct {
	mu    sync.Mutex
	fired []firing
}

func (l *firings) add(c *Clock, name string) func() {
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.fired = append(l.fired, firing{name, c.Now()})
	}
}

func (l *firings) get() []firing {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]firing(nil), l.fired...)
}

func TestManualNowStandsStill(t *testing.T) {
	t.Parallel()
	local := time.FixedZone("UTC+2", 2*3600)
	c := NewManual(start.In(local))
	defer c.Close()
	if !c.Manual() {
		t.Error("Manual() = false")
	}
	if got := c.Now(); !got.Equal(start) || got.Location() != time.UTC {
		t.Errorf("Now() = %v; want %v in UTC", got, start)
	}
	if got := c.Now(); !got.Equal(c.Now()) {
		t.Error("manual time moved by itself")
	}
}

func TestManualAdvanceFiresInDueOrder(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	defer c.Close()
	var l firings
	c.AfterFunc(start.Add(3*time.Second), l.add(c, "3s"))
	c.AfterFunc(start.Add(time.Second), l.add(c, "1s-first"))
	c.AfterFunc(start.Add(10*time.Second), l.add(c, "10s"))
	c.AfterFunc(start.Add(2*time.Second), l.add(c, "2s"))
	c.AfterFunc(start.Add(time.Second), l.add(c, "1s-second")) // same time: scheduling order
	c.AfterFunc(start.Add(5*time.Second), l.add(c, "5s"))      // exactly at the target: fires

	if err := c.Advance(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	want := []firing{
		{"1s-first", start.Add(time.Second)},
		{"1s-second", start.Add(time.Second)},
		{"2s", start.Add(2 * time.Second)},
		{"3s", start.Add(3 * time.Second)},
		{"5s", start.Add(5 * time.Second)},
	}
	if got := l.get(); !reflect.DeepEqual(got, want) {
		t.Errorf("fired %v; want %v", got, want)
	}
	if got := c.Now(); !got.Equal(start.Add(5 * time.Second)) {
		t.Errorf("after Advance(5s) Now() = %v", got)
	}
	if n := c.Pending(); n != 1 {
		t.Errorf("Pending() = %d; want 1 (the 10 s timer)", n)
	}
	if err := c.Advance(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := l.get(); len(got) != 6 || got[5] != (firing{"10s", start.Add(10 * time.Second)}) {
		t.Errorf("second advance fired %v", got)
	}
	if n := c.Pending(); n != 0 {
		t.Errorf("Pending() = %d; want 0", n)
	}
}

func TestManualCallbacksScheduleCallbacks(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	defer c.Close()
	var l firings
	c.AfterFunc(start.Add(time.Second), func() {
		l.add(c, "parent")()
		c.AfterFunc(c.Now().Add(time.Second), func() {
			l.add(c, "child")()
			c.AfterFunc(c.Now().Add(time.Second), l.add(c, "grandchild")) // at 3 s: inside the advance
		})
		c.AfterFunc(c.Now().Add(-time.Hour), l.add(c, "overdue")) // in the past: fires now, time stays
		c.AfterFunc(c.Now().Add(time.Hour), l.add(c, "later"))    // beyond the advance
	})
	if err := c.Advance(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	want := []firing{
		{"parent", start.Add(time.Second)},
		{"overdue", start.Add(time.Second)},
		{"child", start.Add(2 * time.Second)},
		{"grandchild", start.Add(3 * time.Second)},
	}
	if got := l.get(); !reflect.DeepEqual(got, want) {
		t.Errorf("fired %v; want %v", got, want)
	}
	if c.Pending() != 1 {
		t.Errorf("Pending() = %d; want 1", c.Pending())
	}
}

func TestManualStop(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	defer c.Close()
	var l firings
	a := c.AfterFunc(start.Add(time.Second), l.add(c, "a"))
	b := c.AfterFunc(start.Add(2*time.Second), l.add(c, "b"))
	d := c.AfterFunc(start.Add(3*time.Second), l.add(c, "d"))
	if !b.Stop() {
		t.Error("Stop() of a pending timer = false")
	}
	if b.Stop() {
		t.Error("second Stop() = true")
	}
	// A callback may stop a later timer.
	c.AfterFunc(start.Add(2500*time.Millisecond), func() {
		if !d.Stop() {
			t.Error("Stop() from a callback = false")
		}
	})
	if err := c.Advance(time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := l.get(); len(got) != 1 || got[0].name != "a" {
		t.Errorf("fired %v; want only a", got)
	}
	if a.Stop() {
		t.Error("Stop() after firing = true")
	}
	if c.Pending() != 0 {
		t.Errorf("Pending() = %d", c.Pending())
	}
}

func TestManualSet(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	defer c.Close()
	var l firings
	c.AfterFunc(start.Add(time.Hour), l.add(c, "1h"))
	if err := c.Set(start.Add(-time.Second)); !errors.Is(err, ErrBackwards) {
		t.Errorf("Set(backwards) = %v; want ErrBackwards", err)
	}
	if err := c.Advance(-time.Second); !errors.Is(err, ErrBackwards) {
		t.Errorf("Advance(-1s) = %v; want ErrBackwards", err)
	}
	if !c.Now().Equal(start) || len(l.get()) != 0 {
		t.Errorf("a refused change moved time to %v or fired %v", c.Now(), l.get())
	}
	if err := c.Set(start); err != nil {
		t.Errorf("Set(now) = %v; want nil", err)
	}
	target := start.Add(2 * time.Hour).In(time.FixedZone("UTC-5", -5*3600))
	if err := c.Set(target); err != nil {
		t.Fatal(err)
	}
	if got := l.get(); len(got) != 1 || !got[0].at.Equal(start.Add(time.Hour)) {
		t.Errorf("fired %v; want 1h at its own time", got)
	}
	if got := c.Now(); !got.Equal(target) || got.Location() != time.UTC {
		t.Errorf("Now() = %v; want %v in UTC", got, target)
	}
}

func TestManualPastTimerFiresOnNextAdvance(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	defer c.Close()
	var l firings
	c.AfterFunc(start.Add(-time.Minute), l.add(c, "past"))
	if len(l.get()) != 0 {
		t.Fatal("a manual clock fired without being advanced")
	}
	if err := c.Advance(0); err != nil {
		t.Fatal(err)
	}
	if got := l.get(); len(got) != 1 || !got[0].at.Equal(start) {
		t.Errorf("fired %v; want past at the current time (time never goes back)", got)
	}
}

// TestManualNowIsUTCInsideCallbacks: Now promises UTC; a timer scheduled with a time in another
// zone must not leak that zone into what its callback (or anything it records) sees.
func TestManualNowIsUTCInsideCallbacks(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	defer c.Close()
	var l firings
	c.AfterFunc(start.Add(time.Second).In(time.FixedZone("UTC+2", 2*3600)), l.add(c, "zoned"))
	if err := c.Advance(time.Minute); err != nil {
		t.Fatal(err)
	}
	got := l.get()
	if len(got) != 1 {
		t.Fatalf("fired %v", got)
	}
	if got[0].at.Location() != time.UTC {
		t.Errorf("Now() inside the callback = %s; want UTC (RFC 3339 timestamps must end in Z)", got[0].at.Format(time.RFC3339))
	}
}

func TestManualConcurrentUse(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	defer c.Close()
	var mu sync.Mutex
	fired := map[int]int{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				id := g*100 + i
				timer := c.AfterFunc(c.Now().Add(time.Duration(i%7)*time.Millisecond), func() {
					mu.Lock()
					fired[id]++
					mu.Unlock()
				})
				if i%10 == 0 {
					timer.Stop()
				}
				if i%5 == 0 {
					_ = c.Advance(time.Millisecond)
				}
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if err := c.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	for id, n := range fired {
		if n != 1 {
			t.Errorf("timer %d fired %d times", id, n)
		}
	}
	if c.Pending() != 0 {
		t.Errorf("Pending() = %d", c.Pending())
	}
}

func TestRealClock(t *testing.T) {
	t.Parallel()
	c := NewReal()
	defer c.Close()
	if c.Manual() {
		t.Error("Manual() = true")
	}
	before := time.Now()
	now := c.Now()
	if now.Location() != time.UTC || now.Before(before.Add(-time.Second)) || now.After(before.Add(time.Minute)) {
		t.Errorf("Now() = %v; want about %v in UTC", now, before)
	}

	var l firings
	c.AfterFunc(now.Add(30*time.Minute), l.add(c, "30m"))
	c.AfterFunc(now.Add(90*time.Minute), l.add(c, "90m"))
	c.AfterFunc(now.Add(3*time.Hour), l.add(c, "3h"))
	if err := c.Advance(time.Hour); err != nil {
		t.Fatal(err)
	}
	// Advance fired what fell due before returning: no waiting on wall time.
	got := l.get()
	if len(got) != 1 || got[0].name != "30m" || got[0].at.Before(now.Add(time.Hour)) {
		t.Errorf("after Advance(1h) fired %v; want 30m, seeing the advanced time", got)
	}
	if d := time.Until(c.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("offset after Advance(1h) = %v", d)
	}
	if err := c.Set(c.Now().Add(-time.Minute)); !errors.Is(err, ErrBackwards) {
		t.Errorf("Set(backwards) = %v", err)
	}
	if err := c.Advance(-time.Minute); !errors.Is(err, ErrBackwards) {
		t.Errorf("Advance(-1m) = %v", err)
	}
	if err := c.Set(now.Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := l.get(); len(got) != 2 || got[1].name != "90m" {
		t.Errorf("after Set(+2h) fired %v; want 30m, 90m", got)
	}
	if d := c.Now().Sub(now); d < 2*time.Hour {
		t.Errorf("Set(+2h) moved time by %v", d)
	}
	if c.Pending() != 1 {
		t.Errorf("Pending() = %d; want 1", c.Pending())
	}
}

func TestRealClockFiresPastTimersByItself(t *testing.T) {
	t.Parallel()
	c := NewReal()
	defer c.Close()
	done := make(chan time.Time, 1)
	c.AfterFunc(c.Now().Add(-time.Second), func() { done <- c.Now() })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a timer whose time had passed did not fire on a real clock")
	}
}

func TestRealClockStop(t *testing.T) {
	t.Parallel()
	c := NewReal()
	defer c.Close()
	var l firings
	timer := c.AfterFunc(c.Now().Add(time.Hour), l.add(c, "stopped"))
	if !timer.Stop() {
		t.Error("Stop() = false")
	}
	if err := c.Advance(2 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := l.get(); len(got) != 0 {
		t.Errorf("a stopped timer fired: %v", got)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	t.Parallel()
	for _, c := range []*Clock{NewReal(), NewManual(start)} {
		c.Close()
		c.Close()
	}
}

// TestManualStopWithinInstant: timers due at one instant are taken off the heap together; one
// of them stopping a later one at that same instant still prevents it from running, and Stop
// says so.
func TestManualStopWithinInstant(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	defer c.Close()
	var l firings
	at := start.Add(time.Second)
	var victim *Timer
	c.AfterFunc(at, func() {
		l.add(c, "stopper")()
		if !victim.Stop() {
			t.Error("Stop() of a timer due at the same instant, not yet run = false")
		}
	})
	victim = c.AfterFunc(at, l.add(c, "victim"))
	c.AfterFunc(at, l.add(c, "after"))
	if err := c.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	want := []firing{{"stopper", at}, {"after", at}}
	if got := l.get(); !reflect.DeepEqual(got, want) {
		t.Errorf("fired %v; want %v", got, want)
	}
	if victim.Stop() {
		t.Error("second Stop() = true")
	}
}

// TestManualManyAtOneInstant: more timers at one instant than one pass takes all fire, in
// scheduling order, seeing that instant.
func TestManualManyAtOneInstant(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	defer c.Close()
	const n = 3*batchSize + 7
	var order []int
	at := start.Add(time.Minute)
	for i := range n {
		c.AfterFunc(at, func() {
			if !c.Now().Equal(at) {
				t.Errorf("timer %d saw %v; want %v", i, c.Now(), at)
			}
			order = append(order, i)
		})
	}
	c.AfterFunc(at.Add(time.Nanosecond), func() { order = append(order, n) })
	if err := c.Advance(time.Hour); err != nil {
		t.Fatal(err)
	}
	if len(order) != n+1 {
		t.Fatalf("%d of %d timers fired", len(order), n+1)
	}
	for i, k := range order {
		if k != i {
			t.Fatalf("firing %d was timer %d; want scheduling order", i, k)
		}
	}
}

// TestManualExtremeTimes: a timer at the zero time fires on the next firing, one beyond the
// nanosecond range never fires, and neither disturbs the clock.
func TestManualExtremeTimes(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	defer c.Close()
	var l firings
	c.AfterFunc(time.Time{}, l.add(c, "zero"))
	far := c.AfterFunc(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), l.add(c, "far"))
	if err := c.Set(Latest); err != nil {
		t.Fatal(err)
	}
	if got := l.get(); len(got) != 1 || got[0] != (firing{"zero", start}) {
		t.Errorf("fired %v; want zero at the start", got)
	}
	if !c.Now().Equal(Latest) {
		t.Errorf("Now() = %v; want %v", c.Now(), Latest)
	}
	if err := c.Advance(time.Nanosecond); !errors.Is(err, ErrTooFar) {
		t.Errorf("Advance past Latest = %v; want ErrTooFar", err)
	}
	if !far.Stop() {
		t.Error("the far timer was not pending")
	}
}

// TestRealClockIsMonotonic: real time never goes backwards between readings.
func TestRealClockIsMonotonic(t *testing.T) {
	t.Parallel()
	c := NewReal()
	defer c.Close()
	last := c.Now()
	for range 10000 {
		now := c.Now()
		if now.Before(last) {
			t.Fatalf("Now() went from %v back to %v", last, now)
		}
		last = now
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{Real, Manual, Skip} {
		if got, ok := ParseMode(m.String()); !ok || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, ok)
		}
	}
	for _, bad := range []string{"", "Skip", "auto", "unknown"} {
		if _, ok := ParseMode(bad); ok {
			t.Errorf("ParseMode(%q) accepted", bad)
		}
	}
	if Mode(7).String() != "unknown" {
		t.Errorf("Mode(7) = %q", Mode(7).String())
	}
}

// A clock that changes mode goes on from where it stood, and fires on wall time only while real.
func TestSetModeKeepsTime(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	defer c.Close()
	var l firings
	c.AfterFunc(start.Add(-time.Second), l.add(c, "past"))
	c.SetMode(Skip)
	if c.Mode() != Skip || !c.Manual() || !c.Now().Equal(start) {
		t.Fatalf("after SetMode(Skip): mode %v, now %v", c.Mode(), c.Now())
	}
	if len(l.get()) != 0 {
		t.Fatal("a still clock fired without being moved")
	}
	c.SetMode(Real)
	if c.Manual() {
		t.Fatal("Manual() after SetMode(Real)")
	}
	if now := c.Now(); now.Before(start) || now.After(start.Add(time.Minute)) {
		t.Fatalf("real time after manual = %v; want just after %v", now, start)
	}
	// The loop started by SetMode(Real) fires what is due; Advance(0) waits for any firing.
	deadline := time.Now().Add(10 * time.Second)
	for len(l.get()) == 0 && time.Now().Before(deadline) {
		if err := c.Advance(0); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.get()) != 1 {
		t.Fatalf("fired %v; want the past timer once", l.get())
	}
	c.SetMode(Manual)
	at := c.Now()
	c.AfterFunc(at.Add(time.Nanosecond), l.add(c, "next"))
	if got := c.Now(); !got.Equal(at) {
		t.Fatalf("manual again: now moved from %v to %v", at, got)
	}
	if err := c.Set(at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := l.get(); len(got) != 2 || !got[1].at.Equal(at.Add(time.Nanosecond)) {
		t.Fatalf("fired %v", got)
	}
}

// A clock that never ran in real mode has no loop to wait for; one that did has it end at Close.
func TestExitedAfterModes(t *testing.T) {
	t.Parallel()
	still := NewAt(Skip, start)
	still.Close()
	<-still.Exited()
	ran := NewManual(start)
	ran.SetMode(Real)
	ran.SetMode(Manual)
	ran.Close()
	<-ran.Exited()
	closed := NewManual(start)
	closed.Close()
	closed.SetMode(Real) // after Close no loop starts
	<-closed.Exited()
}
