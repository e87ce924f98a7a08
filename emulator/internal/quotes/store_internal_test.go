package quotes

import (
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
)

// TestReplacedRecordsDoNotPileUp: a quote made again under its id leaves its old place in the
// heap of ends (while held) or in the queue of markers (as a marker) to be skipped; made again
// and again, those places are dropped rather than kept until their time.
func TestReplacedRecordsDoNotPileUp(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	c := clock.NewManual(start)
	s := NewBounded(c, Limits{PerAccount: 10, PerAccountBytes: 1 << 20, Remember: 24 * time.Hour, Markers: 10})
	add := func(id string, life time.Duration) {
		t.Helper()
		if err := s.Add(Quote{ID: id, Account: "a", Model: "m", Input: []byte(`{}`), ExpiresAt: c.Now().Add(life)}); err != nil {
			t.Fatal(err)
		}
	}
	add("anchor", 0) // a marker at the head of the queue, for a day, so what follows waits behind it
	for i := range 10_000 {
		add("held", time.Duration(10_000-i)*time.Hour) // each ends before the one it replaces: into the heap
		add("run", time.Hour)                          // each ends after the one it replaces: into the run
		add("marker", 0)
		if err := c.Advance(time.Nanosecond); err != nil { // "marker" ends and is a marker when next made
			t.Fatal(err)
		}
		a := s.accounts["a"]
		if a.ends.len() > 2*a.held+64 || a.queue.n > 2*a.markers+64 {
			t.Fatalf("round %d: %d places in the ends for %d held quotes, %d in the queue for %d markers", i, a.ends.len(), a.held, a.queue.n, a.markers)
		}
	}
	for _, id := range []string{"held", "run"} {
		if _, ok := s.Get("a", id); !ok {
			t.Errorf("%s is not held", id)
		}
	}
	for _, id := range []string{"anchor", "marker"} {
		if q, ok := s.Find("a", id); !ok || q.Input != nil {
			t.Errorf("%s: Find = %+v, %v; want the marker", id, q, ok)
		}
	}
}
