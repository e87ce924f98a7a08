package ratelimit

import (
	"testing"
	"time"
)

func TestFixedWindowsOnTheGivenClock(t *testing.T) {
	t.Parallel()
	l := New()
	start := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	for i := range 3 {
		d := l.Take(0, "k", 3, time.Minute, start)
		if !d.Allowed || d.Remaining != 2-i || d.Reset != 50*time.Second {
			t.Fatalf("take %d: %+v", i, d)
		}
	}
	if d := l.Take(0, "k", 3, time.Minute, start.Add(49*time.Second)); d.Allowed || d.Remaining != 0 || d.Reset != time.Second || d.Again {
		t.Errorf("fourth in the window: %+v", d)
	}
	if d := l.Take(0, "k", 3, time.Minute, start.Add(49*time.Second)); d.Allowed || !d.Again {
		t.Errorf("fifth in the window, back after a refusal: %+v", d)
	}
	if ws := l.Export(); len(ws) != 1 || ws[0].Count != 4 {
		t.Errorf("a refused caller's window exports as %+v; want one past the limit", ws)
	}
	if d := l.Take(0, "other", 3, time.Minute, start); !d.Allowed {
		t.Errorf("another caller shares the budget: %+v", d)
	}
	if d := l.Take(1, "k", 3, time.Minute, start); !d.Allowed {
		t.Errorf("another rule shares the budget: %+v", d)
	}
	if d := l.Take(0, "k", 3, time.Minute, start.Add(50*time.Second)); !d.Allowed || d.Remaining != 2 {
		t.Errorf("next window: %+v", d)
	}
	l.Reset()
	if d := l.Take(0, "k", 3, time.Minute, start); !d.Allowed || d.Remaining != 2 {
		t.Errorf("after reset: %+v", d)
	}
}

func TestOldWindowsArePruned(t *testing.T) {
	t.Parallel()
	l := New()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5000 {
		l.Take(0, "k", 1, time.Second, start.Add(time.Duration(i)*time.Second))
	}
	if n := len(l.counts); n > 1100 {
		t.Errorf("%d windows kept", n)
	}
}
