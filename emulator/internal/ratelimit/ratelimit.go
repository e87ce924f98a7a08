// Package ratelimit counts requests in fixed windows of the emulator's clock, so a test can
// exhaust a limit, advance the manual clock past the window, and be let through again.
package ratelimit

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// Limiter counts requests per rule and caller. It is safe for concurrent use.
type Limiter struct {
	mu     sync.Mutex
	counts map[bucket]int
}

type bucket struct {
	rule   int
	caller string
	window int64
}

// Decision is the outcome of one request against one limit.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	// Reset is how long until the window ends and the count starts again.
	Reset time.Duration
	// RetryAfterDate says the limit's Retry-After is an HTTP-date rather than seconds.
	RetryAfterDate bool
	// Again says the caller was refused in this window before: it is coming back after the
	// Retry-After of that refusal.
	Again bool
}

// New returns an empty limiter.
func New() *Limiter { return &Limiter{counts: map[bucket]int{}} }

// Take counts one request of caller against rule (limit per window) at now.
func (l *Limiter) Take(rule int, caller string, limit int, per time.Duration, now time.Time) Decision {
	window := now.UnixNano() / int64(per)
	end := time.Unix(0, (window+1)*int64(per))
	l.mu.Lock()
	defer l.mu.Unlock()
	b := bucket{rule, caller, window}
	d := Decision{Limit: limit, Reset: end.Sub(now)}
	if n := l.counts[b]; n >= limit {
		// One past the limit marks a caller refused in this window, so a snapshot keeps it too.
		d.Again, l.counts[b] = n > limit, limit+1
		return d
	}
	l.counts[b]++
	d.Allowed, d.Remaining = true, limit-l.counts[b]
	l.prune(rule, window)
	return d
}

// prune drops the counts of windows that have ended, keeping memory bounded by live callers.
func (l *Limiter) prune(rule int, window int64) {
	if len(l.counts) < 1024 {
		return
	}
	for b := range l.counts {
		if b.rule == rule && b.window < window {
			delete(l.counts, b)
		}
	}
}

// Reset forgets every count (a scenario switch starts limits afresh).
func (l *Limiter) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.counts)
}

// Export lists the counts of the windows held, in a fixed order.
func (l *Limiter) Export() []api.SnapshotWindow {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]api.SnapshotWindow, 0, len(l.counts))
	for b, n := range l.counts {
		out = append(out, api.SnapshotWindow{Rule: b.rule, Caller: b.caller, Window: b.window, Count: n})
	}
	slices.SortFunc(out, func(x, y api.SnapshotWindow) int {
		return cmp.Or(cmp.Compare(x.Rule, y.Rule), cmp.Compare(x.Caller, y.Caller), cmp.Compare(x.Window, y.Window))
	})
	return out
}

// Import replaces the counts with exported ones; rules says how many limits the scenario in
// force has. Each problem is reported with a JSON Pointer relative to the list.
func (l *Limiter) Import(ws []api.SnapshotWindow, rules int, report func(ptr, msg string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.counts)
	for i, w := range ws {
		if w.Rule < 0 || w.Rule >= rules || w.Count < 0 {
			report("/"+strconv.Itoa(i), "names no rate limit of the scenario in force, or counts below 0")
			continue
		}
		l.counts[bucket{w.Rule, w.Caller, w.Window}] = w.Count
	}
}
