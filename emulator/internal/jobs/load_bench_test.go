package jobs

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
)

// loadJobs is how many jobs one manual Advance finishes in BenchmarkAdvance.
const loadJobs = 100_000

// BenchmarkAdvance creates 100,000 jobs with short, varied plans on a manual clock, then
// advances it once past all of them: every job starts and succeeds inside that one Advance.
// It reports the Advance alone (advance-ms) and its cost per job.
func BenchmarkAdvance(b *testing.B) {
	b.ReportAllocs()
	var took time.Duration
	for b.Loop() {
		c := clock.NewManual(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
		l := ledger.New(map[string]int64{"acct_all": 1 << 40})
		e := NewEngine(c, l, Options{Retention: 24 * time.Hour, MaxJobs: loadJobs})
		for i := range loadJobs {
			n := newBenchJob(i)
			n.Plan.Queue = time.Duration(i%100) * time.Millisecond
			n.Plan.Run = time.Duration(100+i%900) * time.Millisecond
			if err := l.Hold(n.Account, n.Credits); err != nil {
				b.Fatal(err)
			}
			e.Create(n)
		}
		begin := time.Now()
		if err := c.Advance(time.Minute); err != nil {
			b.Fatal(err)
		}
		took = time.Since(begin)
		if got := e.Counts(); got.Succeeded != loadJobs {
			b.Fatalf("%d of %d jobs succeeded", got.Succeeded, loadJobs)
		}
	}
	b.ReportMetric(float64(took.Milliseconds()), "advance-ms")
	b.ReportMetric(float64(took.Nanoseconds())/loadJobs, "advance-ns/job")
}

// BenchmarkRealLateness creates 2,000 jobs a second on a real clock for a second, each
// queueing 50 ms and running 200–450 ms, and measures how late each transition (a start or
// an end) happens after its planned instant: p50, p99 and max in microseconds. It reports;
// it asserts nothing, since the figures depend on the machine.
func BenchmarkRealLateness(b *testing.B) {
	const (
		rate = 2000
		span = time.Second
	)
	for b.Loop() {
		c := clock.NewReal()
		l := ledger.New(map[string]int64{"acct_all": 1 << 40})
		e := NewEngine(c, l, Options{Retention: time.Hour})
		var mu sync.Mutex
		late := make([]time.Duration, 0, 2*rate)
		want, done := -1, make(chan struct{})
		e.mu.Lock()
		e.observe = func(planned time.Time) {
			d := c.Now().Sub(planned)
			mu.Lock()
			late = append(late, d)
			if len(late) == want {
				close(done)
			}
			mu.Unlock()
		}
		e.mu.Unlock()
		tick := time.NewTicker(time.Millisecond)
		created := 0
		begin := time.Now()
		for time.Since(begin) < span {
			<-tick.C
			// Catch up to the rate whatever the ticker's jitter.
			for want := int(time.Since(begin) * rate / time.Second); created < want; created++ {
				n := newBenchJob(created)
				n.Plan.Queue = 50 * time.Millisecond
				n.Plan.Run = time.Duration(200+created%250) * time.Millisecond
				if err := l.Hold(n.Account, n.Credits); err != nil {
					b.Fatal(err)
				}
				e.Create(n)
			}
		}
		tick.Stop()
		mu.Lock()
		want = 2 * created // a start and an end each
		if len(late) == want {
			close(done)
		}
		mu.Unlock()
		<-done
		c.Close()
		mu.Lock()
		slices.Sort(late)
		q := func(p float64) float64 { return float64(late[int(p*float64(len(late)-1))].Microseconds()) }
		b.ReportMetric(q(0.5), "p50-µs")
		b.ReportMetric(q(0.99), "p99-µs")
		b.ReportMetric(q(1), "max-µs")
		b.ReportMetric(float64(len(late)), "transitions")
		mu.Unlock()
	}
}

// BenchmarkWaiters holds 10,000 live jobs, each with a waiter as the generate handler makes
// one for wait=true: a Watch channel and a clock callback for the wait limit. It reports the
// heap per waiting job, beyond what the same live job costs unwatched.
func BenchmarkWaiters(b *testing.B) {
	const waiters = 10_000
	var unwatched, watched float64
	for b.Loop() {
		unwatched = liveBytesPerJob(b, waiters, false)
		watched = liveBytesPerJob(b, waiters, true)
	}
	b.ReportMetric(unwatched, "B/live-job")
	b.ReportMetric(watched-unwatched, "B/waiter")
}

func liveBytesPerJob(b *testing.B, n int, watch bool) float64 {
	before := heapAlloc()
	c := clock.NewManual(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	l := ledger.New(map[string]int64{"acct_all": 1 << 40})
	e := NewEngine(c, l, Options{Retention: time.Hour})
	var chans []<-chan struct{}
	var timers []*clock.Timer
	for i := range n {
		j := newBenchJob(i)
		if err := l.Hold(j.Account, j.Credits); err != nil {
			b.Fatal(err)
		}
		e.Create(j)
		if watch {
			_, ch, _ := e.Watch("", j.ID)
			limit := make(chan struct{})
			timers = append(timers, c.AfterFunc(c.Now().Add(3*time.Minute), func() { close(limit) }))
			chans = append(chans, ch)
		}
	}
	after := heapAlloc()
	runtime.KeepAlive(e)
	runtime.KeepAlive(chans)
	runtime.KeepAlive(timers)
	return float64(after-before) / float64(n)
}
