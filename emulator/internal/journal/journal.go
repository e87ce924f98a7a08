// Package journal records the API requests the emulator answered, so a client's test can assert
// what its code actually sent. It keeps the most recent entries within a fixed bound.
package journal

import (
	"sync"
	"time"
)

// Entry is one answered request.
type Entry struct {
	Seq        uint64    `json:"seq"`
	Time       time.Time `json:"time"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Query      string    `json:"query"`
	Status     int       `json:"status"`
	Code       string    `json:"code,omitempty"`
	Account    string    `json:"account,omitempty"`
	Model      string    `json:"model,omitempty"`
	JobID      string    `json:"job_id,omitempty"`
	RequestID  string    `json:"request_id"`
	Idempotent string    `json:"idempotency_key,omitempty"`
	Fault      string    `json:"fault,omitempty"`
	DurationMS float64   `json:"duration_ms"`
}

// Filter selects entries; empty fields match everything.
type Filter struct {
	Method, Path, Account, Model, Code string
	Status                             int
	// Path may end in * to match a prefix.
}

// Journal is a bounded, ordered record. It is safe for concurrent use.
type Journal struct {
	mu      sync.Mutex
	entries []Entry // ring buffer
	next    int
	full    bool
	seq     uint64
}

// New returns a journal keeping at most capacity entries.
func New(capacity int) *Journal {
	return &Journal{entries: make([]Entry, capacity)}
}

// Add records an entry, dropping the oldest once full.
func (j *Journal) Add(e Entry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	e.Seq = j.seq
	j.entries[j.next] = e
	j.next++
	if j.next == len(j.entries) {
		j.next, j.full = 0, true
	}
}

// List returns the matching entries, oldest first: the window [offset, offset+limit) and the
// number of all matches.
func (j *Journal) List(f Filter, offset, limit int) ([]Entry, int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Entry
	total := 0
	j.each(func(e *Entry) {
		if !f.matches(e) {
			return
		}
		if total >= offset && len(out) < limit {
			out = append(out, *e)
		}
		total++
	})
	return out, total
}

func (j *Journal) each(fn func(*Entry)) {
	if j.full {
		for i := j.next; i < len(j.entries); i++ {
			fn(&j.entries[i])
		}
	}
	for i := 0; i < j.next; i++ {
		fn(&j.entries[i])
	}
}

// Clear forgets every entry.
func (j *Journal) Clear() {
	j.mu.Lock()
	defer j.mu.Unlock()
	clear(j.entries)
	j.next, j.full = 0, false
}

func (f Filter) matches(e *Entry) bool {
	if f.Method != "" && f.Method != e.Method {
		return false
	}
	if f.Path != "" {
		if n := len(f.Path); f.Path[n-1] == '*' {
			if len(e.Path) < n-1 || e.Path[:n-1] != f.Path[:n-1] {
				return false
			}
		} else if f.Path != e.Path {
			return false
		}
	}
	return (f.Account == "" || f.Account == e.Account) &&
		(f.Model == "" || f.Model == e.Model) &&
		(f.Code == "" || f.Code == e.Code) &&
		(f.Status == 0 || f.Status == e.Status)
}
