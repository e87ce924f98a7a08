package sim

import (
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// A world counts its changes so watchers (the dashboard's event stream) can tell when to look
// again, and at what: every job created, started, ended or dropped, journal entry, clock move,
// scenario, fault or credit change marks the parts it touched and wakes them. Watchers read
// those parts afresh; the marks only say which changed. Nothing runs per world: a change costs
// a few atomic operations and, while someone watches, the close of one channel.

// Part is a set of the parts of a world's state a watcher may show.
type Part uint8

// The parts of a world's state, as watchers see them.
const (
	PartJobs     Part = 1 << iota // jobs created, moving on, ended or dropped
	PartJournal                   // the request journal
	PartClock                     // the world's time
	PartScenario                  // the scenario, faults and rate limits
	PartAccounts                  // credit balances
	PartWebhooks                  // webhook configuration and deliveries
	partEnd

	// PartAll is every part: a change whose reach is not known.
	PartAll = partEnd - 1
)

// partNames are the parts as watchers name them, bit by bit.
var partNames = [...]string{"jobs", "journal", "clock", "scenario", "accounts", "webhooks"}

// Names lists the parts in the set, in a fixed order.
func (p Part) Names() []string {
	out := []string{}
	for i, name := range partNames {
		if p&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}

// Marks holds, per part, the world's change count at that part's latest change. A watcher
// compares the marks it acted on with the current ones to learn which parts changed.
type Marks [len(partNames)]uint64

// Since is the set of parts whose marks differ from earlier's.
func (m Marks) Since(earlier Marks) Part {
	var p Part
	for i := range m {
		if m[i] != earlier[i] {
			p |= 1 << i
		}
	}
	return p
}

// Changed records that parts of the world's state changed and wakes every watcher. A watcher
// woken before a mark is stored is woken again after, since fire follows the stores.
func (w *World) Changed(parts Part) {
	v := w.version.Add(1)
	for i := range w.marks {
		if parts&(1<<i) != 0 {
			w.marks[i].Store(v)
		}
	}
	w.changed.fire()
}

// Changes returns the world's change marks and a channel closed at its next change. A watcher
// compares the marks with the last it acted on, then waits on the channel.
func (w *World) Changes() (Marks, <-chan struct{}) {
	ch := w.changed.next()
	var m Marks
	for i := range m {
		m[i] = w.marks[i].Load()
	}
	return m, ch
}

// Version is the world's change count.
func (w *World) Version() uint64 { return w.version.Load() }

// NextDue is the earliest job transition due in the world: the job, when, and the status it
// leaves; ok is false when no job is queued or running.
func (w *World) NextDue() (jobID string, at time.Time, from jobs.Status, ok bool) {
	return w.jobs.Next()
}

// ListAllJobs returns the jobs of every account, newest first, that pass the filter, and how
// many match.
func (w *World) ListAllJobs(f jobs.Filter, offset, limit int) ([]jobs.View, int) {
	return w.jobs.ListAll(f, offset, limit)
}
