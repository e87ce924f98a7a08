// Package budget is the one bound on the memory of all tenants together: the bytes their stores
// hold, as each store counts them. Per-tenant bounds alone multiply with the number of tenants;
// the budget does not. Stores report what they hold after the fact, so the count can run a
// little behind (by what requests in flight add); before refusing anything, the budget asks for
// a fresh count, so a refusal is never due to bytes already let go.
package budget

import (
	"math"
	"sync"
	"sync/atomic"
)

// Budget counts the bytes held against a limit. It is safe for concurrent use.
type Budget struct {
	limit int64
	used  atomic.Int64

	countMu  sync.Mutex
	recounts atomic.Uint64 // how many recounts have finished
	recount  func()        // brings every store's count up to date; set before the budget is shared
}

// New returns a budget of limit bytes; zero or less means no limit.
func New(limit int64) *Budget {
	if limit <= 0 {
		limit = math.MaxInt64
	}
	return &Budget{limit: limit}
}

// OnRecount sets what brings every holder's count up to date, called before a refusal. Set it
// before the budget is shared.
func (b *Budget) OnRecount(f func()) { b.recount = f }

// Limit is the budget's size in bytes.
func (b *Budget) Limit() int64 { return b.limit }

// Used is what the holders last reported they hold.
func (b *Budget) Used() int64 { return b.used.Load() }

// Add counts bytes a holder now holds (positive) or has let go (negative).
func (b *Budget) Add(delta int64) {
	if delta != 0 {
		b.used.Add(delta)
	}
}

// Full reports whether what is held has reached the limit, as last counted.
func (b *Budget) Full() bool { return b.used.Load() >= b.limit }

// Admit reports whether n more bytes fit. When they do not by the last count, it recounts
// first (one recount at a time; those waiting meanwhile use its result) and decides on that.
func (b *Budget) Admit(n int64) bool {
	if b.fits(n) {
		return true
	}
	if b.recount != nil {
		// A recount that finished while this caller waited for the lock is as fresh as one it
		// would make: when the budget is truly full, callers queued behind one recount share it
		// instead of each walking every store in turn.
		seen := b.recounts.Load()
		b.countMu.Lock()
		if b.recounts.Load() == seen && !b.fits(n) {
			b.recount()
			b.recounts.Add(1)
		}
		b.countMu.Unlock()
	}
	return b.fits(n)
}

func (b *Budget) fits(n int64) bool {
	used := b.used.Load()
	return n <= b.limit-used
}
