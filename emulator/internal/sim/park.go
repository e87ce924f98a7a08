package sim

import (
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// Waiter is a generation parked until its job ends: Wait without a goroutine of its own. Ten
// thousand clients waiting on wait=true then cost the emulator a few kilobytes each rather than
// a blocked goroutine and its stack each.
type Waiter struct {
	w    *World
	last jobs.View
	then func(jobs.View)
	once sync.Once

	mu        sync.Mutex
	cancelEnd func()
	limit     interface{ Stop() bool }
	wall      *time.Timer
}

// WaitThen calls then once, in a goroutine of its own, with the job as it stands when it turns
// terminal, when the wait limit passes (on the world's clock or in real time, whichever comes
// first), when the world is retired, or when End is called; it returns at once. A job that has
// already ended is answered at once. The waiter counts among the world's waiting generations
// until then has been called.
func (w *World) WaitThen(view jobs.View, then func(jobs.View)) *Waiter {
	wt := &Waiter{w: w, last: view, then: then}
	w.addWaiting(1)
	if view.Status.Terminal() {
		go wt.End()
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
		go wt.End()
		return wt
	}
	wt.mu.Lock()
	defer wt.mu.Unlock()
	cancel, ok := w.jobs.OnEnd(view.ID, wt.End)
	if !ok {
		go wt.End() // it ended, or went, between the view and now
		return wt
	}
	wt.cancelEnd = cancel
	wt.limit = w.clock.AfterFunc(w.clock.Now().Add(w.cfg.MaxWait), func() { go wt.End() })
	wt.wall = time.AfterFunc(w.cfg.MaxWait, wt.End)
	return wt
}

// End stops the wait now and answers with the job as it stands; later calls do nothing.
func (wt *Waiter) End() {
	wt.once.Do(func() {
		wt.mu.Lock()
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
		v := wt.last
		if now, ok := w.jobs.Get("", v.ID); ok {
			v = now
		}
		w.addWaiting(-1)
		wt.then(v)
	})
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
