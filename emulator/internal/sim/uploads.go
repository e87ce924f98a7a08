package sim

import (
	"errors"
	"io"
	"sync"

	"github.com/mediagen/mediagen-emulator/emulator/internal/budget"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// UploadsInFlight is how many whole snapshot bodies of the route's bound may be held at once,
// together: a snapshot's body and the document decoded from it cost about twice its size
// until it is restored, so 16 uploads of 64 MiB at once would hold gigabytes.
const UploadsInFlight = 2

// uploadCost is what one byte of a snapshot body costs the heap until it is restored: its
// read buffer, grown by doubling, and the document decoded from it. It is what the memory
// budget counts for an upload.
const uploadCost = 4

// uploadStep is how much more a body of unannounced length reserves each time it outgrows
// what it holds.
const uploadStep = 1 << 20

// ErrUploadsFull is a body refused because the uploads in flight hold all they may.
var ErrUploadsFull = errors.New("snapshot uploads in flight hold all they may")

// UploadGate bounds the bytes of snapshot bodies being read and restored, across uploads and
// tenants, and counts them against the memory budget while they are held.
type UploadGate struct {
	mu     sync.Mutex
	held   int64
	limit  int64
	budget *budget.Budget
}

// Held is how many bytes of bodies the gate holds now.
func (g *UploadGate) Held() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// take reserves n bytes, or reports that they do not fit the gate or the budget.
func (g *UploadGate) take(n int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held+n > g.limit || !g.budget.Admit(n*uploadCost) {
		return false
	}
	g.held += n
	g.budget.Add(n * uploadCost)
	return true
}

// give lets n reserved bytes go.
func (g *UploadGate) give(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held -= n
	g.budget.Add(-n * uploadCost)
}

// Full is the problem answered for an upload that does not fit.
func (g *UploadGate) Full() error {
	return &problem.Error{Code: problem.MemoryBudgetExhausted, RetryAfter: 1,
		Detail: "the bodies being uploaded (snapshots and media uploads) hold all the memory they may (the memory budget, and at most twice the route's body bound together); send it again when one has finished"}
}

// Reader reads a body of an announced length (-1 when unknown) through the gate, reserving its
// bytes as it goes; Release gives them back.
func (g *UploadGate) Reader(r io.Reader, announced int64) *ReservingReader {
	return &ReservingReader{r: r, g: g, announced: announced}
}

// ReservingReader reads a body while reserving its bytes from a gate: the announced length at
// the first read, then more as an unannounced body grows.
type ReservingReader struct {
	r         io.Reader
	g         *UploadGate
	announced int64 // -1 when unknown
	held      int64
	read      int64
}

// Reserve takes the announced length from the gate, once, before anything is read or set
// aside for the body: a body that does not fit is refused before it costs any memory.
func (rr *ReservingReader) Reserve() bool {
	if rr.held == 0 && rr.announced > 0 {
		if !rr.g.take(rr.announced) {
			return false
		}
		rr.held = rr.announced
	}
	return true
}

// Read reserves room for what it may read, then reads.
func (rr *ReservingReader) Read(p []byte) (int, error) {
	if !rr.Reserve() {
		return 0, ErrUploadsFull
	}
	if rr.read+int64(len(p)) > rr.held && len(p) > 0 {
		switch {
		case rr.announced > 0 && rr.read < rr.held:
			// An announced body fits what it holds: read no more than that at once.
			p = p[:rr.held-rr.read]
		case rr.announced > 0:
			// The announced body has been read; one byte more finds its end.
			p = p[:1]
		default:
			need := max(uploadStep, rr.read+int64(len(p))-rr.held)
			if !rr.g.take(need) {
				return 0, ErrUploadsFull
			}
			rr.held += need
		}
	}
	n, err := rr.r.Read(p)
	rr.read += int64(n)
	return n, err
}

// Release gives back everything the body reserved.
func (rr *ReservingReader) Release() {
	if rr.held > 0 {
		rr.g.give(rr.held)
		rr.held = 0
	}
}
