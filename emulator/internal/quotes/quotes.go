// Package quotes stores price quotes per account. A quote buys one generation: marking it used
// is atomic. Quotes cost nothing to make, so each account holds a bounded number of them, by
// count and by bytes; past its bound an account's new quote is refused (ErrTooMany), and no
// account's quote is ever dropped to make room for another's. Once a quote has expired, a small
// marker (its model, a digest of its input and its expiry) stays for a while, so the quote still
// answers quote_expired rather than quote_not_found.
package quotes

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
)

// Forget is how long after expiring a quote is held whole by default (see Limits.Grace).
const Forget = time.Hour

// Quote is a price for one model and one input, valid until ExpiresAt.
type Quote struct {
	ID        string
	Account   string
	Model     string
	Input     []byte // canonical form, see jsonvalue.Canonical; nil once only the marker is left
	Credits   int64
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedBy    string // the job the quote paid for, once used
	digest    [digestSize]byte
}

// digestSize is how much of the input's SHA-256 a marker keeps: enough that two different
// inputs never pass for one another in practice.
const digestSize = 16

// SameInput reports whether the quote was made for this canonical input. It also answers for a
// quote of which only the marker is left, whose Input is gone.
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
	// PerAccount is how many quotes one account holds at most: unexpired ones, and expired ones
	// still within Grace.
	PerAccount int
	// PerAccountBytes bounds the size of those quotes (see Size); the input counts.
	PerAccountBytes int64
	// Grace is how long after expiring a quote is still held whole, and counted in the bounds.
	Grace time.Duration
	// Remember is how long after expiring a quote is still known by its marker, when that is
	// longer than Grace (set it to the job retention). Markers hold no input.
	Remember time.Duration
	// Markers is how many markers one account keeps at most; past it the oldest goes first.
	Markers int
}

// DefaultLimit is the per-account quote count of DefaultLimits.
const DefaultLimit = 10_000

// DefaultLimits is 10,000 quotes and 64 MiB per account (64 quotes of the largest body), whole
// for an hour after they expire, known as expired for a day (the default job retention).
var DefaultLimits = Limits{PerAccount: DefaultLimit, PerAccountBytes: 64 << 20, Grace: Forget, Remember: 24 * time.Hour, Markers: DefaultLimit}

// ErrTooMany is the error Add returns, wrapped in a *LimitError, when the account already holds
// as many quotes, or as many bytes of them, as its bound allows.
var ErrTooMany = errors.New("too many quotes")

// LimitError says which bound refused a quote and when room will be made.
type LimitError struct {
	Held      int   // quotes the account holds
	HeldBytes int64 // their size
	Limits    Limits
	// RetryAt is when the account's oldest held quote is dropped, making room.
	RetryAt time.Time
}

// Error describes the bound in the emulator's words.
func (e *LimitError) Error() string {
	return fmt.Sprintf("this account holds %d quotes (%d bytes); at most %d quotes and %d bytes are kept per account until they expire",
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
}

// account is one account's quotes and markers.
type account struct {
	quotes map[string]*entry
	bytes  int64
	ends   endHeap // the held quotes by when they end; an entry no longer held is skipped
	marks  map[string]marker
	queue  []queued // markers in the order they were made, which is the order they end
	head   int
}

type entry struct {
	quote Quote
	size  int64
	end   int64 // Unix nanoseconds; compared as a number, since the heap compares often
}

// marker is what is left of an expired quote.
type marker struct {
	model   string
	digest  [digestSize]byte
	expires time.Time
}

type queued struct {
	id  string
	end time.Time
}

// Overheads approximate what a quote and a marker cost beyond their text: the structs, the map
// entries and the place in the heap of ends.
const (
	quoteOverhead  = 320
	markerOverhead = 160
)

// Size is what a quote counts against its account's byte bound.
func Size(q Quote) int64 {
	return int64(quoteOverhead + 2*len(q.ID) + 2*len(q.Account) + len(q.Model) + len(q.Input) + len(q.UsedBy))
}

// NewBounded returns an empty store on a clock, holding quotes within limits. Zero or negative
// counts and sizes are raised to 1; a negative Grace or Remember counts as 0.
func NewBounded(c *clock.Clock, l Limits) *Store {
	l.PerAccount = max(1, l.PerAccount)
	l.PerAccountBytes = max(1, l.PerAccountBytes)
	l.Markers = max(1, l.Markers)
	l.Grace = max(0, l.Grace)
	l.Remember = max(0, l.Remember)
	return &Store{clock: c, limits: l, accounts: map[string]*account{}}
}

// Add stores a quote. It returns a *LimitError (ErrTooMany) and stores nothing when the quote's
// account is at its bound: a quote already handed out stays valid until its expires_at, so no
// quote is dropped to make room.
func (s *Store) Add(q Quote) error {
	q.digest = digestOf(q.Input)
	e := &entry{quote: q, size: Size(q), end: clock.Nanos(s.end(q))}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[q.Account]
	if a == nil {
		a = &account{quotes: map[string]*entry{}, marks: map[string]marker{}}
		s.accounts[q.Account] = a
	}
	s.settle(a, s.clock.Now())
	old := a.quotes[q.ID]
	held, heldBytes := len(a.quotes), a.bytes
	if old != nil {
		held, heldBytes = held-1, heldBytes-old.size
	}
	if held+1 > s.limits.PerAccount || heldBytes+e.size > s.limits.PerAccountBytes {
		err := &LimitError{Held: len(a.quotes), HeldBytes: a.bytes, Limits: s.limits, RetryAt: s.oldestEnd(a)}
		s.dropIfEmpty(q.Account, a)
		return err
	}
	if old != nil {
		s.remove(a, q.ID, old)
	}
	delete(a.marks, q.ID)
	a.quotes[q.ID] = e
	a.bytes += e.size
	a.ends.push(e)
	return nil
}

// end is when a held quote turns into its marker: just after its grace is over, since a quote
// is valid until its expires_at and invalid only after it, so at that very instant it still buys.
func (s *Store) end(q Quote) time.Time { return q.ExpiresAt.Add(s.limits.Grace + time.Nanosecond) }

// oldestEnd is when the first of an account's held quotes is dropped. Callers hold s.mu.
func (s *Store) oldestEnd(a *account) time.Time {
	a.ends.clean(a)
	if len(a.ends) == 0 {
		return time.Time{}
	}
	return s.end(a.ends[0].quote)
}

// settle turns the account's quotes whose end has come into markers, in the order they end,
// and drops the markers whose time has come. Callers hold s.mu.
func (s *Store) settle(a *account, now time.Time) {
	nowNs := clock.Nanos(now)
	for a.ends.clean(a); len(a.ends) > 0 && nowNs >= a.ends[0].end; a.ends.clean(a) {
		e := a.ends.pop()
		id := e.quote.ID
		s.remove(a, id, e)
		if end := e.quote.ExpiresAt.Add(s.limits.Remember); s.limits.Remember > s.limits.Grace {
			for len(a.marks) >= s.limits.Markers && s.popMarker(a) {
			}
			a.marks[id] = marker{model: e.quote.Model, digest: e.quote.digest, expires: e.quote.ExpiresAt}
			a.queue = append(a.queue, queued{id, end})
		}
	}
	for a.head < len(a.queue) && !now.Before(a.queue[a.head].end) {
		s.popMarker(a)
	}
}

// touch finds an account, settled as of now, or nil; an account left with nothing is dropped.
// Callers hold s.mu.
func (s *Store) touch(id string) *account {
	a := s.accounts[id]
	if a == nil {
		return nil
	}
	s.settle(a, s.clock.Now())
	if len(a.quotes) == 0 && len(a.marks) == 0 {
		delete(s.accounts, id)
		return nil
	}
	return a
}

// remove forgets a held quote; its place in the heap of ends is skipped when reached. Callers
// hold s.mu.
func (s *Store) remove(a *account, id string, e *entry) {
	delete(a.quotes, id)
	a.bytes -= e.size
}

// popMarker drops the oldest marker; it reports false when there is none. Callers hold s.mu.
func (s *Store) popMarker(a *account) bool {
	if a.head == len(a.queue) {
		return false
	}
	q := a.queue[a.head]
	a.queue[a.head] = queued{}
	a.head++
	// A marker replaced by a new quote of the same id, or made again since, is not this one.
	if m, ok := a.marks[q.id]; ok && m.expires.Add(s.limits.Remember).Equal(q.end) {
		delete(a.marks, q.id)
	}
	if a.head > 1024 && a.head > len(a.queue)/2 {
		a.queue = append([]queued(nil), a.queue[a.head:]...)
		a.head = 0
	}
	if a.head == len(a.queue) {
		a.queue, a.head = nil, 0
	}
	return true
}

// dropIfEmpty forgets an account that holds nothing. Callers hold s.mu.
func (s *Store) dropIfEmpty(id string, a *account) {
	if len(a.quotes) == 0 && len(a.marks) == 0 {
		delete(s.accounts, id)
	}
}

// endHeap orders held quotes by end, earliest first (ties by id, so the order is one order).
type endHeap []*entry

func (h endHeap) less(i, j int) bool {
	if h[i].end != h[j].end {
		return h[i].end < h[j].end
	}
	return h[i].quote.ID < h[j].quote.ID
}

func (h *endHeap) push(e *entry) {
	*h = append(*h, e)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *endHeap) pop() *entry {
	old := *h
	top := old[0]
	n := len(old) - 1
	old[0] = old[n]
	old[n] = nil
	*h = old[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		(*h)[i], (*h)[m] = (*h)[m], (*h)[i]
		i = m
	}
	if n == 0 {
		*h = nil // an emptied account keeps no array
	}
	return top
}

// clean pops entries at the top that the account no longer holds (replaced by a quote of the
// same id), so the top is a held quote.
func (h *endHeap) clean(a *account) {
	for len(*h) > 0 && a.quotes[(*h)[0].quote.ID] != (*h)[0] {
		h.pop()
	}
}

// Get returns a copy of an account's quote, while it is held whole (until Grace after it
// expires).
func (s *Store) Get(account, id string) (Quote, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.touch(account); a != nil {
		if e, ok := a.quotes[id]; ok {
			return e.quote, true
		}
	}
	return Quote{}, false
}

// Find is Get that also finds a quote of which only the marker is left (until Remember after it
// expires): then the quote has its ID, Account, Model and ExpiresAt but no Input; compare
// inputs with SameInput.
func (s *Store) Find(account, id string) (Quote, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.touch(account)
	if a == nil {
		return Quote{}, false
	}
	if e, ok := a.quotes[id]; ok {
		return e.quote, true
	}
	m, ok := a.marks[id]
	if !ok || !s.clock.Now().Before(m.expires.Add(s.limits.Remember)) {
		return Quote{}, false
	}
	return Quote{ID: id, Account: account, Model: m.model, ExpiresAt: m.expires, digest: m.digest}, true
}

// Use marks a quote as spent on a job. It reports false, and the job that used it, when the
// quote was already used.
func (s *Store) Use(account, id, job string) (usedBy string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.touch(account)
	if a == nil {
		return "", false
	}
	e, found := a.quotes[id]
	if !found {
		return "", false
	}
	if e.quote.UsedBy != "" {
		return e.quote.UsedBy, false
	}
	e.quote.UsedBy = job
	return job, true
}

// Release makes a quote usable again after the generation it was marked for did not happen.
func (s *Store) Release(account, id, job string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.touch(account); a != nil {
		if e, ok := a.quotes[id]; ok && e.quote.UsedBy == job {
			e.quote.UsedBy = ""
		}
	}
}

// Len counts the quotes held whole, markers aside.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id := range s.accounts {
		if a := s.touch(id); a != nil {
			n += len(a.quotes)
		}
	}
	return n
}
