// Package quotes stores price quotes per account. A quote buys one generation: marking it used
// is atomic.
//
// Quotes cost nothing to make, so an account's live quotes (unexpired and unused) are bounded by
// count and bytes; past the bound a new quote is refused (ErrTooMany), and no account's quote is
// ever dropped to make room for another's. A quote is a compact record: a digest stands in for
// its input, which generate compares by digest, so a backend quoting what a user types on one
// key holds a few hundred bytes per quote, whatever the input's size. That bound is meant to
// stop hoarding, so a quote leaves it as soon as it is spent or expires: what is then remembered
// about it is a marker (its model, the digest, its expiry and the job it paid for), so it still
// answers quote_already_used or quote_expired rather than quote_not_found. Markers are bounded
// by count and bytes too, but they never refuse new work: past their bound, the marker due to
// be forgotten first goes first.
package quotes

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/due"
)

// Quote is a price for one model and one input, valid until ExpiresAt.
type Quote struct {
	ID        string
	Account   string
	Model     string
	Input     []byte // canonical form, see jsonvalue.Canonical; given to Add, never kept (Find gives nil)
	Credits   int64
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedBy    string // the job the quote paid for, once used
	// Live is set on a quote Find returns while it is unexpired and unused; otherwise only
	// its marker is left.
	Live bool
	// Checked says the input was validated against this run's catalog when the quote was made
	// (Add); a quote a snapshot brought (Import) was made elsewhere, perhaps by another catalog.
	Checked bool
	digest  [digestSize]byte
}

// digestSize is how much of the input's SHA-256 a marker keeps: enough that two different
// inputs never pass for one another in practice.
const digestSize = 16

// SameInput reports whether the quote was made for this canonical input, by its digest when the
// Input is not at hand (a quote the store found).
func (q Quote) SameInput(canonical []byte) bool {
	if q.Input != nil {
		return bytes.Equal(q.Input, canonical)
	}
	return q.digest == digestOf(canonical)
}

func digestOf(input []byte) [digestSize]byte {
	sum := sha256.Sum256(input)
	return [digestSize]byte(sum[:digestSize])
}

// Limits bound what a store holds for each account, and say how long it remembers a quote.
type Limits struct {
	// PerAccount is how many live quotes (unexpired and unused) one account holds at most.
	PerAccount int
	// PerAccountBytes bounds the size of those quotes (see Size).
	PerAccountBytes int64
	// Remember is how long after expiring a quote is still known by its marker (set it to the
	// job retention). Markers hold no input.
	Remember time.Duration
	// Markers is how many markers one account keeps at most; past it the one due to be
	// forgotten first goes first.
	Markers int
	// MarkerBytes bounds the size of those markers (see markerSize) in the same way.
	MarkerBytes int64
}

// DefaultLimit is the per-account marker count of DefaultLimits.
const DefaultLimit = 10_000

// DefaultLiveLimit is the per-account live quote count of DefaultLimits: ten minutes of
// quoting unpaced on one key at 3,000 quotes a second (a quote lives 10 minutes by default).
const DefaultLiveLimit = 2_000_000

// DefaultLimits is 2,000,000 live quotes and 512 MiB per account, and 10,000 markers in 8 MiB,
// each known for a day (the default job retention) after its quote expires.
var DefaultLimits = Limits{PerAccount: DefaultLiveLimit, PerAccountBytes: 512 << 20, Remember: 24 * time.Hour,
	Markers: DefaultLimit, MarkerBytes: 8 << 20}

// ErrTooMany is the error Add returns, wrapped in a *LimitError, when the account already holds
// as many live quotes, or as many bytes of them, as its bound allows.
var ErrTooMany = errors.New("too many quotes")

// LimitError says which bound refused a quote and when room will be made at the latest.
type LimitError struct {
	Held      int   // live quotes the account holds
	HeldBytes int64 // their size
	Limits    Limits
	// RetryAt is when the account's first live quote expires, making room unless it is spent
	// before.
	RetryAt time.Time
}

// Error describes the bound in the emulator's words.
func (e *LimitError) Error() string {
	return fmt.Sprintf("this account holds %d unused quotes (%d bytes); at most %d quotes and %d bytes are kept per account until they are used or expire",
		e.Held, e.HeldBytes, e.Limits.PerAccount, e.Limits.PerAccountBytes)
}

// Unwrap makes errors.Is(err, ErrTooMany) hold.
func (e *LimitError) Unwrap() error { return ErrTooMany }

// Store holds quotes. It is safe for concurrent use. It sets no timers: an account's quotes
// whose time is over become markers when the account is next touched, so making a quote costs
// the clock nothing, and a quote's end is exact on the manual clock all the same.
type Store struct {
	clock    *clock.Clock
	limits   Limits
	mu       sync.Mutex
	accounts map[string]*account
	seq      uint64 // orders records due at the same instant: the first made or marked goes first
}

// account is one account's quotes and markers, each one record under its id.
type account struct {
	known     map[string]*record
	live      due.Queue[*record] // live quotes, by when they expire
	liveBytes int64
	marks     due.Queue[*record] // markers, by when they are forgotten
	markBytes int64
}

// record is a quote an account knows: live, then a marker once it is spent or expires, until
// it is forgotten or replaced by a quote of the same id. Its entry is its place in whichever
// queue holds it: At is when a live quote expires (just after its expires_at) or when a marker
// is forgotten.
type record struct {
	e       due.Entry[*record]
	id      string
	model   string
	digest  [digestSize]byte
	expires time.Time
	credits int64
	created time.Time
	usedBy  string
	size    int64 // what it counts against its bound, as a live quote or as a marker
	marker  bool
	checked bool // made by Add, in this run (see Quote.Checked)
}

// quote is the record as a Quote of account.
func (r *record) quote(account string) Quote {
	return Quote{ID: r.id, Account: account, Model: r.model, Credits: r.credits,
		CreatedAt: r.created, ExpiresAt: r.expires, UsedBy: r.usedBy, Live: !r.marker, Checked: r.checked, digest: r.digest}
}

// Overheads are what a live quote and a marker cost beyond their text (id, model), rounded up
// from BenchmarkFootprint: the record (about 180 bytes), its map entry and its place in a queue.
const (
	quoteOverhead  = 288
	markerOverhead = 288
)

// Size is what a quote counts against its account's byte bound for live quotes: its input is
// not kept, so it does not count.
func Size(q Quote) int64 {
	return int64(quoteOverhead + 2*len(q.ID) + 2*len(q.Account) + len(q.Model) + len(q.UsedBy))
}

// markerSize is what a marker counts against its account's byte bound for markers.
func markerSize(r *record) int64 {
	return int64(markerOverhead + 2*len(r.id) + len(r.model) + len(r.usedBy))
}

// NewBounded returns an empty store on a clock, holding quotes within limits. Zero or negative
// counts and sizes are raised to 1; a negative Remember counts as 0.
func NewBounded(c *clock.Clock, l Limits) *Store {
	l.PerAccount = max(1, l.PerAccount)
	l.PerAccountBytes = max(1, l.PerAccountBytes)
	l.Markers = max(1, l.Markers)
	l.MarkerBytes = max(1, l.MarkerBytes)
	l.Remember = max(0, l.Remember)
	return &Store{clock: c, limits: l, accounts: map[string]*account{}}
}

// Add stores a live quote. It returns a *LimitError (ErrTooMany) and stores nothing when the
// quote's account is at its bound: a quote already handed out stays valid until it is used or
// its expires_at passes, so no quote is dropped to make room.
func (s *Store) Add(q Quote) error {
	size := Size(q)
	r := &record{id: q.ID, model: q.Model, digest: digestOf(q.Input), expires: q.ExpiresAt,
		credits: q.Credits, created: q.CreatedAt, usedBy: q.UsedBy, size: size, checked: true}
	r.e.At, r.e.Value = expiryOf(q.ExpiresAt), r
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[q.Account]
	if a == nil {
		a = &account{known: map[string]*record{}}
		s.accounts[q.Account] = a
	}
	s.settle(a, clock.Nanos(s.clock.Now()))
	old := a.known[q.ID]
	count, bytes := a.live.Len(), a.liveBytes
	if old != nil && !old.marker {
		count, bytes = count-1, bytes-old.size
	}
	if count+1 > s.limits.PerAccount || bytes+size > s.limits.PerAccountBytes {
		err := &LimitError{Held: a.live.Len(), HeldBytes: a.liveBytes, Limits: s.limits}
		if first := a.live.Peek(); first != nil {
			err.RetryAt = time.Unix(0, first.At).UTC()
		}
		s.dropIfEmpty(q.Account, a)
		return err
	}
	if old != nil {
		a.forget(old)
	}
	a.known[q.ID] = r
	s.seq++
	r.e.Seq = s.seq
	a.live.Push(&r.e)
	a.liveBytes += size
	return nil
}

// expiryOf is when a live quote stops being live: just after its expires_at, since a quote is
// valid until its expires_at and invalid only after it, so at that very instant it still buys.
func expiryOf(expires time.Time) int64 { return clock.Nanos(expires) + 1 }

// forgetAt is when a marker is forgotten: Remember after its quote stopped being valid.
func (s *Store) forgetAt(r *record) int64 {
	return clock.Nanos(r.expires.Add(s.limits.Remember)) + 1
}

// settle turns the account's live quotes that have expired by now (Unix nanoseconds) into
// markers, in the order they expire, and forgets the markers whose time has come. Callers hold
// s.mu.
func (s *Store) settle(a *account, now int64) {
	for top := a.live.Peek(); top != nil && now >= top.At; top = a.live.Peek() {
		s.mark(a, a.live.Pop().Value, now)
	}
	for top := a.marks.Peek(); top != nil && now >= top.At; top = a.marks.Peek() {
		a.forget(top.Value)
	}
}

// mark turns a record taken off the live queue into a marker, forgetting the markers due first
// while the account holds more than its bound. Callers hold s.mu.
func (s *Store) mark(a *account, r *record, now int64) {
	a.liveBytes -= r.size
	r.marker = true
	r.size = markerSize(r)
	r.e.At = s.forgetAt(r)
	if now >= r.e.At {
		delete(a.known, r.id)
		return
	}
	// Room is made before the new marker goes in, so the one evicted is never the new one: a
	// quote just used must stay known, or a Release after a hold that failed would find nothing
	// and the caller's retry would answer quote_not_found.
	for a.marks.Len() > 0 && (a.marks.Len()+1 > s.limits.Markers || a.markBytes+r.size > s.limits.MarkerBytes) {
		a.forget(a.marks.Peek().Value)
	}
	s.seq++
	r.e.Seq = s.seq
	a.marks.Push(&r.e)
	a.markBytes += r.size
}

// forget drops a record, live or marker. Callers hold s.mu.
func (a *account) forget(r *record) {
	if r.marker {
		a.marks.Remove(&r.e)
		a.markBytes -= r.size
	} else {
		a.live.Remove(&r.e)
		a.liveBytes -= r.size
	}
	delete(a.known, r.id)
}

// touch finds an account, settled as of now, or nil; an account left with nothing is dropped.
// Callers hold s.mu.
func (s *Store) touch(id string) *account {
	a := s.accounts[id]
	if a == nil {
		return nil
	}
	s.settle(a, clock.Nanos(s.clock.Now()))
	if len(a.known) == 0 {
		delete(s.accounts, id)
		return nil
	}
	return a
}

// dropIfEmpty forgets an account that holds nothing. Callers hold s.mu.
func (s *Store) dropIfEmpty(id string, a *account) {
	if len(a.known) == 0 {
		delete(s.accounts, id)
	}
}

// find is an account's record, settled as of now, or nil. Callers hold s.mu.
func (s *Store) find(account, id string) (*account, *record) {
	if a := s.touch(account); a != nil {
		if r := a.known[id]; r != nil {
			return a, r
		}
	}
	return nil, nil
}

// Find returns a copy of an account's quote, live or known by its marker. A marker's quote has
// its ID, Account, Model, ExpiresAt and UsedBy but no Input: compare inputs with SameInput.
func (s *Store) Find(account, id string) (Quote, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, r := s.find(account, id); r != nil {
		return r.quote(account), true
	}
	return Quote{}, false
}

// Use marks a live quote as spent on a job: it leaves the bound on live quotes and is known by
// its marker from then on. It reports false, and the job that used it, when the quote was
// already used; false and "" when it is unknown or expired.
func (s *Store) Use(account, id, job string) (usedBy string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, r := s.find(account, id)
	switch {
	case r == nil:
		return "", false
	case r.marker:
		return r.usedBy, false
	}
	a.live.Remove(&r.e)
	r.usedBy = job
	s.mark(a, r, clock.Nanos(s.clock.Now()))
	return job, true
}

// Release makes a quote usable again after the generation it was marked for did not happen.
// It counts among the live quotes again (an account may then briefly hold one more than its
// bound: the quote was handed out, so it is not refused), known by its input's digest.
func (s *Store) Release(account, id, job string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, r := s.find(account, id)
	// A marker of a quote that expired unused names no job: no release brings it back.
	if r == nil || !r.marker || job == "" || r.usedBy != job {
		return
	}
	a.marks.Remove(&r.e)
	a.markBytes -= r.size
	r.usedBy, r.marker = "", false
	r.size = Size(Quote{ID: r.id, Account: account, Model: r.model})
	r.e.At = expiryOf(r.expires)
	s.seq++
	r.e.Seq = s.seq
	a.live.Push(&r.e)
	a.liveBytes += r.size
}

// Len counts the live quotes, markers aside.
func (s *Store) Len() int { return total(s, func(a *account) int { return a.live.Len() }) }

// Markers counts the markers, live quotes aside.
func (s *Store) Markers() int { return total(s, func(a *account) int { return a.marks.Len() }) }

// Bytes is what the quotes held and the markers count against the memory budget, as of now.
func (s *Store) Bytes() int64 {
	return total(s, func(a *account) int64 { return a.liveBytes + a.markBytes })
}

// total sums what count says of each account, as of now.
func total[N int | int64](s *Store, count func(*account) N) N {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n N
	for id := range s.accounts {
		if a := s.touch(id); a != nil {
			n += count(a)
		}
	}
	return n
}
