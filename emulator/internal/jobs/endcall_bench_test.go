package jobs

import (
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
)

// endCallJobs is how many waited-for jobs one Advance ends in BenchmarkEndCalls: as many as
// wait=true generations the emulator is built to hold at once.
const endCallJobs = 10_000

// BenchmarkEndCalls ends 10,000 jobs, each with a call from OnEnd as a parked wait=true
// generation makes, in one manual Advance, and times it until every call has run. Each call
// withdraws itself first, as a waiter stopping its wait does, while the advance may still run.
// In "deep" each call then needs 32 KiB of stack, as encoding and writing an answer does.
//
//	ms/advance  the Advance and every call (the figure that matters)
func BenchmarkEndCalls(b *testing.B) {
	b.Run("light", func(b *testing.B) { benchEndCalls(b, 0) })
	b.Run("deep", func(b *testing.B) { benchEndCalls(b, 32) })
}

// stackKiB uses about n KiB of stack.
//
//go:noinline
func stackKiB(n int) byte {
	var frame [1024]byte
	frame[n%len(frame)] = byte(n)
	if n <= 1 {
		return frame[0]
	}
	return stackKiB(n-1) + frame[n%len(frame)]
}

func benchEndCalls(b *testing.B, kib int) {
	b.ReportAllocs()
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		c := clock.NewManual(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
		l := ledger.New(map[string]int64{"acct_all": 1 << 40})
		e := NewEngine(c, l, Options{Retention: time.Hour, MaxJobs: endCallJobs})
		var wg sync.WaitGroup
		cancels := make([]func(), endCallJobs)
		for i := range endCallJobs {
			n := newBenchJob(i)
			if err := l.Hold(n.Account, n.Credits); err != nil {
				b.Fatal(err)
			}
			e.Create(n)
			wg.Add(1)
			cancel, ok := e.OnEnd(n.ID, func(View) {
				cancels[i]()
				_ = stackKiB(kib)
				wg.Done()
			})
			if !ok {
				b.Fatal("OnEnd refused a live job")
			}
			cancels[i] = cancel
		}
		b.StartTimer()
		begin := time.Now()
		if err := c.Advance(time.Minute); err != nil {
			b.Fatal(err)
		}
		wg.Wait()
		took += time.Since(begin)
	}
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms/advance")
}
