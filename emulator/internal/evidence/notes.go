package evidence

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
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

// The kinds of note as a snapshot names them.
var kindNames = map[NoteKind]string{Download: "download", CreditsSet: "credits_set"}

// Export lists the notes held, oldest first, for a snapshot.
func (ns *Notes) Export() api.SnapshotNotes {
	notes, dropped := ns.List()
	out := api.SnapshotNotes{Entries: make([]api.SnapshotNote, len(notes))}
	if !dropped.IsZero() {
		out.Dropped = stamp(dropped)
	}
	for i, n := range notes {
		out.Entries[i] = api.SnapshotNote{Kind: kindNames[n.Kind], Time: stamp(n.Time), Job: n.Job, File: n.File, Status: n.Status,
			Ranged: n.Ranged, Account: n.Account}
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Import puts a snapshot's notes into an empty record. Each problem is reported with a JSON
// Pointer relative to the notes, and that note is left out.
func (ns *Notes) Import(in api.SnapshotNotes, report func(ptr, msg string)) {
	if in.Dropped != "" {
		t, err := time.Parse(time.RFC3339Nano, in.Dropped)
		if err != nil {
			report("/dropped", "not an RFC 3339 time")
		}
		ns.mu.Lock()
		ns.dropped = t
		ns.mu.Unlock()
	}
	if len(in.Entries) > ns.max {
		report("/entries", "holds "+strconv.Itoa(len(in.Entries))+" notes, more than the bound of "+strconv.Itoa(ns.max))
		return
	}
	for i, e := range in.Entries {
		at := "/entries/" + strconv.Itoa(i)
		t, err := time.Parse(time.RFC3339Nano, e.Time)
		kind := NoteKind(0)
		for k, name := range kindNames {
			if name == e.Kind {
				kind = k
			}
		}
		switch {
		case kind == 0:
			report(at+"/kind", "download or credits_set")
		case err != nil:
			report(at+"/time", "not an RFC 3339 time")
		case len(e.Job) > maxNoteText || len(e.File) > maxNoteText || len(e.Account) > maxNoteText:
			report(at, "a note's job, file and account are at most "+strconv.Itoa(maxNoteText)+" bytes each")
		case e.Status < 0 || e.Status > 999:
			report(at+"/status", "an HTTP status")
		default:
			ns.Add(Note{Kind: kind, Time: t, Job: e.Job, File: e.File, Status: e.Status, Ranged: e.Ranged, Account: e.Account})
		}
	}
}
