package sim

import (
	"context"
	"errors"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// SkipWall is a request's real arrival time while the clock skips, for the journal, else zero:
// on a skipping clock the time between two polls is whatever the first one jumped, so the
// report spaces polls in real time instead.
func (w *World) SkipWall(arrived time.Time) time.Time {
	if w.clock.Mode() != clock.Skip {
		return time.Time{}
	}
	return arrived
}

// skipAhead moves a skipping world's clock to the job's next transitions, one after another,
// so a request that waits on the job sees it move on at once: at most steps of them (0: as many
// as come), never past limit, and no further once the job has ended. Everything else that
// falls due on the way happens too, in order (other jobs, quote, output and key expiry), as if
// the control API had advanced the clock; ctx bounds how long each jump waits for the webhook
// deliveries it made due (clock.NoWait: not at all, they go out after it). It does nothing
// unless the clock skips, or when the job is not the account's (an empty account matches any)
// or has ended.
func (w *World) skipAhead(ctx context.Context, account, id string, steps int, limit time.Time) {
	for n := 0; steps <= 0 || n < steps; {
		if w.clock.Mode() != clock.Skip {
			return
		}
		at, ok := w.jobs.NextOf(account, id)
		if !ok {
			return
		}
		if ready, preparing := w.prepared(account, id); preparing && ready.Before(at) {
			at = ready // the evolution mode's status is a step of its own
		}
		if limit.Before(at) {
			at = limit
		}
		if now := w.clock.Now(); at.Before(now) {
			at = now // due already, and not yet fired: a still clock fires it when moved
		}
		err := w.clock.SetContext(ctx, at)
		if errors.Is(err, clock.ErrBackwards) {
			continue // another request moved the clock past at meanwhile: look again
		}
		if err != nil {
			return
		}
		w.Changed(PartClock)
		if !at.Before(limit) {
			return
		}
		n++
	}
}

// settle is a waited-on job once a skipping clock has moved to its end, or to the wait's
// bound: on a skipping clock nothing is left to wait for. The jump does not wait for the
// webhook deliveries it made due, so a receiver cannot hold the wait's answer: they go out
// after it, in order. On other clocks it is view.
func (w *World) settle(view jobs.View) jobs.View {
	if view.Status.Terminal() || w.clock.Mode() != clock.Skip {
		return view
	}
	w.skipAhead(clock.NoWait(), "", view.ID, 0, w.clock.Now().Add(w.cfg.MaxWait))
	if v, ok := w.jobs.Get("", view.ID); ok {
		return v
	}
	return view
}

// Blocks reports whether a wait on the job would block: it has not ended and the clock does
// not skip. Only such a wait is worth the transport's parking.
func (w *World) Blocks(view jobs.View) bool {
	return !view.Status.Terminal() && w.clock.Mode() != clock.Skip
}
