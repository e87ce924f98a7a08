package report

import (
	"strings"
	"sync"
	"time"
)

// What a client does outside the journal, which records /v1 requests only: downloads of
// outputs, and balance changes through the control API (a test topping an account up).
const (
	// MaxNotes bounds the notes a tenant keeps; older ones go first.
	MaxNotes = 1000
	// maxNoteText bounds each text field of a note, so a note costs at most noteBytes.
	maxNoteText = 128
	noteBytes   = 3*maxNoteText + 64
)

// NoteKind says what a note records.
type NoteKind uint8

// The kinds of note.
const (
	Download   NoteKind = iota + 1 // a GET of an output file
	CreditsSet                     // PUT /_emulator/accounts/{account}
)

// Note is one thing the client did outside the journal, on the tenant's clock.
type Note struct {
	Kind    NoteKind
	Time    time.Time
	Job     string // Download: the job whose output was fetched
	File    string // Download: the path fetched
	Status  int    // Download: the status answered (200, 206, 304, 404, 410, ...)
	Ranged  bool   // Download: a Range was asked for
	Account string // CreditsSet: the account whose balance was set
}

// Notes is a bounded record of notes, oldest first. It is safe for concurrent use.
type Notes struct {
	mu      sync.Mutex
	max     int
	ring    []Note
	head, n int
	dropped time.Time // the time of the newest note dropped to make room
}

// NewNotes returns a record keeping the latest max notes (MaxNotes when max ≤ 0).
func NewNotes(max int) *Notes {
	if max <= 0 {
		max = MaxNotes
	}
	return &Notes{max: max}
}

// Add records a note, dropping the oldest when full.
func (ns *Notes) Add(n Note) {
	n.Job, n.File, n.Account = clip(n.Job), clip(n.File), clip(n.Account)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.n == ns.max {
		ns.dropped = ns.ring[ns.head].Time
		ns.ring[ns.head] = Note{}
		ns.head = (ns.head + 1) % len(ns.ring)
		ns.n--
	}
	if ns.n == len(ns.ring) {
		ring := make([]Note, min(max(16, 2*len(ns.ring)), ns.max))
		for i := range ns.n {
			ring[i] = ns.ring[(ns.head+i)%len(ns.ring)]
		}
		ns.ring, ns.head = ring, 0
	}
	ns.ring[(ns.head+ns.n)%len(ns.ring)] = n
	ns.n++
}

// List returns the notes held, oldest first, and the time up to which some may be missing
// (zero when none was ever dropped).
func (ns *Notes) List() ([]Note, time.Time) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	out := make([]Note, ns.n)
	for i := range ns.n {
		out[i] = ns.ring[(ns.head+i)%len(ns.ring)]
	}
	return out, ns.dropped
}

// Bytes is what the notes held cost, at most, as counted against the memory budget.
func (ns *Notes) Bytes() int64 {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return int64(len(ns.ring)) * noteBytes
}

// clip cuts a note's text to maxNoteText bytes (a cut id matches nothing, which is the aim),
// copied so that the note does not keep the request it came from.
func clip(s string) string {
	return strings.Clone(s[:min(len(s), maxNoteText)])
}
