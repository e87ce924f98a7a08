package sim

import (
	"context"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// Waiter is a generation parked until its job ends: Wait without a goroutine of its own. Ten
// thousand clients waiting on wait=true then cost the emulator a few hundred bytes each here
// rather than a blocked goroutine and its stack each. It keeps the job's id, not its view: the
// answer is the job as it stands when the wait ends, or as it ended, which the job's end hands
// over.
type Waiter struct {
	w    *World
	id   string
	then func(jobs.View)

	mu        sync.Mutex
	done      bool   // then has been called, or is about to be
	cancelEnd func() // set once the job's end is to answer; withdraws that
	limit     *clock.Timer
	wall      *time.Timer
}

// WaitThen calls then once, in a goroutine of its own, with the job as it stands when it turns
// terminal, when the wait limit passes (on the world's clock or in real time, whichever comes
// first), when the world is retired, or when End is called; it returns at once. A job that has
// already ended is answered at once, and so is one on a skipping clock, which first moves to
// the job's end or the wait's bound. The waiter counts among the world's waiting generations
// until then has been called.
func (w *World) WaitThen(view jobs.View, then func(jobs.View)) *Waiter {
	wt := &Waiter{w: w, id: view.ID, then: then}
	w.addWaiting(1)
	if view = w.settle(view); view.Status.Terminal() || w.clock.Mode() == clock.Skip {
		go wt.finish(view, true)
		return wt
	}
	w.parkMu.Lock()
	if w.parked == nil {
		w.parked = map[*Waiter]struct{}{}
	}
	w.parked[wt] = struct{}{}
	retired := w.retired
	w.parkMu.Unlock()
	if retired {
		go wt.finish(view, false)
		return wt
	}
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.done {
		return wt // the world was retired meanwhile, and has answered
	}
	cancel, ok := w.jobs.OnEnd(view.ID, wt.ended)
	if !ok {
		go wt.finish(view, false) // it ended, or went, between the view and now
		return wt
	}
	wt.cancelEnd = cancel
	wt.limit = w.clock.AfterFunc(w.clock.Now().Add(w.cfg.MaxWait), func() { go wt.End() })
	wt.wall = time.AfterFunc(w.cfg.MaxWait, wt.End)
	return wt
}

// End stops the wait now and answers with the job as it stands; later calls do nothing. Where
// the job has gone meanwhile, it ended first, and its end answers with the job as it ended.
func (wt *Waiter) End() {
	wt.mu.Lock()
	if wt.done {
		wt.mu.Unlock()
		return
	}
	v, ok := wt.w.jobs.Get("", wt.id)
	if !ok {
		// Only an ended job goes, and only a waiter with the job's end (or WaitThen, with the
		// view) still to answer can find it gone.
		wt.mu.Unlock()
		return
	}
	wt.answer(v)
}

// ended answers with the job as it ended.
func (wt *Waiter) ended(v jobs.View) { wt.finish(v, true) }

// finish answers with v where exact, else with the job as it stands, or v where it has gone.
func (wt *Waiter) finish(v jobs.View, exact bool) {
	wt.mu.Lock()
	if wt.done {
		wt.mu.Unlock()
		return
	}
	if !exact {
		if now, ok := wt.w.jobs.Get("", wt.id); ok {
			v = now
		}
	}
	wt.answer(v)
}

// answer stops the wait and calls then with v. Callers hold wt.mu, which answer releases.
func (wt *Waiter) answer(v jobs.View) {
	wt.done = true
	if wt.cancelEnd != nil {
		wt.cancelEnd()
	}
	if wt.limit != nil {
		wt.limit.Stop()
	}
	if wt.wall != nil {
		wt.wall.Stop()
	}
	wt.mu.Unlock()
	w := wt.w
	w.parkMu.Lock()
	delete(w.parked, wt)
	w.parkMu.Unlock()
	w.addWaiting(-1)
	wt.then(v)
}

// endParked answers every parked generation of a world being retired.
func (w *World) endParked() {
	w.parkMu.Lock()
	w.retired = true
	all := make([]*Waiter, 0, len(w.parked))
	for wt := range w.parked {
		all = append(all, wt)
	}
	w.parkMu.Unlock()
	for _, wt := range all {
		go wt.End()
	}
}

// AwaitWaitingBelow blocks until fewer than n generations are waiting for their job, ctx ends,
// stop is closed or the world is retired. It returns the count and whether it went below n.
// Tests use it to see a wait let go without moving any clock.
func (w *World) AwaitWaitingBelow(ctx context.Context, n int64, stop <-chan struct{}) (int64, bool) {
	return w.awaitWaiting(ctx, func(cur int64) bool { return cur < n }, stop)
}
