// Package idempotency remembers which job each Idempotency-Key created, per account, so that a
// retried generation returns the same job instead of creating and paying for a second one.
//
// Only requests that created a job are remembered. A request that failed (no credits, expired
// quote) leaves nothing behind, so the client may fix the cause and retry with the same key.
package idempotency

import (
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
)

// Remember is how long, in emulator time, a key keeps its job.
const Remember = 24 * time.Hour

// DefaultLimit is how many finished keys a store keeps unless told otherwise: one per job a
// tenant retains, since a key whose job is gone can only answer that the job is gone.
const DefaultLimit = 100_000

// ErrReused is returned when a key comes back with a different request.
var ErrReused = errors.New("idempotency key reused with a different request")

// Entry is one key's record: in flight until done is closed, then JobID names the job, or is
// empty when the first request failed. It keeps a digest of the request, not the request.
type Entry struct {
	digest [sha256.Size]byte
	done   chan struct{}
	JobID  string
}

// Done is closed once the request that holds the key has finished.
func (e *Entry) Done() <-chan struct{} { return e.done }

type key struct{ account, key string }

// finished is a key in the order keys finished, which is also the order they are forgotten.
type finished struct {
	key   key
	entry *Entry
	until time.Time
}

// Store holds the keys, at most limit finished ones: past it, or past Remember, the oldest go
// first. Forgetting needs no timer: finished keys are kept in the order they finished. It is
// safe for concurrent use.
type Store struct {
	clock *clock.Clock
	limit int

	mu      sync.Mutex
	entries map[key]*Entry
	order   []finished // oldest first from head
	head    int
	bytes   int64 // the entries' sizes (see entrySize)
}

// entryOverhead is what a key costs beyond its text: its entry, the entry's channel, its map
// slot and its place in the order.
const entryOverhead = 320

// entrySize is what a key counts against the memory budget.
func entrySize(k key) int64 { return int64(entryOverhead + len(k.account) + len(k.key)) }

// Bytes is what the keys held count against the memory budget.
func (s *Store) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	return s.bytes
}

// NewStore returns an empty store on a clock keeping at most limit finished keys (≤0: the
// default).
func NewStore(c *clock.Clock, limit int) *Store {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Store{clock: c, limit: limit, entries: map[key]*Entry{}}
}

// Begin looks a key up. With leader true the caller owns the key and must call Finish or Abort.
// Otherwise the entry belongs to an earlier request: wait on Done, then replay its JobID (or,
// when that is empty, call Begin again). A different fingerprint gives ErrReused.
func (s *Store) Begin(account, idemKey string, fingerprint []byte) (e *Entry, leader bool, err error) {
	digest := sha256.Sum256(fingerprint)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	k := key{account, idemKey}
	if e, ok := s.entries[k]; ok {
		if e.digest != digest {
			return nil, false, ErrReused
		}
		return e, false, nil
	}
	e = &Entry{digest: digest, done: make(chan struct{})}
	s.entries[k] = e
	s.bytes += entrySize(k)
	return e, true, nil
}

// Finish records the job the key created and remembers it for 24 hours of emulator time, or
// until the store's limit makes it the oldest to go.
func (s *Store) Finish(account, idemKey string, e *Entry, jobID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.JobID = jobID
	close(e.done)
	s.order = append(s.order, finished{key{account, idemKey}, e, s.clock.Now().Add(Remember)})
	s.pruneLocked()
}

// pruneLocked forgets finished keys past Remember or past the limit, oldest first. Callers
// hold s.mu.
func (s *Store) pruneLocked() {
	now := s.clock.Now()
	for s.head < len(s.order) {
		f := s.order[s.head]
		if len(s.order)-s.head <= s.limit && now.Before(f.until) {
			break
		}
		s.forgetLocked(f.key, f.entry)
		s.order[s.head] = finished{}
		s.head++
	}
	if s.head > 64 && s.head >= len(s.order)/2 {
		s.order = append([]finished(nil), s.order[s.head:]...)
		s.head = 0
	}
}

// Abort forgets a key whose request failed, waking anyone waiting on it.
func (s *Store) Abort(account, idemKey string, e *Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(key{account, idemKey}, e)
	close(e.done)
}

// forgetLocked drops key k unless a later request has taken it since e. Callers hold s.mu.
func (s *Store) forgetLocked(k key, e *Entry) {
	if s.entries[k] == e {
		delete(s.entries, k)
		s.bytes -= entrySize(k)
	}
}

// Len counts the keys held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	return len(s.entries)
}
