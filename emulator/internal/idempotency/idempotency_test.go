package idempotency_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/idempotency"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func newStore() (*idempotency.Store, *clock.Clock) {
	c := clock.NewManual(t0)
	return idempotency.NewStore(c, 0), c
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestBegin(t *testing.T) {
	t.Parallel()
	type begin struct {
		account, key, fingerprint string
		wantLeader                bool
		wantErr                   error
		wantSameAs                int // index of the earlier Begin whose entry it must return, or -1
	}
	for _, tc := range []struct {
		name   string
		begins []begin
	}{
		{"first is the leader", []begin{{"a", "k", "fp1", true, nil, -1}}},
		{"same request follows", []begin{{"a", "k", "fp1", true, nil, -1}, {"a", "k", "fp1", false, nil, 0}}},
		{"many followers share one entry", []begin{
			{"a", "k", "fp1", true, nil, -1}, {"a", "k", "fp1", false, nil, 0}, {"a", "k", "fp1", false, nil, 0},
		}},
		{"different request is a reuse", []begin{{"a", "k", "fp1", true, nil, -1}, {"a", "k", "fp2", false, idempotency.ErrReused, -1}}},
		{"keys are per account", []begin{{"a", "k", "fp1", true, nil, -1}, {"b", "k", "fp2", true, nil, -1}}},
		{"different keys are independent", []begin{{"a", "k1", "fp1", true, nil, -1}, {"a", "k2", "fp1", true, nil, -1}}},
		{"empty fingerprints match", []begin{{"a", "k", "", true, nil, -1}, {"a", "k", "", false, nil, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore()
			entries := make([]*idempotency.Entry, len(tc.begins))
			for i, b := range tc.begins {
				e, leader, err := s.Begin(b.account, b.key, []byte(b.fingerprint))
				if !errors.Is(err, b.wantErr) {
					t.Fatalf("Begin %d: error %v; want %v", i, err, b.wantErr)
				}
				if err != nil {
					if e != nil || leader {
						t.Errorf("Begin %d: failed with entry %v, leader %v", i, e, leader)
					}
					continue
				}
				if leader != b.wantLeader {
					t.Errorf("Begin %d: leader %v; want %v", i, leader, b.wantLeader)
				}
				if b.wantSameAs >= 0 && e != entries[b.wantSameAs] {
					t.Errorf("Begin %d: a different entry than Begin %d's", i, b.wantSameAs)
				}
				if isClosed(e.Done()) {
					t.Errorf("Begin %d: Done is closed before the leader finished", i)
				}
				entries[i] = e
			}
		})
	}
}

// TestFollowerWakes: a follower waiting on Done wakes when the leader finishes (and replays its
// job) or aborts (and may lead a retry).
func TestFollowerWakes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		finish  bool
		wantJob string
	}{
		{"finish", true, "job1"},
		{"abort", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore()
			leaderEntry, leader, err := s.Begin("a", "k", []byte("fp"))
			if err != nil || !leader {
				t.Fatalf("Begin = %v, %v", leader, err)
			}
			const followers = 8
			got := make(chan string, followers)
			var ready sync.WaitGroup
			for range followers {
				ready.Add(1)
				go func() {
					e, leader, err := s.Begin("a", "k", []byte("fp"))
					ready.Done()
					if err != nil || leader {
						got <- "unexpected leader or error"
						return
					}
					<-e.Done()
					got <- e.JobID
				}()
			}
			ready.Wait()
			select {
			case j := <-got:
				t.Fatalf("a follower returned %q before the leader was done", j)
			default:
			}
			if tc.finish {
				s.Finish("a", "k", leaderEntry, "job1")
			} else {
				s.Abort("a", "k", leaderEntry)
			}
			for range followers {
				if j := <-got; j != tc.wantJob {
					t.Errorf("follower saw job %q; want %q", j, tc.wantJob)
				}
			}
			e, leader, err := s.Begin("a", "k", []byte("fp"))
			switch {
			case err != nil:
				t.Fatal(err)
			case tc.finish && (leader || e.JobID != "job1" || !isClosed(e.Done())):
				t.Errorf("after Finish, Begin = leader %v, job %q; want a finished follower of job1", leader, e.JobID)
			case !tc.finish && !leader:
				t.Error("after Abort, Begin did not make a new leader")
			}
			if !tc.finish {
				// After an abort the key is free: even a different request may take it.
				s.Abort("a", "k", e)
				if _, leader, err := s.Begin("a", "k", []byte("other")); err != nil || !leader {
					t.Errorf("after Abort, a different request: leader %v, error %v", leader, err)
				}
			}
		})
	}
}

// TestAbortOfReplacedEntry: aborting an entry that is no longer the key's (an abort that comes
// late) leaves the current entry alone.
func TestAbortOfReplacedEntry(t *testing.T) {
	t.Parallel()
	s, _ := newStore()
	old, _, _ := s.Begin("a", "k", []byte("fp"))
	s.Abort("a", "k", old)
	current, leader, _ := s.Begin("a", "k", []byte("fp"))
	if !leader {
		t.Fatal("no new leader")
	}
	s.Finish("a", "k", current, "job2")
	if e, leader, err := s.Begin("a", "k", []byte("fp")); err != nil || leader || e.JobID != "job2" {
		t.Errorf("Begin = %+v, %v, %v; want job2 replayed", e, leader, err)
	}
}

// TestKeysForgotten: a finished key is remembered for 24 hours of clock time after Finish, then
// forgotten; no timer is ever left behind; an aborted key leaves nothing at all.
func TestKeysForgotten(t *testing.T) {
	t.Parallel()
	s, c := newStore()
	e, _, _ := s.Begin("a", "k1", []byte("fp"))
	if err := c.Advance(time.Hour); err != nil {
		t.Fatal(err)
	}
	s.Finish("a", "k1", e, "job1")
	finished := c.Now()
	aborted, _, _ := s.Begin("a", "k2", []byte("fp"))
	s.Abort("a", "k2", aborted)
	if s.Len() != 1 || c.Pending() != 0 {
		t.Fatalf("Len = %d, Pending = %d; want 1 and 0", s.Len(), c.Pending())
	}
	if err := c.Set(finished.Add(idempotency.Remember - time.Nanosecond)); err != nil {
		t.Fatal(err)
	}
	if e, leader, err := s.Begin("a", "k1", []byte("fp")); err != nil || leader || e.JobID != "job1" {
		t.Errorf("a moment before 24 h: Begin = %v, leader %v, %v; want job1 replayed", e, leader, err)
	}
	if _, _, err := s.Begin("a", "k1", []byte("other")); !errors.Is(err, idempotency.ErrReused) {
		t.Errorf("a moment before 24 h: a different request got %v; want ErrReused", err)
	}
	if err := c.Advance(time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 0 || c.Pending() != 0 {
		t.Errorf("after 24 h: Len = %d, Pending = %d; want 0 and 0", s.Len(), c.Pending())
	}
	if _, leader, err := s.Begin("a", "k1", []byte("other")); err != nil || !leader {
		t.Errorf("after 24 h, the key is free: leader %v, error %v", leader, err)
	}
}

// TestConcurrentBegin: of many simultaneous requests with one key, one leads and the rest
// replay its job.
func TestConcurrentBegin(t *testing.T) {
	t.Parallel()
	s, _ := newStore()
	const n = 64
	var leaders, replays sync.WaitGroup
	results := make(chan string, n)
	leaderCount := make(chan struct{}, n)
	start := make(chan struct{})
	for range n {
		leaders.Add(1)
		replays.Add(1)
		go func() {
			defer replays.Done()
			<-start
			e, leader, err := s.Begin("a", "k", []byte("fp"))
			leaders.Done()
			if err != nil {
				results <- "error: " + err.Error()
				return
			}
			if leader {
				leaderCount <- struct{}{}
				leaders.Wait() // every other request has joined as a follower
				s.Finish("a", "k", e, "the-job")
				results <- "the-job"
				return
			}
			<-e.Done()
			results <- e.JobID
		}()
	}
	close(start)
	replays.Wait()
	close(results)
	if len(leaderCount) != 1 {
		t.Errorf("%d leaders; want 1", len(leaderCount))
	}
	for r := range results {
		if r != "the-job" {
			t.Errorf("a request saw %q; want the-job", r)
		}
	}
}

// TestKeysAreBounded: past its limit a store forgets its oldest finished keys first, and never
// a key still in flight.
func TestKeysAreBounded(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(t0)
	s := idempotency.NewStore(c, 3)
	inFlight, _, _ := s.Begin("a", "busy", []byte("fp"))
	for i := range 10 {
		e, _, _ := s.Begin("a", fmt.Sprint("k", i), []byte("fp"))
		s.Finish("a", fmt.Sprint("k", i), e, fmt.Sprint("job", i))
	}
	if s.Len() != 4 {
		t.Errorf("Len = %d; want 3 finished and 1 in flight", s.Len())
	}
	for i := range 10 {
		e, leader, _ := s.Begin("a", fmt.Sprint("k", i), []byte("fp"))
		kept := i >= 7
		if kept && (leader || e.JobID != fmt.Sprint("job", i)) {
			t.Errorf("k%d: the newest keys must replay their job", i)
		}
		if !kept && !leader {
			t.Errorf("k%d: an old key past the limit must be free", i)
		}
		if !kept {
			s.Abort("a", fmt.Sprint("k", i), e)
		}
	}
	if e, leader, _ := s.Begin("a", "busy", []byte("fp")); leader || e != inFlight {
		t.Error("the key in flight was forgotten")
	}
}

// TestBytesFollowTheKeys: what the store counts against the memory budget grows with each key
// and goes back to nothing once the keys are aborted or forgotten.
func TestBytesFollowTheKeys(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := idempotency.NewStore(c, 10)
	if s.Bytes() != 0 {
		t.Fatalf("an empty store counts %d bytes", s.Bytes())
	}
	kept, _, _ := s.Begin("acct", "kept", []byte("a"))
	s.Finish("acct", "kept", kept, "job")
	one := s.Bytes()
	failed, _, _ := s.Begin("acct", "failed", []byte("b"))
	if s.Bytes() <= one {
		t.Errorf("a second key left the count at %d", s.Bytes())
	}
	s.Abort("acct", "failed", failed)
	if s.Bytes() != one {
		t.Errorf("an aborted key left %d bytes counted, want %d", s.Bytes(), one)
	}
	if err := c.Advance(idempotency.Remember + time.Second); err != nil {
		t.Fatal(err)
	}
	if s.Bytes() != 0 {
		t.Errorf("forgotten keys still count %d bytes", s.Bytes())
	}
}
