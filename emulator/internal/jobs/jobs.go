// Package jobs runs every generation job through one lifecycle on the emulator's clock:
// queued → running → succeeded, failed, canceled or expired. Each job follows a Plan decided
// when it is created (how long it queues and runs, and how it ends) and carries the outputs it
// will have if it succeeds, so what drives outcomes — catalog timing, scenarios, forced
// outcomes, media — stays outside the engine, and the engine does no slow work on the clock.
// Credits held for a job are charged or refunded exactly once, when it turns terminal.
//
// An engine schedules one clock callback at a time, for its earliest due transition or drop:
// live jobs wait in an ordered queue (package due) by due time and finished jobs in a queue in finish order,
// so a retained job costs no timer and a burst of transitions costs one lock per instant.
package jobs

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/due"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
)

// Status is where a job is in its lifecycle.
type Status string

// The statuses of the contract.
const (
	Queued    Status = "queued"
	Running   Status = "running"
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
	Canceled  Status = "canceled"
	Expired   Status = "expired"
)

// Terminal reports whether a status is final.
func (s Status) Terminal() bool {
	return s == Succeeded || s == Failed || s == Canceled || s == Expired
}

// Valid reports whether s names a status.
func (s Status) Valid() bool { return s == Queued || s == Running || s.Terminal() }

// Credit statuses.
const (
	CreditsHeld     = "held"
	CreditsCharged  = "charged"
	CreditsRefunded = "refunded"
)

// ErrNotFound is returned for a job the engine does not hold (or holds for another account).
var ErrNotFound = errors.New("job not found")

// ErrTerminal is returned when a finished job is asked to change.
var ErrTerminal = errors.New("job already finished")

// ErrNotTerminal is returned when Force is asked for a status that does not end a job.
var ErrNotTerminal = errors.New("a job can only be forced to a terminal status")

// Ending is how a job ends when nothing interrupts it.
type Ending struct {
	// Status is Succeeded, Failed or Expired.
	Status Status
	// Code and Message fill the job's error when it fails or expires.
	Code, Message string
	// At is how far through the run a failure happens, from 0 (as it starts) to 1 (at the end).
	At float64
	// InQueue makes a failure happen when the queue time ends, before the job ever runs.
	InQueue bool
}

// Plan is the course a job will take, decided when it is created.
type Plan struct {
	Queue        time.Duration
	Run          time.Duration
	QueueTimeout time.Duration
	Ending       Ending
	// Forced names the outcome a request forced (X-Emulator-Outcome or an [emulator:...]
	// token); empty when the scenario's draws decided the ending.
	Forced string
	// Struck names the perturbation of the adversity plan that forced it, if one did.
	Struck string
	// Filtered is how many of the outputs asked for the run filters out (a partial result):
	// the job's Outputs are the rest, and success charges only for them (see Charge).
	Filtered int
	// InputsExpireAt, when set, is when an input the job reads as it starts (an upload, an
	// output link) stops being readable: a job that starts after it fails input_expired.
	InputsExpireAt time.Time
	// MediaInputs are the job's media inputs as its generation found them, for the control
	// API and the dashboard; nil when inputs were not fetched.
	MediaInputs []api.MediaInput
}

// MaxMediaInputs bounds the media inputs a job records: a list member's further items are
// read all the same, and not shown.
const MaxMediaInputs = 32

// MaxMediaInputURL bounds the URL a recorded media input shows: a longer one is cut to it.
const MaxMediaInputURL = 2048

// InputExpired is the code of a job that started after one of its inputs expired.
const InputExpired = "input_expired"

// Error is a failed or expired job's reason.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Output is one file a succeeded job produced, described in full before it is made: what the
// client is shown (its URL left for the transport to fill in from Path) and how to make it.
type Output struct {
	api.Output
	Path string // under the emulator's address: /files/{job}/{n}.{ext}

	// Format, Seed and Label let the file be made again, byte for byte, when it is requested.
	Format string
	Seed   uint64
	Label  string
	// Opening is the raster a video opens on (media.NewOpening), or "": the input image an
	// image-to-video job was made from, kept as its file needs it.
	Opening string
}

// New describes a job to create.
type New struct {
	ID      string
	Account string
	Model   string
	QuoteID string
	Credits int64
	Input   json.RawMessage
	Plan    Plan
	// OutputTTL is how long the outputs stay downloadable once the job has finished.
	OutputTTL time.Duration
	// Outputs are the files the job has once it succeeds, sizes included; they are shown only
	// then, and forgotten when it ends any other way.
	Outputs []Output
	// Remade says the outputs are what the world's seeded source makes again from the model and
	// the input as held, so a snapshot leaves them out without making them again to see.
	Remade bool
	// Slot puts the job under a concurrency limit; the zero Slot has none.
	Slot Slot
}

// DefaultMaxJobs is the retained-job cap when Options.MaxJobs is not set.
const DefaultMaxJobs = 100_000

// DefaultMaxInputBytes is the cap on the inputs held when Options.MaxInputBytes is not set.
const DefaultMaxInputBytes = 64 << 20

// Options bound what an engine keeps.
type Options struct {
	// Retention is how long a finished job is kept before it is dropped.
	Retention time.Duration
	// MaxJobs caps the jobs held (DefaultMaxJobs when ≤ 0). A new job past the cap first drops
	// the oldest finished jobs, exactly as if their retention had passed. Live jobs are never
	// dropped (their credits are held), so the cap bounds finished jobs: when every held job is
	// live the new one is admitted anyway, and live jobs are bounded by their plans' lifetimes.
	MaxJobs int
	// MaxInputBytes caps the bytes of the inputs of the jobs held, which a job answers with
	// (DefaultMaxInputBytes when ≤ 0): an input may be up to a request body, and the rest of a
	// job is small and bounded by MaxJobs. Past it, exactly as past MaxJobs, a new job first
	// drops the oldest finished jobs, and live jobs are never dropped.
	MaxInputBytes int64
	// OnChange, when set, is told of every change to the jobs held: a job created, started,
	// ended or dropped. It runs under the engine's lock, so it must be quick and must not call
	// back into the engine.
	OnChange func()
	// OnTerminal, when set, is told of every job that ends: its terminal status and, for a
	// failed or expired job, its error code. It runs under the engine's lock, like OnChange.
	OnTerminal func(status Status, code string)
	// Observer, when set, hears of every status a job reaches, created, started and ended
	// alike (webhooks). It runs under the engine's lock, like OnChange.
	Observer Observer
}

// Observer hears of the statuses jobs reach. Wants is asked first, so a status nobody listens
// for costs no view.
type Observer interface {
	Wants(Status) bool
	Reached(View)
}

// reached tells the observer, if any, that j reached its status at the instant at. Callers
// hold e.mu.
func (e *Engine) reached(j *job, at time.Time) {
	if e.observer != nil && e.observer.Wants(j.status) {
		e.observer.Reached(j.view(at))
	}
}

// job is the engine's record; every field is guarded by Engine.mu. It is kept compact (times
// in nanoseconds, progress in hundredths, the credit status implied by the status) because
// an engine may retain a hundred thousand of them.
type job struct {
	New
	status     Status
	createdAt  int64 // nanoseconds since 1970, as are the other times; unset when never reached
	startedAt  int64
	finishedAt int64
	// live is the job's place among live jobs: its next transition (At) and its creation order
	// (Seq, which breaks ties between equal due times and orders listings).
	live       due.Entry[*job]
	progress   uint8 // in hundredths, frozen when the job turns terminal
	forced     bool  // ended by Force rather than by its plan or a cancel
	err        *Error
	changed    chan struct{} // made by the first Watch after a change; nil when unwatched
	prev, next *job          // the account's jobs, in creation order
	nextDone   *job          // the finished queue, in finish order
	size       int64         // what it counts against the memory budget, fixed when made
	line       *lineState    // its place under a concurrency limit; nil for a job with none
}

// track counts a job the engine now holds in its totals and links it last among its
// account's jobs, for Create and Import alike. Callers hold e.mu.
func (e *Engine) track(j *job) {
	e.seq++
	j.live.Seq, j.live.Value = e.seq, j
	e.held++
	e.heldBytes += int64(len(j.Input))
	j.size = Size(j.New)
	e.bytes += j.size
	e.counts.add(j.status, 1)
	e.byID[j.ID] = j
	acc := e.byAccount[j.Account]
	if acc == nil {
		acc = &accountJobs{}
		e.byAccount[j.Account] = acc
	}
	j.prev = acc.tail
	if acc.tail != nil {
		acc.tail.next = j
	} else {
		acc.head = j
	}
	acc.tail = j
}

// unset marks a time a job has not reached.
const unset = math.MinInt64

// timeOf turns a job's time back into a time.Time: zero when unset.
func timeOf(n int64) time.Time {
	if n == unset {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// creditStatus follows from the status: held while live, then charged or refunded.
func (j *job) creditStatus() string {
	switch {
	case !j.status.Terminal():
		return CreditsHeld
	case j.status == Succeeded:
		return CreditsCharged
	}
	return CreditsRefunded
}

// Engine holds and advances jobs. It is safe for concurrent use.
type Engine struct {
	clock      *clock.Clock
	ledger     *ledger.Ledger
	retention  time.Duration
	maxJobs    int
	maxBytes   int64
	onChange   func()
	onTerminal func(Status, string)
	observer   Observer

	mu        sync.Mutex
	byID      map[string]*job
	byAccount map[string]*accountJobs
	seq       uint64
	live      due.Queue[*job] // queued and running jobs by (due, seq)
	doneHead  *job            // the finished job that is dropped next
	doneTail  *job
	counts    Counts
	held      int                   // jobs held, shadowed duplicates included
	heldBytes int64                 // the bytes of their inputs
	bytes     int64                 // their sizes (see Size)
	onEnd     map[*job][]*endCall   // what to run when a job ends; only jobs someone waits for
	ending    []endRun              // OnEnd calls whose jobs have ended, for runEnding to run
	groups    map[string]*slotGroup // concurrency limits' slots and lines, while in use (slots.go)

	// timer is the one clock callback the engine has scheduled, at timerAt, for the earliest
	// transition or drop; gen tells a stale callback from the current one.
	timer   *clock.Timer
	timerAt int64
	gen     uint64

	// observe, when set, hears of every scheduled transition as it happens, with its planned
	// time; benchmarks use it to measure lateness.
	observe func(planned time.Time)
}

// accountJobs links one account's jobs in creation order.
type accountJobs struct {
	head, tail *job
}

// NewEngine returns an engine on a clock and a ledger, bounded by o.
func NewEngine(c *clock.Clock, l *ledger.Ledger, o Options) *Engine {
	if o.MaxJobs <= 0 {
		o.MaxJobs = DefaultMaxJobs
	}
	if o.MaxInputBytes <= 0 {
		o.MaxInputBytes = DefaultMaxInputBytes
	}
	return &Engine{
		clock: c, ledger: l, retention: o.Retention, maxJobs: o.MaxJobs, maxBytes: o.MaxInputBytes, onChange: o.OnChange, onTerminal: o.OnTerminal, observer: o.Observer,
		byID: map[string]*job{}, byAccount: map[string]*accountJobs{},
	}
}

// Create adds a queued job whose credits are already held, and schedules its course. Its ID
// should be new; a job created under the ID of one still held hides the older one from Get,
// which still runs its course and settles its credits.
func (e *Engine) Create(n New) View {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.create(n)
}

// create is Create under e.mu.
func (e *Engine) create(n New) View {
	for (e.held >= e.maxJobs || e.heldBytes+int64(len(n.Input)) > e.maxBytes) && e.doneHead != nil {
		e.drop()
	}
	now := e.clock.Now()
	j := &job{New: n, status: Queued, createdAt: now.UnixNano(), startedAt: unset, finishedAt: unset}
	e.track(j)
	if n.Slot.Group != "" {
		e.place(j, now.UnixNano())
	} else {
		j.live.At = queuedStep(j, j.createdAt)
		e.live.Push(&j.live)
	}
	e.arm()
	e.changed()
	e.reached(j, now)
	return j.view(now)
}

// changed tells the engine's watcher that the jobs held changed. Callers hold e.mu.
func (e *Engine) changed() {
	if e.onChange != nil {
		e.onChange()
	}
}

// fire runs every transition and drop that is due, then schedules the next.
func (e *Engine) fire(gen uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if gen == e.gen {
		e.timer = nil
	}
	now := e.clock.Now().UnixNano()
	for top := e.live.Peek(); top != nil && top.At <= now; top = e.live.Peek() {
		j := e.live.Pop().Value
		planned := time.Unix(0, j.live.At).UTC()
		e.step(j, planned)
		if e.observe != nil {
			e.observe(planned)
		}
	}
	for e.doneHead != nil && e.dropAt(e.doneHead) <= now {
		e.drop()
	}
	e.arm()
}

// step moves a live job on at its planned instant at: a queued job starts, expires or fails
// in its queue; a running job ends as planned. Stamping the planned instant rather than the
// firing one keeps a job's times exact even when the clock jumps past them.
func (e *Engine) step(j *job, at time.Time) {
	p := j.Plan
	if j.status == Running {
		if p.Ending.Status == Failed {
			e.terminate(j, Failed, &Error{Code: p.Ending.Code, Message: p.Ending.Message}, at)
			return
		}
		e.terminate(j, Succeeded, nil, at)
		return
	}
	switch {
	case j.waiting() || j.expiresAt(at.UnixNano()):
		code, msg := p.Ending.Code, p.Ending.Message
		if p.Ending.Status != Expired || code == "" {
			code, msg = "queue_timeout", "the job was not started within its queue time limit"
		}
		e.terminate(j, Expired, &Error{Code: code, Message: msg}, at)
	case p.Ending.Status == Failed && p.Ending.InQueue:
		e.terminate(j, Failed, &Error{Code: p.Ending.Code, Message: p.Ending.Message}, at)
	case !p.InputsExpireAt.IsZero() && at.After(p.InputsExpireAt):
		e.terminate(j, Failed, &Error{Code: InputExpired, Message: "an input (an upload or an output URL) expired at " +
			p.InputsExpireAt.UTC().Format(time.RFC3339Nano) + ", before the job started; upload it again and generate anew"}, at)
	default:
		e.counts.add(Queued, -1)
		e.counts.add(Running, 1)
		j.status, j.startedAt = Running, at.UnixNano()
		j.live.At = addNanos(at.UnixNano(), runFor(p))
		e.live.Push(&j.live)
		j.notify()
		e.changed()
		e.reached(j, at)
	}
}

// terminate ends a live job at the instant at, settles its credits and queues it to be
// dropped. Callers hold e.mu and call e.arm afterwards.
func (e *Engine) terminate(j *job, status Status, jerr *Error, at time.Time) {
	e.live.Remove(&j.live)
	e.release(j, at.UnixNano())
	e.counts.add(j.status, -1)
	e.counts.add(status, 1)
	j.progress = j.hundredthsAt(at)
	if status == Succeeded {
		j.progress = 100
		charge := Charge(j.Credits, len(j.Outputs), j.Plan.Filtered)
		e.ledger.Charge(j.Account, charge)
		if charge < j.Credits {
			e.ledger.Refund(j.Account, j.Credits-charge)
		}
	} else {
		j.Outputs = nil
		e.ledger.Refund(j.Account, j.Credits)
	}
	j.status, j.err, j.finishedAt = status, jerr, at.UnixNano()
	if e.onTerminal != nil {
		code := ""
		if jerr != nil {
			code = jerr.Code
		}
		e.onTerminal(status, code)
	}
	e.reached(j, at)
	if e.doneTail != nil {
		e.doneTail.nextDone = j
	} else {
		e.doneHead = j
	}
	e.doneTail = j
	j.notify()
	if calls := e.onEnd[j]; calls != nil {
		delete(e.onEnd, j)
		v := j.view(at) // one for every call on the job: a view is a few hundred bytes
		if len(e.ending) == 0 {
			go e.runEnding() // never under the engine's lock, never on the clock's goroutine
		}
		for _, c := range calls {
			c.fired.Store(true)
			e.ending = append(e.ending, endRun{c.f, &v})
		}
	}
	e.changed()
}

// endRun is an OnEnd call due to run, with the job as it ended.
type endRun struct {
	f func(View)
	v *View
}

// endWorkers bounds the goroutines that run one batch of OnEnd calls: enough that a call that
// blocks a while (a parked answer waiting for its handler to return) holds up few others, and
// few enough that ten thousand calls ended by one advance run on a few stacks, grown once,
// rather than on ten thousand new goroutines each growing its own.
const endWorkers = 8

// runEnding runs the OnEnd calls that jobs' ends have queued, once the engine's lock is free:
// a clock step that ends many waited-for jobs holds it until the last has ended.
func (e *Engine) runEnding() {
	e.mu.Lock()
	batch := e.ending
	e.ending = nil
	e.mu.Unlock()
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(batch) {
				return
			}
			batch[i].f(*batch[i].v)
			batch[i] = endRun{} // let the view and the call go as soon as it has run
		}
	}
	for range min(len(batch), endWorkers) - 1 {
		go work()
	}
	work()
}

// endCall is one function OnEnd runs. fired is set, under the engine's lock, once the call
// has left the engine's list to run: its cancel then has nothing to withdraw and takes no
// lock. The call that fires usually cancels itself at once (a waiter stops its wait), and an
// advance that ends ten thousand waited-for jobs holds the lock throughout, so a cancel that
// locked would queue ten thousand goroutines behind the advance and slow it down.
type endCall struct {
	f     func(View)
	fired atomic.Bool
}

// OnEnd arranges for f to run once, with the job as it ended, when it turns terminal, so a
// waiter needs no goroutine of its own while it waits, nor to find the job again (a later clock
// step may have dropped it). f runs on a goroutine of the engine's, neither the caller's nor the
// clock's, and never under the engine's lock; calls whose jobs end together share a few such
// goroutines, so f should not block for long. It reports false, and never runs f, when the
// engine does not hold the job or it has already ended. cancel withdraws f.
func (e *Engine) OnEnd(id string, f func(View)) (cancel func(), ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, found := e.byID[id]
	if !found || j.status.Terminal() {
		return nil, false
	}
	c := &endCall{f: f}
	if e.onEnd == nil {
		e.onEnd = map[*job][]*endCall{}
	}
	e.onEnd[j] = append(e.onEnd[j], c)
	return func() {
		if c.fired.Load() {
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		calls := slices.DeleteFunc(e.onEnd[j], func(x *endCall) bool { return x == c })
		if len(calls) == 0 {
			delete(e.onEnd, j)
		} else {
			e.onEnd[j] = calls
		}
	}, true
}

// dropAt is when a finished job's retention ends, in nanoseconds since 1970.
func (e *Engine) dropAt(j *job) int64 { return addNanos(j.finishedAt, e.retention) }

// drop forgets the finished job at the head of the queue. Callers hold e.mu.
func (e *Engine) drop() {
	j := e.doneHead
	e.doneHead, j.nextDone = j.nextDone, nil
	if e.doneHead == nil {
		e.doneTail = nil
	}
	e.held--
	e.heldBytes -= int64(len(j.Input))
	e.bytes -= j.size // not Size(j.New): a job that does not succeed lets go of its outputs
	e.counts.add(j.status, -1)
	if e.byID[j.ID] == j {
		delete(e.byID, j.ID)
	}
	acc := e.byAccount[j.Account]
	if j.prev != nil {
		j.prev.next = j.next
	} else {
		acc.head = j.next
	}
	if j.next != nil {
		j.next.prev = j.prev
	} else {
		acc.tail = j.prev
	}
	j.prev, j.next = nil, nil
	if acc.head == nil {
		delete(e.byAccount, j.Account)
	}
	e.changed()
}

// arm keeps the engine's one clock callback at its earliest due transition or drop, and none
// when nothing is due. Callers hold e.mu.
func (e *Engine) arm() {
	next, due := int64(math.MaxInt64), false
	if top := e.live.Peek(); top != nil {
		next, due = top.At, true
	}
	if h := e.doneHead; h != nil {
		if d := e.dropAt(h); !due || d < next {
			next, due = d, true
		}
	}
	if e.timer != nil {
		if due && e.timerAt == next {
			return
		}
		e.timer.Stop() // a callback already running finds nothing due and reschedules nothing
		e.timer = nil
	}
	if !due {
		return
	}
	e.gen++
	gen := e.gen
	e.timerAt = next
	e.timer = e.clock.AfterFunc(time.Unix(0, next), func() { e.fire(gen) })
}

// notify wakes everyone watching the job. Callers hold e.mu.
func (j *job) notify() {
	if j.changed != nil {
		close(j.changed)
		j.changed = nil
	}
}

// Cancel ends a queued or running job as canceled, refunding its credits.
func (e *Engine) Cancel(account, id string) (View, error) {
	return e.force(account, id, Canceled, nil)
}

// Force ends a job now with a terminal status, whatever its plan (the control API's outcome
// forcing): a forced success gets the outputs the job was created with.
func (e *Engine) Force(id string, status Status, jerr *Error) (View, error) {
	if !status.Terminal() {
		return View{}, ErrNotTerminal
	}
	return e.force("", id, status, jerr)
}

func (e *Engine) force(account, id string, status Status, jerr *Error) (View, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, ok := e.byID[id]
	if !ok || (account != "" && j.Account != account) {
		return View{}, ErrNotFound
	}
	now := e.clock.Now()
	if j.status.Terminal() {
		return j.view(now), ErrTerminal
	}
	if status == Succeeded && j.status == Queued {
		j.startedAt = now.UnixNano()
	}
	j.forced = account == ""
	e.terminate(j, status, jerr, now)
	e.arm()
	return j.view(now), nil
}

// Get returns an account's job.
func (e *Engine) Get(account, id string) (View, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, ok := e.byID[id]
	if !ok || (account != "" && j.Account != account) {
		return View{}, false
	}
	return j.view(e.clock.Now()), true
}

// Watch returns the job's view and a channel closed at its next change. An empty account
// matches any. A finished job does not change again, so its channel is nil (never ready).
func (e *Engine) Watch(account, id string) (View, <-chan struct{}, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, ok := e.byID[id]
	if !ok || (account != "" && j.Account != account) {
		return View{}, nil, false
	}
	v := j.view(e.clock.Now())
	if j.status.Terminal() {
		return v, nil, true
	}
	if j.changed == nil {
		j.changed = make(chan struct{})
	}
	return v, j.changed, true
}

// Filter selects jobs in a listing.
type Filter struct {
	Status Status
	Model  string
}

// List returns an account's jobs, newest first, that pass the filter: the window [offset,
// offset+limit) and the number of all matches.
func (e *Engine) List(account string, f Filter, offset, limit int) ([]View, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	acc := e.byAccount[account]
	if acc == nil {
		return nil, 0
	}
	now := e.clock.Now()
	var out []View
	total := 0
	for j := acc.tail; j != nil; j = j.prev {
		if (f.Status != "" && j.status != f.Status) || (f.Model != "" && j.Model != f.Model) {
			continue
		}
		if total >= offset && total-offset < limit {
			out = append(out, j.view(now))
		}
		total++
	}
	return out, total
}

// ListAll is List over every account's jobs: newest first (in creation order across accounts),
// the window [offset, offset+limit) and the number of all matches. It walks each account's
// jobs from its newest, taking the newest of their heads each step, so it costs the matches
// before the window end times the accounts with jobs, plus one pass to count.
func (e *Engine) ListAll(f Filter, offset, limit int) ([]View, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	match := func(j *job) bool {
		return (f.Status == "" || j.status == f.Status) && (f.Model == "" || j.Model == f.Model)
	}
	heads := make([]*job, 0, len(e.byAccount))
	total := 0
	for _, acc := range e.byAccount {
		heads = append(heads, acc.tail)
		for j := acc.tail; j != nil; j = j.prev {
			if match(j) {
				total++
			}
		}
	}
	var out []View
	for n := 0; n < total && (n < offset || n-offset < limit); {
		best := -1
		for i, h := range heads {
			if h != nil && (best < 0 || h.live.Seq > heads[best].live.Seq) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		j := heads[best]
		heads[best] = j.prev
		if !match(j) {
			continue
		}
		if n >= offset {
			out = append(out, j.view(now))
		}
		n++
	}
	return out, total
}

// UsesOf calls f with the id of every job whose recorded media inputs name an upload, once per
// upload it names, with the job's creation order (higher is newer), under the engine's lock:
// f must not call the engine.
func (e *Engine) UsesOf(f func(upload, job string, seq uint64)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, acc := range e.byAccount {
		for j := acc.tail; j != nil; j = j.prev {
			for i, in := range j.Plan.MediaInputs {
				if in.Upload != "" && !namedBefore(j.Plan.MediaInputs[:i], in.Upload) {
					f(in.Upload, j.ID, j.live.Seq)
				}
			}
		}
	}
}

// namedBefore reports whether one of the inputs names the upload.
func namedBefore(ins []api.MediaInput, upload string) bool {
	for _, in := range ins {
		if in.Upload == upload {
			return true
		}
	}
	return false
}

// Next is the earliest transition due among live jobs: the job, when it is due and the status
// it leaves; ok is false when no job is live.
func (e *Engine) Next() (id string, at time.Time, from Status, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	top := e.live.Peek()
	if top == nil {
		return "", time.Time{}, "", false
	}
	j := top.Value
	return j.ID, time.Unix(0, top.At).UTC(), j.status, true
}

// NextOf is when an account's job next moves on (an empty account matches any); ok is false
// when no such job is held or it has ended.
func (e *Engine) NextOf(account, id string) (at time.Time, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, held := e.byID[id]
	if !held || (account != "" && j.Account != account) || j.status.Terminal() {
		return time.Time{}, false
	}
	if j.waiting() {
		// It moves when a slot of its group frees (the line moves up), which depends on
		// the jobs that hold them, or when its time limit ends.
		return time.Unix(0, j.waitingNext()).UTC(), true
	}
	return time.Unix(0, j.live.At).UTC(), true
}

// Len counts the jobs held.
func (e *Engine) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held
}

// Counts is how many held jobs are in each status.
type Counts struct {
	Queued, Running, Succeeded, Failed, Canceled, Expired int
}

// Total is the number of jobs counted.
func (c Counts) Total() int {
	return c.Queued + c.Running + c.Succeeded + c.Failed + c.Canceled + c.Expired
}

func (c *Counts) add(s Status, n int) {
	switch s {
	case Queued:
		c.Queued += n
	case Running:
		c.Running += n
	case Succeeded:
		c.Succeeded += n
	case Failed:
		c.Failed += n
	case Canceled:
		c.Canceled += n
	case Expired:
		c.Expired += n
	}
}

// Counts returns how many jobs the engine holds in each status, without walking them.
func (e *Engine) Counts() Counts {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts
}

// View is a job as of one instant, safe to read without the engine's lock.
type View struct {
	ID           string
	Account      string
	Model        string
	QuoteID      string
	Credits      int64
	CreditStatus string
	Input        json.RawMessage
	Status       Status
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	Progress     float64
	// Outputs is set once the job has succeeded; it is shared, so read it without changing it.
	Outputs []Output
	Error   *Error
	// OutputsExpireAt is when the outputs stop being served (zero until the job finishes).
	OutputsExpireAt time.Time
	// Plan is the course the job was given when it was created.
	Plan Plan
	// Forced reports that the control API ended the job, whatever its plan said.
	Forced bool
	// Charged is what the job's success charged: its Credits, or less when outputs were
	// filtered out (zero until it succeeds).
	Charged int64
	// QueuePosition is the job's place, from 1, in the line for its concurrency limit's
	// slots while it waits there; 0 otherwise.
	QueuePosition int
}

func (j *job) view(now time.Time) View {
	v := View{
		ID: j.ID, Account: j.Account, Model: j.Model, QuoteID: j.QuoteID, Credits: j.Credits,
		CreditStatus: j.creditStatus(), Input: j.Input, Status: j.status, CreatedAt: timeOf(j.createdAt),
		StartedAt: timeOf(j.startedAt), FinishedAt: timeOf(j.finishedAt), Error: j.err,
		Plan: j.Plan, Forced: j.forced,
	}
	if j.waiting() {
		v.QueuePosition = j.line.group.position(j)
	}
	if j.status == Succeeded {
		v.Outputs = j.Outputs
		v.Charged = Charge(j.Credits, len(j.Outputs), j.Plan.Filtered)
	}
	p := j.progress
	if j.status.Terminal() {
		v.OutputsExpireAt = v.FinishedAt.Add(j.OutputTTL)
	} else {
		p = j.hundredthsAt(now)
	}
	v.Progress = float64(p) / 100
	return v
}

// hundredthsAt is how far a running job is through its run, in hundredths: rising with time,
// short of 100 until it succeeds.
func (j *job) hundredthsAt(now time.Time) uint8 {
	if j.status != Running || j.Plan.Run <= 0 {
		return 0
	}
	p := float64(now.UnixNano()-j.startedAt) / float64(j.Plan.Run)
	return uint8(math.Round(math.Min(0.99, math.Max(0, p)) * 100))
}

// addNanos is t+d in nanoseconds, saturating instead of wrapping around.
func addNanos(t int64, d time.Duration) int64 {
	s := t + int64(d)
	if d > 0 && s < t {
		return math.MaxInt64
	}
	if d < 0 && s > t {
		return math.MinInt64
	}
	return s
}

// jobOverhead and outputOverhead are what a retained job and each of its outputs cost beyond
// their input and text: a retained job measures about 1.4 KB, its input included.
const (
	jobOverhead    = 1024
	outputOverhead = 256
	// mediaInputOverhead is what each recorded media input costs beyond its text.
	mediaInputOverhead = 160
)

// Size is what a job counts against the memory budget.
func Size(n New) int64 {
	size := jobOverhead + len(n.ID) + len(n.Account) + len(n.Model) + len(n.QuoteID) + len(n.Input)
	for _, o := range n.Outputs {
		size += outputOverhead + len(o.Path) + len(o.URL) + len(o.Label) + len(o.Opening)
	}
	for _, in := range n.Plan.MediaInputs {
		size += mediaInputOverhead + len(in.URL) + len(in.Member) + len(in.Pointer) + len(in.Upload) + len(in.ContentType)
	}
	return int64(size)
}

// Bytes is what the jobs held count against the memory budget.
func (e *Engine) Bytes() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bytes
}

// Charge is what a job that returns kept outputs of the kept+filtered asked for pays of the
// credits it holds: the same share, rounded down, so a filtered output is never paid for.
func Charge(credits int64, kept, filtered int) int64 {
	if filtered <= 0 || kept < 0 {
		return credits
	}
	n := int64(kept + filtered)
	// credits×kept/n without overflow: the remainder's product is below n×kept.
	return credits/n*int64(kept) + credits%n*int64(kept)/n
}
