package sim

import (
	"context"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evolve"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// generated makes one job of acct_a in w.
func generated(t *testing.T, w *World) jobs.View {
	t.Helper()
	q, err := w.Quote("acct_a", "test/pixel", fox(1))
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: "k", Model: "test/pixel",
		QuoteID: q.ID, Input: fox(1)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Every way of reading a job moves a skipping clock the same way, in the core: a poll by one
// transition, a wait to the end; the control API's look moves nothing; on the manual and real
// clocks nothing moves and a wait blocks.
func TestTheCoreStepsTheSkipClock(t *testing.T) {
	for _, mode := range []clock.Mode{clock.Skip, clock.Manual, clock.Real} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newTestWorld(t)
			w.SetClockMode(mode)
			v := generated(t, w)
			if got, want := w.Blocks(v), mode != clock.Skip; got != want {
				t.Errorf("Blocks = %v, want %v", got, want)
			}
			before := w.Now()
			if _, err := w.JobAny(v.ID); err != nil {
				t.Fatal(err)
			}
			if mode != clock.Real && !w.Now().Equal(before) {
				t.Fatalf("JobAny moved the clock from %s to %s", before, w.Now())
			}
			polled, err := w.Job("acct_a", v.ID)
			if err != nil {
				t.Fatal(err)
			}
			if mode != clock.Skip {
				// Real time may have started the job meanwhile; a still clock has not.
				if mode == clock.Manual && polled.Status != jobs.Queued {
					t.Fatalf("a poll on the %s clock found %s, want queued", mode, polled.Status)
				}
				return
			}
			if polled.Status != jobs.Running || !w.Now().After(before) {
				t.Fatalf("a poll found %s at %s (from %s), want running after one step", polled.Status, w.Now(), before)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if got := w.Wait(ctx, polled, nil); got.Status != jobs.Succeeded {
				t.Fatalf("a wait on the skip clock answered %s, want succeeded at once", got.Status)
			}
			if w.Waiting() != 0 {
				t.Errorf("waiting = %d after the wait", w.Waiting())
			}
		})
	}
}

// A parked wait on the skip clock is answered at once, with the job at its end.
func TestWaitThenSkipsToTheEnd(t *testing.T) {
	w := newTestWorld(t)
	w.SetClockMode(clock.Skip)
	v := generated(t, w)
	got := make(chan jobs.View, 1)
	w.WaitThen(v, func(v jobs.View) { got <- v })
	if v := <-got; v.Status != jobs.Succeeded {
		t.Fatalf("WaitThen answered %s, want succeeded", v.Status)
	}
}

// The evolution mode's status is shown to /v1 clients alone: the control API, the dashboard
// and deliveries show the job's documented status.
func TestPresentJobShowsPreparingToClientsOnly(t *testing.T) {
	w := newTestWorld(t)
	sc, err := scenario.Parse("evolving", []byte("name: evolving\nevolution:\n  status: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	w.UseScenario(sc)
	v := generated(t, w)
	for v.Status != jobs.Running {
		mustAdvance(t, w, 10*time.Millisecond)
		if v, err = w.JobAny(v.ID); err != nil {
			t.Fatal(err)
		}
	}
	client, documented := w.PresentJob(v, "http://x", ToClient), w.PresentJob(v, "http://x", Documented)
	if client.Status != evolve.Status || client.StartedAt != nil || client.Progress != 0 {
		t.Errorf("a client sees %s (started %v, progress %v), want %s, not started", client.Status, client.StartedAt, client.Progress, evolve.Status)
	}
	if documented.Status != string(jobs.Running) || documented.StartedAt == nil {
		t.Errorf("the control API sees %s (started %v), want running", documented.Status, documented.StartedAt)
	}
	if c := w.PresentControlJob(v, "http://x"); c.Status != string(jobs.Running) || c.Account != "acct_a" {
		t.Errorf("the control view is %s of %q, want running of acct_a", c.Status, c.Account)
	}
}
