package clock

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkManualFire schedules 100,000 callbacks over a minute of manual time, some sharing an
// instant, then advances past them all at once: the cost per timer scheduled and fired.
func BenchmarkManualFire(b *testing.B) {
	const n = 100_000
	b.ReportAllocs()
	for b.Loop() {
		c := NewManual(start)
		fired := 0
		for i := range n {
			c.AfterFunc(start.Add(time.Duration(i%6000)*10*time.Millisecond), func() { fired++ })
		}
		if err := c.Advance(time.Hour); err != nil || fired != n {
			b.Fatalf("fired %d of %d: %v", fired, n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/timer")
}

// BenchmarkRealLateness schedules callbacks on a real clock at rate per second, each 50 ms
// ahead, for a short while, and reports how late they fire (p50, p99, max in microseconds).
// It measures; it asserts nothing about the figures, which depend on the machine.
func BenchmarkRealLateness(b *testing.B) {
	const (
		rate  = 4000 // two transitions for each of 2,000 jobs a second
		span  = time.Second
		ahead = 50 * time.Millisecond
	)
	for b.Loop() {
		c := NewReal()
		var mu sync.Mutex
		var late []time.Duration
		var wg sync.WaitGroup
		tick := time.NewTicker(time.Second / 1000)
		per := rate / 1000
		begin := time.Now()
		for time.Since(begin) < span {
			<-tick.C
			for range per {
				at := c.Now().Add(ahead)
				wg.Add(1)
				c.AfterFunc(at, func() {
					d := c.Now().Sub(at)
					mu.Lock()
					late = append(late, d)
					mu.Unlock()
					wg.Done()
				})
			}
		}
		tick.Stop()
		wg.Wait()
		c.Close()
		slices.Sort(late)
		q := func(p float64) float64 { return float64(late[int(p*float64(len(late)-1))].Microseconds()) }
		b.ReportMetric(q(0.5), "p50-µs")
		b.ReportMetric(q(0.99), "p99-µs")
		b.ReportMetric(q(1), "max-µs")
	}
}
