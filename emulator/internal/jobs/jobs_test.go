package jobs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

const (
	account   = "acct_a"
	other     = "acct_b"
	start     = 1000
	credits   = 40
	retention = 24 * time.Hour
)

// world is an engine on a manual clock with a ledger of two accounts.
type world struct {
	t      *testing.T
	clock  *clock.Clock
	ledger *ledger.Ledger
	engine *jobs.Engine
}

func newWorld(t *testing.T, retention time.Duration) *world {
	t.Helper()
	c := clock.NewManual(t0)
	l := ledger.New(map[string]int64{account: start, other: start})
	return &world{t: t, clock: c, ledger: l, engine: jobs.NewEngine(c, l, jobs.Options{Retention: retention})}
}

// create holds the job's credits, as the generate handler does, then creates it.
func (w *world) create(n jobs.New) jobs.View {
	w.t.Helper()
	if n.Account == "" {
		n.Account = account
	}
	if n.Model == "" {
		n.Model = "m/one"
	}
	if n.Credits == 0 {
		n.Credits = credits
	}
	if n.Input == nil {
		n.Input = json.RawMessage(`{"prompt":"a red fox"}`)
	}
	if n.Outputs == nil {
		n.Outputs = described(n.ID)
	}
	if err := w.ledger.Hold(n.Account, n.Credits); err != nil {
		w.t.Fatalf("Hold: %v", err)
	}
	return w.engine.Create(n)
}

func (w *world) advance(d time.Duration) {
	w.t.Helper()
	if err := w.clock.Advance(d); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) setTime(at time.Time) {
	w.t.Helper()
	if err := w.clock.Set(at); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) get(id string) jobs.View {
	w.t.Helper()
	v, ok := w.engine.Get(account, id)
	if !ok {
		w.t.Fatalf("job %s not found", id)
	}
	return v
}

func (w *world) balance(acct string) ledger.Balance {
	w.t.Helper()
	b, _ := w.ledger.Balance(acct)
	return b
}

// described is the one output every test job is created with.
func described(id string) []jobs.Output {
	return []jobs.Output{{
		Output: api.Output{Type: "image", URL: "http://emulator/files/" + id + "/0.png",
			ContentType: "image/png", Width: 1024, Height: 768, SizeBytes: 12345},
		Path: "/files/" + id + "/0.png", Format: "png",
	}}
}

// wantProgress is what a job planned to start at started and run for run reports at now.
func wantProgress(now, started time.Time, run time.Duration) float64 {
	p := float64(now.Sub(started)) / float64(run)
	return math.Round(math.Min(0.99, math.Max(0, p))*100) / 100
}

// TestSucceeded: a job queues, runs and succeeds at exactly the planned instants, whatever the
// steps the clock is advanced by, with progress rising while it runs and the credits moving
// from held to charged at the end.
func TestSucceeded(t *testing.T) {
	t.Parallel()
	const queue, run = 2 * time.Second, 10 * time.Second
	startedAt, finishedAt := t0.Add(queue), t0.Add(queue+run)
	for _, step := range []time.Duration{
		100 * time.Millisecond, 700 * time.Millisecond, time.Second, 3 * time.Second, time.Hour,
	} {
		t.Run(step.String(), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, retention)
			v := w.create(jobs.New{ID: "job1", QuoteID: "q1", Plan: jobs.Plan{
				Queue: queue, Run: run, QueueTimeout: 10 * time.Minute, Ending: jobs.Ending{Status: jobs.Succeeded},
			}})
			if v.Status != jobs.Queued || !v.CreatedAt.Equal(t0) || !v.StartedAt.IsZero() || !v.FinishedAt.IsZero() ||
				v.Progress != 0 || v.CreditStatus != jobs.CreditsHeld || v.Credits != credits || v.QuoteID != "q1" ||
				v.Account != account || v.Model != "m/one" || string(v.Input) != `{"prompt":"a red fox"}` || v.Outputs != nil {
				t.Fatalf("Create = %+v", v)
			}
			lastProgress := -1.0
			for now := t0; !now.After(finishedAt.Add(step)); now = now.Add(step) {
				if now != t0 {
					w.advance(step)
				}
				v := w.get("job1")
				b := w.balance(account)
				switch {
				case now.Before(startedAt):
					if v.Status != jobs.Queued || v.Progress != 0 || !v.StartedAt.IsZero() || v.Outputs != nil {
						t.Fatalf("at +%v: %s, progress %v, started %v; want queued", now.Sub(t0), v.Status, v.Progress, v.StartedAt)
					}
				case now.Before(finishedAt):
					if v.Status != jobs.Running || !v.StartedAt.Equal(startedAt) || !v.FinishedAt.IsZero() || v.Outputs != nil {
						t.Fatalf("at +%v: %s, started %v, outputs %v; want running since %v, no outputs yet", now.Sub(t0), v.Status, v.StartedAt, v.Outputs, startedAt)
					}
					if want := wantProgress(now, startedAt, run); v.Progress != want {
						t.Errorf("at +%v: progress %v; want %v", now.Sub(t0), v.Progress, want)
					}
					if v.Progress < lastProgress || v.Progress >= 1 {
						t.Errorf("at +%v: progress %v after %v; want rising and below 1", now.Sub(t0), v.Progress, lastProgress)
					}
					lastProgress = v.Progress
				default:
					if v.Status != jobs.Succeeded || !v.StartedAt.Equal(startedAt) || !v.FinishedAt.Equal(finishedAt) {
						t.Fatalf("at +%v: %s, started %v, finished %v; want succeeded at %v", now.Sub(t0), v.Status, v.StartedAt, v.FinishedAt, finishedAt)
					}
					if v.Progress != 1 || v.Error != nil || len(v.Outputs) != 1 || v.Outputs[0].URL != "http://emulator/files/job1/0.png" {
						t.Errorf("at +%v: progress %v, error %v, outputs %+v", now.Sub(t0), v.Progress, v.Error, v.Outputs)
					}
				}
				if v.Status == jobs.Succeeded {
					if v.CreditStatus != jobs.CreditsCharged || b != (ledger.Balance{Account: account, Available: start - credits, Charged: credits}) {
						t.Errorf("at +%v: credit status %s, balance %+v; want charged", now.Sub(t0), v.CreditStatus, b)
					}
				} else if v.CreditStatus != jobs.CreditsHeld || b != (ledger.Balance{Account: account, Available: start - credits, Held: credits}) {
					t.Errorf("at +%v: credit status %s, balance %+v; want held", now.Sub(t0), v.CreditStatus, b)
				}
			}
		})
	}
}

// TestZeroQueue: a job with no queue time starts at the next firing of the clock, at its
// creation instant.
func TestZeroQueue(t *testing.T) {
	t.Parallel()
	w := newWorld(t, retention)
	w.create(jobs.New{ID: "job1", Plan: jobs.Plan{Run: time.Second, QueueTimeout: time.Minute}, Outputs: []jobs.Output{}})
	w.advance(0)
	if v := w.get("job1"); v.Status != jobs.Running || !v.StartedAt.Equal(t0) {
		t.Errorf("after Advance(0): %s, started %v; want running since %v", v.Status, v.StartedAt, t0)
	}
	w.advance(time.Second)
	if v := w.get("job1"); v.Status != jobs.Succeeded || !v.FinishedAt.Equal(t0.Add(time.Second)) || len(v.Outputs) != 0 {
		t.Errorf("%s at %v with %d outputs; want succeeded at +1s with the none it was created with", v.Status, v.FinishedAt, len(v.Outputs))
	}
}

// TestFailed: a job planned to fail ends at the fraction At of its run, with the plan's error,
// progress frozen there and the credits refunded; it makes no outputs.
func TestFailed(t *testing.T) {
	t.Parallel()
	const queue, run = time.Second, 10 * time.Second
	for _, tc := range []struct {
		at        float64
		code      string
		endsAfter time.Duration // after starting
		progress  float64
	}{
		{0, "generation_failed", 0, 0},
		{0.25, "content_policy_violation", 2500 * time.Millisecond, 0.25},
		{0.5, "generation_failed", 5 * time.Second, 0.5},
		{0.3, "provider_timeout", 3 * time.Second, 0.3},
		{1, "provider_timeout", run, 0.99},
		{1.7, "generation_failed", run, 0.99}, // clamped to the end
		{-1, "generation_failed", 0, 0},       // clamped to the start
	} {
		t.Run(fmt.Sprint(tc.at), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, retention)
			w.create(jobs.New{ID: "job1", Plan: jobs.Plan{
				Queue: queue, Run: run, QueueTimeout: time.Minute,
				Ending: jobs.Ending{Status: jobs.Failed, Code: tc.code, Message: "it broke", At: tc.at},
			}})
			end := t0.Add(queue + tc.endsAfter)
			if tc.endsAfter > 0 {
				w.setTime(end.Add(-time.Nanosecond))
				if v := w.get("job1"); v.Status != jobs.Running {
					t.Fatalf("a moment before the planned failure: %s; want running", v.Status)
				}
			}
			w.setTime(end)
			v := w.get("job1")
			if v.Status != jobs.Failed || !v.StartedAt.Equal(t0.Add(queue)) || !v.FinishedAt.Equal(end) {
				t.Fatalf("%s, started %v, finished %v; want failed at %v", v.Status, v.StartedAt, v.FinishedAt, end)
			}
			if v.Error == nil || *v.Error != (jobs.Error{Code: tc.code, Message: "it broke"}) {
				t.Errorf("error = %+v; want %s: it broke", v.Error, tc.code)
			}
			if v.Progress != tc.progress {
				t.Errorf("progress = %v; want %v", v.Progress, tc.progress)
			}
			if v.CreditStatus != jobs.CreditsRefunded || w.balance(account) != (ledger.Balance{Account: account, Available: start, Refunded: credits}) {
				t.Errorf("credit status %s, balance %+v; want refunded", v.CreditStatus, w.balance(account))
			}
			w.advance(time.Hour)
			if again := w.get("job1"); !reflect.DeepEqual(again, v) {
				t.Errorf("the failed job changed later:\n%+v\nthen\n%+v", v, again)
			}
			if v.Outputs != nil {
				t.Errorf("a failed job has outputs %+v", v.Outputs)
			}
		})
	}
}

// TestExpired: a job whose queue reaches its queue time limit, or whose plan is to expire,
// expires at QueueTimeout after creation without starting, and its credits are refunded.
func TestExpired(t *testing.T) {
	t.Parallel()
	const timeout = 10 * time.Minute
	for _, tc := range []struct {
		name     string
		plan     jobs.Plan
		wantCode string
	}{
		{"queue equals the timeout", jobs.Plan{Queue: timeout, Run: time.Second, QueueTimeout: timeout}, "queue_timeout"},
		{"queue beyond the timeout", jobs.Plan{Queue: time.Hour, Run: time.Second, QueueTimeout: timeout}, "queue_timeout"},
		{"planned to expire", jobs.Plan{Queue: time.Second, Run: time.Second, QueueTimeout: timeout, Ending: jobs.Ending{Status: jobs.Expired}}, "queue_timeout"},
		{"planned to expire, planned to succeed otherwise", jobs.Plan{Queue: 0, Run: time.Second, QueueTimeout: timeout, Ending: jobs.Ending{Status: jobs.Expired}}, "queue_timeout"},
		{"planned to expire with its own code", jobs.Plan{Queue: time.Second, Run: time.Second, QueueTimeout: timeout, Ending: jobs.Ending{Status: jobs.Expired, Code: "provider_timeout", Message: "no capacity"}}, "provider_timeout"},
		{"a failure plan still expires when the queue is too long", jobs.Plan{Queue: 2 * timeout, Run: time.Second, QueueTimeout: timeout, Ending: jobs.Ending{Status: jobs.Failed, Code: "generation_failed"}}, "queue_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, retention)
			w.create(jobs.New{ID: "job1", Plan: tc.plan})
			w.setTime(t0.Add(timeout - time.Nanosecond))
			if v := w.get("job1"); v.Status != jobs.Queued || v.CreditStatus != jobs.CreditsHeld {
				t.Fatalf("a moment before the timeout: %s, %s; want queued, held", v.Status, v.CreditStatus)
			}
			w.advance(time.Nanosecond)
			v := w.get("job1")
			if v.Status != jobs.Expired || !v.FinishedAt.Equal(t0.Add(timeout)) || !v.StartedAt.IsZero() || v.Progress != 0 {
				t.Fatalf("%s, started %v, finished %v, progress %v; want expired at +%v, never started", v.Status, v.StartedAt, v.FinishedAt, v.Progress, timeout)
			}
			if v.Error == nil || v.Error.Code != tc.wantCode || v.Error.Message == "" {
				t.Errorf("error = %+v; want code %s with a message", v.Error, tc.wantCode)
			}
			if v.CreditStatus != jobs.CreditsRefunded || w.balance(account) != (ledger.Balance{Account: account, Available: start, Refunded: credits}) {
				t.Errorf("credit status %s, balance %+v; want refunded", v.CreditStatus, w.balance(account))
			}
			w.advance(time.Hour)
			if again := w.get("job1"); again.Status != jobs.Expired || again.Outputs != nil {
				t.Errorf("after expiring: %s with outputs %+v", again.Status, again.Outputs)
			}
		})
	}
}

// TestCancel: a queued or running job is canceled at once and refunded; canceling it again, or
// canceling a finished job, is ErrTerminal; another account's job is not found.
func TestCancel(t *testing.T) {
	t.Parallel()
	const queue, run = 2 * time.Second, 10 * time.Second
	plan := jobs.Plan{Queue: queue, Run: run, QueueTimeout: time.Minute}
	for _, tc := range []struct {
		name         string
		at           time.Duration
		wantStarted  bool
		wantProgress float64
	}{
		{"queued at creation", 0, false, 0},
		{"queued", time.Second, false, 0},
		{"running as it starts", queue, true, 0},
		{"running", queue + 3*time.Second, true, 0.3},
		{"running near the end", queue + run - time.Millisecond, true, 0.99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, retention)
			w.create(jobs.New{ID: "job1", Plan: plan})
			w.advance(tc.at)
			if _, err := w.engine.Cancel(other, "job1"); !errors.Is(err, jobs.ErrNotFound) {
				t.Errorf("Cancel by another account: %v; want ErrNotFound", err)
			}
			v, err := w.engine.Cancel(account, "job1")
			if err != nil {
				t.Fatal(err)
			}
			if v.Status != jobs.Canceled || !v.FinishedAt.Equal(t0.Add(tc.at)) || v.StartedAt.IsZero() == tc.wantStarted ||
				v.Progress != tc.wantProgress || v.Error != nil {
				t.Errorf("Cancel = %s, started %v, finished %v, progress %v, error %v", v.Status, v.StartedAt, v.FinishedAt, v.Progress, v.Error)
			}
			if v.CreditStatus != jobs.CreditsRefunded || w.balance(account) != (ledger.Balance{Account: account, Available: start, Refunded: credits}) {
				t.Errorf("credit status %s, balance %+v; want refunded", v.CreditStatus, w.balance(account))
			}
			again, err := w.engine.Cancel(account, "job1")
			if !errors.Is(err, jobs.ErrTerminal) || again.Status != jobs.Canceled {
				t.Errorf("second Cancel = %s, %v; want the canceled job and ErrTerminal", again.Status, err)
			}
			w.advance(time.Hour) // past the planned start and end: nothing happens
			if later := w.get("job1"); !reflect.DeepEqual(later, v) {
				t.Errorf("the canceled job changed later:\n%+v\nthen\n%+v", v, later)
			}
			if v.Outputs != nil {
				t.Errorf("a canceled job has outputs %+v", v.Outputs)
			}
			if b := w.balance(account); b != (ledger.Balance{Account: account, Available: start, Refunded: credits}) {
				t.Errorf("balance after the planned end = %+v; want everything available", b)
			}
		})
	}
}

func TestCancelTerminal(t *testing.T) {
	t.Parallel()
	w := newWorld(t, retention)
	w.create(jobs.New{ID: "job1", Plan: jobs.Plan{Queue: time.Second, Run: time.Second, QueueTimeout: time.Minute}})
	w.advance(2 * time.Second)
	v, err := w.engine.Cancel(account, "job1")
	if !errors.Is(err, jobs.ErrTerminal) || v.Status != jobs.Succeeded || v.CreditStatus != jobs.CreditsCharged {
		t.Errorf("Cancel of a succeeded job = %s/%s, %v; want it unchanged and ErrTerminal", v.Status, v.CreditStatus, err)
	}
	if b := w.balance(account); b.Charged != credits || b.Held != 0 {
		t.Errorf("balance = %+v; want the credits still charged", b)
	}
	if _, err := w.engine.Cancel(account, "nope"); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("Cancel of an unknown job: %v; want ErrNotFound", err)
	}
}

// TestForce: the control API ends a queued or running job now, as succeeded (with outputs) or
// failed (with the given error), whatever its plan and whichever account owns it.
func TestForce(t *testing.T) {
	t.Parallel()
	const queue, run = 2 * time.Second, 10 * time.Second
	boom := &jobs.Error{Code: "generation_failed", Message: "forced"}
	for _, tc := range []struct {
		name       string
		at         time.Duration
		ending     jobs.Ending
		status     jobs.Status
		err        *jobs.Error
		wantCredit string
	}{
		{"succeed queued", time.Second, jobs.Ending{Status: jobs.Succeeded}, jobs.Succeeded, nil, jobs.CreditsCharged},
		{"succeed running", 5 * time.Second, jobs.Ending{Status: jobs.Succeeded}, jobs.Succeeded, nil, jobs.CreditsCharged},
		{"succeed a job planned to fail", 5 * time.Second, jobs.Ending{Status: jobs.Failed, Code: "x", At: 0.9}, jobs.Succeeded, nil, jobs.CreditsCharged},
		{"succeed a job planned to expire", time.Second, jobs.Ending{Status: jobs.Expired}, jobs.Succeeded, nil, jobs.CreditsCharged},
		{"fail queued", time.Second, jobs.Ending{Status: jobs.Succeeded}, jobs.Failed, boom, jobs.CreditsRefunded},
		{"fail running", 5 * time.Second, jobs.Ending{Status: jobs.Succeeded}, jobs.Failed, boom, jobs.CreditsRefunded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, retention)
			w.create(jobs.New{ID: "job1", Account: other, Plan: jobs.Plan{
				Queue: queue, Run: run, QueueTimeout: time.Minute, Ending: tc.ending,
			}})
			w.advance(tc.at)
			before, _ := w.engine.Get(other, "job1")
			v, err := w.engine.Force("job1", tc.status, tc.err)
			if err != nil {
				t.Fatal(err)
			}
			now := t0.Add(tc.at)
			if v.Status != tc.status || !v.FinishedAt.Equal(now) || v.CreditStatus != tc.wantCredit {
				t.Errorf("Force = %s at %v, credits %s; want %s at %v, %s", v.Status, v.FinishedAt, v.CreditStatus, tc.status, now, tc.wantCredit)
			}
			if before.Status == jobs.Running && !v.StartedAt.Equal(before.StartedAt) {
				t.Errorf("started %v; want unchanged %v", v.StartedAt, before.StartedAt)
			}
			if v.StartedAt.IsZero() && tc.status == jobs.Succeeded {
				t.Error("a forced success has no started_at")
			}
			b := w.balance(other)
			switch tc.status {
			case jobs.Succeeded:
				if v.Progress != 1 || !reflect.DeepEqual(v.Outputs, described("job1")) || v.Error != nil {
					t.Errorf("progress %v, outputs %+v, error %v; want 1, the outputs it was created with, nil", v.Progress, v.Outputs, v.Error)
				}
				if b != (ledger.Balance{Account: other, Available: start - credits, Charged: credits}) {
					t.Errorf("balance %+v; want charged", b)
				}
			case jobs.Failed:
				if v.Error == nil || *v.Error != *tc.err || v.Outputs != nil {
					t.Errorf("error %v, outputs %+v; want the given error and no outputs", v.Error, v.Outputs)
				}
				if b != (ledger.Balance{Account: other, Available: start, Refunded: credits}) {
					t.Errorf("balance %+v; want refunded", b)
				}
			}
			if _, err := w.engine.Force("job1", jobs.Failed, boom); !errors.Is(err, jobs.ErrTerminal) {
				t.Errorf("second Force: %v; want ErrTerminal", err)
			}
			w.advance(time.Hour) // past every planned instant: nothing more happens
			if later, _ := w.engine.Get(other, "job1"); !reflect.DeepEqual(later, v) {
				t.Errorf("the forced job changed later:\n%+v\nthen\n%+v", v, later)
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, retention)
		if _, err := w.engine.Force("nope", jobs.Succeeded, nil); !errors.Is(err, jobs.ErrNotFound) {
			t.Errorf("Force of an unknown job: %v; want ErrNotFound", err)
		}
	})
}

// TestWatch: the channel Watch returns closes at the job's next change (start, end, cancel),
// and not while nothing changes.
func TestWatch(t *testing.T) {
	t.Parallel()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	for _, tc := range []struct {
		name  string
		steps []func(w *world) // each must change the job exactly once
	}{
		{"start, then succeed", []func(w *world){
			func(w *world) { w.advance(time.Second) },
			func(w *world) { w.advance(10 * time.Second) },
		}},
		{"cancel queued", []func(w *world){
			func(w *world) { w.engine.Cancel(account, "job1") },
		}},
		{"start, then cancel", []func(w *world){
			func(w *world) { w.advance(time.Second) },
			func(w *world) { w.engine.Cancel(account, "job1") },
		}},
		{"force", []func(w *world){
			func(w *world) { w.engine.Force("job1", jobs.Failed, &jobs.Error{Code: "x"}) },
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, retention)
			w.create(jobs.New{ID: "job1", Plan: jobs.Plan{Queue: time.Second, Run: 10 * time.Second, QueueTimeout: time.Minute}})
			for i, step := range tc.steps {
				before, ch, ok := w.engine.Watch(account, "job1")
				if !ok {
					t.Fatal("Watch: not found")
				}
				if closed(ch) {
					t.Fatalf("step %d: the channel is closed before anything changed", i)
				}
				if before.Status == jobs.Running {
					w.advance(time.Second) // progress moves, the status does not
					if closed(ch) {
						t.Errorf("step %d: the channel closed on progress alone", i)
					}
				}
				step(w)
				if !closed(ch) {
					t.Errorf("step %d: the channel is still open after the job changed", i)
				}
				if after, _, _ := w.engine.Watch(account, "job1"); after.Status == before.Status {
					t.Errorf("step %d: status stayed %s", i, after.Status)
				}
			}
			_, ch, _ := w.engine.Watch(account, "job1")
			w.advance(time.Hour)
			if closed(ch) {
				t.Error("the channel of a terminal job closed again")
			}
			if _, _, ok := w.engine.Watch(other, "job1"); ok {
				t.Error("another account watched the job")
			}
			if _, _, ok := w.engine.Watch("", "job1"); !ok {
				t.Error("Watch with no account did not find the job")
			}
		})
	}
}

// TestList: an account's jobs, newest first, filtered by status and model, windowed by offset
// and limit, with the total of all matches; other accounts' jobs never appear.
func TestList(t *testing.T) {
	t.Parallel()
	w := newWorld(t, retention)
	plan := func(run time.Duration) jobs.Plan {
		return jobs.Plan{Queue: time.Second, Run: run, QueueTimeout: time.Minute}
	}
	// Created one second apart, so creation order is unambiguous.
	for i, j := range []struct {
		model string
		run   time.Duration
	}{
		{"m/one", time.Second}, // j1: succeeded
		{"m/two", time.Second}, // j2: succeeded
		{"m/one", time.Hour},   // j3: running
		{"m/two", time.Hour},   // j4: canceled
		{"m/one", time.Hour},   // j5: running
		{"m/one", 0},           // j6: queued (created last)
	} {
		if i > 0 {
			w.advance(time.Second)
		}
		id := fmt.Sprintf("j%d", i+1)
		if i == 5 {
			w.create(jobs.New{ID: id, Model: j.model, Plan: jobs.Plan{Queue: time.Minute, Run: time.Second, QueueTimeout: time.Hour}})
			continue
		}
		w.create(jobs.New{ID: id, Model: j.model, Plan: plan(j.run)})
	}
	w.create(jobs.New{ID: "b1", Account: other, Model: "m/one", Plan: plan(time.Second)})
	w.advance(3 * time.Second)
	if _, err := w.engine.Cancel(account, "j4"); err != nil {
		t.Fatal(err)
	}
	wantStatus := map[string]jobs.Status{"j1": jobs.Succeeded, "j2": jobs.Succeeded, "j3": jobs.Running, "j4": jobs.Canceled, "j5": jobs.Running, "j6": jobs.Queued}
	for id, want := range wantStatus {
		if v := w.get(id); v.Status != want {
			t.Fatalf("%s is %s; the test expects %s", id, v.Status, want)
		}
	}
	for _, tc := range []struct {
		name          string
		account       string
		filter        jobs.Filter
		offset, limit int
		want          []string
		total         int
	}{
		{"all, newest first", account, jobs.Filter{}, 0, 100, []string{"j6", "j5", "j4", "j3", "j2", "j1"}, 6},
		{"limit", account, jobs.Filter{}, 0, 2, []string{"j6", "j5"}, 6},
		{"offset and limit", account, jobs.Filter{}, 2, 3, []string{"j4", "j3", "j2"}, 6},
		{"last page", account, jobs.Filter{}, 5, 3, []string{"j1"}, 6},
		{"offset past the end", account, jobs.Filter{}, 6, 10, nil, 6},
		{"status running", account, jobs.Filter{Status: jobs.Running}, 0, 100, []string{"j5", "j3"}, 2},
		{"status succeeded", account, jobs.Filter{Status: jobs.Succeeded}, 0, 100, []string{"j2", "j1"}, 2},
		{"status canceled", account, jobs.Filter{Status: jobs.Canceled}, 0, 100, []string{"j4"}, 1},
		{"status queued", account, jobs.Filter{Status: jobs.Queued}, 0, 100, []string{"j6"}, 1},
		{"status with no jobs", account, jobs.Filter{Status: jobs.Expired}, 0, 100, nil, 0},
		{"model", account, jobs.Filter{Model: "m/two"}, 0, 100, []string{"j4", "j2"}, 2},
		{"model and status", account, jobs.Filter{Model: "m/one", Status: jobs.Running}, 0, 100, []string{"j5", "j3"}, 2},
		{"model and status, windowed", account, jobs.Filter{Model: "m/one", Status: jobs.Running}, 1, 1, []string{"j3"}, 2},
		{"unknown model", account, jobs.Filter{Model: "m/none"}, 0, 100, nil, 0},
		{"other account", other, jobs.Filter{}, 0, 100, []string{"b1"}, 1},
		{"account with no jobs", "acct_none", jobs.Filter{}, 0, 100, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views, total := w.engine.List(tc.account, tc.filter, tc.offset, tc.limit)
			var ids []string
			for _, v := range views {
				ids = append(ids, v.ID)
				if v.Account != tc.account {
					t.Errorf("%s of account %s listed for %s", v.ID, v.Account, tc.account)
				}
				if tc.account == account && v.Status != wantStatus[v.ID] {
					t.Errorf("%s listed as %s; want %s", v.ID, v.Status, wantStatus[v.ID])
				}
			}
			if !reflect.DeepEqual(ids, tc.want) || total != tc.total {
				t.Errorf("List = %q, total %d; want %q, total %d", ids, total, tc.want, tc.total)
			}
		})
	}
	// A listed running job reports its progress as of now, like Get.
	views, _ := w.engine.List(account, jobs.Filter{Model: "m/one", Status: jobs.Running}, 0, 1)
	if got := w.get("j5"); len(views) != 1 || views[0].Progress != got.Progress {
		t.Errorf("listed progress %v; Get says %v", views, got.Progress)
	}
}

// TestOtherAccount: another account's job answers not found everywhere the account is given.
func TestOtherAccount(t *testing.T) {
	t.Parallel()
	w := newWorld(t, retention)
	w.create(jobs.New{ID: "job1", Account: other, Plan: jobs.Plan{Queue: time.Second, Run: time.Second, QueueTimeout: time.Minute}})
	if _, ok := w.engine.Get(account, "job1"); ok {
		t.Error("Get by another account found the job")
	}
	if _, err := w.engine.Cancel(account, "job1"); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("Cancel by another account: %v; want ErrNotFound", err)
	}
	if v, ok := w.engine.Get(other, "job1"); !ok || v.Status != jobs.Queued {
		t.Errorf("the owner's Get = %s, %v; want queued (untouched by the other account)", v.Status, ok)
	}
	if _, ok := w.engine.Get(account, "nope"); ok {
		t.Error("Get found an unknown job")
	}
}

// TestRetention: a finished job is dropped exactly retention after it finished, whatever ended
// it, and not before; once every job is dropped no clock timer is left behind.
func TestRetention(t *testing.T) {
	t.Parallel()
	const keep = time.Hour
	w := newWorld(t, keep)
	type jobEnd struct {
		id  string
		end time.Time
	}
	var ends []jobEnd
	// Ten jobs that succeed one second apart, then jobs ended every other way.
	for i := range 10 {
		id := fmt.Sprintf("s%d", i)
		w.create(jobs.New{ID: id, Plan: jobs.Plan{Queue: time.Second, Run: time.Duration(i+1) * time.Second, QueueTimeout: time.Minute}})
		ends = append(ends, jobEnd{id, t0.Add(time.Duration(i+2) * time.Second)})
	}
	w.create(jobs.New{ID: "failed", Plan: jobs.Plan{Queue: time.Second, Run: 20 * time.Second, QueueTimeout: time.Minute, Ending: jobs.Ending{Status: jobs.Failed, Code: "x", At: 0.5}}})
	ends = append(ends, jobEnd{"failed", t0.Add(11 * time.Second)})
	w.create(jobs.New{ID: "expired", Plan: jobs.Plan{Queue: time.Hour, Run: time.Second, QueueTimeout: 30 * time.Second}})
	ends = append(ends, jobEnd{"expired", t0.Add(30 * time.Second)})
	w.create(jobs.New{ID: "canceled-queued", Plan: jobs.Plan{Queue: time.Hour, Run: time.Second, QueueTimeout: 2 * time.Hour}})
	w.create(jobs.New{ID: "canceled-running", Plan: jobs.Plan{Queue: time.Second, Run: time.Hour, QueueTimeout: time.Minute}})
	w.create(jobs.New{ID: "forced", Plan: jobs.Plan{Queue: time.Second, Run: time.Hour, QueueTimeout: time.Minute}})
	w.create(jobs.New{ID: "forced-queued", Plan: jobs.Plan{Queue: time.Hour, Run: time.Hour, QueueTimeout: 2 * time.Hour}})
	w.create(jobs.New{ID: "other-account", Account: other, Plan: jobs.Plan{Queue: time.Second, Run: 4 * time.Second, QueueTimeout: time.Minute}})
	ends = append(ends, jobEnd{"other-account", t0.Add(5 * time.Second)})
	w.setTime(t0.Add(40 * time.Second))
	for _, id := range []string{"canceled-queued", "canceled-running"} {
		if _, err := w.engine.Cancel(account, id); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, jobEnd{id, w.clock.Now()})
	}
	if _, err := w.engine.Force("forced", jobs.Succeeded, nil); err != nil {
		t.Fatal(err)
	}
	ends = append(ends, jobEnd{"forced", w.clock.Now()})
	if _, err := w.engine.Force("forced-queued", jobs.Failed, &jobs.Error{Code: "x"}); err != nil {
		t.Fatal(err)
	}
	ends = append(ends, jobEnd{"forced-queued", w.clock.Now()})

	total := len(ends)
	if w.engine.Len() != total {
		t.Fatalf("Len = %d; want %d", w.engine.Len(), total)
	}
	if p := w.clock.Pending(); p != 1 {
		t.Errorf("Pending = %d with %d finished jobs; want the engine's one timer", p, total)
	}
	for _, e := range ends {
		v, _, ok := w.engine.Watch("", e.id)
		if !ok || !v.Status.Terminal() || !v.FinishedAt.Equal(e.end) {
			t.Fatalf("%s: %s finished at %v, found %v; the test expects it finished at %v", e.id, v.Status, v.FinishedAt, ok, e.end)
		}
	}
	// Visit every drop instant in time order: a moment before it the jobs that finished
	// retention earlier are held, at it they are not. Several jobs may share an instant.
	groups := map[time.Time][]string{}
	var instants []time.Time
	for _, e := range ends {
		at := e.end.Add(keep)
		if groups[at] == nil {
			instants = append(instants, at)
		}
		groups[at] = append(groups[at], e.id)
	}
	slices.SortFunc(instants, time.Time.Compare)
	left := total
	for _, at := range instants {
		ids := groups[at]
		w.setTime(at.Add(-time.Nanosecond))
		for _, id := range ids {
			if _, _, ok := w.engine.Watch("", id); !ok {
				t.Errorf("%s was dropped before %v after it finished", id, keep)
			}
		}
		if got := w.engine.Len(); got != left {
			t.Errorf("a moment before dropping %q: Len = %d; want %d", ids, got, left)
		}
		w.setTime(at)
		left -= len(ids)
		for _, id := range ids {
			if _, _, ok := w.engine.Watch("", id); ok {
				t.Errorf("%s is still held %v after it finished", id, keep)
			}
		}
		if got := w.engine.Len(); got != left {
			t.Errorf("after dropping %q: Len = %d; want %d", ids, got, left)
		}
		views, n := w.engine.List(account, jobs.Filter{}, 0, 100)
		m, _ := w.engine.List(other, jobs.Filter{}, 0, 100)
		if n+len(m) != left || len(views) != n {
			t.Errorf("after dropping %q: List shows %d + %d jobs (total %d); want %d", ids, len(views), len(m), n, left)
		}
		for _, v := range views {
			if slices.Contains(ids, v.ID) {
				t.Errorf("List still shows the dropped %s", v.ID)
			}
		}
	}
	if w.engine.Len() != 0 || w.clock.Pending() != 0 {
		t.Errorf("after every job is dropped: Len = %d, Pending = %d; want 0 and 0", w.engine.Len(), w.clock.Pending())
	}
	// The engine keeps working after it emptied.
	w.create(jobs.New{ID: "again", Plan: jobs.Plan{Queue: time.Second, Run: time.Second, QueueTimeout: time.Minute}})
	w.advance(2 * time.Second)
	if views, n := w.engine.List(account, jobs.Filter{}, 0, 10); n != 1 || views[0].Status != jobs.Succeeded {
		t.Errorf("List after emptying = %+v, %d", views, n)
	}
	if b := w.balance(account); b.Held != 0 || b.Total() != start {
		t.Errorf("balance %+v; want nothing held and the total kept", b)
	}
}

// TestListAfterDrops: dropping jobs in any order (leaving holes that are compacted away) keeps
// List newest first and complete.
func TestListAfterDrops(t *testing.T) {
	t.Parallel()
	const n = 40
	w := newWorld(t, time.Minute)
	// Job i finishes after a run that is long for even i, short for odd i, so drops interleave.
	for i := range n {
		run := time.Duration(1+i%7) * time.Second
		if i%2 == 0 {
			run += time.Hour
		}
		w.create(jobs.New{ID: fmt.Sprintf("j%02d", i), Credits: 1, Plan: jobs.Plan{Run: run, QueueTimeout: time.Minute}})
	}
	for step := 0; step < 200 && w.engine.Len() > 0; step++ {
		w.advance(20 * time.Second)
		views, total := w.engine.List(account, jobs.Filter{}, 0, 1000)
		if total != w.engine.Len() || len(views) != total {
			t.Fatalf("step %d: List shows %d of total %d; Len = %d", step, len(views), total, w.engine.Len())
		}
		for k := 1; k < len(views); k++ {
			if views[k-1].ID <= views[k].ID {
				t.Fatalf("step %d: List order %s before %s; want newest first", step, views[k-1].ID, views[k].ID)
			}
		}
		// A window agrees with the full list.
		if total > 3 {
			page, _ := w.engine.List(account, jobs.Filter{}, 2, 2)
			if page[0].ID != views[2].ID || page[1].ID != views[3].ID {
				t.Fatalf("step %d: page [2,4) = %s, %s; full list has %s, %s", step, page[0].ID, page[1].ID, views[2].ID, views[3].ID)
			}
		}
	}
	if w.engine.Len() != 0 || w.clock.Pending() != 0 {
		t.Errorf("Len = %d, Pending = %d; want 0 and 0", w.engine.Len(), w.clock.Pending())
	}
}

// TestConcurrentCancelAndClock: cancels racing the clock settle each job's credits exactly once.
func TestConcurrentCancelAndClock(t *testing.T) {
	t.Parallel()
	const n = 200
	w := newWorld(t, time.Hour)
	for i := range n {
		w.create(jobs.New{ID: fmt.Sprintf("j%d", i), Credits: 1, Plan: jobs.Plan{
			Queue: time.Duration(i%5) * time.Second, Run: time.Duration(i%7) * time.Second, QueueTimeout: time.Minute,
		}})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			w.engine.Cancel(account, fmt.Sprintf("j%d", i))
		}
	}()
	for range 20 {
		if err := w.clock.Advance(500 * time.Millisecond); err != nil {
			t.Error(err)
		}
	}
	<-done
	w.advance(time.Minute)
	var charged int64
	for i := range n {
		v := w.get(fmt.Sprintf("j%d", i))
		switch {
		case v.Status == jobs.Succeeded && v.CreditStatus == jobs.CreditsCharged:
			charged++
		case v.Status == jobs.Canceled && v.CreditStatus == jobs.CreditsRefunded:
		default:
			t.Errorf("%s: %s with credits %s", v.ID, v.Status, v.CreditStatus)
		}
	}
	if b := w.balance(account); b.Held != 0 || b.Charged != charged || b.Available != start-charged {
		t.Errorf("balance %+v; want %d charged, nothing held", b, charged)
	}
}

// TestOutputsOnSuccessOnly: the outputs a job is created with show only once it has succeeded,
// however it got there; every other ending leaves it without outputs.
func TestOutputsOnSuccessOnly(t *testing.T) {
	t.Parallel()
	plan := jobs.Plan{Queue: time.Second, Run: time.Second, QueueTimeout: time.Minute}
	for _, tc := range []struct {
		name string
		end  func(w *world) // ends job1, which is queued
		want jobs.Status
	}{
		{"as planned", func(w *world) { w.advance(2 * time.Second) }, jobs.Succeeded},
		{"forced while queued", func(w *world) { w.engine.Force("job1", jobs.Succeeded, nil) }, jobs.Succeeded},
		{"forced while running", func(w *world) {
			w.advance(time.Second)
			w.engine.Force("job1", jobs.Succeeded, nil)
		}, jobs.Succeeded},
		{"canceled", func(w *world) { w.engine.Cancel(account, "job1") }, jobs.Canceled},
		{"forced to fail", func(w *world) { w.engine.Force("job1", jobs.Failed, &jobs.Error{Code: "x"}) }, jobs.Failed},
		{"forced to expire", func(w *world) { w.engine.Force("job1", jobs.Expired, &jobs.Error{Code: "x"}) }, jobs.Expired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, retention)
			w.create(jobs.New{ID: "job1", Plan: plan})
			tc.end(w)
			v := w.get("job1")
			if v.Status != tc.want {
				t.Fatalf("%s; want %s", v.Status, tc.want)
			}
			if want := tc.want == jobs.Succeeded; (v.Outputs != nil) != want || (want && !reflect.DeepEqual(v.Outputs, described("job1"))) {
				t.Errorf("%s with outputs %+v", v.Status, v.Outputs)
			}
			if views, _ := w.engine.List(account, jobs.Filter{}, 0, 1); !reflect.DeepEqual(views[0].Outputs, v.Outputs) {
				t.Errorf("List shows outputs %+v; Get shows %+v", views[0].Outputs, v.Outputs)
			}
		})
	}
}

// TestForceNotTerminal: Force refuses a status that does not end a job and leaves it as it was.
func TestForceNotTerminal(t *testing.T) {
	t.Parallel()
	w := newWorld(t, retention)
	w.create(jobs.New{ID: "job1", Plan: jobs.Plan{Queue: time.Second, Run: time.Second, QueueTimeout: time.Minute}})
	for _, s := range []jobs.Status{jobs.Queued, jobs.Running, "", "done"} {
		if _, err := w.engine.Force("job1", s, nil); !errors.Is(err, jobs.ErrNotTerminal) {
			t.Errorf("Force(%q) = %v; want ErrNotTerminal", s, err)
		}
	}
	if v := w.get("job1"); v.Status != jobs.Queued || v.CreditStatus != jobs.CreditsHeld {
		t.Errorf("after refused forces: %s, %s; want queued, held", v.Status, v.CreditStatus)
	}
}

// TestMaxJobs fills an engine past its cap: each new job drops the oldest finished one (which
// then answers not found everywhere, as if its retention had passed); live jobs are never
// dropped, and a new job is admitted over the cap when every job held is live.
func TestMaxJobs(t *testing.T) {
	t.Parallel()
	const maxJobs = 5
	c := clock.NewManual(t0)
	l := ledger.New(map[string]int64{account: start, other: start})
	w := &world{t: t, clock: c, ledger: l, engine: jobs.NewEngine(c, l, jobs.Options{Retention: retention, MaxJobs: maxJobs})}
	short := jobs.Plan{Run: time.Second, QueueTimeout: time.Minute}
	long := jobs.Plan{Run: time.Hour, QueueTimeout: time.Minute}

	// f0..f3 finish one second apart, in that order; l0 stays running.
	for i := range 4 {
		w.create(jobs.New{ID: fmt.Sprintf("f%d", i), Credits: 1, Plan: short})
		w.advance(time.Second)
	}
	w.create(jobs.New{ID: "l0", Credits: 1, Plan: long})
	w.advance(0)
	if n := w.engine.Len(); n != maxJobs {
		t.Fatalf("Len = %d; want %d", n, maxJobs)
	}
	// Each new live job drops the oldest finished one.
	for i := range 4 {
		w.create(jobs.New{ID: fmt.Sprintf("l%d", i+1), Credits: 1, Plan: long})
		w.advance(0)
		dropped := fmt.Sprintf("f%d", i)
		if _, ok := w.engine.Get(account, dropped); ok {
			t.Errorf("after l%d: %s, the oldest finished job, is still held", i+1, dropped)
		}
		if _, _, ok := w.engine.Watch("", dropped); ok {
			t.Errorf("Watch found the dropped %s", dropped)
		}
		if _, err := w.engine.Cancel(account, dropped); !errors.Is(err, jobs.ErrNotFound) {
			t.Errorf("Cancel of the dropped %s: %v; want ErrNotFound", dropped, err)
		}
		if _, err := w.engine.Force(dropped, jobs.Failed, nil); !errors.Is(err, jobs.ErrNotFound) {
			t.Errorf("Force of the dropped %s: %v; want ErrNotFound", dropped, err)
		}
		for k := i + 1; k < 4; k++ {
			if _, ok := w.engine.Get(account, fmt.Sprintf("f%d", k)); !ok {
				t.Errorf("after l%d: f%d, finished later, was dropped", i+1, k)
			}
		}
		if n := w.engine.Len(); n != maxJobs {
			t.Errorf("after l%d: Len = %d; want %d", i+1, n, maxJobs)
		}
	}
	// Every held job is live now: new ones are admitted over the cap, and none is dropped.
	for i := 5; i < 8; i++ {
		w.create(jobs.New{ID: fmt.Sprintf("l%d", i), Credits: 1, Plan: long})
	}
	views, total := w.engine.List(account, jobs.Filter{}, 0, 100)
	if total != 8 || w.engine.Len() != 8 {
		t.Fatalf("List total %d, Len %d; want all 8 live jobs", total, w.engine.Len())
	}
	for _, v := range views {
		if v.Status.Terminal() {
			t.Errorf("%s is %s; want live", v.ID, v.Status)
		}
	}
	// Once some finish, the next creation drops back to the cap, oldest finished first.
	for _, id := range []string{"l3", "l1", "l6", "l2", "l0"} {
		w.advance(time.Millisecond)
		if _, err := w.engine.Cancel(account, id); err != nil {
			t.Fatal(err)
		}
	}
	w.create(jobs.New{ID: "n0", Credits: 1, Plan: long})
	if n := w.engine.Len(); n != maxJobs {
		t.Errorf("Len = %d; want back at %d", n, maxJobs)
	}
	for _, id := range []string{"l3", "l1", "l6", "l2", "l0"} {
		_, ok := w.engine.Get(account, id)
		if ok != (id == "l0") {
			t.Errorf("%s held = %v; want only l0, the last to finish, kept", id, ok)
		}
	}
	if c := w.engine.Counts(); c != (jobs.Counts{Running: 3, Queued: 1, Canceled: 1}) || c.Total() != maxJobs {
		t.Errorf("Counts = %+v", c)
	}
	// Dropping early settles nothing twice: what is held is exactly the live jobs' credits.
	if b := w.balance(account); b.Held != 4 || b.Charged != 4 || b.Total() != start {
		t.Errorf("balance %+v; want 4 held (live), 4 charged (f0..f3)", b)
	}
}

// TestMaxInputBytes fills an engine with jobs of 1 MiB inputs past its byte cap: their inputs
// were held for the whole retention, bounded by count only (360 such jobs took 755 MB). Now
// each new job past the cap drops the oldest finished jobs first, as the count cap does; live
// jobs are never dropped, and what is held stays within the cap once they finish.
func TestMaxInputBytes(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	c := clock.NewManual(t0)
	l := ledger.New(map[string]int64{account: start})
	w := &world{t: t, clock: c, ledger: l, engine: jobs.NewEngine(c, l, jobs.Options{Retention: retention, MaxInputBytes: 8 * mib})}
	big := json.RawMessage(`{"prompt":"` + strings.Repeat("x", mib-13) + `"}`)
	if len(big) != mib {
		t.Fatalf("input of %d bytes", len(big))
	}
	short := jobs.Plan{Run: time.Second, QueueTimeout: time.Minute}
	for i := range 360 {
		w.create(jobs.New{ID: fmt.Sprint("f", i), Credits: 1, Input: big, Plan: short})
		w.advance(2 * time.Second)
		if n := w.engine.Len(); n > 8 {
			t.Fatalf("after %d jobs of 1 MiB: %d held; want at most 8", i+1, n)
		}
	}
	for i := 352; i < 360; i++ {
		if v, ok := w.engine.Get(account, fmt.Sprint("f", i)); !ok || !bytes.Equal(v.Input, big) {
			t.Errorf("f%d, among the newest, is not held whole", i)
		}
	}
	if _, ok := w.engine.Get(account, "f351"); ok {
		t.Error("f351 is held past the byte cap")
	}
	// Live jobs are admitted over the cap, and never dropped.
	long := jobs.Plan{Run: time.Hour, QueueTimeout: time.Minute}
	for i := range 12 {
		w.create(jobs.New{ID: fmt.Sprint("l", i), Credits: 1, Input: big, Plan: long})
	}
	if c := w.engine.Counts(); c.Queued != 12 || c.Total() != 12 {
		t.Errorf("Counts = %+v; want the 12 live jobs alone", c)
	}
	w.advance(2 * time.Hour)
	w.create(jobs.New{ID: "after", Credits: 1, Input: big, Plan: short})
	if n := w.engine.Len(); n != 8 {
		t.Errorf("once they finished, the next job left %d held; want 8", n)
	}
}

// TestMaxJobsDefault: a cap of zero means DefaultMaxJobs.
func TestMaxJobsDefault(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("creates DefaultMaxJobs jobs")
	}
	c := clock.NewManual(t0)
	l := ledger.New(map[string]int64{account: 1 << 40})
	e := jobs.NewEngine(c, l, jobs.Options{Retention: retention})
	plan := jobs.Plan{QueueTimeout: time.Minute}
	for i := range jobs.DefaultMaxJobs + 10 {
		if i == jobs.DefaultMaxJobs {
			if err := c.Advance(0); err != nil {
				t.Fatal(err)
			}
		}
		l.Hold(account, 1)
		e.Create(jobs.New{ID: fmt.Sprint(i), Account: account, Credits: 1, Plan: plan})
	}
	if got := e.Len(); got != jobs.DefaultMaxJobs {
		t.Errorf("Len = %d; want %d", got, jobs.DefaultMaxJobs)
	}
	for _, id := range []string{"0", "9"} {
		if _, ok := e.Get(account, id); ok {
			t.Errorf("job %s, among the oldest finished, is still held", id)
		}
	}
	if _, ok := e.Get(account, "10"); !ok {
		t.Error("job 10 was dropped")
	}
}

// TestCounts: Counts follows every transition and drop.
func TestCounts(t *testing.T) {
	t.Parallel()
	w := newWorld(t, time.Hour)
	plan := jobs.Plan{Queue: time.Second, Run: time.Second, QueueTimeout: time.Minute}
	w.create(jobs.New{ID: "a", Plan: plan})
	w.create(jobs.New{ID: "b", Plan: plan})
	w.create(jobs.New{ID: "c", Plan: jobs.Plan{Queue: time.Second, Run: 2 * time.Hour, QueueTimeout: time.Minute}})
	w.create(jobs.New{ID: "d", Plan: jobs.Plan{Queue: time.Hour, QueueTimeout: 30 * time.Second}})
	w.create(jobs.New{ID: "e", Plan: jobs.Plan{Queue: time.Second, Run: time.Second, QueueTimeout: time.Minute, Ending: jobs.Ending{Status: jobs.Failed, Code: "x", At: 1}}})
	w.engine.Cancel(account, "b")
	check := func(when string, want jobs.Counts) {
		t.Helper()
		if got := w.engine.Counts(); got != want || got.Total() != w.engine.Len() {
			t.Errorf("%s: Counts = %+v (Len %d); want %+v", when, got, w.engine.Len(), want)
		}
	}
	check("at creation", jobs.Counts{Queued: 4, Canceled: 1})
	w.advance(time.Second)
	check("after 1s", jobs.Counts{Queued: 1, Running: 3, Canceled: 1})
	w.advance(time.Second)
	check("after 2s", jobs.Counts{Queued: 1, Running: 1, Succeeded: 1, Failed: 1, Canceled: 1})
	w.advance(time.Minute)
	check("after 62s", jobs.Counts{Running: 1, Succeeded: 1, Failed: 1, Canceled: 1, Expired: 1})
	w.advance(time.Hour)
	check("after retention", jobs.Counts{Running: 1})
}

// TestWatchShared: every watcher of a job between two changes gets the same channel, made only
// once someone watches; a finished job's channel is nil, never ready.
func TestWatchShared(t *testing.T) {
	t.Parallel()
	w := newWorld(t, retention)
	w.create(jobs.New{ID: "job1", Plan: jobs.Plan{Queue: time.Second, Run: time.Second, QueueTimeout: time.Minute}})
	_, a, _ := w.engine.Watch(account, "job1")
	_, b, _ := w.engine.Watch("", "job1")
	if a == nil || a != b {
		t.Fatalf("two watchers got %v and %v; want one shared channel", a, b)
	}
	w.advance(time.Second)
	<-a
	_, c, _ := w.engine.Watch(account, "job1")
	if c == nil || c == a {
		t.Fatal("a watcher after a change got no channel, or the closed one")
	}
	w.advance(time.Second)
	<-c
	v, d, ok := w.engine.Watch(account, "job1")
	if !ok || v.Status != jobs.Succeeded || d != nil {
		t.Errorf("Watch of a finished job = %s, %v, %v; want succeeded with a nil channel", v.Status, d, ok)
	}
}

// TestLedgerUnderLoad: jobs created, canceled and forced from several goroutines while the clock
// advances keep the ledger exact at every quiet point: what is held is the credits of the live
// jobs, what is charged the credits of the succeeded ones, and nothing is made or lost.
func TestLedgerUnderLoad(t *testing.T) {
	t.Parallel()
	const (
		workers = 4
		perW    = 300
		budget  = int64(1_000_000)
	)
	c := clock.NewManual(t0)
	l := ledger.New(map[string]int64{account: budget})
	e := jobs.NewEngine(c, l, jobs.Options{Retention: 3 * time.Second, MaxJobs: 500})
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range perW {
				id := fmt.Sprintf("w%d-%d", g, i)
				cr := int64(1 + i%5)
				if err := l.Hold(account, cr); err != nil {
					t.Error(err)
					return
				}
				e.Create(jobs.New{ID: id, Account: account, Credits: cr, Plan: jobs.Plan{
					Queue: time.Duration(i%4) * 100 * time.Millisecond, Run: time.Duration(i%6) * 100 * time.Millisecond,
					QueueTimeout: 250 * time.Millisecond,
					Ending:       jobs.Ending{Status: []jobs.Status{jobs.Succeeded, jobs.Failed}[i%2], Code: "x", At: 0.5},
				}})
				switch i % 7 {
				case 1:
					e.Cancel(account, fmt.Sprintf("w%d-%d", g, i/2))
				case 3:
					e.Force(fmt.Sprintf("w%d-%d", (g+1)%workers, i-1), jobs.Succeeded, nil)
				case 5:
					e.Force(fmt.Sprintf("w%d-%d", g, i/3), jobs.Failed, &jobs.Error{Code: "forced"})
				}
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			if err := c.Advance(50 * time.Millisecond); err != nil {
				t.Error(err)
			}
			b, _ := l.Balance(account)
			if b.Total() != budget || b.Held < 0 {
				t.Errorf("balance %+v: credits made or lost", b)
			}
		}
	})
	wg.Wait()
	// Quiet: every held job's credit status agrees with the ledger.
	check := func(when string) {
		t.Helper()
		views, total := e.List(account, jobs.Filter{}, 0, 1<<20)
		var held, live int64
		for _, v := range views {
			switch {
			case !v.Status.Terminal() && v.CreditStatus == jobs.CreditsHeld:
				held += v.Credits
				live++
			case v.Status == jobs.Succeeded && v.CreditStatus == jobs.CreditsCharged:
			case v.Status.Terminal() && v.Status != jobs.Succeeded && v.CreditStatus == jobs.CreditsRefunded:
			default:
				t.Errorf("%s: %s with credits %s", v.ID, v.Status, v.CreditStatus)
			}
		}
		b, _ := l.Balance(account)
		counts := e.Counts()
		if b.Held != held || b.Total() != budget || total != e.Len() || int64(counts.Queued+counts.Running) != live {
			t.Errorf("%s: balance %+v, live jobs hold %d (%d live, counts %+v); listed %d of %d", when, b, held, live, counts, total, e.Len())
		}
	}
	check("after the load")
	if err := c.Advance(time.Minute); err != nil {
		t.Fatal(err)
	}
	check("after every job finished and was dropped")
	if b, _ := l.Balance(account); b.Held != 0 || e.Len() != 0 || c.Pending() != 0 {
		t.Errorf("balance %+v, Len %d, Pending %d; want nothing held, held or pending", b, e.Len(), c.Pending())
	}
}

// TestRealClock: on a real clock the engine's one timer drives jobs through their plans by
// itself, stamping each transition at its planned instant. Time is the synctest bubble's.
func TestRealClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := clock.NewReal()
		defer c.Close()
		l := ledger.New(map[string]int64{account: start})
		e := jobs.NewEngine(c, l, jobs.Options{Retention: time.Minute})
		var created []jobs.View
		for i := range 20 {
			l.Hold(account, 1)
			created = append(created, e.Create(jobs.New{ID: fmt.Sprint(i), Account: account, Credits: 1, Plan: jobs.Plan{
				Queue: time.Duration(i) * 100 * time.Millisecond, Run: time.Duration(20-i) * 50 * time.Millisecond, QueueTimeout: time.Minute,
			}}))
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		for i, cv := range created {
			v, ok := e.Get(account, cv.ID)
			started := cv.CreatedAt.Add(time.Duration(i) * 100 * time.Millisecond)
			if !ok || v.Status != jobs.Succeeded || !v.StartedAt.Equal(started) || !v.FinishedAt.Equal(started.Add(time.Duration(20-i)*50*time.Millisecond)) {
				t.Errorf("job %d: %s, started %v, finished %v; want succeeded, started at %v", i, v.Status, v.StartedAt, v.FinishedAt, started)
			}
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if e.Len() != 0 || c.Pending() != 0 {
			t.Errorf("after retention: Len %d, Pending %d; want 0, 0", e.Len(), c.Pending())
		}
	})
}

// TestOnEnd: a function given to OnEnd runs once when its job ends, not at other changes, and
// not at all once withdrawn or for a job that has already ended.
func TestOnEnd(t *testing.T) {
	w := newWorld(t, retention)
	v := w.create(jobs.New{ID: "j1", Plan: jobs.Plan{Queue: time.Second, Run: 2 * time.Second, Ending: jobs.Ending{Status: jobs.Succeeded}}})
	ended := make(chan string, 4)
	if _, ok := w.engine.OnEnd(v.ID, func(v jobs.View) { ended <- "kept " + string(v.Status) }); !ok {
		t.Fatal("OnEnd refused a live job")
	}
	cancel, _ := w.engine.OnEnd(v.ID, func(jobs.View) { ended <- "withdrawn" })
	cancel()
	w.advance(time.Second) // it starts: not an end
	select {
	case got := <-ended:
		t.Fatalf("%s ran when the job only started", got)
	default:
	}
	w.advance(2 * time.Second)
	if got := <-ended; got != "kept succeeded" {
		t.Fatalf("ran %q", got)
	}
	if _, ok := w.engine.OnEnd(v.ID, func(jobs.View) { ended <- "late" }); ok {
		t.Error("OnEnd accepted a job that has ended")
	}
	if _, ok := w.engine.OnEnd("nope", func(jobs.View) {}); ok {
		t.Error("OnEnd accepted an unknown job")
	}
	select {
	case got := <-ended:
		t.Errorf("%s ran too", got)
	default:
	}
}

// TestBytesReturnToBase checks that a job that does not succeed, and so lets go of its outputs,
// takes away from the memory count exactly what it added when it is dropped.
func TestBytesReturnToBase(t *testing.T) {
	for _, status := range []jobs.Status{jobs.Succeeded, jobs.Failed} {
		t.Run(string(status), func(t *testing.T) {
			w := newWorld(t, time.Second)
			base := w.engine.Bytes()
			out := jobs.Output{Path: "/files/j1/0.png", Label: "image"}
			w.create(jobs.New{ID: "j1", Plan: jobs.Plan{Queue: time.Second, Run: time.Second,
				Ending: jobs.Ending{Status: status, Code: "generation_failed", At: 0.5}},
				Outputs: []jobs.Output{out, out}})
			if w.engine.Bytes() <= base {
				t.Fatalf("a held job counts nothing: %d bytes", w.engine.Bytes())
			}
			if err := w.clock.Advance(time.Hour); err != nil {
				t.Fatal(err)
			}
			if n := w.engine.Len(); n != 0 {
				t.Fatalf("%d jobs held past their retention", n)
			}
			if got := w.engine.Bytes(); got != base {
				t.Errorf("%d bytes still counted with no job held", got-base)
			}
		})
	}
}

// Charge pays the returned share of a partial result, rounded down, and never overflows.
func TestChargeForAPartialResult(t *testing.T) {
	for _, tc := range []struct {
		credits        int64
		kept, filtered int
		want           int64
	}{
		{12, 4, 0, 12}, {12, 1, 3, 3}, {3, 1, 3, 0}, {10, 2, 1, 6}, {1, 1, 0, 1},
		{1_000_000_000_000, 999, 1, 999_000_000_000}, {math.MaxInt64, 2, 1, math.MaxInt64 / 3 * 2},
	} {
		if got := jobs.Charge(tc.credits, tc.kept, tc.filtered); got != tc.want || got > tc.credits || got < 0 {
			t.Errorf("Charge(%d, %d, %d) = %d, want %d", tc.credits, tc.kept, tc.filtered, got, tc.want)
		}
	}
}
