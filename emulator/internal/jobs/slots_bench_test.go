package jobs_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
)

// BenchmarkLine measures a line of 10,000 jobs behind a limit of 4, a tenth of them canceled out
// of turn, beside the same jobs without a limit: a page of the account's listing (each job's
// place computed), and a slot freeing (the next in line admitted, the rest moving up).
func BenchmarkLine(b *testing.B) {
	for _, limited := range []bool{false, true} {
		c := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		e := jobs.NewEngine(c, ledger.New(map[string]int64{"a": 1 << 40}), jobs.Options{Retention: time.Hour})
		var slot jobs.Slot
		name := "no limit"
		if limited {
			slot, name = jobs.Slot{Group: "acct a", Limit: 4}, "limit 4"
		}
		for i := range 10_000 {
			e.Create(jobs.New{ID: strconv.Itoa(i), Account: "a", Model: "m", Credits: 1, Slot: slot,
				Plan: jobs.Plan{Run: time.Second, Ending: jobs.Ending{Status: jobs.Succeeded}}})
		}
		for i := 5; i < 10_000; i += 10 {
			_, _ = e.Cancel("a", strconv.Itoa(i))
		}
		b.Run(name+"/list 50 of the newest", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got, _ := e.List("a", jobs.Filter{}, 0, 50); len(got) != 50 || (limited && got[1].QueuePosition == 0) {
					b.Fatalf("%d jobs, the second at %d", len(got), got[1].QueuePosition)
				}
			}
		})
		b.Run(name+"/a slot frees", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				e.Create(jobs.New{ID: "x" + strconv.Itoa(n), Account: "a", Model: "m", Credits: 1, Slot: slot,
					Plan: jobs.Plan{Run: time.Second, Ending: jobs.Ending{Status: jobs.Succeeded}}})
				n++
				_ = c.Advance(time.Second / 4) // a quarter of the running jobs end, and as many start
			}
		})
	}
}
