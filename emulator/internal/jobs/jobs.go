// Package jobs runs every generation job through one lifecycle on the emulator's clock:
// queued → running → succeeded, failed, canceled or expired. Each job follows a Plan decided
// when it is created (how long it queues and runs, and how it ends), so what drives outcomes —
// catalog timing, scenarios, forced outcomes — stays outside the engine. Credits held for a job
// are charged or refunded exactly once, when it turns terminal.
package jobs

import (
	"encoding/json"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
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
}

// Error is a failed or expired job's reason.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Output is one file a succeeded job produced.
type Output struct {
	Type        string  `json:"type"`
	Path        string  `json:"-"` // under the emulator's address: /files/{job}/{n}.{ext}
	URL         string  `json:"url"`
	ContentType string  `json:"content_type"`
	Width       int     `json:"width,omitempty"`
	Height      int     `json:"height,omitempty"`
	Duration    float64 `json:"duration_seconds,omitempty"`
	SizeBytes   int64   `json:"size_bytes"`

	// Format, Seed and Label let the file be made again, byte for byte, when it is requested.
	Format string `json:"-"`
	Seed   uint64 `json:"-"`
	Label  string `json:"-"`
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
	// Finish makes the outputs when the job succeeds. It runs outside the engine's lock; an
	// error fails the job instead.
	Finish func(id string) ([]Output, *Error)
}

// job is the engine's record; every field is guarded by Engine.mu.
type job struct {
	New
	status       Status
	creditStatus string
	createdAt    time.Time
	startedAt    time.Time
	finishedAt   time.Time
	progress     float64 // frozen when the job turns terminal
	outputs      []Output
	err          *Error
	timer        *clock.Timer
	changed      chan struct{}
	finishing    bool // outputs are being made; the job is still running
}

// Engine holds and advances jobs. It is safe for concurrent use.
type Engine struct {
	clock     *clock.Clock
	ledger    *ledger.Ledger
	retention time.Duration

	mu        sync.Mutex
	byID      map[string]*job
	byAccount map[string]*accountJobs
}

// accountJobs keeps one account's jobs in creation order; dropped jobs leave nil holes that are
// compacted away once they are half the list.
type accountJobs struct {
	list  []*job
	holes int
}

// NewEngine returns an engine whose finished jobs are dropped after retention.
func NewEngine(c *clock.Clock, l *ledger.Ledger, retention time.Duration) *Engine {
	return &Engine{clock: c, ledger: l, retention: retention, byID: map[string]*job{}, byAccount: map[string]*accountJobs{}}
}

// Create adds a queued job whose credits are already held, and schedules its course.
func (e *Engine) Create(n New) View {
	now := e.clock.Now()
	j := &job{New: n, status: Queued, creditStatus: CreditsHeld, createdAt: now, changed: make(chan struct{})}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byID[j.ID] = j
	acc := e.byAccount[j.Account]
	if acc == nil {
		acc = &accountJobs{}
		e.byAccount[j.Account] = acc
	}
	acc.list = append(acc.list, j)
	p := j.Plan
	if p.Ending.Status == Expired || (p.QueueTimeout > 0 && p.Queue >= p.QueueTimeout) {
		j.timer = e.clock.AfterFunc(now.Add(p.QueueTimeout), func() { e.expire(j) })
	} else {
		j.timer = e.clock.AfterFunc(now.Add(p.Queue), func() { e.start(j) })
	}
	return j.view(now)
}

func (e *Engine) start(j *job) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j.status != Queued {
		return
	}
	if end := j.Plan.Ending; end.Status == Failed && end.InQueue {
		e.terminate(j, Failed, &Error{Code: end.Code, Message: end.Message})
		return
	}
	now := e.clock.Now()
	j.status, j.startedAt = Running, now
	run := j.Plan.Run
	if j.Plan.Ending.Status == Failed {
		run = time.Duration(float64(run) * math.Min(1, math.Max(0, j.Plan.Ending.At)))
	}
	j.timer = e.clock.AfterFunc(now.Add(run), func() { e.end(j) })
	j.notify()
}

func (e *Engine) expire(j *job) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j.status != Queued {
		return
	}
	code, msg := j.Plan.Ending.Code, j.Plan.Ending.Message
	if j.Plan.Ending.Status != Expired || code == "" {
		code, msg = "queue_timeout", "the job was not started within its queue time limit"
	}
	e.terminate(j, Expired, &Error{Code: code, Message: msg})
}

// end finishes a running job as planned. Making outputs can take milliseconds, so it happens
// outside the lock; a cancel that lands meanwhile wins.
func (e *Engine) end(j *job) {
	e.mu.Lock()
	if j.status != Running || j.finishing {
		e.mu.Unlock()
		return
	}
	if j.Plan.Ending.Status == Failed {
		e.terminate(j, Failed, &Error{Code: j.Plan.Ending.Code, Message: j.Plan.Ending.Message})
		e.mu.Unlock()
		return
	}
	e.succeed(j)
}

// succeed is called with e.mu held and releases it.
func (e *Engine) succeed(j *job) {
	j.finishing = true
	finish, id := j.Finish, j.ID
	e.mu.Unlock()
	var outputs []Output
	var ferr *Error
	if finish != nil {
		outputs, ferr = finish(id)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	j.finishing = false
	if j.status != Running {
		j.notify() // a cancel won; wake whoever waits for the finishing to end
		return
	}
	if ferr != nil {
		e.terminate(j, Failed, ferr)
		return
	}
	j.outputs = outputs
	e.terminate(j, Succeeded, nil)
}

// terminate ends a job, settles its credits and schedules it to be dropped. Callers hold e.mu.
func (e *Engine) terminate(j *job, status Status, jerr *Error) {
	now := e.clock.Now()
	if j.timer != nil {
		j.timer.Stop()
	}
	j.progress = j.progressAt(now)
	if status == Succeeded {
		j.progress = 1
	}
	j.status, j.err, j.finishedAt = status, jerr, now
	j.Finish = nil // it holds the decoded input; a finished job no longer needs it
	if status == Succeeded {
		e.ledger.Charge(j.Account, j.Credits)
		j.creditStatus = CreditsCharged
	} else {
		e.ledger.Refund(j.Account, j.Credits)
		j.creditStatus = CreditsRefunded
	}
	j.timer = e.clock.AfterFunc(now.Add(e.retention), func() { e.drop(j) })
	j.notify()
}

func (e *Engine) drop(j *job) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byID[j.ID] != j {
		return
	}
	delete(e.byID, j.ID)
	acc := e.byAccount[j.Account]
	for i, x := range acc.list {
		if x == j {
			acc.list[i] = nil
			acc.holes++
			break
		}
	}
	if acc.holes > len(acc.list)/2 {
		kept := acc.list[:0]
		for _, x := range acc.list {
			if x != nil {
				kept = append(kept, x)
			}
		}
		clear(acc.list[len(kept):])
		acc.list, acc.holes = kept, 0
		if len(kept) == 0 {
			delete(e.byAccount, j.Account)
		}
	}
}

// notify wakes everyone watching the job. Callers hold e.mu.
func (j *job) notify() {
	close(j.changed)
	j.changed = make(chan struct{})
}

// Cancel ends a queued or running job as canceled, refunding its credits.
func (e *Engine) Cancel(account, id string) (View, error) {
	return e.force(account, id, Canceled, nil)
}

// Force ends a job now as succeeded or failed, whatever its plan (the control API's outcome
// forcing). A forced success still makes real outputs.
func (e *Engine) Force(id string, status Status, jerr *Error) (View, error) {
	return e.force("", id, status, jerr)
}

func (e *Engine) force(account, id string, status Status, jerr *Error) (View, error) {
	e.mu.Lock()
	j, ok := e.byID[id]
	if !ok || (account != "" && j.Account != account) {
		e.mu.Unlock()
		return View{}, ErrNotFound
	}
	if j.status.Terminal() {
		v := j.view(e.clock.Now())
		e.mu.Unlock()
		return v, ErrTerminal
	}
	if status == Succeeded {
		if j.finishing {
			e.mu.Unlock()
			return e.Wait(id), nil
		}
		now := e.clock.Now()
		if j.status == Queued {
			j.status, j.startedAt = Running, now
		}
		if j.timer != nil {
			j.timer.Stop()
		}
		e.succeed(j) // releases e.mu
		return e.Wait(id), nil
	}
	e.terminate(j, status, jerr)
	v := j.view(e.clock.Now())
	e.mu.Unlock()
	return v, nil
}

// Wait returns the job's view once any in-progress finishing is done; used right after a force.
func (e *Engine) Wait(id string) View {
	for {
		v, changed, ok := e.Watch("", id)
		if !ok || !v.finishing {
			return v
		}
		<-changed
	}
}

// Get returns an account's job.
func (e *Engine) Get(account, id string) (View, bool) {
	v, _, ok := e.Watch(account, id)
	return v, ok
}

// Watch returns the job's view and a channel closed at its next change. An empty account
// matches any.
func (e *Engine) Watch(account, id string) (View, <-chan struct{}, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, ok := e.byID[id]
	if !ok || (account != "" && j.Account != account) {
		return View{}, nil, false
	}
	return j.view(e.clock.Now()), j.changed, true
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
	for i := len(acc.list) - 1; i >= 0; i-- {
		j := acc.list[i]
		if j == nil || (f.Status != "" && j.status != f.Status) || (f.Model != "" && j.Model != f.Model) {
			continue
		}
		if total >= offset && total < offset+limit {
			out = append(out, j.view(now))
		}
		total++
	}
	return out, total
}

// Len counts the jobs held.
func (e *Engine) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.byID)
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
	Outputs      []Output
	Error        *Error
	// OutputsExpireAt is when the outputs stop being served (zero until the job finishes).
	OutputsExpireAt time.Time
	finishing       bool
}

func (j *job) view(now time.Time) View {
	v := View{
		ID: j.ID, Account: j.Account, Model: j.Model, QuoteID: j.QuoteID, Credits: j.Credits,
		CreditStatus: j.creditStatus, Input: j.Input, Status: j.status, CreatedAt: j.createdAt,
		StartedAt: j.startedAt, FinishedAt: j.finishedAt, Outputs: j.outputs, Error: j.err,
		finishing: j.finishing,
	}
	if j.status.Terminal() {
		v.OutputsExpireAt = j.finishedAt.Add(j.OutputTTL)
		v.Progress = j.progress
	} else {
		v.Progress = j.progressAt(now)
	}
	return v
}

// progressAt is how far a running job is through its run: rising with time, short of 1 until
// it succeeds.
func (j *job) progressAt(now time.Time) float64 {
	if j.status != Running || j.Plan.Run <= 0 {
		return 0
	}
	p := float64(now.Sub(j.startedAt)) / float64(j.Plan.Run)
	return math.Round(math.Min(0.99, math.Max(0, p))*100) / 100
}
