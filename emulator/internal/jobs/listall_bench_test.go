package jobs_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
)

// BenchmarkListAll10000 lists a page of the dashboard's table over 10,000 jobs of four accounts:
// the first page, a deep page, and a filtered one.
func BenchmarkListAll10000(b *testing.B) {
	c := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	accounts := []string{"a", "b", "c", "d"}
	start := map[string]int64{}
	for _, a := range accounts {
		start[a] = 1 << 40
	}
	e := jobs.NewEngine(c, ledger.New(start), jobs.Options{Retention: time.Hour})
	for i := range 10_000 {
		a := accounts[i%len(accounts)]
		e.Create(jobs.New{ID: strconv.Itoa(i), Account: a, Model: "m" + strconv.Itoa(i%3), Credits: 1,
			Plan: jobs.Plan{Queue: time.Duration(i%50) * time.Second, Run: time.Second, Ending: jobs.Ending{Status: jobs.Succeeded}}})
	}
	_ = c.Advance(30 * time.Second)
	for _, bc := range []struct {
		name          string
		f             jobs.Filter
		offset, limit int
		want          int
	}{
		{"first page", jobs.Filter{}, 0, 50, 50},
		{"page 100", jobs.Filter{}, 4950, 50, 50},
		{"filtered", jobs.Filter{Status: jobs.Succeeded, Model: "m1"}, 0, 50, 50},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got, _ := e.ListAll(bc.f, bc.offset, bc.limit); len(got) != bc.want {
					b.Fatalf("%d jobs; want %d", len(got), bc.want)
				}
			}
		})
	}
}
