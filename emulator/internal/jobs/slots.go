package jobs

import (
	"math"
	"slices"
	"time"
)

// Slot puts a job under a concurrency limit: it runs only while it holds one of Limit slots
// of its Group, and jobs of a group take free slots in the order they were created. The
// job's whole course — its queue time, then its run — starts when it gets a slot; until then
// it waits in its group's line, queued, with a queue position. Its queue time limit counts
// from its creation, time in the line included, so a job that waits past it expires.
type Slot struct {
	// Group names the slots the job competes for (empty: no limit); the caller makes it
	// from the rule and the account or key it counts against.
	Group string
	// Limit is how many of the group's jobs run at once; the line's first job decides.
	Limit int
}

// MaxSlotLimit bounds a group's limit, so that finding when its next slot frees (a 429's
// Retry-After, a skipping clock's next step) walks a bounded list.
const MaxSlotLimit = 1000

// LimitError says a job was not created because its group had no free slot (TryCreate).
type LimitError struct {
	Group   string
	Limit   int
	RetryAt time.Time // when the group's first slot is planned to free
}

// Error names the group whose slots are all taken.
func (e *LimitError) Error() string { return "all slots of " + e.Group + " are taken" }

// slotGroup is one group's slots and line. It exists while it has a holder or a waiter.
type slotGroup struct {
	name       string
	holders    []*job // at most the limit, unless a restored snapshot said more
	head, tail *job   // the line, first come first
	waiting    int
	nextTicket uint64
	// gone holds the tickets of jobs that left the line out of turn (canceled, forced or
	// expired), ascending and all above the head's, so a position is a subtraction and a
	// search instead of a walk; it is renumbered away when it outgrows the line.
	gone []uint64
}

// lineState is a limited job's place: in its group's line (waiting) or holding a slot since
// admitted.
type lineState struct {
	group      *slotGroup
	waiting    bool
	ticket     uint64
	prev, next *job
	admitted   int64 // when it got its slot; its course starts there
}

// start is when the job's course starts: its creation, or when it got its slot.
func (j *job) start() int64 {
	if j.line != nil {
		return j.line.admitted
	}
	return j.createdAt
}

// waiting reports whether the job waits in a line for a slot.
func (j *job) waiting() bool { return j.line != nil && j.line.waiting }

// deadline is when a queued job's time limit ends, counted from its creation; ok is false
// when it has none.
func (j *job) deadline() (int64, bool) {
	p := j.Plan
	if p.QueueTimeout > 0 || p.Ending.Status == Expired {
		return addNanos(j.createdAt, p.QueueTimeout), true
	}
	return 0, false
}

// queuedStep is when a job whose course starts at from leaves its queue: at the end of its
// queue time, or at its deadline when that comes first (or its plan expires it there).
func queuedStep(j *job, from int64) int64 {
	at := addNanos(from, j.Plan.Queue)
	if d, ok := j.deadline(); ok && (j.Plan.Ending.Status == Expired || at >= d) {
		return d
	}
	return at
}

// expiresAt reports whether a queued job that moves on at the instant at expires there.
func (j *job) expiresAt(at int64) bool {
	d, ok := j.deadline()
	return ok && (j.Plan.Ending.Status == Expired || at >= d)
}

// runFor is how long a started job runs before it ends: its whole run, or the part before a
// planned failure.
func runFor(p Plan) time.Duration {
	if p.Ending.Status == Failed {
		return time.Duration(float64(p.Run) * math.Min(1, math.Max(0, p.Ending.At)))
	}
	return p.Run
}

// plannedEnd is when a live job that holds its course ends if nothing interrupts it.
func (j *job) plannedEnd() int64 {
	if j.status == Running {
		return j.live.At
	}
	if j.expiresAt(j.live.At) || (j.Plan.Ending.Status == Failed && j.Plan.Ending.InQueue) {
		return j.live.At
	}
	return addNanos(j.live.At, runFor(j.Plan))
}

// group returns the named group, made when first needed. Callers hold e.mu.
func (e *Engine) group(name string) *slotGroup {
	g := e.groups[name]
	if g == nil {
		if e.groups == nil {
			e.groups = map[string]*slotGroup{}
		}
		g = &slotGroup{name: name}
		e.groups[name] = g
	}
	return g
}

// enqueue puts a new limited job last in its group's line. Callers hold e.mu.
func (e *Engine) enqueue(j *job) {
	g := e.group(j.Slot.Group)
	g.nextTicket++
	j.line = &lineState{group: g, waiting: true, ticket: g.nextTicket, prev: g.tail}
	if g.tail != nil {
		g.tail.line.next = j
	} else {
		g.head = j
	}
	g.tail = j
	g.waiting++
}

// unlink takes a waiting job out of its group's line. Callers hold e.mu.
func (g *slotGroup) unlink(j *job) {
	l := j.line
	if l.prev != nil {
		l.prev.line.next = l.next
	} else {
		g.head = l.next
	}
	if l.next != nil {
		l.next.line.prev = l.prev
	} else {
		g.tail = l.prev
	}
	l.prev, l.next, l.waiting = nil, nil, false
	g.waiting--
	switch {
	case g.head == nil:
		g.gone = g.gone[:0]
	case l.ticket < g.head.line.ticket:
		// It was first: the gone tickets it stood before are no longer between anyone.
		n := 0
		for n < len(g.gone) && g.gone[n] < g.head.line.ticket {
			n++
		}
		g.gone = slices.Delete(g.gone, 0, n)
	default:
		i, _ := slices.BinarySearch(g.gone, l.ticket)
		g.gone = slices.Insert(g.gone, i, l.ticket)
		if len(g.gone) > 2*g.waiting+64 {
			g.renumber()
		}
	}
}

// renumber gives the line fresh tickets in its order, so gone can be emptied.
func (g *slotGroup) renumber() {
	var t uint64
	for j := g.head; j != nil; j = j.line.next {
		t++
		j.line.ticket = t
	}
	g.nextTicket, g.gone = t, g.gone[:0]
}

// position is a waiting job's place in its line, from 1.
func (g *slotGroup) position(j *job) int {
	h, t := g.head.line.ticket, j.line.ticket
	before, _ := slices.BinarySearch(g.gone, t)
	return int(t-h) + 1 - before
}

// full reports whether a new job of the group would have to wait.
func (g *slotGroup) full(limit int) bool { return g.head != nil || len(g.holders) >= limit }

// freeAt is when the group's first slot is planned to free: the earliest planned end among
// its holders.
func (g *slotGroup) freeAt() int64 {
	at := int64(math.MaxInt64)
	for _, h := range g.holders {
		at = min(at, h.plannedEnd())
	}
	return at
}

// admit gives free slots to the first jobs of the line, their courses starting at the
// instant at. Callers hold e.mu and call e.arm afterwards.
func (e *Engine) admit(g *slotGroup, at int64) {
	for g.head != nil && len(g.holders) < g.head.Slot.Limit {
		j := g.head
		g.unlink(j)
		j.line.admitted = at
		g.holders = append(g.holders, j)
		e.live.Remove(&j.live) // its deadline, if it waited with one
		j.live.At = queuedStep(j, at)
		e.live.Push(&j.live)
		j.notify()
		e.changed()
	}
	e.forget(g)
}

// release lets a limited job that ends go: out of the line, or its slot to the next in line,
// whose course starts at the instant at. Callers hold e.mu.
func (e *Engine) release(j *job, at int64) {
	l := j.line
	if l == nil {
		return
	}
	g := l.group
	if l.waiting {
		// The job behind it may be let in now: the line's first job decides its limit, and
		// the new first one's may be higher (a scenario changed it).
		g.unlink(j)
		e.admit(g, at)
		return
	}
	if i := slices.Index(g.holders, j); i >= 0 {
		g.holders = slices.Delete(g.holders, i, i+1)
	}
	e.admit(g, at)
}

// forget drops a group with neither holders nor line. Callers hold e.mu.
func (e *Engine) forget(g *slotGroup) {
	if g.head == nil && len(g.holders) == 0 {
		delete(e.groups, g.name)
	}
}

// place puts a new job of a limited group last in its line, gives it a slot if one is free,
// and otherwise schedules its deadline. Callers hold e.mu.
func (e *Engine) place(j *job, now int64) {
	e.enqueue(j)
	e.admit(j.line.group, now)
	if j.waiting() {
		if d, ok := j.deadline(); ok {
			j.live.At = d
			e.live.Push(&j.live)
		}
	}
}

// Busy reports whether a new job of the slot would have to wait for a free one, and when the
// group's first slot is planned to free.
func (e *Engine) Busy(s Slot) (retryAt time.Time, busy bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.busy(s)
}

func (e *Engine) busy(s Slot) (time.Time, bool) {
	g := e.groups[s.Group]
	if s.Group == "" || g == nil || !g.full(s.Limit) {
		return time.Time{}, false
	}
	return time.Unix(0, g.freeAt()).UTC(), true
}

// TryCreate is Create for a job that must not wait: when its group has no free slot it
// creates nothing and returns a *LimitError.
func (e *Engine) TryCreate(n New) (View, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if at, busy := e.busy(n.Slot); busy {
		return View{}, &LimitError{Group: n.Slot.Group, Limit: n.Slot.Limit, RetryAt: at}
	}
	return e.create(n), nil
}

// waitingNext is when a waiting job's line next moves (a slot of its group frees) or its
// deadline comes, whichever is first.
func (j *job) waitingNext() int64 {
	at := j.line.group.freeAt()
	if d, ok := j.deadline(); ok {
		at = min(at, d)
	}
	return at
}
