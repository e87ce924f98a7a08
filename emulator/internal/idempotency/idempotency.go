// Package idempotency remembers which job each Idempotency-Key created, per account, so that a
// retried generation returns the same job instead of creating and paying for a second one.
//
// Only requests that created a job are remembered. A request that failed (no credits, expired
// quote) leaves nothing behind, so the client may fix the cause and retry with the same key.
package idempotency

import (
	"bytes"
	"errors"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
)

// Remember is how long, in emulator time, a key keeps its job.
const Remember = 24 * time.Hour

// ErrReused is returned when a key comes back with a different request.
var ErrReused = errors.New("idempotency key reused with a different request")

// Entry is one key's record: in flight until done is closed, then JobID names the job, or is
// empty when the first request failed.
type Entry struct {
	fingerprint []byte
	done        chan struct{}
	JobID       string
}

// Done is closed once the request that holds the key has finished.
func (e *Entry) Done() <-chan struct{} { return e.done }

type key struct{ account, key string }

// Store holds the keys. It is safe for concurrent use.
type Store struct {
	clock   *clock.Clock
	mu      sync.Mutex
	entries map[key]*Entry
}

// NewStore returns an empty store on a clock.
func NewStore(c *clock.Clock) *Store {
	return &Store{clock: c, entries: map[key]*Entry{}}
}

// Begin looks a key up. With leader true the caller owns the key and must call Finish or Abort.
// Otherwise the entry belongs to an earlier request: wait on Done, then replay its JobID (or,
// when that is empty, call Begin again). A different fingerprint gives ErrReused.
func (s *Store) Begin(account, idemKey string, fingerprint []byte) (e *Entry, leader bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{account, idemKey}
	if e, ok := s.entries[k]; ok {
		if !bytes.Equal(e.fingerprint, fingerprint) {
			return nil, false, ErrReused
		}
		return e, false, nil
	}
	e = &Entry{fingerprint: fingerprint, done: make(chan struct{})}
	s.entries[k] = e
	return e, true, nil
}

// Finish records the job the key created and remembers it for 24 hours of emulator time.
func (s *Store) Finish(account, idemKey string, e *Entry, jobID string) {
	s.mu.Lock()
	e.JobID = jobID
	close(e.done)
	s.mu.Unlock()
	k := key{account, idemKey}
	s.clock.AfterFunc(s.clock.Now().Add(Remember), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.entries[k] == e {
			delete(s.entries, k)
		}
	})
}

// Abort forgets a key whose request failed, waking anyone waiting on it.
func (s *Store) Abort(account, idemKey string, e *Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries[key{account, idemKey}] == e {
		delete(s.entries, key{account, idemKey})
	}
	close(e.done)
}

// Len counts the keys held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
