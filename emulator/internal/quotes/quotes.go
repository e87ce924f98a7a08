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
	seq      uint64 // counts the quotes stored, to order quotes that end at the same instant
}

// account is one account's quotes and markers. A quote and then its marker are one record
// under one key, so a quote's end touches no map: in steady state an Add costs a lookup and an
// insert for the new quote, and a delete for the marker the bound then forgets.
type account struct {
	known   map[string]*record // held quotes and markers, by id
	held    int                // how many of them are held quotes
	bytes   int64              // the held quotes' size
	markers int                // how many are markers
	ends    ends               // held quotes by when they end; a dead record's place is skipped
	queue   ring[*record]      // markers in the order they were made, the order they end
	spare   *held              // the held part of the last quote ended, for the next one made
}

// record is a quote an account knows: held whole, then, once its end has come, a marker (held
// dropped, the rest kept), until it is forgotten or replaced by a quote of the same id.
type record struct {
	id      string
	model   string
	digest  [digestSize]byte
	expires time.Time
	until   int64 // Unix nanoseconds: when a held quote ends, or when a marker is forgotten
	held    *held // nil once only the marker is left
	dead    bool  // replaced by another quote of the same id, or forgotten
}

// held is what only a held quote has; apart from the record, so a marker is small.
type held struct {
	input   []byte
	credits int64
	created time.Time
	usedBy  string
	size    int64 // what it counts against the byte bound, fixed when it was stored
}

// quote is the record as a Quote of account, while it is held.
func (r *record) quote(account string) Quote {
	h := r.held
	return Quote{ID: r.id, Account: account, Model: r.model, Input: h.input, Credits: h.credits,
		CreatedAt: h.created, ExpiresAt: r.expires, UsedBy: h.usedBy, digest: r.digest}
}

// Overheads are what a held quote and a marker cost beyond their text (id, model, input),
// rounded up from BenchmarkFootprint: a held quote is its record (96 bytes), its held part (80),
// its map entry and its place among the ends, about 260 bytes in all; a marker is the record,
// its map entry and its place in the queue, about 150. Size counts the quote's.
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
	size := Size(q)
	r := &record{id: q.ID, model: q.Model, digest: digestOf(q.Input), expires: q.ExpiresAt,
		until: clock.Nanos(s.end(q.ExpiresAt))}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[q.Account]
	if a == nil {
		a = &account{known: map[string]*record{}}
		s.accounts[q.Account] = a
	}
	s.settle(a, clock.Nanos(s.clock.Now()))
	old := a.known[q.ID]
	count, bytes := a.held, a.bytes
	if old != nil && old.held != nil {
		count, bytes = count-1, bytes-old.held.size
	}
	if count+1 > s.limits.PerAccount || bytes+size > s.limits.PerAccountBytes {
		err := &LimitError{Held: a.held, HeldBytes: a.bytes, Limits: s.limits, RetryAt: s.oldestEnd(a)}
		s.dropIfEmpty(q.Account, a)
		return err
	}
	if old != nil {
		a.kill(old)
	}
	r.held = a.spare
	if r.held == nil {
		r.held = new(held)
	}
	a.spare = nil
	*r.held = held{input: q.Input, credits: q.Credits, created: q.CreatedAt, usedBy: q.UsedBy, size: size}
	a.known[q.ID] = r
	a.held++
	a.bytes += size
	s.seq++
	a.ends.push(item{end: r.until, seq: s.seq, r: r})
	return nil
}

// end is when a held quote turns into its marker: just after its grace is over, since a quote
// is valid until its expires_at and invalid only after it, so at that very instant it still buys.
func (s *Store) end(expires time.Time) time.Time {
	return expires.Add(s.limits.Grace + time.Nanosecond)
}

// oldestEnd is when the first of an account's held quotes is dropped. Callers hold s.mu.
func (s *Store) oldestEnd(a *account) time.Time {
	a.ends.clean()
	if a.ends.len() == 0 {
		return time.Time{}
	}
	return s.end(a.ends.top().r.expires)
}

// settle turns the account's quotes whose end has come (now, in Unix nanoseconds) into
// markers, in the order they end, and forgets the markers whose time has come. Callers hold
// s.mu.
func (s *Store) settle(a *account, now int64) {
	for a.ends.len() > 0 && (a.ends.top().r.dead || now >= a.ends.top().end) {
		r := a.ends.pop().r
		if r.dead {
			continue
		}
		a.held--
		a.bytes -= r.held.size
		if a.spare == nil {
			*r.held = held{}
			a.spare = r.held
		}
		r.held = nil
		if s.limits.Remember <= s.limits.Grace {
			delete(a.known, r.id)
			r.dead = true
			continue
		}
		for a.markers >= s.limits.Markers && a.forgetOldest() {
		}
		r.until = clock.Nanos(r.expires.Add(s.limits.Remember))
		a.markers++
		a.queue.push(r)
	}
	for a.queue.n > 0 && (a.queue.peek().dead || now >= a.queue.peek().until) {
		a.forgetOldest()
	}
}

// kill ends a record that a new quote of the same id replaces; its places in the heap of ends
// and the queue of markers are skipped when reached, or dropped when they pile up.
func (a *account) kill(r *record) {
	if r.held != nil {
		a.held--
		a.bytes -= r.held.size
		r.held = nil
	} else {
		a.markers--
	}
	r.dead = true
	if a.ends.len() > 2*a.held+64 {
		a.ends.compact()
	}
	if a.queue.n > 2*a.markers+64 {
		a.queue.compact(func(r *record) bool { return !r.dead })
	}
}

// forgetOldest drops the oldest marker; it reports false when there is none.
func (a *account) forgetOldest() bool {
	if a.queue.n == 0 {
		return false
	}
	if r := a.queue.pop(); !r.dead {
		delete(a.known, r.id)
		a.markers--
		r.dead = true
	}
	return true
}

// touch finds an account, settled as of now, or nil; an account left with nothing is dropped.
// Callers hold s.mu.
func (s *Store) touch(id string) *account {
	a := s.accounts[id]
	if a == nil {
		return nil
	}
	s.settle(a, clock.Nanos(s.clock.Now()))
	if a.held == 0 && a.markers == 0 {
		delete(s.accounts, id)
		return nil
	}
	return a
}

// dropIfEmpty forgets an account that holds nothing. Callers hold s.mu.
func (s *Store) dropIfEmpty(id string, a *account) {
	if a.held == 0 && a.markers == 0 {
		delete(s.accounts, id)
	}
}

// item is a held quote's place in the heap of ends, with what orders it at hand, so ordering
// reads no record.
type item struct {
	end int64  // Unix nanoseconds
	seq uint64 // the store's count when it was added: of quotes that end together, the first made ends first
	r   *record
}

// ends orders held quotes by end, earliest first. Quotes mostly come in the order they end
// (most share one lifetime), and those wait in run, a queue that costs nothing to keep in
// order; the others wait in a heap.
type ends struct {
	run  ring[item] // sorted
	heap endHeap
}

func (e *ends) len() int { return e.run.n + len(e.heap) }

func (e *ends) push(it item) {
	if e.run.n == 0 || !it.less(e.run.last()) {
		e.run.push(it)
	} else {
		e.heap.push(it)
	}
}

// fromRun reports whether the earliest item is the run's. Callers check len() > 0.
func (e *ends) fromRun() bool {
	return len(e.heap) == 0 || e.run.n > 0 && e.run.peek().less(e.heap[0])
}

// top is the earliest item. Callers check len() > 0.
func (e *ends) top() item {
	if e.fromRun() {
		return e.run.peek()
	}
	return e.heap[0]
}

// pop removes the earliest item. Callers check len() > 0.
func (e *ends) pop() item {
	if e.fromRun() {
		return e.run.pop()
	}
	return e.heap.pop()
}

// clean pops the dead records at the top, so the top is a held quote.
func (e *ends) clean() {
	for e.len() > 0 && e.top().r.dead {
		e.pop()
	}
}

// compact drops the places of dead records; the order of what is left is the same, since
// (end, seq) orders every place apart.
func (e *ends) compact() {
	live := func(it item) bool { return !it.r.dead }
	e.run.compact(live)
	e.heap.compact(live)
}

func (it item) less(than item) bool {
	return it.end < than.end || it.end == than.end && it.seq < than.seq
}

// endHeap is a binary heap of items, earliest first.
type endHeap []item

func (h *endHeap) push(it item) {
	*h = append(*h, it)
	h.up(len(*h) - 1)
}

func (h endHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (h endHeap) down(i int) {
	for n := len(h); ; {
		l, m := 2*i+1, i
		if l >= n {
			return
		}
		if h[l].less(h[m]) {
			m = l
		}
		if r := l + 1; r < n && h[r].less(h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *endHeap) pop() item {
	old := *h
	top := old[0]
	n := len(old) - 1
	old[0] = old[n]
	old[n] = item{}
	*h = old[:n]
	h.down(0)
	switch {
	case n == 0:
		*h = nil // an emptied account keeps no array
	case cap(old) > 256 && n < cap(old)/4:
		*h = append(make(endHeap, 0, cap(old)/2), (*h)...)
	}
	return top
}

// compact keeps the items keep accepts and restores the heap.
func (h *endHeap) compact(keep func(item) bool) {
	kept := (*h)[:0]
	for _, it := range *h {
		if keep(it) {
			kept = append(kept, it)
		}
	}
	clear((*h)[len(kept):])
	*h = kept
	for i := len(kept)/2 - 1; i >= 0; i-- {
		kept.down(i)
	}
	if len(kept) == 0 {
		*h = nil
	}
}

// ring is a queue: a circular buffer whose length is a power of two, or nil when empty.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (q *ring[T]) push(v T) {
	if q.n == len(q.buf) {
		q.resize(max(16, 2*len(q.buf)))
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

// peek is the first value; last is the last. Callers check n > 0.
func (q *ring[T]) peek() T { return q.buf[q.head] }
func (q *ring[T]) last() T { return q.buf[(q.head+q.n-1)&(len(q.buf)-1)] }

// pop removes the first value. Callers check n > 0.
func (q *ring[T]) pop() T {
	v := q.buf[q.head]
	var zero T
	q.buf[q.head] = zero
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	switch {
	case q.n == 0:
		q.buf, q.head = nil, 0
	case len(q.buf) > 256 && q.n < len(q.buf)/4:
		q.resize(len(q.buf) / 2)
	}
	return v
}

// resize moves the queue, in order, to a buffer of size (a power of two, at least q.n).
func (q *ring[T]) resize(size int) {
	buf := make([]T, size)
	for i := range q.n {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}

// compact keeps the values keep accepts, in order.
func (q *ring[T]) compact(keep func(T) bool) {
	buf := make([]T, len(q.buf))
	n := 0
	for i := range q.n {
		if v := q.buf[(q.head+i)&(len(q.buf)-1)]; keep(v) {
			buf[n] = v
			n++
		}
	}
	q.buf, q.head, q.n = buf, 0, n
	if n == 0 {
		q.buf = nil
	}
}

// Get returns a copy of an account's quote, while it is held whole (until Grace after it
// expires).
func (s *Store) Get(account, id string) (Quote, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.heldRecord(account, id); r != nil {
		return r.quote(account), true
	}
	return Quote{}, false
}

// heldRecord finds an account's held quote, or nil. Callers hold s.mu.
func (s *Store) heldRecord(account, id string) *record {
	if a := s.touch(account); a != nil {
		if r := a.known[id]; r != nil && r.held != nil {
			return r
		}
	}
	return nil
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
	r := a.known[id]
	switch {
	case r == nil || r.dead:
		return Quote{}, false
	case r.held != nil:
		return r.quote(account), true
	}
	return Quote{ID: id, Account: account, Model: r.model, ExpiresAt: r.expires, digest: r.digest}, true
}

// Use marks a quote as spent on a job. It reports false, and the job that used it, when the
// quote was already used.
func (s *Store) Use(account, id, job string) (usedBy string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.heldRecord(account, id)
	if r == nil {
		return "", false
	}
	if r.held.usedBy != "" {
		return r.held.usedBy, false
	}
	r.held.usedBy = job
	return job, true
}

// Release makes a quote usable again after the generation it was marked for did not happen.
func (s *Store) Release(account, id, job string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.heldRecord(account, id); r != nil && r.held.usedBy == job {
		r.held.usedBy = ""
	}
}

// Len counts the quotes held whole, markers aside.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id := range s.accounts {
		if a := s.touch(id); a != nil {
			n += a.held
		}
	}
	return n
}

// Bytes is what the quotes held and the markers count against the memory budget, as of now.
func (s *Store) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for id := range s.accounts {
		if a := s.touch(id); a != nil {
			n += a.bytes + int64(a.markers)*markerOverhead
		}
	}
	return n
}
