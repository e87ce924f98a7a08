package emulator

import (
	"errors"
	"io"
	"sync"

	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// uploadsInFlight is how many whole snapshot bodies of the route's bound may be held at once,
// together: a snapshot's body and the document decoded from it cost about twice its size
// until it is restored, so 16 uploads of 64 MiB at once would hold gigabytes.
const uploadsInFlight = 2

// uploadCost is what one byte of a snapshot body costs the heap until it is restored: its
// read buffer, grown by doubling, and the document decoded from it. It is what the memory
// budget counts for an upload.
const uploadCost = 4

// uploadStep is how much more a body of unannounced length reserves each time it outgrows
// what it holds.
const uploadStep = 1 << 20

// errUploadsFull is a body refused because the uploads in flight hold all they may.
var errUploadsFull = errors.New("snapshot uploads in flight hold all they may")

// uploadGate bounds the bytes of snapshot bodies being read and restored, across uploads, and
// counts them against the memory budget while they are held.
type uploadGate struct {
	mu     sync.Mutex
	held   int64
	limit  int64
	budget interface { // the tenants' memory budget
		Admit(n int64) bool
		Add(n int64)
	}
}

// take reserves n bytes, or reports that they do not fit the gate or the budget.
func (g *uploadGate) take(n int64) bool {
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
func (g *uploadGate) give(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held -= n
	g.budget.Add(-n * uploadCost)
}

// full is the problem answered for an upload that does not fit.
func (g *uploadGate) full() error {
	return &problem.Error{Code: problem.MemoryBudgetExhausted, RetryAfter: 1,
		Detail: "snapshot uploads in flight hold all the memory they may (the memory budget, and at most twice the route's body bound together); send it again when one has finished"}
}

// reservingReader reads a body while reserving its bytes from a gate: the announced length at
// the first read, then more as an unannounced body grows.
type reservingReader struct {
	r         io.Reader
	g         *uploadGate
	announced int64 // -1 when unknown
	held      int64
	read      int64
}

// reserve takes the announced length from the gate, once, before anything is read or set
// aside for the body: a body that does not fit is refused before it costs any memory.
func (rr *reservingReader) reserve() bool {
	if rr.held == 0 && rr.announced > 0 {
		if !rr.g.take(rr.announced) {
			return false
		}
		rr.held = rr.announced
	}
	return true
}

// Read reserves room for what it may read, then reads.
func (rr *reservingReader) Read(p []byte) (int, error) {
	if !rr.reserve() {
		return 0, errUploadsFull
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
				return 0, errUploadsFull
			}
			rr.held += need
		}
	}
	n, err := rr.r.Read(p)
	rr.read += int64(n)
	return n, err
}

// release gives back everything the body reserved.
func (rr *reservingReader) release() {
	if rr.held > 0 {
		rr.g.give(rr.held)
		rr.held = 0
	}
}
