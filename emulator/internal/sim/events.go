package sim

import (
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// A world counts its changes so watchers (the dashboard's event stream) can tell when to look
// again: every job created, started, ended or dropped, journal entry, clock move, scenario,
// fault or credit change bumps the count and wakes them. Watchers read the state afresh; the
// count only says that, and roughly how much, something changed. Nothing runs per world: a
// change costs an atomic add and, while someone watches, the close of one channel.

// Changed records that the world's state changed and wakes every watcher.
func (w *World) Changed() {
	w.version.Add(1)
	w.changed.fire()
}

// Changes returns the world's change count and a channel closed at its next change. A watcher
// compares the count with the last it acted on, then waits on the channel.
func (w *World) Changes() (uint64, <-chan struct{}) {
	ch := w.changed.next()
	return w.version.Load(), ch
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
