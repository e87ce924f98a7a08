// Package ratelimit counts requests in fixed windows of the emulator's clock, so a test can
// exhaust a limit, advance the manual clock past the window, and be let through again.
package ratelimit

import (
	"sync"
	"time"
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
	if l.counts[b] >= limit {
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
