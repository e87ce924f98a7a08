// Package quotes stores price quotes per account. A quote buys one generation: marking it used
// is atomic, and expired quotes are forgotten after a grace period so memory stays bounded.
package quotes

import (
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
)

// Forget is how long after expiring a quote is still known (and answers quote_expired rather
// than quote_not_found).
const Forget = time.Hour

// Quote is a price for one model and one input, valid until ExpiresAt.
type Quote struct {
	ID        string
	Account   string
	Model     string
	Input     []byte // canonical form, see jsonvalue.Canonical
	Credits   int64
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedBy    string // the job the quote paid for, once used
}

type key struct{ account, id string }

// DefaultLimit is how many quotes a store keeps at most: about 100 MB. Quotes cost nothing to
// make, so a client in a loop could otherwise fill memory for the hour they are remembered.
const DefaultLimit = 100_000

// Store holds quotes. It is safe for concurrent use.
type Store struct {
	clock  *clock.Clock
	limit  int
	mu     sync.Mutex
	quotes map[key]*entry
	order  []key // insertion order, oldest first from head; forgotten keys are skipped
	head   int
}

type entry struct {
	quote Quote
	timer *clock.Timer
}

// NewStore returns an empty store on a clock that keeps at most limit quotes, forgetting the
// oldest first (they answer quote_not_found, as forgotten quotes do).
func NewStore(c *clock.Clock, limit int) *Store {
	return &Store{clock: c, limit: max(1, limit), quotes: map[key]*entry{}}
}

// Add stores a quote and schedules its removal.
func (s *Store) Add(q Quote) {
	k := key{q.Account, q.ID}
	e := &entry{quote: q}
	s.mu.Lock()
	s.quotes[k] = e
	s.order = append(s.order, k)
	for len(s.quotes) > s.limit {
		s.evictOldest()
	}
	s.compact()
	s.mu.Unlock()
	t := s.clock.AfterFunc(q.ExpiresAt.Add(Forget), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.quotes[k] == e {
			delete(s.quotes, k)
		}
	})
	s.mu.Lock()
	e.timer = t
	s.mu.Unlock()
}

// evictOldest forgets the oldest quote still held. Callers hold s.mu.
func (s *Store) evictOldest() {
	for s.head < len(s.order) {
		k := s.order[s.head]
		s.head++
		if e, ok := s.quotes[k]; ok {
			delete(s.quotes, k)
			if e.timer != nil {
				e.timer.Stop()
			}
			return
		}
	}
}

// compact drops the consumed front of the order once it is most of it. Callers hold s.mu.
func (s *Store) compact() {
	if s.head > 1024 && s.head > len(s.order)/2 {
		s.order = append([]key(nil), s.order[s.head:]...)
		s.head = 0
	}
	// Keys of quotes that expired on their own still sit in the order; bound them too.
	if len(s.order)-s.head > 2*s.limit+1024 {
		live := s.order[:0]
		for _, k := range s.order[s.head:] {
			if _, ok := s.quotes[k]; ok {
				live = append(live, k)
			}
		}
		s.order, s.head = live, 0
	}
}

// Get returns a copy of an account's quote.
func (s *Store) Get(account, id string) (Quote, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.quotes[key{account, id}]
	if !ok {
		return Quote{}, false
	}
	return e.quote, true
}

// Use marks a quote as spent on a job. It reports false, and the job that used it, when the
// quote was already used.
func (s *Store) Use(account, id, job string) (usedBy string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, found := s.quotes[key{account, id}]
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
	if e, ok := s.quotes[key{account, id}]; ok && e.quote.UsedBy == job {
		e.quote.UsedBy = ""
	}
}

// Len counts the quotes held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.quotes)
}
