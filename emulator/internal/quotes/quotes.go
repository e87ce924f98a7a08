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

// Store holds quotes. It is safe for concurrent use.
type Store struct {
	clock  *clock.Clock
	mu     sync.Mutex
	quotes map[key]*Quote
}

// NewStore returns an empty store on a clock.
func NewStore(c *clock.Clock) *Store {
	return &Store{clock: c, quotes: map[key]*Quote{}}
}

// Add stores a quote and schedules its removal.
func (s *Store) Add(q Quote) {
	s.mu.Lock()
	k := key{q.Account, q.ID}
	s.quotes[k] = &q
	s.mu.Unlock()
	s.clock.AfterFunc(q.ExpiresAt.Add(Forget), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.quotes, k)
	})
}

// Get returns a copy of an account's quote.
func (s *Store) Get(account, id string) (Quote, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.quotes[key{account, id}]
	if !ok {
		return Quote{}, false
	}
	return *q, true
}

// Use marks a quote as spent on a job. It reports false, and the job that used it, when the
// quote was already used.
func (s *Store) Use(account, id, job string) (usedBy string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, found := s.quotes[key{account, id}]
	if !found {
		return "", false
	}
	if q.UsedBy != "" {
		return q.UsedBy, false
	}
	q.UsedBy = job
	return job, true
}

// Release makes a quote usable again after the generation it was marked for did not happen.
func (s *Store) Release(account, id, job string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.quotes[key{account, id}]; ok && q.UsedBy == job {
		q.UsedBy = ""
	}
}

// Len counts the quotes held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.quotes)
}
